"""Codex CLI (verified with 0.169.0).

Checked against https://developers.openai.com/codex/hooks and the source of
``codex-rs/hooks`` (``events/session_start.rs``, ``events/user_prompt_submit.rs``,
``output_spill.rs``, ``engine/discovery.rs``), then the binary (``tests/real_agents``):

- Hooks run only with ``[features] hooks = true``; they are read from
  ``$CODEX_HOME/hooks.json`` and ``<project>/.codex/hooks.json`` (both run
  when both exist), and only once the user reviewed them (a trust record in
  ``$CODEX_HOME/config.toml``; a project's ``.codex/`` also needs the project
  trusted). There is no personal project scope.
- stdin: ``session_id``, ``transcript_path``, ``cwd``, ``hook_event_name``,
  ``model``, ``source`` (SessionStart: ``startup``, ``resume``, ``clear``,
  ``compact``), ``prompt`` and ``turn_id`` (UserPromptSubmit).
- ``additionalContext`` (or plain stdout that does not look like JSON) reaches
  the model as a ``developer`` message. Output over 2,500 approximate tokens
  (10,000 UTF-8 bytes) is spilled to a file and replaced by a head/tail preview.
- It loads ``AGENTS.md`` itself (not ``CLAUDE.md``); after an edit it sends the
  new file at the next turn, saying it replaces the earlier one.
- Its rollout (transcript) starts with ``"cli_version": "0.169.0"``.
- What a hook added for the model is a ``developer`` message whose content
  items are marked as hook output: ``{"type": "response_item", "payload":
  {"type": "message", "role": "developer", "content": [{"type": "input_text",
  "text": "TEXT"}], "internal_chat_message_metadata_passthrough":
  {"content_item_kinds": ["hooks.additional_context"]}}}``; tool results are
  ``function_call_output`` items.
- Compaction (``core/src/session/mod.rs`` ``replace_compacted_history``,
  ``core/src/hook_runtime.rs`` ``run_pending_session_start_hooks``, checked
  with the binary): the rollout gets a ``"type":"compacted"`` line, then the
  queued SessionStart sources run in order: before a resumed turn ``resume``
  then ``compact``, mid-turn ``compact`` alone (the binary runs it before the
  tool call's follow-up; the ``core/src/session/turn.rs`` read, of another
  version, left it for the next turn). The rebuilt history keeps the user
  prompts and the summary and drops every hook message: the local
  summarisation (``core/src/compact.rs``, a ``/v1/responses`` request ending
  in ``templates/compact/prompt.md``; what a custom provider gets) rebuilds it
  from user messages, and the remote one (``/responses/compact``, chosen by
  ``should_use_remote_compact_task`` for OpenAI's providers only) filters the
  server's output through ``compact_remote.rs``
  ``should_keep_compacted_history_item``, which drops ``developer`` messages.
- ``codex exec fork ID`` starts a new thread with SessionStart ``fork``; its
  rollout's first line (``session_meta``) says ``forked_from_id`` (written
  before the hook runs), and it does not copy the parent's lines: the
  parent's rollout lies beside it under ``sessions/``.
- ``/clear`` (terminal UI, through the app-server's ``thread/start`` with
  ``sessionStartSource: "clear"``) starts a new thread: a new ``session_id``
  with SessionStart ``clear``. ``codex exec`` cannot clear.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nia_core.agents.contract import HookInput, HostAdapter, NativeFiles, SettingsPlaces, Switch, utf8_bytes
from nia_core.agents.transcript import first_line, version_field

HOOK_KIND = "hooks.additional_context"


def hook_outputs(line: Mapping[str, Any]) -> list[str]:
    """The hook texts one rollout line records: the content items of a developer message marked as hook output."""
    payload = line.get("payload")
    if line.get("type") != "response_item" or not isinstance(payload, dict):
        return []
    if payload.get("type") != "message" or payload.get("role") != "developer":
        return []
    meta = payload.get("internal_chat_message_metadata_passthrough")
    kinds = meta.get("content_item_kinds") if isinstance(meta, dict) else None
    content = payload.get("content")
    if not isinstance(kinds, list) or not isinstance(content, list) or len(kinds) != len(content):
        return []
    return [
        item["text"]
        for kind, item in zip(kinds, content, strict=True)
        if kind == HOOK_KIND and isinstance(item, dict) and isinstance(item.get("text"), str)
    ]


_FORKED_FROM = re.compile(r'"forked_from_id"\s*:\s*"([0-9A-Za-z-]{1,64})"')
MAX_ANCESTORS = 8
"""How many forks back a rollout's parents are followed (each is a bounded read)."""


