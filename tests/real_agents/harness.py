"""Running the real agents offline, for end-to-end tests of nia's hooks (and of ``nia mcp`` later).

- :func:`agent_binary` finds ``claude`` / ``codex`` under ``$NIA_AGENTS_DIR``
  (``.ci/agents.sh`` installs the pinned versions there and prints the export
  line). Without them a test skips with one line, unless ``NIA_REQUIRE_AGENTS=1``
  (CI) turns the skip into a failure.
- :class:`~tests.real_agents.fakemodel.FakeModel` is the loopback model server that
  records every request.
- :class:`ClaudeCode`, :class:`Codex`, :class:`GeminiCli`, :class:`QwenCode`,
  :class:`OpenCode` and :class:`Copilot` run one non-interactive turn each,
  with a temporary ``HOME`` (and ``CODEX_HOME``) so nothing of the machine's
  own configuration, login or history is read or written.
- :class:`CodexAppServer` drives ``codex app-server`` over stdio (JSON-RPC), the
  server Codex's own terminal UI talks to: one long-lived session, and the
  requests behind ``/clear`` and ``/compact`` that ``codex exec`` has no way to make.
"""

from __future__ import annotations

import json
import os
import pwd
import queue
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.real_agents.fakemodel import FakeModel
from tests.resident_helpers import agent_turn

CLAUDE_CODE_VERSION = "2.1.328"
CODEX_VERSION = "0.169.0"
GEMINI_CLI_VERSION = "0.61.0"
OPENCODE_VERSION = "1.18.33"
COPILOT_VERSION = "1.0.102"
QWEN_CODE_VERSION = "0.24.4"
TURN_TIMEOUT = 120
"""Seconds one agent turn may take (a few seconds normally; generous for a loaded CI machine)."""

_REAL_HOME = os.environ.get("HOME") or pwd.getpwuid(os.getuid()).pw_dir
"""``$HOME`` as this module is imported (at collection): each test then runs with HOME at a temporary folder.
``.ci/agents.sh`` installs into ``$HOME/.cache/nia-agents``, which is not the passwd home where HOME is set."""


def agents_dir() -> Path:
    return Path(os.environ.get("NIA_AGENTS_DIR") or os.path.join(_REAL_HOME, ".cache", "nia-agents"))


def agent_binary(name: str) -> Path:
    """The installed agent's executable, or skip (fail under ``NIA_REQUIRE_AGENTS=1``) with one line why."""
    path = agents_dir() / "node_modules" / ".bin" / name
    if path.exists() and os.access(path, os.X_OK):
        return path
    where = "NIA_AGENTS_DIR" if os.environ.get("NIA_AGENTS_DIR") else "$HOME/.cache/nia-agents"
    reason = (
        f'{name} is not installed in {agents_dir()} ({where}; install the agents with: eval "$(bash .ci/agents.sh)")'
    )
    if os.environ.get("NIA_REQUIRE_AGENTS") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


def nia_program() -> str:
    """The ``nia`` script of the interpreter running the tests: what the hooks must run."""
    script = Path(sys.executable).parent / "nia"
    return str(script) if script.exists() else "nia"


def base_env(home: Path) -> dict[str, str]:
    """A clean environment: the test's nia data folders, a temporary HOME, no inherited agent settings."""
    keep = ("PATH", "LANG", "LC_ALL", "TMPDIR", "NIA_DB", "NIA_HOOK_LOG", "NIA_HOOK_DEADLINE", "NIA_RESIDENT")
    keep += ("NIA_RESIDENT_IDLE",)
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

    def turn(self, prompt: str, resume: str | None = None, fork: bool = False) -> Turn:
        """One ``-p`` turn; ``resume``: continue that session (``fork``: as a new one, ``--fork-session``)."""
        args = [str(agent_binary("claude")), "-p", prompt, "--output-format", "json"]
        if resume:
            args += ["--resume", resume]
        if fork:
            args.append("--fork-session")
        with agent_turn(self.env()):
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
        return Turn(session or ("" if fork else resume) or "", done.returncode, done.stdout, done.stderr)


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

    def configure(self, extra: str = "", top: str = "") -> None:
        """The fake provider in ``config.toml``; ``top``: more top-level keys, ``extra``: more tables."""
        self.codex_home.mkdir(parents=True, exist_ok=True)
        config = self.codex_home / "config.toml"
        existing = config.read_text() if config.exists() else ""
        head = (
            f'model = "gpt-5"\nmodel_provider = "fake"\n{top}'
            f'[model_providers.fake]\nname = "fake"\nbase_url = "{self.server.url}/v1"\n'
            'wire_api = "responses"\nenv_key = "FAKE_MODEL_KEY"\n'
        )
        config.write_text(head + existing + extra)

    def env(self) -> dict[str, str]:
        env = base_env(self.home)
        env.update(CODEX_HOME=str(self.codex_home), FAKE_MODEL_KEY="test-key")
        env.update(self.extra_env)
        return env

    def turn(self, prompt: str, resume: str | None = None, fork: bool = False) -> Turn:
        """One ``codex exec`` turn; ``resume``: continue that thread (``fork``: ``codex exec fork``, a new thread)."""
        args = [
            str(agent_binary("codex")),
            "exec",
            "--skip-git-repo-check",
            "--dangerously-bypass-hook-trust",
            "--json",
        ]
        if resume:
            args += ["fork" if fork else "resume", resume, prompt]
        else:
            args += ["--trust", prompt]
        with agent_turn(self.env()):
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
        fallback = "" if fork else resume or ""
        return Turn(match.group(1) if match else fallback, done.returncode, done.stdout, done.stderr)


