"""Gemini CLI (verified with 0.61.0).

Checked against the hook documentation its package carries
(``bundle/docs/hooks/index.md``, ``reference.md``) and its bundled source,
then the binary (``tests/real_agents/test_gemini.py``, docs/hosts.md); where
they disagree the binary wins (folder trust is on by default, although the
docs say otherwise):

- nia answers ``BeforeAgent``, which runs before every user turn. Its
  ``hookSpecificOutput.additionalContext`` becomes a text part
  ``<hook_context>TEXT</hook_context>`` after the prompt, in the same user
  turn, stored in the session and re-sent byte for byte on resume. Not
  ``SessionStart``: in ``-p`` mode its text is glued in front of the prompt,
  and a resumed session then drops that whole first turn (Gemini ignores
  stored user messages that begin with ``<hook_context>``); interactively its
  output is not re-sent on resume. Plain stdout reaches nothing.
- Before the model sees a hook's text, Gemini turns ``<`` and ``>`` into
  ``&lt;`` and ``&gt;`` (``&`` and quotes stay), and its system prompt tells the
  model that ``<hook_context>`` holds data, not instructions. The texts of
  several ``BeforeAgent`` hooks are joined by a newline into one part.
- stdin: ``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name``,
  ``timestamp``, ``prompt``.
- Hooks are read from ``<project>/.gemini/settings.json`` and
  ``~/.gemini/settings.json`` (``GEMINI_CLI_HOME`` replaces the home folder);
  a hook's ``timeout`` is in milliseconds. Project hooks run only in a
  trusted folder (an entry in ``~/.gemini/trustedFolders.json`` that Gemini
  writes when the user trusts the folder, or ``GEMINI_CLI_TRUST_WORKSPACE=true``);
  otherwise they are skipped without a word (``-p`` refuses to run at all).
  There is no personal project scope.
- It loads ``GEMINI.md`` (``context.fileName`` names others) into the first
  user turn itself, not ``AGENTS.md``: nia delivers ``AGENTS.md`` there.
- The session is a JSON-lines file (``transcript_path``,
  ``~/.gemini/tmp/<project>/chats/session-*.jsonl``): a line per message
  (``{"id": …, "type": "user", "content": [parts]}``) and ``{"$set": …}``
  updates; ``{"$set": {"messages": [...]}}`` replaces the whole history (at
  every resumed start, and after a compression, which keeps the newest 30%
  of the conversation behind a summary). No line carries Gemini's version.
- ``/clear`` starts a new session id; ``/compress`` and automatic compression
  (``model.compressionThreshold``, half the model's window by default) run
  no hook that can add context (``PreCompress`` output reaches nothing).
- Its ``read_file`` refuses paths its ignore rules match, the project's
  git-ignored ``.nia/hook-output/`` among them; it reads its own project
  folder (``~/.gemini/tmp/<project>/``), so an oversized text is spilled there.
- Size: a ``BeforeAgent`` text of 2 x 1,000,000 characters arrived whole;
  at 2 x 5,000,000 Gemini sent no request and answered nothing (the model's
  window is the limit). nia keeps to :data:`LIMIT` of Gemini's own token
  estimate.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nia_core.agents.contract import PROMPT, HookFormat, HostAdapter, NativeFiles, SettingsPlaces, escape_angles

OPEN, CLOSE = "<hook_context>", "</hook_context>"

LIMIT = 25_000
"""Tokens (Gemini's estimate) nia prints at one prompt: a fortieth of a Gemini model's window, so its text,
which is re-sent with every later request, never crowds out the conversation; the rest goes to the spill file."""


def tokens(text: str) -> int:
    """Gemini CLI's own estimate (``utils/tokenCalculation.js``): a quarter token per ASCII character, 1.5 per other.

    (Over 100,000 characters Gemini counts a quarter token for every
    character; nia keeps the finer count, which is never lower.)
    """
    ascii_chars = sum(1 for ch in text if ord(ch) < 128)
    wide = sum(2 if ord(ch) > 0xFFFF else 1 for ch in text if ord(ch) >= 128)  # JavaScript counts UTF-16 units
    return int(ascii_chars / 4 + wide * 1.5)


def _hook_part(message: Mapping[str, Any]) -> list[str]:
    """The ``BeforeAgent`` text of one stored message: its last part, after the prompt, wrapped by Gemini."""
    content = message.get("content")
    if message.get("type") != "user" or not isinstance(content, list) or len(content) < 2:
        return []
    last = content[-1]
    text = last.get("text") if isinstance(last, dict) else None
    if not isinstance(text, str) or not (text.startswith(OPEN) and text.endswith(CLOSE)):
        return []
    return [text[len(OPEN) : -len(CLOSE)]]


def hook_outputs(line: Mapping[str, Any]) -> list[str]:
    """The hook texts one session line records: a user message's ``<hook_context>`` part, or those a history
    snapshot (``{"$set": {"messages": [...]}}``) kept."""
    if isinstance(line.get("id"), str):
        return _hook_part(line)
    update = line.get("$set")
    messages = update.get("messages") if isinstance(update, dict) else None
    if not isinstance(messages, list):
        return []
    return [text for message in messages if isinstance(message, dict) for text in _hook_part(message)]


def trusted(hooks_path: Path, data: Mapping[str, Any], problems: list[str]) -> list[str]:
    """nia's events in ``hooks_path`` that Gemini runs: all of a user file's; a project's only in a trusted folder.

    Trust is ``GEMINI_CLI_TRUST_WORKSPACE=true`` or the user's decision in
    ``~/.gemini/trustedFolders.json`` (``GEMINI_CLI_TRUSTED_FOLDERS_PATH``
    moves it; :mod:`nia_core.agents.gemini_settings`).
    """
    from nia_core.agents.gemini_settings import is_trusted, record_file
    from nia_core.agents.hook_install import installed_events, user_file

    events = installed_events(ADAPTER, data)
    if hooks_path == user_file(ADAPTER, *ADAPTER.settings.user).path:
        return events
    if os.environ.get("GEMINI_CLI_TRUST_WORKSPACE") == "true":
        return events
    record = record_file("GEMINI_CLI_TRUSTED_FOLDERS_PATH", user_file(ADAPTER, ".gemini", "trustedFolders.json"))
    return events if is_trusted(record, hooks_path.parent.parent, problems) else []


def instruction_files(root: Path) -> tuple[str, ...]:
    """The context files Gemini CLI loads in the project at ``root``: ``context.fileName`` of the user's,
    then the project's settings (:mod:`nia_core.agents.gemini_settings`), by default ``GEMINI.md``."""
    from nia_core.agents.gemini_settings import context_files, settings_files

    return context_files(settings_files(ADAPTER.settings, root), ("GEMINI.md",))


def spill_folder(transcript_path: str | None) -> Path | None:
    """Gemini's own folder for this project (``~/.gemini/tmp/<project>/``, the session file's grandparent).

    Gemini's ``read_file`` refuses every path its ignore rules match
    (``.gitignore`` files, ``.git/info/exclude``: "is ignored by configured
    ignore patterns"), so it cannot read the project's git-ignored
    ``.nia/hook-output/``; it reads this folder, where it keeps its own cut
    tool outputs (measured with 0.61.0). Only a session file in
    ``chats/`` below ``.gemini/tmp/`` of the user's Gemini folder is taken as
    saying where that is; otherwise the project's folder is used.
    """
    if not transcript_path:
        return None
    chats = Path(transcript_path).parent
    home = Path(os.environ.get("GEMINI_CLI_HOME") or Path.home())
    if chats.name != "chats" or os.path.realpath(chats.parent.parent) != os.path.realpath(home / ".gemini" / "tmp"):
        return None
    return chats.parent


ADAPTER = HostAdapter(
    name="gemini",
    title="Gemini CLI",
    output_limit=LIMIT,
    measure=tokens,
    unit="tokens",
    native=(NativeFiles(since=(0, 0, 0), names=("AGENTS.md",), source_keys=("nia/instructions",)),),
    instruction_files=instruction_files,
    host_version=lambda path: None,
    settings=SettingsPlaces(
        project=(".gemini", "settings.json"),
        user_folder=("GEMINI_CLI_HOME", ""),
        user=(".gemini", "settings.json"),
    ),
    events={"BeforeAgent": PROMPT},
    fresh=(),
    format=HookFormat(handler={"name": "nia", "type": "command"}, timeout_scale=1000),
    notes=(
        "Gemini CLI runs a project's hooks only in a folder you trusted: start `gemini` here and trust the "
        "folder when it asks (nia never records that consent for you); `nia hook status` says whether it is.",
    ),
    trusted=trusted,
    spill_folder=spill_folder,
    trust_said=("folder trusted", "folder NOT trusted: start `gemini` here and trust it, or nia's hooks never run"),
    compaction=r'(?m)^\{\s*"\$set"\s*:\s*\{\s*"messages"\s*:',
    output_marker=OPEN,
    hook_outputs=hook_outputs,
    recorded=escape_angles,
    joins="\n",
)
