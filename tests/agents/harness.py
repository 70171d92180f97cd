"""Running the real agents offline, for end-to-end tests of nia's hooks (and of ``nia mcp`` later).

- :func:`agent_binary` finds ``claude`` / ``codex`` under ``$NIA_AGENTS_DIR``
  (``.ci/agents.sh`` installs the pinned versions there and prints the export
  line). Without them a test skips with one line, unless ``NIA_REQUIRE_AGENTS=1``
  (CI) turns the skip into a failure.
- :class:`~tests.agents.fakemodel.FakeModel` is the loopback model server that
  records every request.
- :class:`ClaudeCode` and :class:`Codex` run one non-interactive turn each, with
  a temporary ``HOME`` (and ``CODEX_HOME``) so nothing of the machine's own
  configuration, login or history is read or written.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.agents.fakemodel import FakeModel

CLAUDE_CODE_VERSION = "2.1.328"
CODEX_VERSION = "0.169.0"
TURN_TIMEOUT = 120
"""Seconds one agent turn may take (a few seconds normally; generous for a loaded CI machine)."""

_REAL_HOME = pwd.getpwuid(os.getuid()).pw_dir  # tests run with HOME pointing at a temp folder


def agents_dir() -> Path:
    return Path(os.environ.get("NIA_AGENTS_DIR") or os.path.join(_REAL_HOME, ".cache", "nia-agents"))


def agent_binary(name: str) -> Path:
    """The installed agent's executable, or skip (fail under ``NIA_REQUIRE_AGENTS=1``) with one line why."""
    path = agents_dir() / "node_modules" / ".bin" / name
    if path.exists() and os.access(path, os.X_OK):
        return path
    reason = f'{name} is not installed in {agents_dir()} (run: eval "$(bash .ci/agents.sh)")'
    if os.environ.get("NIA_REQUIRE_AGENTS") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


def nia_program() -> str:
    """The ``nia`` script of the interpreter running the tests: what the hooks must run."""
    script = Path(sys.executable).parent / "nia"
    return str(script) if script.exists() else "nia"


def base_env(home: Path) -> dict[str, str]:
    """A clean environment: the test's nia data folders, a temporary HOME, no inherited agent settings."""
    keep = ("PATH", "LANG", "LC_ALL", "TMPDIR", "NIA_DB", "NIA_HOOK_LOG", "NIA_HOOK_DEADLINE")
    env = {k: v for k, v in os.environ.items() if k in keep or k.startswith("XDG_")}
    env["HOME"] = str(home)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "/usr/bin:/bin")])
    return env


@dataclass
class Turn:
    session_id: str
    returncode: int
    stdout: str
    stderr: str


@dataclass
class ClaudeCode:
    """Claude Code in ``-p`` mode against the fake model server."""

    project: Path
    home: Path
    server: FakeModel
    extra_env: dict[str, str] = field(default_factory=dict)

    def env(self) -> dict[str, str]:
        env = base_env(self.home)
        env.update(
            ANTHROPIC_BASE_URL=self.server.url,
            ANTHROPIC_API_KEY="test-key",
            DISABLE_TELEMETRY="1",
            DISABLE_AUTOUPDATER="1",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
        )
        env.update(self.extra_env)
        return env

    def turn(self, prompt: str, resume: str | None = None) -> Turn:
        args = [str(agent_binary("claude")), "-p", prompt, "--output-format", "json"]
        if resume:
            args += ["--resume", resume]
        done = subprocess.run(
            args,
            cwd=self.project,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=TURN_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
        session = ""
        try:
            session = json.loads(done.stdout).get("session_id", "")
        except ValueError:
            pass
        return Turn(session or resume or "", done.returncode, done.stdout, done.stderr)


@dataclass
class Codex:
    """``codex exec`` against the fake model server, with its own ``CODEX_HOME``.

    Hooks run with ``--dangerously-bypass-hook-trust``: Codex's trust record is
    the user's consent, which nia never writes (see docs/hosts.md).
    """

    project: Path
    home: Path
    server: FakeModel
    extra_env: dict[str, str] = field(default_factory=dict)

    @property
    def codex_home(self) -> Path:
        return self.home / ".codex"

    def configure(self, extra: str = "") -> None:
        self.codex_home.mkdir(parents=True, exist_ok=True)
        config = self.codex_home / "config.toml"
        existing = config.read_text() if config.exists() else ""
        head = (
            'model = "gpt-5"\nmodel_provider = "fake"\n'
            f'[model_providers.fake]\nname = "fake"\nbase_url = "{self.server.url}/v1"\n'
            'wire_api = "responses"\nenv_key = "FAKE_MODEL_KEY"\n'
        )
        config.write_text(head + existing + extra)

    def env(self) -> dict[str, str]:
        env = base_env(self.home)
        env.update(CODEX_HOME=str(self.codex_home), FAKE_MODEL_KEY="test-key")
        env.update(self.extra_env)
        return env

    def turn(self, prompt: str, resume: str | None = None) -> Turn:
        args = [
            str(agent_binary("codex")),
            "exec",
            "--skip-git-repo-check",
            "--dangerously-bypass-hook-trust",
            "--json",
        ]
        args += ["resume", resume, prompt] if resume else ["--trust", prompt]
        done = subprocess.run(
            args,
            cwd=self.project,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=TURN_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
        match = re.search(r'"thread_id"\s*:\s*"([^"]+)"', done.stdout)
        return Turn(match.group(1) if match else resume or "", done.returncode, done.stdout, done.stderr)


def request_text(body: dict) -> str:
    """Every text of a recorded request, joined: what the model was sent."""
    out: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(body.get("system"))
    walk(body.get("messages"))
    walk(body.get("instructions"))
    walk(body.get("input"))
    return "\n".join(out)