def fork_parent(hook: HookInput) -> str | None:
    """The thread a fork copies: ``forked_from_id`` in its rollout's first line (``session_meta``)."""
    return _forked_from(hook.transcript_path)


def _forked_from(path: str | None) -> str | None:
    line = first_line(path)
    match = _FORKED_FROM.search(line) if '"type":"session_meta"' in line.replace(" ", "") else None
    return match.group(1) if match else None


def ancestors(path: str) -> tuple[str, ...]:
    """The rollouts a fork's rollout continues, oldest first: Codex does not copy the parent's lines.

    They lie beside it in ``$CODEX_HOME/sessions/YYYY/MM/DD/``, named
    ``rollout-<time>-<thread id>.jsonl``.
    """
    found: list[str] = []
    sessions = Path(path).parents[3] if len(Path(path).parents) > 3 else None
    parent = _forked_from(path)
    while parent and sessions is not None and len(found) < MAX_ANCESTORS:
        match = next(iter(sorted(sessions.glob(f"*/*/*/rollout-*-{parent}.jsonl"))), None)
        if match is None or str(match) in found:
            break
        found.append(str(match))
        parent = _forked_from(str(match))
    return tuple(reversed(found))


TRUST_LABELS = {"SessionStart": "session_start", "UserPromptSubmit": "user_prompt_submit"}
"""How Codex names events in its trust records (codex-rs ``hooks/src/engine/discovery.rs``)."""


def trusted(hooks_path: Path, data: Mapping[str, Any], problems: list[str]) -> list[str]:
    """Events of nia's handlers in ``hooks_path`` that the user reviewed in Codex (its hash is not re-computed).

    Codex persists that review in ``$CODEX_HOME/config.toml`` as
    ``[hooks.state."<hooks.json path>:<event>:<group>:<handler>"] trusted_hash``
    (``config_rules.rs``); nia only reads it.
    """
    from nia_core.agents.hook_install import handlers, is_nia_command, read_toml, user_file

    states = read_toml(user_file(ADAPTER, "config.toml"), problems).get("hooks", {})
    states = states.get("state") if isinstance(states, dict) else None
    if not isinstance(states, dict):
        return []
    found = []
    for event, label in TRUST_LABELS.items():
        for group_index, handler_index, handler in handlers(ADAPTER, data, event):
            if not is_nia_command(handler.get("command"), ADAPTER.name):
                continue
            suffix = f"{hooks_path}:{label}:{group_index}:{handler_index}"
            if any(k.endswith(suffix) and isinstance(v, dict) and v.get("trusted_hash") for k, v in states.items()):
                found.append(event)
    return list(dict.fromkeys(found))


ADAPTER = HostAdapter(
    name="codex",
    title="Codex",
    output_limit=10_000,
    measure=utf8_bytes,
    unit="bytes",
    native=(
        NativeFiles(
            since=(0, 1, 0),
            names=("AGENTS.md",),
            source_keys=("nia/instructions",),
        ),
    ),
    host_version=lambda path: version_field(path, "cli_version"),
    settings=SettingsPlaces(
        project=(".codex", "hooks.json"),
        user_folder=("CODEX_HOME", ".codex"),
        user=("hooks.json",),
    ),
    switch=Switch(file="config.toml", table="features", key="hooks"),
    notes=(
        "Codex runs new hooks only after you review them: start `codex` and approve "
        "nia's hooks when it asks (nia never records that consent for you). A project's .codex/ "
        "configuration also needs the project trusted in Codex.",
    ),
    trusted=trusted,
    fork_parent=fork_parent,
    ancestors=ancestors,
    compaction='"type":"compacted"',
    compaction_recorded_first=True,
    output_marker=f'"{HOOK_KIND}"',
    hook_outputs=hook_outputs,
)