def _json_turn(binary: str, args: list[str], project: Path, env: dict[str, str], key: str, resume: str | None) -> Turn:
    """Run one ``-p`` turn of a JSON-printing agent; the session id is ``key`` in its (first) JSON object."""
    done = subprocess.run(
        [str(agent_binary(binary)), *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=TURN_TIMEOUT,
        stdin=subprocess.DEVNULL,
    )
    session = ""
    try:
        result = json.loads(done.stdout)
        first = result[0] if isinstance(result, list) and result else result
        session = str(first.get(key, "")) if isinstance(first, dict) else ""
    except ValueError:
        pass
    return Turn(session or resume or "", done.returncode, done.stdout, done.stderr)


@dataclass
class GeminiCli:
    """Gemini CLI in ``-p`` mode against the fake model server (the Gemini API), with a temporary ``HOME``.

    ``~/.gemini/settings.json`` picks API-key auth (a base URL alone selects a
    gateway auth that ``-p`` refuses) and turns usage statistics off (else it
    calls Google). The project is trusted per run through
    ``GEMINI_CLI_TRUST_WORKSPACE=true``, which records nothing: trusting a
    folder is the user's consent, which nia never writes (see docs/hosts.md).
    ``settings`` adds members to that file (``{"model": {"compressionThreshold": 0.1}}``).
    """

    project: Path
    home: Path
    server: FakeModel
    extra_env: dict[str, str] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    trusted: bool = True

    def env(self) -> dict[str, str]:
        env = base_env(self.home)
        env.update(GOOGLE_GEMINI_BASE_URL=self.server.url, GEMINI_API_KEY="test-key", NO_COLOR="1")
        if self.trusted:
            env["GEMINI_CLI_TRUST_WORKSPACE"] = "true"
        env.update(self.extra_env)
        return env

    def configure(self) -> None:
        folder = self.home / ".gemini"
        folder.mkdir(parents=True, exist_ok=True)
        settings = {
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "privacy": {"usageStatisticsEnabled": False},
            **self.settings,
        }
        (folder / "settings.json").write_text(json.dumps(settings))

    def turn(self, prompt: str, resume: str | None = None) -> Turn:
        self.configure()
        args = ["-p", prompt, "--output-format", "json", *(["-r", resume] if resume else [])]
        return _json_turn("gemini", args, self.project, self.env(), "session_id", resume)

    def transcripts(self) -> list[Path]:
        """Its session files (``~/.gemini/tmp/<project>/chats/session-*.jsonl``), oldest first."""
        return sorted(self.home.glob(".gemini/tmp/*/chats/session-*.jsonl"), key=lambda p: p.stat().st_mtime)


@dataclass
class QwenCode:
    """Qwen Code in ``-p`` mode against the fake model server (OpenAI chat completions), with a temporary ``HOME``.

    Its background memory extraction (a second request after every turn) is
    turned off so the recorded requests are the conversation's own.
    ``settings`` adds members to ``~/.qwen/settings.json``.
    """

    project: Path
    home: Path
    server: FakeModel
    extra_env: dict[str, str] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)

    def env(self) -> dict[str, str]:
        env = base_env(self.home)
        env.update(
            OPENAI_BASE_URL=f"{self.server.url}/v1",
            OPENAI_API_KEY="test-key",
            OPENAI_MODEL="fake-model",
            NO_COLOR="1",
        )
        env.update(self.extra_env)
        return env

    def configure(self) -> None:
        folder = self.home / ".qwen"
        folder.mkdir(parents=True, exist_ok=True)
        settings = {
            "security": {"auth": {"selectedType": "openai"}},
            "model": {"name": "fake-model"},
            "privacy": {"usageStatisticsEnabled": False},
            "memory": {"enableManagedAutoMemory": False},
            **self.settings,
        }
        (folder / "settings.json").write_text(json.dumps(settings))

    def turn(self, prompt: str, resume: str | None = None) -> Turn:
        self.configure()
        args = ["-p", prompt, "--output-format", "json", *(["--resume", resume] if resume else [])]
        return _json_turn("qwen", args, self.project, self.env(), "session_id", resume)

    def transcripts(self) -> list[Path]:
        """Its session files (``~/.qwen/projects/<project>/chats/<session id>.jsonl``)."""
        return sorted(self.home.glob(".qwen/projects/*/chats/*.jsonl"), key=lambda p: p.stat().st_mtime)


