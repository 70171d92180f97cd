"""A project, its environment and real ``nia hook`` processes, for the resident process's tests."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.agents.transcripts import hook_record, line

PLUGIN = """
from nia_core import UNAVAILABLE, ContextSource, hookimpl

@hookimpl
def nia_context_sources(location):
    path = location.root / "rule.txt"
    def load():
        return path.read_text().strip() if path.exists() else UNAVAILABLE
    return [ContextSource(
        key="acme/rule",
        load=load,
        baseline=lambda v: f"ACME-RULE: {v}",
        update=lambda old, new: f"ACME-RULE changed: {new} (was {old})",
        removal=lambda old: "ACME-RULE-REMOVED",
    )]
"""

HOOK = [sys.executable, "-c", "from nia_core.cli import main; main()", "hook"]


class World:
    """One project and the environment its hooks run with; ``hook`` is one hook process, as an agent starts it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / ".git").mkdir(parents=True)
        (root / "AGENTS.md").write_text("AGENTS-SAYS: use tabs.\n")
        (root / "rule.txt").write_text("one\n")
        self.plugins = root / ".nia" / "plugins"
        self.plugins.mkdir(parents=True)
        (self.plugins / "acme.py").write_text(PLUGIN)
        self.env = {**os.environ, "NIA_RESIDENT": "1", "NIA_HOOK_DEADLINE": "60"}
        self.transcripts: dict[str, Path] = {}

    def payload(self, session: str, event: str, source: str = "", transcript: bool = False) -> str:
        data: dict[str, Any] = {"session_id": session, "cwd": str(self.root), "hook_event_name": event}
        if source:
            data["source"] = source
        if event == "UserPromptSubmit":
            data["prompt"] = "go on"
        if transcript:
            path = self.transcripts.setdefault(session, self.root.parent / f"{session}.jsonl")
            path.touch()
            data["transcript_path"] = str(path)
        return json.dumps(data)

    def run(
        self,
        session: str,
        event: str,
        source: str = "",
        *,
        host: str = "claude-code",
        transcript: bool = False,
        env: dict[str, str] | None = None,
        timeout: float = 120,
        umask: int = -1,
    ) -> subprocess.CompletedProcess[str]:
        """One hook process (with ``umask``, when given); with ``transcript``, what it printed is recorded as
        the host records it."""
        done = subprocess.run(
            [*HOOK, host],
            input=self.payload(session, event, source, transcript),
            capture_output=True,
            text=True,
            env={**self.env, **(env or {})},
            cwd=self.root,
            timeout=timeout,
            umask=umask,
        )
        assert done.returncode == 0, done.stderr
        if transcript and done.stdout.strip():
            self.record(session, done.stdout, host, event)
        return done

    def record(self, session: str, stdout: str, host: str = "claude-code", event: str = "UserPromptSubmit") -> None:
        """What the hook printed, as the host records it in its transcript (the model saw it)."""
        text = json.loads(stdout)["hookSpecificOutput"]["additionalContext"]
        with open(self.transcripts[session], "a") as handle:
            handle.write(line(hook_record(host, text, event)))

    def text(self, done: subprocess.CompletedProcess[str]) -> str | None:
        out = done.stdout.strip()
        return json.loads(out)["hookSpecificOutput"]["additionalContext"] if out else None

    def nia(self, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", "from nia_core.cli import main; main()", *args],
            capture_output=True,
            text=True,
            env={**self.env, **(env or {})},
            cwd=self.root,
            timeout=120,
        )

    def log(self, session_prefix: str | None = None) -> list[dict[str, Any]]:
        args = ["hook", "log", "--json", "--last", "200"]
        if session_prefix:
            args += ["--session", session_prefix]
        done = self.nia(*args)
        assert done.returncode == 0, done.stderr
        return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]

    def residents(self, env: dict[str, str] | None = None) -> list[dict[str, Any]]:
        done = self.nia("hook", "residents", "--json", env=env)
        assert done.returncode == 0, done.stderr
        return list(json.loads(done.stdout)["residents"])

    def ready(self, env: dict[str, str] | None = None, *, more_than: int = 0, timeout: float = 60) -> dict[str, Any]:
        """Wait for a resident process that answers hooks (more of them than ``more_than``); the newest."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready = [r for r in self.residents(env) if r["ready"]]
            if len(ready) > more_than:
                return ready[-1]
            time.sleep(0.1)
        raise AssertionError(f"no resident process was ready within {timeout:g}s")

    def gone(self, pid: int, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not any(r["pid"] == pid for r in self.residents()):
                return
            time.sleep(0.1)
        raise AssertionError(f"resident {pid} is still listed after {timeout:g}s")

    def started(self) -> dict[str, Any]:
        """A first hook (answered in-process: none runs yet), then the resident it started."""
        done = self.run("warm-up", "PreToolUse")
        assert done.stdout == ""
        return self.ready()


def kill(pid: int, sig: int = signal.SIGKILL) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass
