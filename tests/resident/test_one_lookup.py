"""A resident finds a hook's project once, and answers for the project whose plugin code it checked.

These tests drive :class:`nia_core.resident.server.Resident` in this process (its per-hook work, without
the socket), so what one hook does on the file system can be watched.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from nia_core.resident import scope
from nia_core.resident.server import Resident
from tests.resident.world import PLUGIN


def _resident(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[Resident, dict[str, Any]]:
    monkeypatch.setattr(sys, "argv", list(sys.argv))  # each hook's argv is set in place: pytest's stays its own
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.chdir(tmp_path)
    for name in scope.PER_HOOK:  # each hook's environment is the scope's and its own: none of these here
        monkeypatch.delenv(name, raising=False)
    place = tmp_path / "run"
    place.mkdir(mode=0o700)
    found = scope.scope({})
    return Resident({}, found, str(place), "test"), found


def _hook(found: dict[str, Any], cwd: Path, event: str, source: str = "") -> dict[str, Any]:
    data: dict[str, Any] = {"session_id": "s1", "cwd": str(cwd), "hook_event_name": event}
    if source:
        data["source"] = source
    return {
        "scope": found,
        "host": "claude-code",
        "input": json.dumps(data),
        "per_hook": {},
        "parent_pid": os.getppid(),
        "argv": ["nia", "hook", "claude-code"],
    }


def test_an_unchanged_prompt_looks_for_its_project_once(tmp_path, monkeypatch):
    """Each folder from the hook's up is looked at for ``.nia`` once per hook: finding the project again (for the
    plugin check, the hook, the boundary, its report) cost a ``resolve`` and two ``stat`` calls per folder each time."""
    root = tmp_path / "shop"
    (root / ".git").mkdir(parents=True)
    (root / "rule.txt").write_text("one\n")
    (root / ".nia" / "plugins").mkdir(parents=True)
    (root / ".nia" / "plugins" / "acme.py").write_text(PLUGIN)
    folder = root / "api" / "v1"
    folder.mkdir(parents=True)
    resident, found = _resident(monkeypatch, tmp_path)
    try:
        assert resident.answer(_hook(found, folder, "SessionStart", "startup"))["stdout"]
        assert resident.answer(_hook(found, folder, "UserPromptSubmit")) == {"stdout": "", "stderr": ""}
        looked: list[str] = []
        real_stat = os.stat
        monkeypatch.setattr(os, "stat", lambda p, *a, **k: looked.append(os.fspath(p)) or real_stat(p, *a, **k))

        assert resident.answer(_hook(found, folder, "UserPromptSubmit")) == {"stdout": "", "stderr": ""}

        monkeypatch.setattr(os, "stat", real_stat)
        for above in (folder, folder.parent, root):
            assert looked.count(str(above / ".nia")) == 1, (above, looked.count(str(above / ".nia")))
    finally:
        resident.runtime.close()
        resident.close_store()