@dataclass
class OpenCode:
    """``opencode run`` against the fake model server (an OpenAI-compatible provider), with a temporary ``HOME``.

    The provider is configured in OpenCode's global config folder
    (``$XDG_CONFIG_HOME/opencode/opencode.json``), so the project holds only
    what a user's would. OpenCode installs ``@opencode-ai/plugin`` from the
    npm registry into every config folder that has a plugin the first time it
    starts there; ``deps`` is a ``.opencode`` folder where that install was
    done once (``tests/real_agents/conftest.py``): its ``package.json``, lock
    file and ``.gitignore`` are copied and its ``node_modules`` linked into
    each config folder, so OpenCode finds the package installed (its check:
    ``node_modules`` exists and the lock file names every dependency).
    ``context``: the model's context window (a large reported usage then
    makes OpenCode compact).
    """

    project: Path
    home: Path
    server: FakeModel
    deps: Path | None = None
    extra_env: dict[str, str] = field(default_factory=dict)
    context: int | None = None

    def env(self) -> dict[str, str]:
        env = base_env(self.home)
        env.update(OPENCODE_DISABLE_MODELS_FETCH="1", OPENCODE_DISABLE_AUTOUPDATE="1", NO_COLOR="1")
        env.update(self.extra_env)
        return env

    def config_dir(self) -> Path:
        env = self.env()
        return Path(env.get("XDG_CONFIG_HOME") or self.home / ".config") / "opencode"

    def database(self) -> Path:
        env = self.env()
        return Path(env.get("XDG_DATA_HOME") or self.home / ".local" / "share") / "opencode" / "opencode.db"

    def configure(self) -> None:
        model: dict[str, Any] = {"name": "Fake model"}
        if self.context is not None:
            model["limit"] = {"context": self.context, "output": 1000}
        config = {
            "model": "fake/fake-model",
            "provider": {
                "fake": {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": "Fake",
                    "options": {"baseURL": f"{self.server.url}/v1", "apiKey": "test-key"},
                    "models": {"fake-model": model},
                }
            },
        }
        folder = self.config_dir()
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "opencode.json").write_text(json.dumps(config))
        for target in (folder, self.project / ".opencode"):
            if self.deps is not None and target.is_dir() and not (target / "node_modules").exists():
                for name in ("package.json", "package-lock.json", ".gitignore"):
                    if (self.deps / name).exists() and not (target / name).exists():
                        (target / name).write_bytes((self.deps / name).read_bytes())
                (target / "node_modules").symlink_to(self.deps / "node_modules")

    def turn(self, prompt: str, session: str | None = None, fork: bool = False) -> Turn:
        """One ``opencode run``; ``session``: continue it (``fork``: as a copy, ``--fork``)."""
        self.configure()
        args = [str(agent_binary("opencode")), "run", prompt, "--format", "json"]
        if session:
            args += ["-s", session, *(["--fork"] if fork else [])]
        done = subprocess.run(
            args,
            cwd=self.project,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=TURN_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
        match = re.search(r'"sessionID"\s*:\s*"([^"]+)"', done.stdout)
        found = match.group(1) if match else "" if fork else session or ""
        return Turn(found, done.returncode, done.stdout, done.stderr)


@dataclass
class Copilot:
    """GitHub Copilot CLI in ``-p`` mode against the fake model server (BYOK chat completions, offline).

    ``COPILOT_CACHE_HOME`` is shared by the tests of a run (``cache``): Copilot
    unpacks its runtime there on its first start. ``trust`` writes the folder
    into ``trustedFolders`` of ``~/.copilot/config.json``, as Copilot does when
    the user trusts it (the test stands in for the user; nia never writes it).
    """

    project: Path
    home: Path
    server: FakeModel
    cache: Path | None = None
    extra_env: dict[str, str] = field(default_factory=dict)

    def env(self) -> dict[str, str]:
        env = base_env(self.home)
        env.update(
            COPILOT_OFFLINE="true",
            COPILOT_PROVIDER_BASE_URL=f"{self.server.url}/v1",
            COPILOT_PROVIDER_API_KEY="test-key",
            COPILOT_AUTO_UPDATE="false",
            NO_COLOR="1",
        )
        if self.cache is not None:
            env["COPILOT_CACHE_HOME"] = str(self.cache)
        env.update(self.extra_env)
        return env

    def trust(self, folder: Path | None = None) -> None:
        config = self.home / ".copilot" / "config.json"
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(json.dumps({"trustedFolders": [str(folder or self.project)]}))

    def events(self, session: str) -> Path:
        return self.home / ".copilot" / "session-state" / session / "events.jsonl"

    def turn(self, prompt: str, resume: str | None = None) -> Turn:
        args = [str(agent_binary("copilot")), "-p", prompt, "--model", "gpt-4o", "--output-format", "json"]
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
        found = re.findall(r'"sessionId"\s*:\s*"([^"]+)"', done.stdout)
        return Turn(found[-1] if found else resume or "", done.returncode, done.stdout, done.stderr)


class CodexAppServer:
    """``codex app-server`` on stdio, as Codex's terminal UI uses it (codex-rs ``tui/src/app``).

    ``/clear`` in the UI is ``thread/start`` with ``sessionStartSource: "clear"``
    (a new thread), ``/compact`` is ``thread/compact/start``. Hooks run without
    the trust review through the thread's ``bypass_hook_trust`` setting, the
    app-server's form of ``codex exec --dangerously-bypass-hook-trust``.
    ``with CodexAppServer(codex) as app:`` starts it in the agent's project.
    """

    def __init__(self, agent: Codex) -> None:
        self.agent = agent
        self._next = 0
        self._inbox: queue.Queue[dict[str, Any]] = queue.Queue()
        self._process: subprocess.Popen[str] | None = None
        self.stderr = ""
        self.notes: list[str] = []
        """The methods of every message received, in order (for failure messages)."""

    def __enter__(self) -> CodexAppServer:
        self._process = subprocess.Popen(
            [str(agent_binary("codex")), "app-server"],
            cwd=self.agent.project,
            env=self.agent.env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain_stderr, daemon=True).start()
        self.request("initialize", {"clientInfo": {"name": "nia-tests", "version": "0"}})
        self._send({"jsonrpc": "2.0", "method": "initialized"})
        return self

    def __exit__(self, *exc: object) -> None:
        process = self._process
        if process is None:
            return
        if process.stdin:
            process.stdin.close()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def _read(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        for line in self._process.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict):
                self._inbox.put(message)

    def _drain_stderr(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        for line in self._process.stderr:
            self.stderr = (self.stderr + line)[-4000:]

    def _send(self, message: dict[str, Any]) -> None:
        assert self._process is not None and self._process.stdin is not None
        self._process.stdin.write(json.dumps(message) + "\n")
        self._process.stdin.flush()

    def request(self, method: str, params: dict[str, Any], until: str | None = None) -> dict[str, Any]:
        """Send one request; its result, after the notification ``until`` when given."""
        self._next += 1
        ident = self._next
        self._send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
        deadline = time.monotonic() + TURN_TIMEOUT
        result: dict[str, Any] | None = None
        seen = until is None
        while time.monotonic() < deadline:
            try:
                message = self._inbox.get(timeout=1)
            except queue.Empty:
                continue
            self.notes.append(str(message.get("method", "")))
            if message.get("id") == ident and "method" not in message:
                if "error" in message:
                    raise AssertionError(f"codex app-server {method}: {message['error']}")
                result = message.get("result") or {}
            elif message.get("method") == until:
                seen = True
            if result is not None and seen:
                return result
        raise AssertionError(
            f"codex app-server gave no answer to {method} in {TURN_TIMEOUT}s; it sent {self.notes[-30:]}; "
            f"stderr: {self.stderr[-2000:]}"
        )

    def start_thread(self, source: str = "startup") -> str:
        """A new thread (``source="clear"``: what ``/clear`` starts); its id, the hooks' ``session_id``."""
        params = {"cwd": str(self.agent.project), "sessionStartSource": source, "config": {"bypass_hook_trust": True}}
        with agent_turn(self.agent.env()):
            return str(self.request("thread/start", params)["thread"]["id"])

    def turn(self, thread: str, prompt: str) -> None:
        """One user turn, until Codex says it completed."""
        with agent_turn(self.agent.env()):
            self.request(
                "turn/start", {"threadId": thread, "input": [{"type": "text", "text": prompt}]}, "turn/completed"
            )

    def compact(self, thread: str) -> None:
        """``/compact``: summarise the thread now (Codex runs it as a turn of its own)."""
        with agent_turn(self.agent.env()):
            self.request("thread/compact/start", {"threadId": thread}, "turn/completed")


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
    walk(body.get("systemInstruction"))
    walk(body.get("contents"))
    return "\n".join(out)
