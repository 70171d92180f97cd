"""OpenCode (verified with 1.18.33).

Checked against the plugin interface its package ships (``@opencode-ai/plugin``)
and the code in its binary, then the binary itself, driven offline
(``tests/real_agents/test_opencode.py``, docs/hosts.md):

- OpenCode runs no hook commands: it loads every ``*.js``/``*.ts`` module in
  ``<project>/.opencode/plugin/`` and ``$XDG_CONFIG_HOME/opencode/plugin/``
  (default ``~/.config/opencode``) into its own process, with no trust step.
  nia's module (``nia_core/templates/opencode/nia.js``) answers
  ``chat.message``, which OpenCode calls once per user prompt before it
  stores the message: the module runs ``nia hook opencode`` (stdin
  ``{"hook_event_name": "chat.message", "session_id", "cwd", …}``, stdout
  ``{"additionalContext": …}``) and adds the text as a synthetic text part of
  the user's message, which OpenCode stores and re-sends unchanged. Not
  ``experimental.chat.system.transform``: it is called again before every
  request and its text is not stored.
- When a config folder holds a plugin, OpenCode installs
  ``@opencode-ai/plugin`` there from the npm registry the first time it
  starts (``package.json``, a lock file, ``node_modules/``, and a
  ``.gitignore`` for them when there is none).
- It loads ``AGENTS.md`` (else ``CLAUDE.md``) into its system message itself,
  and after an edit sends the new text in place.
- The conversation lives in OpenCode's SQLite database
  (``$XDG_DATA_HOME/opencode/opencode.db``, default ``~/.local/share``;
  ``OPENCODE_DB`` names another, relative to that folder): a ``message`` row
  per message (JSON ``data``: ``role``, for a summary ``summary``,
  ``finish``, ``parentID``) and a ``part`` row per part (JSON ``data``: a text
  part's ``type``, ``text``, ``synthetic``, ``metadata``). nia only reads it.
- Compaction (``/compact``, and automatically when a reply's usage nears the
  model's context limit) adds a user message holding a ``compaction`` part
  (``tail_start_id``: the oldest message kept as it was) and an assistant
  message with ``summary: true``. From then on the model gets that summary,
  the kept tail and what follows (``MessageV2.filterCompacted``); nothing of
  an older message. ``/new`` starts a new session; ``opencode run --fork``
  (``/fork``) copies a session's messages and parts into a new session with
  new ids and the same ``time_created``, recording no parent, and runs no
  plugin hook for it.
- OpenCode sets no size limit on a part; the model's window is the limit, so
  nia keeps to :data:`LIMIT`.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import stat
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from nia_core.agents.contract import (
    PROMPT,
    HookInput,
    HostAdapter,
    InputKeys,
    NativeFiles,
    PluginModule,
    SettingsPlaces,
    characters,
)
from nia_core.agents.transcript import Transcript

NAME = "opencode"
EVENT = "chat.message"

LIMIT = 10_000
"""Characters nia prints at one prompt, as Claude Code and Codex pass whole: OpenCode passes any size, its models'
windows differ (a local model's may be 8,000 tokens), and a part is re-sent with every later request; the rest of a
longer text goes to the spill file."""

MARKER = '"nia":true'
"""In the data of every part nia's module added (its ``metadata``)."""

COMPACTED = '{"opencode":"compacted"}'
"""The line nia puts where OpenCode's model history starts after a compaction (see :func:`read_store`)."""

MAX_ROWS = 200_000
"""At most this many messages of one session are read (a bounded read, as a transcript's 64 MiB)."""


def _template() -> str:
    return (resources.files("nia_core") / "templates" / "opencode" / "nia.js").read_text(encoding="utf-8")


def render(program: str) -> str:
    """nia's plugin module for OpenCode, running ``program`` (``/home/me/.venvs/nia/bin/nia``)."""
    text = _template()
    return text.replace("__NIA_PROGRAM__", json.dumps(program))


_PROGRAM = re.compile(r'^const PROGRAM = ("(?:[^"\\\n]|\\.)*")$', re.MULTILINE)


def program_of(text: str) -> str | None:
    """The program a module runs when the module is exactly nia's for it (else ``None``: not nia's as written)."""
    match = _PROGRAM.search(text)
    if match is None:
        return None
    try:
        program = json.loads(match.group(1))
    except ValueError:
        return None
    return program if isinstance(program, str) and program and render(program) == text else None


# -- the conversation, from OpenCode's database ----------------------------------------------------


def database() -> Path | None:
    """OpenCode's database file, as OpenCode 1.18 finds it (``None``: kept in memory)."""
    data = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "opencode"
    named = os.environ.get("OPENCODE_DB")
    if named == ":memory:":
        return None
    if named:
        return Path(named) if os.path.isabs(named) else data / named
    return data / "opencode.db"


def _connect(path: Path) -> sqlite3.Connection | None:
    """OpenCode's database, opened read-only (``None``: not a regular file, or not openable)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO or a device would block or never end
            return None
        uri = "file:" + path.as_posix().replace("%", "%25").replace("?", "%3f").replace("#", "%23") + "?mode=ro"
        return sqlite3.connect(uri, uri=True, timeout=2.0)
    except (OSError, sqlite3.Error):
        return None


def _rows(path: Path, session_id: str) -> tuple[list[tuple[str, str]], list[tuple[str, str, str]]] | None:
    """The session's messages ``(id, data)`` and the parts nia looks at ``(message id, part id, data)``, in order."""
    connection = _connect(path)
    if connection is None:
        return None
    try:
        messages = connection.execute(
            "SELECT id, data FROM message WHERE session_id = ? ORDER BY time_created, id LIMIT ?",
            (session_id, MAX_ROWS),
        ).fetchall()
        parts = connection.execute(
            "SELECT message_id, id, data FROM part WHERE session_id = ? "
            'AND (instr(data, ?) > 0 OR instr(data, \'"type":"compaction"\') > 0) ORDER BY message_id, id',
            (session_id, MARKER),
        ).fetchall()
    except sqlite3.Error:  # not OpenCode's schema, locked past the timeout, not a database
        return None
    finally:
        connection.close()
    return [(str(i), str(d)) for i, d in messages], [(str(m), str(i), str(d)) for m, i, d in parts]


def _json(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def _seen_from(messages: list[tuple[str, dict[str, Any]]], compactions: dict[str, dict[str, Any]]) -> int | None:
    """Where the history the model gets starts, after the newest completed compaction (``None``: none happened).

    OpenCode 1.18's ``MessageV2.filterCompacted``: walking from the newest
    message, a user message holding a ``compaction`` part whose summary (an
    assistant message with ``summary``, ``finish`` and no ``error``, whose
    ``parentID`` is it) was written ends the history, or, when the part names
    a ``tail_start_id``, the history reaches back to that message.
    """
    summarised: set[str] = set()
    ids = [message_id for message_id, _ in messages]
    for index in range(len(messages) - 1, -1, -1):
        message_id, data = messages[index]
        if data.get("role") == "assistant" and data.get("summary") and data.get("finish") and not data.get("error"):
            parent = data.get("parentID")
            if isinstance(parent, str):
                summarised.add(parent)
        elif data.get("role") == "user" and message_id in summarised and message_id in compactions:
            tail = compactions[message_id].get("tail_start_id")
            if isinstance(tail, str) and tail in ids[:index]:
                return ids.index(tail)
            return index
    return None


def read_store(hook: HookInput) -> Transcript | None:
    """What OpenCode recorded of the session, as transcript lines: nia's parts of what the model still gets.

    One JSON line per part nia's module added to a user message, oldest
    first; after a compaction a :data:`COMPACTED` line goes where the model's
    history starts, so only what follows it counts as seen.
    """
    path = database()
    found = _rows(path, hook.session_id) if path is not None else None
    if found is None:
        return None
    rows, part_rows = found
    messages = [(message_id, _json(data)) for message_id, data in rows]
    compactions: dict[str, dict[str, Any]] = {}
    texts: dict[str, list[str]] = {}
    for message_id, _part_id, part_data in part_rows:
        part = _json(part_data)
        if part.get("type") == "compaction":
            compactions.setdefault(message_id, part)
        elif part.get("type") == "text" and part.get("synthetic") is True:
            meta = part.get("metadata")
            if isinstance(meta, dict) and meta.get("nia") is True and isinstance(part.get("text"), str):
                texts.setdefault(message_id, []).append(part["text"])
    start = _seen_from(messages, compactions)
    lines: list[str] = []
    for index, (message_id, data) in enumerate(messages):
        if index == start:
            lines.append(COMPACTED)
        if data.get("role") == "user":
            lines.extend(json.dumps({"nia": text}) for text in texts.get(message_id, ()))
    return Transcript.of_lines("\n".join(lines) + "\n", re.escape(COMPACTED))


def fork_parent(hook: HookInput) -> str | None:
    """The session a new session was forked from (``opencode run --fork``, ``/fork``), when it holds nia's parts.

    OpenCode records no parent for a fork: it copies the messages and parts
    into the new session with new ids and the same ``time_created``. So a
    session whose messages already carry nia's parts at its first prompt is a
    copy, and its parent is the other session holding all those messages'
    times in order: the one with the fewest messages (the fork was taken at
    its end), the newest when several are alike.
    """
    path = database()
    if path is None:
        return None
    found = _query(
        path,
        "SELECT time_created FROM message WHERE session_id = ? ORDER BY time_created, id LIMIT ?",
        (hook.session_id, MAX_ROWS),
    )
    marked = _query(
        path, "SELECT 1 FROM part WHERE session_id = ? AND instr(data, ?) > 0 LIMIT 1", (hook.session_id, MARKER)
    )
    if not found or not marked:
        return None
    times = [row[0] for row in found]
    candidates = _query(
        path,
        "SELECT s.id, s.time_created FROM session s WHERE s.id != ? AND s.id IN "
        "(SELECT session_id FROM message WHERE time_created = ?) ORDER BY s.time_created DESC LIMIT 64",
        (hook.session_id, times[0]),
    )
    best: tuple[int, str] | None = None
    for session_id, _created in candidates or []:
        theirs = _query(
            path,
            "SELECT time_created FROM message WHERE session_id = ? ORDER BY time_created, id LIMIT ?",
            (session_id, MAX_ROWS),
        )
        their_times = [row[0] for row in theirs or []]
        if their_times[: len(times)] == times and (best is None or len(their_times) < best[0]):
            best = (len(their_times), str(session_id))
    return best[1] if best else None


def _query(path: Path, sql: str, args: tuple[Any, ...]) -> list[tuple[Any, ...]] | None:
    """Rows of one read-only query of OpenCode's database; ``None`` when it cannot be read."""
    connection = _connect(path)
    if connection is None:
        return None
    try:
        return connection.execute(sql, args).fetchall()
    except sqlite3.Error:
        return None
    finally:
        connection.close()


def hook_outputs(line: Mapping[str, Any]) -> list[str]:
    text = line.get("nia")
    return [text] if isinstance(text, str) else []


ADAPTER = HostAdapter(
    name=NAME,
    title="OpenCode",
    output_limit=LIMIT,
    measure=characters,
    unit="characters",
    native=(NativeFiles(since=(1, 0, 0), names=("AGENTS.md", "CLAUDE.md"), source_keys=("nia/instructions",)),),
    host_version=lambda path: None,
    settings=SettingsPlaces(
        project=(".opencode", "plugin", "nia.js"),
        user_folder=("XDG_CONFIG_HOME", ".config"),
        user=("opencode", "plugin", "nia.js"),
    ),
    events={EVENT: PROMPT},
    fresh=(),
    input_keys=InputKeys(transcript=""),
    output="additionalContext",
    module=PluginModule(render=render, program=program_of, event=EVENT, ignored=("nia.js",)),
    notes=(
        "OpenCode loads the plugin at its next start, with no trust step. The first time it starts with a plugin "
        "here it installs @opencode-ai/plugin from the npm registry into that folder's parent (package.json, "
        "node_modules/; its own .gitignore keeps them out of git).",
    ),
    conversation=read_store,
    forks_copied=True,
    fork_parent=fork_parent,
    output_marker='"nia"',
    hook_outputs=hook_outputs,
)
