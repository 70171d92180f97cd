"""Claude Code (verified with 2.1.328).

Checked against https://code.claude.com/docs/en/hooks (hook input, the
``hookSpecificOutput.additionalContext`` output, SessionStart sources) and the
binary (``tests/real_agents``, ``docs/hosts.md``):

- stdin: ``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name``,
  ``source`` (SessionStart), ``prompt`` (UserPromptSubmit).
- ``additionalContext`` reaches the model as a system message
  ``UserPromptSubmit hook additional context: TEXT``; printing nothing adds nothing.
- Output over 10,000 characters (JavaScript string length) is replaced by a
  2 KB preview and a path under ``~/.claude``; exactly 10,000 passes whole.
- It loads ``AGENTS.md`` and ``CLAUDE.md`` into every session itself, and after
  an edit appends a whole new copy at the next turn.
- Hooks are read from ``<project>/.claude/settings.json`` (committed),
  ``<project>/.claude/settings.local.json`` (personal, git-ignored) and
  ``~/.claude/settings.json`` (``CLAUDE_CONFIG_DIR`` moves that folder); all run.
- Its transcript lines carry ``"version": "2.1.328"``.
- It writes a resumed turn's SessionStart output to the transcript only after
  the prompt's UserPromptSubmit hook ran.
- ``claude --resume ID --fork-session`` starts a new session id with
  SessionStart ``fork``; its hook input does not name the parent, and in
  ``-p`` mode its transcript (a copy of the parent's lines, each assistant
  line keeping its ``requestSessionId``) is written only after the first turn;
  the ``claude`` process the hooks run under has the parent's id in its
  arguments.
- At the start of a conversation it adds its own git status, "a snapshot in
  time" that "will not update during the conversation". The setting
  ``"includeGitInstructions": false`` (``CLAUDE_CODE_DISABLE_GIT_INSTRUCTIONS``)
  leaves it out, with the built-in commit and pull-request instructions
  (read in the 2.1.328 binary: the git status is fetched only when
  ``includeGitInstructions`` is not false; checked with the binary in
  ``tests/real_agents``).
- What a hook added for the model is a line of its own:
  ``{"type": "attachment", "attachment": {"type": "hook_additional_context",
  "content": ["TEXT"], "hookEvent": "SessionStart", …}}``; tool results are
  ``"type": "user"`` lines, never attachments.
- ``claude -p /compact`` summarises, runs SessionStart ``compact`` and only
  then writes the ``"subtype":"compact_boundary"`` line; the history after it
  is the summary alone. Automatic compaction (usage over
  ``CLAUDE_CODE_AUTO_COMPACT_WINDOW``) happens after a turn's ``resume`` and
  ``UserPromptSubmit`` hooks, then runs ``compact``. ``claude -p /clear``
  starts a new session id with SessionStart ``clear``.
- GitHub Copilot CLI runs this file's hooks too (with ``COPILOT_CLI=1``) and
  drops their output: there the hook prints nothing
  (:func:`nia_core.agents.copilot.under_copilot`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from nia_core.agents.contract import HookInput, HostAdapter, NativeFiles, SettingsPlaces, characters
from nia_core.agents.copilot import under_copilot
from nia_core.agents.transcript import Transcript, version_field


def hook_outputs(line: Mapping[str, Any]) -> list[str]:
    """The hook texts one transcript line records (``hook_additional_context`` attachments)."""
    attachment = line.get("attachment")
    if line.get("type") != "attachment" or not isinstance(attachment, dict):
        return []
    content = attachment.get("content")
    if attachment.get("type") != "hook_additional_context" or not isinstance(content, list):
        return []
    return [text for text in content if isinstance(text, str)]


def fork_parent(hook: HookInput) -> str | None:
    """The session a fork (``--fork-session``) copies: its transcript says, else the command line that forked it.

    The fork's transcript copies the parent's lines, and each assistant line
    keeps the ``requestSessionId`` of the session that asked for it: the last
    one that is not the fork's own is the parent. In ``-p`` mode the
    transcript is written only after the fork's first turn, but the hooks run
    under the ``claude`` process whose arguments name it
    (``--resume ID --fork-session``): :func:`caller` read them.
    """
    transcript = Transcript.open(hook.transcript_path)
    if transcript is not None:
        found = None
        for line in transcript.outputs('"requestSessionId"', _request_session, whole=True):
            if line != hook.session_id:
                found = line
        if found:
            return found
    return hook.caller.get("fork_of") or None


def caller(parent: int) -> dict[str, str]:
    """What the ``claude`` process the hook runs under (the hook's ``parent``, or above it) says about itself:
    the session it forks, if any."""
    fork_of = _forked_by_command_line(parent)
    return {"fork_of": fork_of} if fork_of else {}


def _request_session(line: Mapping[str, Any]) -> list[str]:
    value = line.get("requestSessionId")
    return [value] if line.get("type") == "assistant" and isinstance(value, str) and value else []


def _forked_by_command_line(pid: int, levels: int = 3) -> str | None:
    """The ``--resume`` id of the ``claude --fork-session`` process this hook runs under (Linux), else ``None``.

    Claude Code runs a hook command through ``/bin/sh -c``: the first process
    up the chain that is not a shell is the agent, and the walk stops there. ``pid``: the hook process's parent.
    """
    for _ in range(levels):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                argv = [a.decode("utf-8", "replace") for a in handle.read(64 * 1024).split(b"\0")]
        except OSError:
            return None
        if os.path.basename(argv[0]) not in _SHELLS:
            break
        try:
            with open(f"/proc/{pid}/status", "rb") as handle:
                pid = next((int(x.split()[1]) for x in handle.read(8192).splitlines() if x.startswith(b"PPid:")), 0)
        except (OSError, ValueError):
            return None
        if pid <= 1:
            return None
    else:
        return None
    if "--fork-session" not in argv:
        return None
    for index, arg in enumerate(argv):
        if arg in ("--resume", "-r") and index + 1 < len(argv) and not argv[index + 1].startswith("-"):
            return argv[index + 1]
        if arg.startswith("--resume="):
            return arg.split("=", 1)[1] or None
    return None


_SHELLS = ("sh", "bash", "dash", "zsh", "ksh", "fish")


ADAPTER = HostAdapter(
    name="claude-code",
    title="Claude Code",
    output_limit=10_000,
    measure=characters,
    unit="characters",
    native=(
        NativeFiles(
            since=(2, 0, 0),
            names=("AGENTS.md", "CLAUDE.md"),
            source_keys=("nia/instructions",),
        ),
    ),
    host_version=lambda path: version_field(path, "version"),
    settings=SettingsPlaces(
        project=(".claude", "settings.json"),
        user_folder=("CLAUDE_CONFIG_DIR", ".claude"),
        user=("settings.json",),
        local=(".claude", "settings.local.json"),
    ),
    compaction='"subtype":"compact_boundary"',
    compaction_recorded_first=False,
    start_recorded_late=True,
    fork_parent=fork_parent,
    fork_recorded_late=True,
    caller=caller,
    git_snapshot_off={"includeGitInstructions": False},
    git_snapshot_note="it also leaves out Claude Code's built-in commit and pull-request instructions",
    output_marker='"hook_additional_context"',
    hook_outputs=hook_outputs,
    foreign=under_copilot,
)
