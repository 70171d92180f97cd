"""GitHub Copilot CLI (verified with 1.0.102).

Checked against ``copilot help environment`` / ``help config``, the session
event schema its package ships (``copilot-sdk/generated/session-events.d.ts``)
and the binary, driven offline (``tests/real_agents/test_copilot.py``,
docs/hosts.md):

- Hooks are read from ``<project>/.github/hooks/*.json`` and
  ``$COPILOT_HOME/hooks/*.json`` (default ``~/.copilot``), in the form
  ``{"version": 1, "hooks": {"userPromptSubmitted": [{"type": "command",
  "bash": …, "timeoutSec": …}]}}``. A project's hooks run only in a trusted
  folder (the folder or one above it in ``trustedFolders`` of
  ``$COPILOT_HOME/config.json``, which Copilot writes when the user trusts
  it; or ``COPILOT_ALLOW_ALL=true``); otherwise they are skipped without a
  word. User hooks run everywhere. There is no personal project scope.
- nia answers ``userPromptSubmitted``, which runs before every prompt. Its
  stdin is ``{"sessionId", "timestamp", "cwd", "prompt"}``: no event name,
  no transcript path. The answer must be JSON with a top-level
  ``additionalContext``; Copilot appends it to the user's message as
  ``\\n\\n<system_reminder>\\nTEXT\\n</system_reminder>``, unescaped, and the
  message is stored and re-sent as it was. With several such hooks only the
  last one that printed a context reaches the model. Not ``sessionStart``:
  its text is a message that is not stored, replaced at every process start,
  and it runs at the same time as ``userPromptSubmitted``. Every hook of one
  prompt gets the same ``timestamp`` (epoch milliseconds), the next prompt
  another: that is how nia knows two of its hooks answer one prompt (:func:`turn`).
- Copilot also runs the hooks of Claude Code's ``.claude/settings.json`` and
  drops what they print (it accepts only its own shape); it sets
  ``COPILOT_CLI=1`` for every hook (:func:`under_copilot`).
- The session is ``$COPILOT_HOME/session-state/<sessionId>/events.jsonl``:
  one event per line; the prompt is a ``user.message`` event whose
  ``transformedContent`` is what the model got (date, prompt, the hook's
  reminder). ``/compact`` (also in ``-p`` mode) and automatic compaction
  write ``session.compaction_complete`` (``data.success``), after which the
  model sees a summary and the user prompts without their reminders;
  ``session.context_cleared`` and ``session.truncation`` also drop earlier
  messages.
- It loads ``.github/copilot-instructions.md``, ``AGENTS.md`` and
  ``CLAUDE.md`` into its system message itself.
- Size: 2 x 100,000 characters of hook text reached the model whole; at
  2 x 1,000,000 Copilot sent nothing ("Request exceeds the model's prompt
  budget", 64,000 tokens for a BYOK gpt-4o). Copilot sets no limit of its own
  below its prompt budget, so nia keeps to :data:`LIMIT`.
- It names its version to hooks in ``COPILOT_CLI_BINARY_VERSION``.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nia_core.agents.contract import (
    PROMPT,
    HookFormat,
    HookInput,
    HostAdapter,
    InputKeys,
    NativeFiles,
    SettingsPlaces,
    characters,
)
from nia_core.agents.transcript import Transcript

NAME = "copilot"

LIMIT = 10_000
"""Characters nia prints at one prompt: what Claude Code and Codex pass whole. Copilot itself passes much more, but
its BYOK prompt budget is 64,000 tokens of which its system prompt and tools take some 11,000, and a hook's text is
re-sent with every later request; the rest of a longer text goes to the spill file."""

COMPACTION = r'"type":"session\.(?:compaction_complete|context_cleared|truncation)"'
"""The events after which the model no longer sees earlier hook reminders."""

_SESSION_ID = re.compile(r"[0-9A-Za-z][0-9A-Za-z-]{0,127}")
_DATETIME = re.compile(r"<current_datetime>[^<]{0,80}</current_datetime>\n\n")
_REMINDER = re.compile(r"\n\n<system_reminder>\n(.*)\n</system_reminder>", re.DOTALL)


def home() -> Path:
    """Copilot's folder for configuration and state: ``COPILOT_HOME``, else ``~/.copilot``."""
    return Path(os.environ.get("COPILOT_HOME") or Path.home() / ".copilot")


def events_path(hook: HookInput) -> str | None:
    """The session's event log; ``None`` for a session id that is not one (it must not name another file)."""
    if not _SESSION_ID.fullmatch(hook.session_id):
        return None
    return str(home() / "session-state" / hook.session_id / "events.jsonl")


def turn(hook: HookInput) -> str:
    """The prompt a hook answers: Copilot's ``timestamp`` of it, which all its hooks of that prompt share."""
    stamp = hook.raw.get("timestamp")
    if isinstance(stamp, bool) or not isinstance(stamp, int | str) or not str(stamp):
        return ""
    return hashlib.sha256(f"copilot\0{hook.session_id}\0{stamp}".encode("utf-8", "replace")).hexdigest()[:20]


def _drops_history(record: Mapping[str, Any]) -> bool:
    """A compaction that happened (``success``), a cleared context, a truncation: earlier reminders are gone."""
    if record.get("type") != "session.compaction_complete":
        return True
    data = record.get("data")
    return isinstance(data, dict) and data.get("success") is True


def conversation(hook: HookInput) -> Transcript | None:
    return Transcript.open(events_path(hook), COMPACTION, is_record=_drops_history)


def hook_outputs(line: Mapping[str, Any]) -> list[str]:
    """The hook text of one ``user.message`` event: the reminder Copilot appended after the prompt.

    Only the main conversation's messages (a sub-agent's carry ``agentId``),
    and only a reminder right after the prompt the user typed: text the
    prompt itself holds is the user's.
    """
    data = line.get("data")
    if line.get("type") != "user.message" or "agentId" in line or not isinstance(data, dict):
        return []
    prompt, sent = data.get("content"), data.get("transformedContent")
    if not isinstance(prompt, str) or not isinstance(sent, str):
        return []
    dated = _DATETIME.match(sent)
    rest = sent[dated.end() :] if dated else sent
    if not rest.startswith(prompt):
        return []
    reminder = _REMINDER.fullmatch(rest, len(prompt))
    return [reminder.group(1)] if reminder else []


def _version(value: str | None) -> tuple[int, ...] | None:
    match = re.fullmatch(r"(\d+(?:\.\d+)+)", value or "")
    return tuple(int(part) for part in match.group(1).split(".")) if match else None


def under_copilot(hook: HookInput) -> str:
    """For Claude Code's adapter: Copilot runs Claude Code's hooks too, and drops what they print.

    So under Copilot (``COPILOT_CLI=1``) nia's Claude Code hook prints
    nothing and records nothing: nia's ``copilot`` hook is the one that reaches
    Copilot's model, and a second answer from the Claude Code hook would
    either vanish or, if it counted as delivered, hide a text that never arrived.
    """
    if os.environ.get("COPILOT_CLI") != "1":
        return ""
    return (
        "GitHub Copilot CLI runs Claude Code's hooks but drops what they print; nia's Claude Code hook says "
        "nothing there (for Copilot: nia hook install copilot)"
    )


def _strip_comments(text: str) -> str:
    """JSON with ``//`` and ``/* */`` comments (Copilot writes two comment lines atop its ``config.json``) as JSON."""
    return re.sub(r'("(?:[^"\\]|\\.)*")|//[^\n]*|/\*.*?\*/', lambda m: m.group(1) or "", text, flags=re.DOTALL)


def trusted_folders(problems: list[str]) -> list[str]:
    """The folders the user trusted in Copilot (``trustedFolders`` of ``$COPILOT_HOME/config.json``)."""
    from nia_core.agents.settings_file import SettingsError, SettingsFile, parse_json_object

    record = SettingsFile.in_user_folder(home(), "config.json")
    try:
        text = record.read_text()
        data = parse_json_object(_strip_comments(text), str(record.path)) if text and text.strip() else {}
    except SettingsError as exc:
        problems.append(str(exc))
        return []
    folders = data.get("trustedFolders")
    return [f for f in folders if isinstance(f, str) and f] if isinstance(folders, list) else []


def trusted(hooks_path: Path, data: Mapping[str, Any], problems: list[str]) -> list[str]:
    """nia's events in ``hooks_path`` that Copilot runs: a user file's always, a project's in a trusted folder."""
    from nia_core.agents.hook_install import installed_events, user_file

    events = installed_events(ADAPTER, data)
    if hooks_path == user_file(ADAPTER, *ADAPTER.settings.user).path:
        return events
    if os.environ.get("COPILOT_ALLOW_ALL") == "true":
        return events
    project = os.path.realpath(hooks_path.parent.parent.parent)
    for folder in trusted_folders(problems):
        real = os.path.realpath(os.path.expanduser(folder))
        if project == real or project.startswith(real.rstrip(os.sep) + os.sep):
            return events
    return []


ADAPTER = HostAdapter(
    name=NAME,
    title="GitHub Copilot CLI",
    output_limit=LIMIT,
    measure=characters,
    unit="characters",
    native=(
        NativeFiles(
            since=(1, 0, 0),
            names=("AGENTS.md", "CLAUDE.md", ".github/copilot-instructions.md"),
            source_keys=("nia/instructions",),
        ),
    ),
    host_version=lambda path: _version(os.environ.get("COPILOT_CLI_BINARY_VERSION")),
    settings=SettingsPlaces(
        project=(".github", "hooks", "nia.json"),
        user_folder=("COPILOT_HOME", ".copilot"),
        user=("hooks", "nia.json"),
    ),
    events={"userPromptSubmitted": PROMPT},
    turn=turn,
    fresh=(),
    input_keys=InputKeys(event="", session="sessionId", transcript=""),
    output="additionalContext",
    format=HookFormat(nested=False, command_key="bash", timeout_key="timeoutSec", top={"version": 1}),
    notes=(
        "GitHub Copilot CLI runs a project's hooks only in a folder you trusted: start `copilot` here and trust "
        "the folder when it asks (nia never records that consent for you); `nia hook status` says whether it is.",
        "Copilot gives the model only the last userPromptSubmitted hook's additionalContext: keep nia's hook the "
        "only one that prints one.",
    ),
    trusted=trusted,
    trust_said=("folder trusted", "folder NOT trusted: start `copilot` here and trust it, or nia's hooks never run"),
    conversation=conversation,
    compaction=COMPACTION,
    output_marker='"user.message"',
    hook_outputs=hook_outputs,
)
