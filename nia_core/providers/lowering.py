"""Rules every wire format shares when it lowers a :class:`ModelRequest`.

A mid-conversation system message keeps its place in the chronology: it goes
in the provider's native role where the model has one for instructions in the
middle of a conversation (per the capability table), and otherwise as the
wrapped fallback ``<system-update>…</system-update>`` (XML-escaped) joined to
the user turn it follows, or as a user turn of its own. It is never hoisted
into the top-level system prompt: that would rewrite the cached prefix. It may
not sit between a tool call and the call's result; providers reject such a
request, so lowering refuses it with :class:`LoweringError`.

Lowered bodies are plain dicts; :func:`encode_body` serializes them with
sorted keys and fixed separators, so the same history gives the same bytes in
every run and every process; :func:`encode_parts` gives the same bytes in parts,
without the whole JSON text beside them (what a send holds).
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from xml.sax.saxutils import escape

from nia_core.model import Message, ProviderError

UPDATE_TAG = "system-update"
SUMMARY_TAG = "conversation-summary"
WRAPPED = "wrapped"
"""``update_role`` value meaning: no native role, use the wrapped fallback."""


class LoweringError(ProviderError):
    """A history that no provider would accept in this order; the message names the message and why."""


class ProviderConfigError(ProviderError):
    """A ``[providers.NAME]`` setting that cannot be used; the message names the key."""

    exit_code = 2


def encode_body(body: Mapping[str, Any]) -> bytes:
    """The bytes sent on the wire: sorted keys, no optional whitespace, UTF-8."""
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


LARGE_TEXT = 64 * 1024
"""Strings at least this long (a baseline, a file a tool read) are encoded a slice at a time."""


def encode_parts(body: Mapping[str, Any]) -> tuple[bytes, ...]:
    """:func:`encode_body`'s bytes in parts, each byte encoded once, without the whole JSON text.

    ``json.dumps`` then ``.encode()`` holds the text and the bytes of a
    megabytes-long baseline at once. Here every string of :data:`LARGE_TEXT`
    characters or more is set aside, the rest is encoded by ``json.dumps`` with
    a placeholder in its place, and the string is then escaped and encoded a
    slice at a time into the placeholder's place. JSON escapes each character
    on its own, so the parts joined are :func:`encode_body`'s bytes exactly;
    what is held is the body's own strings and one copy of the bytes.
    """
    large: list[str] = []
    token = os.urandom(8).hex()  # a placeholder no text of the body can hold by chance
    text = json.dumps(
        _set_aside(body, large, f"\x00{token}:"), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    if not large:
        return (text.encode("utf-8"),)
    marks = list(re.finditer(r'"\\u0000' + token + r':(\d+)"', text))
    if sorted(int(mark.group(1)) for mark in marks) != list(range(len(large))):
        return (encode_body(body),)  # a text of the body spells a placeholder after all: the plain way
    parts: list[bytes] = []
    end = 0
    for mark in marks:
        parts.append(text[end : mark.start() + 1].encode("utf-8"))  # up to and with the opening quote
        value = large[int(mark.group(1))]
        for start in range(0, len(value), LARGE_TEXT):
            parts.append(json.dumps(value[start : start + LARGE_TEXT], ensure_ascii=False)[1:-1].encode("utf-8"))
        end = mark.end() - 1  # from the closing quote
    parts.append(text[end:].encode("utf-8"))
    return tuple(parts)


def _set_aside(value: Any, large: list[str], placeholder: str) -> Any:
    """``value`` with each long string replaced by ``placeholder`` and its index in ``large`` (copied only
    where something changed: the short strings of a long history are looked at, never copied)."""
    if isinstance(value, str):
        if len(value) < LARGE_TEXT:
            return value
        large.append(value)
        return f"{placeholder}{len(large) - 1}"
    if isinstance(value, dict):
        changed: dict[Any, Any] | None = None
        for key, item in value.items():
            if isinstance(item, str | dict | list | tuple) and not (isinstance(item, str) and len(item) < LARGE_TEXT):
                swapped = _set_aside(item, large, placeholder)
                if swapped is not item:
                    changed = changed if changed is not None else dict(value)
                    changed[key] = swapped
        return value if changed is None else changed
    if isinstance(value, list | tuple):
        copied: list[Any] | None = None
        for index, item in enumerate(value):
            if isinstance(item, str | dict | list | tuple) and not (isinstance(item, str) and len(item) < LARGE_TEXT):
                swapped = _set_aside(item, large, placeholder)
                if swapped is not item:
                    copied = copied if copied is not None else list(value)
                    copied[index] = swapped
        return value if copied is None else copied
    return value


def canonical_arguments(arguments: Mapping[str, Any]) -> str:
    """A tool call's arguments as a JSON string, identical for equal dicts."""
    return json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def wrap(tag: str, text: str) -> str:
    """``<tag>`` + the XML-escaped text + ``</tag>``: the model can tell it from user words."""
    return f"<{tag}>\n{escape(text)}\n</{tag}>"


def wrap_update(text: str) -> str:
    """The wrapped fallback of a mid-conversation system message."""
    return wrap(UPDATE_TAG, text)


def wrap_summary(text: str) -> str:
    """A compaction summary, sent as user-role text that stands for earlier history."""
    return wrap(SUMMARY_TAG, text)


# -- capabilities ---------------------------------------------------------------------


@dataclass(frozen=True)
class ModelCapabilities:
    """What a model accepts, for lowering.

    ``baseline_role``: the role of the top-level instructions (Chat Completions
    ``system`` or ``developer``; the Messages API always uses ``system``).
    ``update_role``: the native role for a mid-conversation system message, or
    :data:`WRAPPED` when the model has none (or ignores it mid-conversation).
    """

    baseline_role: str = "system"
    update_role: str = WRAPPED

    @property
    def native_updates(self) -> bool:
        return self.update_role != WRAPPED


BASELINE_ROLES = ("system", "developer")
UPDATE_ROLES = ("system", "developer", WRAPPED)


class CapabilityTable:
    """Model-name patterns (``fnmatch``) to capabilities; the first match wins.

    Built-in entries come from each provider; config entries are put in front,
    so a project can teach nia about a model it does not know (or correct it).
    """

    def __init__(self, entries: Iterable[tuple[str, ModelCapabilities]]) -> None:
        self.entries: tuple[tuple[str, ModelCapabilities], ...] = tuple(entries)

    def lookup(self, model: str) -> ModelCapabilities:
        for pattern, capabilities in self.entries:
            if fnmatch.fnmatchcase(model, pattern):
                return capabilities
        return ModelCapabilities()

    def extended(self, entries: Iterable[tuple[str, ModelCapabilities]]) -> CapabilityTable:
        """A table where ``entries`` take precedence over this one's."""
        return CapabilityTable((*entries, *self.entries))

    def __repr__(self) -> str:
        return f"CapabilityTable({[p for p, _ in self.entries]})"


def parse_capabilities(
    where: str, table: Any, *, baseline_roles: Sequence[str] = BASELINE_ROLES
) -> list[tuple[str, ModelCapabilities]]:
    """``[providers.NAME.models."PATTERN"]`` tables as table entries; ``where`` names them in errors."""
    if table is None:
        return []
    if not isinstance(table, Mapping):
        raise ProviderConfigError(f"{where} must be a table of model patterns")
    entries: list[tuple[str, ModelCapabilities]] = []
    for pattern, spec in table.items():
        key = f'{where}."{pattern}"'
        if not isinstance(spec, Mapping):
            raise ProviderConfigError(f"{key} must be a table with baseline_role and/or update_role")
        unknown = sorted(set(spec) - {"baseline_role", "update_role"})
        if unknown:
            raise ProviderConfigError(f"{key}: unknown key {unknown[0]!r} (expected baseline_role, update_role)")
        baseline = spec.get("baseline_role", "system")
        update = spec.get("update_role", WRAPPED)
        if baseline not in baseline_roles:
            raise ProviderConfigError(
                f"{key}.baseline_role must be one of {', '.join(baseline_roles)}, got {baseline!r}"
            )
        if update not in UPDATE_ROLES:
            raise ProviderConfigError(f"{key}.update_role must be one of {', '.join(UPDATE_ROLES)}, got {update!r}")
        entries.append((str(pattern), ModelCapabilities(baseline, update)))
    return entries


# -- history checks -------------------------------------------------------------------


def check_history(messages: Sequence[Message]) -> None:
    """Refuse a history no provider accepts: results must directly answer their calls.

    After an assistant message with tool calls, the results of those calls must
    come next, one per call, before anything else; a mid-conversation system
    message there is the error the boundary must never produce.
    """
    if not messages:
        raise LoweringError("the request has no messages to send")
    open_calls: dict[str, int] = {}
    opened_at = 0
    for index, message in enumerate(messages):
        where = _where(index, message)
        if message.kind == "tool_result":
            call_id = message.tool_call_id
            if call_id is None:
                raise LoweringError(f"{where}: a tool result without tool_call_id")
            if call_id not in open_calls:
                raise LoweringError(f"{where}: result for tool call {call_id!r}, which is not awaiting a result")
            del open_calls[call_id]
            continue
        if open_calls:
            pending = ", ".join(sorted(open_calls))
            if message.kind == "system_update":
                raise LoweringError(
                    f"{where}: a mid-conversation system message sits between tool call(s) {pending} "
                    f"(message #{opened_at}) and their results"
                )
            raise LoweringError(f"{where}: tool call(s) {pending} (message #{opened_at}) have no result before it")
        if message.kind == "assistant" and message.tool_calls:
            ids = [call.id for call in message.tool_calls]
            if len(set(ids)) != len(ids):
                raise LoweringError(f"{where}: duplicate tool call ids {ids}")
            open_calls = dict.fromkeys(ids, index)
            opened_at = index
    if open_calls:
        raise LoweringError(
            f"tool call(s) {', '.join(sorted(open_calls))} (message #{opened_at}) have no result: "
            "settle them before calling the model"
        )


def _where(index: int, message: Message) -> str:
    seq = f", seq {message.seq}" if message.seq is not None else ""
    return f"message #{index} ({message.kind}{seq})"


def trailing_updates_start(messages: Sequence[Message]) -> int:
    """Index of the first system update in the run at the end of ``messages`` (``len`` when none)."""
    index = len(messages)
    while index > 0 and messages[index - 1].kind == "system_update":
        index -= 1
    return index


def previous_request_end(messages: Sequence[Message]) -> int | None:
    """How many messages the previous provider call saw: everything before the last assistant reply."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].kind == "assistant":
            return index
    return None
