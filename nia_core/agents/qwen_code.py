"""Qwen Code (verified with 0.24.4).

Checked against the hook documentation its package carries
(``bundled/qc-helper/docs/features/hooks.md``) and its bundled source, then the
binary (``tests/real_agents/test_qwen_code.py``, docs/hosts.md):

- Claude Code's hook format in ``<project>/.qwen/settings.json`` and
  ``~/.qwen/settings.json`` (``QWEN_HOME`` moves that folder); ``timeout`` in
  seconds. Project hooks run without any trust step (folder trust is off
  unless the user turns on ``security.folderTrust.enabled``). It does not
  read ``.claude/settings.json``. There is no personal project scope.
- nia answers ``UserPromptSubmit``: its ``hookSpecificOutput.additionalContext``
  becomes a text part after the prompt,
  ``<qwen:user-prompt-submit-context>\\nTEXT\\n</qwen:user-prompt-submit-context>``,
  stored and re-sent on resume. Not ``SessionStart``: its text goes to the end
  of the system message and is replaced at every process start.
- Before the model sees it, Qwen turns ``<`` and ``>`` in the text into
  ``&lt;`` and ``&gt;`` (``&`` stays); several hooks' texts are joined by a newline.
- stdin: ``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name``,
  ``timestamp``, ``permission_mode``, ``prompt_id``, ``prompt``.
- It loads ``QWEN.md`` and ``AGENTS.md`` into the system message itself (not
  ``CLAUDE.md``).
- The session is a JSON-lines file (``transcript_path``,
  ``~/.qwen/projects/<project>/chats/<session id>.jsonl``) whose lines carry
  ``"version": "0.24.4"``. A prompt is ``{"type": "user", "message": {"parts":
  [...]}, "systemPayload": {"displayText": PROMPT, "hookContext": TEXT}}``, the
  hook's text (escaped) in ``hookContext``; tool results are ``"type":
  "tool_result"`` lines. A compression (``/compress``, or automatic near the
  model's window) is a ``"subtype":"chat_compression"`` line whose
  ``systemPayload.compressedHistory`` is the history from then on: a summary
  and the newest turns, with their hook parts.
- ``/clear`` starts a new session id.
- Size: 100,000 characters arrived whole; at 2 x 1,000,000 Qwen sent no
  request and failed the turn ("Context is too large to send safely", exit 1):
  the model's window is the limit. nia keeps to :data:`LIMIT` of Qwen's own
  token estimate.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nia_core.agents.contract import PROMPT, HookFormat, HostAdapter, NativeFiles, SettingsPlaces, escape_angles
from nia_core.agents.transcript import version_field

OPEN, CLOSE = "<qwen:user-prompt-submit-context>\n", "\n</qwen:user-prompt-submit-context>"

LIMIT = 25_000
"""Tokens (Qwen's estimate) nia prints at one prompt: an eighth of the 200,000 Qwen assumes for a model it does
not know, so its text, re-sent with every later request, never fails a turn; the rest goes to the spill file."""


def tokens(text: str) -> int:
    """Qwen Code's own estimate (``services/tokenEstimation.ts``): a quarter token an ASCII character, 1.5 another."""
    ascii_chars = sum(1 for ch in text if ord(ch) < 128)
    wide = sum(2 if ord(ch) > 0xFFFF else 1 for ch in text if ord(ch) >= 128)  # JavaScript counts UTF-16 units
    return math.ceil(ascii_chars / 4 + wide * 1.5)


def _hook_part(content: Mapping[str, Any]) -> list[str]:
    """The hook text of one user turn of a compressed history: its last part, after the prompt, wrapped by Qwen.

    Qwen's own test (``isUserPromptSubmitContextPartText``): the whole
    trimmed part is the opening line, the text, the closing line, and the
    text holds neither tag.
    """
    parts = content.get("parts")
    if content.get("role") != "user" or not isinstance(parts, list) or len(parts) < 2:
        return []
    last = parts[-1]
    text = last.get("text") if isinstance(last, dict) else None
    if not isinstance(text, str):
        return []
    text = text.strip()
    if not (text.startswith(OPEN) and text.endswith(CLOSE)):
        return []
    body = text[len(OPEN) : -len(CLOSE)]
    return [] if OPEN.strip() in body or CLOSE.strip() in body else [body]


def hook_outputs(line: Mapping[str, Any]) -> list[str]:
    """The hook texts one session line records: a prompt's ``hookContext``, or those a compression kept."""
    payload = line.get("systemPayload")
    if not isinstance(payload, dict):
        return []
    if line.get("type") == "user":
        text = payload.get("hookContext")
        return [text] if isinstance(text, str) and text else []
    history = payload.get("compressedHistory")
    if line.get("type") != "system" or line.get("subtype") != "chat_compression" or not isinstance(history, list):
        return []
    return [text for content in history if isinstance(content, dict) for text in _hook_part(content)]


def trusted(hooks_path: Path, data: Mapping[str, Any], problems: list[str]) -> list[str]:
    """nia's events in ``hooks_path`` that Qwen runs: all, unless the user turned folder trust on
    (``security.folderTrust.enabled`` in ``~/.qwen/settings.json``) and has not trusted the project.

    The decisions are in ``~/.qwen/trustedFolders.json`` (``QWEN_CODE_TRUSTED_FOLDERS_PATH``
    moves it), in Gemini CLI's format (:mod:`nia_core.agents.gemini_settings`).
    """
    from nia_core.agents.gemini_settings import is_trusted, record_file
    from nia_core.agents.hook_install import installed_events, user_file
    from nia_core.agents.settings_file import SettingsError, parse_json_object

    events = installed_events(ADAPTER, data)
    settings = user_file(ADAPTER, *ADAPTER.settings.user)
    if hooks_path == settings.path:
        return events
    try:
        text = settings.read_text()
        mine = parse_json_object(text, str(settings.path)) if text and text.strip() else {}
    except SettingsError as exc:
        problems.append(str(exc))
        mine = {}
    security = mine.get("security")
    trust = security.get("folderTrust") if isinstance(security, dict) else None
    if not (isinstance(trust, dict) and trust.get("enabled") is True):
        return events
    record = record_file("QWEN_CODE_TRUSTED_FOLDERS_PATH", user_file(ADAPTER, "trustedFolders.json"))
    return events if is_trusted(record, hooks_path.parent.parent, problems) else []


def instruction_files(root: Path) -> tuple[str, ...]:
    """The context files Qwen Code loads in the project at ``root``: ``context.fileName`` of the user's,
    then the project's settings (:mod:`nia_core.agents.gemini_settings`), by default ``QWEN.md`` and ``AGENTS.md``."""
    from nia_core.agents.gemini_settings import context_files, settings_files

    return context_files(settings_files(ADAPTER.settings, root), ("QWEN.md", "AGENTS.md"))


ADAPTER = HostAdapter(
    name="qwen-code",
    title="Qwen Code",
    output_limit=LIMIT,
    measure=tokens,
    unit="tokens",
    native=(
        NativeFiles(
            since=(0, 0, 0),
            names=("AGENTS.md",),
            source_keys=("nia/instructions",),
        ),
    ),
    instruction_files=instruction_files,
    host_version=lambda path: version_field(path, "version"),
    settings=SettingsPlaces(
        project=(".qwen", "settings.json"),
        user_folder=("QWEN_HOME", ".qwen"),
        user=("settings.json",),
    ),
    events={"UserPromptSubmit": PROMPT},
    # Qwen Code 0.24.4 writes `"$version": 4` (its SETTINGS_VERSION) into every settings file it loads
    # without one, the project's included: a file nia created without it was modified at Qwen's first start.
    format=HookFormat(created={"$version": 4}),
    fresh=(),
    trusted=trusted,
    trust_said=(
        "Qwen runs them here (folder trust is off, or this folder is trusted)",
        "folder NOT trusted (folder trust is on): trust it in `qwen`, or nia's hooks never run",
    ),
    compaction='"subtype":"chat_compression"',
    output_marker=OPEN.strip(),
    hook_outputs=hook_outputs,
    recorded=escape_angles,
    joins="\n",
)
