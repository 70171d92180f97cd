"""Fake installed distributions for discovery tests, and a CLI runner."""

from __future__ import annotations

import importlib
import os
import shutil
import stat
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from nia_core.cli import cli


class Site:
    """A folder on ``sys.path`` holding distributions "installed" the way pip leaves them."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def install(
        self,
        dist: str,
        *,
        plugins: dict[str, str] | None = None,
        modules: dict[str, str] | None = None,
        version: str = "1.0",
    ) -> Path:
        """Write ``modules`` (relative path → source) and a ``*.dist-info`` declaring ``plugins`` (name → value)."""
        files = []
        for relative, text in (modules or {}).items():
            path = self.root / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            files.append(relative)
        info = self.root / f"{dist.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
        lines = ["[nia]", *(f"{name} = {value}" for name, value in (plugins or {}).items())]
        (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
        (info / "INSTALLER").write_text("pip\n")
        record = [*files, *(f"{info.name}/{n}" for n in ("METADATA", "entry_points.txt", "INSTALLER", "RECORD"))]
        (info / "RECORD").write_text("".join(f"{r},,\n" for r in record))
        importlib.invalidate_caches()
        return info

    def plugin(self, name: str, source: str, *, dist: str | None = None) -> Path:
        """One distribution holding one plugin module named after the plugin."""
        module = name.replace("-", "_")
        return self.install(dist or name, plugins={name: module}, modules={f"{module}.py": source})


@pytest.fixture
def site(tmp_path, monkeypatch):
    root = tmp_path / "site-packages"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setenv("PYTHONPATH", str(root))
    yield Site(root)
    for name, module in list(sys.modules.items()):
        if str(getattr(module, "__file__", None) or "").startswith(str(root)):
            del sys.modules[name]
    importlib.invalidate_caches()


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "project"
    (root / ".nia").mkdir(parents=True)
    return root


def run(*args: str, input: str | None = None):
    """``nia ARGS`` in-process; ``result.stdout`` and ``result.stderr`` come apart."""
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


@pytest.fixture
def fake_git(tmp_path, monkeypatch):
    """A ``git`` first on PATH that logs each call (arguments and GIT_ variables), then runs the real one.

    One line a call, written at once: nia runs some git calls at the same time.
    """
    real = shutil.which("git")
    folder = tmp_path / "fake-bin"
    folder.mkdir()
    log = tmp_path / "git-calls.log"
    script = folder / "git"
    script.write_text(
        "#!/bin/sh\n"
        'variables=$(env | grep "^GIT_" | sort | tr "\\n" " ")\n'
        f'printf "%s\\t%s\\n" "$*" "$variables" >> {log}\n'
        f'exec {real} "$@"\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")

    def calls() -> list[tuple[str, str]]:
        text = log.read_text() if log.exists() else ""
        return [tuple(line.split("\t", 1)) for line in text.splitlines()]  # type: ignore[misc]

    return calls
