"""What every host adapter knows: its hook input, its output form, its size limit, the files it loads itself.

Facts come from the host's documentation checked against its real binary
(``docs/hosts.md`` and ``tests/real_agents``); where they disagree, the binary wins
and the adapter says which document it checked.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import field
from typing import Any

from nia_core.records import record

EVENTS = ("SessionStart", "UserPromptSubmit")
"""The hook events nia answers. Any other event gets no output."""

STARTS = ("startup", "clear", "compact")
"""SessionStart sources that begin a fresh conversation for the model: a new context epoch."""


class HostInputError(ValueError):
    """The hook's stdin is not what the host documents (named in the message)."""


@record(frozen=True)
class HookInput:
    """One hook invocation, as the host described it on stdin."""

    event: str
    session_id: str
    cwd: str
    source: str = ""
    """SessionStart only: ``startup``, ``resume``, ``clear`` or ``compact``."""
    transcript_path: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict)


@record(frozen=True)
class NativeFiles:
    """Instruction files a host loads into every session on its own, for a range of its versions."""

    since: tuple[int, ...]
    """The first version known to load them (inclusive)."""
    names: tuple[str, ...]
    """File names the host reads, e.g. ``AGENTS.md``."""
    source_keys: tuple[str, ...]
    """nia's context sources that deliver exactly those files; left to the host by default."""


def parse_version(text: str) -> tuple[int, ...] | None:
    """``"2.1.328"`` -> ``(2, 1, 328)``; ``None`` when it is not a dotted version."""
    head = text.strip().split()[0] if text.strip() else ""
    parts = head.split(".")
    if not parts or not all(p.isdigit() for p in parts):
        return None
    return tuple(int(p) for p in parts)


@record(frozen=True)
class HostAdapter:
    """One agent host: how its hooks talk, what it loads itself, where its settings live."""

    name: str
    """The host's name in commands and session ids: ``claude-code``, ``codex``."""
    title: str
    """For people: ``Claude Code``."""
    output_limit: int
    """The most hook output the host passes to the model whole, measured with the real binary."""
    measure: Callable[[str], int]
    """The size of a text in the unit the host's limit counts."""
    unit: str
    """That unit, for people: ``characters``, ``bytes``."""
    native: tuple[NativeFiles, ...]
    """What the host loads itself, per version range (newest last)."""
    host_version: Callable[[str | None], tuple[int, ...] | None]
    """The host's version, read from its transcript when it says (``None``: unknown)."""
    compaction: str = ""
    """A regular expression for the record a compaction leaves in the host's transcript: the model sees
    nothing written before the last one (``""``: the host's compactions are not recognised)."""
    compaction_recorded_first: bool = False
    """Whether that record is written before the host runs ``SessionStart`` (``compact``), so the
    hook can tell a compaction nia already answered from a new one (measured per host)."""
    output_marker: str = ""
    """A string every transcript line that records hook output contains (a cheap filter before parsing)."""
    hook_outputs: Callable[[Mapping[str, Any]], list[str]] = lambda record: []
    """The texts one transcript line (a JSON object) records as hook output that reached the model.

    Only this counts as delivered: tool results and file contents (which the
    repository controls) are other records, so nia's text quoted inside them
    proves nothing."""

    def parse(self, data: bytes | str) -> HookInput:
        """The hook input from the host's stdin JSON; raises :class:`HostInputError` naming the problem."""
        try:
            raw = json.loads(data)
        except ValueError as exc:
            raise HostInputError(f"{self.title} hook input is not JSON: {exc}") from None
        except RecursionError:
            raise HostInputError(f"{self.title} hook input is nested too deeply to be hook JSON") from None
        if not isinstance(raw, dict):
            raise HostInputError(f"{self.title} hook input is not a JSON object")
        event = raw.get("hook_event_name")
        session_id = raw.get("session_id")
        cwd = raw.get("cwd")
        for key, value in (("hook_event_name", event), ("session_id", session_id), ("cwd", cwd)):
            if not isinstance(value, str) or not value:
                raise HostInputError(f"{self.title} hook input has no {key!r}")
            if not _clean_text(value):
                raise HostInputError(f"{self.title} hook input: {key!r} holds a NUL byte or a lone surrogate")
        source = raw.get("source")
        transcript = raw.get("transcript_path")
        return HookInput(
            event=str(event),
            session_id=str(session_id),
            cwd=str(cwd),
            source=source if isinstance(source, str) else "",
            transcript_path=transcript
            if isinstance(transcript, str) and transcript and _clean_text(transcript)
            else None,
            raw=raw,
        )

    def render(self, event: str, text: str) -> str:
        """What to print on stdout so ``text`` reaches the model: the ``additionalContext`` JSON form.

        Both hosts also take plain stdout, but Codex rejects plain text that
        looks like JSON, and a plugin's text may start with ``{``.
        """
        payload = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}
        return json.dumps(payload, ensure_ascii=False)

    def native_keys(self, version: tuple[int, ...] | None) -> tuple[str, ...]:
        """Source keys the host already delivers at ``version`` (unknown: the newest known behaviour)."""
        chosen: NativeFiles | None = None
        for entry in self.native:
            if version is None or version >= entry.since:
                chosen = entry
        return chosen.source_keys if chosen is not None else ()

    def native_names(self, version: tuple[int, ...] | None) -> tuple[str, ...]:
        chosen: NativeFiles | None = None
        for entry in self.native:
            if version is None or version >= entry.since:
                chosen = entry
        return chosen.names if chosen is not None else ()


def _clean_text(value: str) -> bool:
    """Whether ``value`` can name a path and be stored: no NUL, valid UTF-8 (JSON can spell lone surrogates)."""
    if "\x00" in value:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def characters(text: str) -> int:
    """JavaScript string length: UTF-16 code units (Claude Code counts these)."""
    return len(text.encode("utf-16-le")) // 2


def utf8_bytes(text: str) -> int:
    return len(text.encode("utf-8"))
