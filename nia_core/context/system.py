"""The System Context: compose sources, render a baseline, reconcile changes.

``initialize`` renders a Generation (baseline text + snapshot) for a new
Context Epoch. ``reconcile`` observes once and says what the next safe
provider-turn boundary must do: nothing, append one combined
mid-conversation system message, or replace the baseline. ``replace`` is the
explicit baseline replacement used by compaction and model switches.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from nia_core.context.codec import JsonCodec, canonical_json
from nia_core.context.observation import Observation, max_source_bytes, observe, too_large
from nia_core.context.snapshot import Snapshot, SnapshotEntry
from nia_core.context.source import LOADER_TIMEOUT, UNAVAILABLE, ContextSource
from nia_core.deadline import PLUGIN_TIMEOUT, Late, Outcome, PluginRaised, call_each
from nia_core.errors import DuplicateSourceKey, InitializationBlocked, RenderError, message_of, where_raised

SEPARATOR = "\n\n"


RenderErrorHandler = Callable[[RenderError], None]
UnavailableHandler = Callable[[Observation], None]
log = logging.getLogger("nia.context")


class SystemContext:
    """An opaque, ordered composition of context sources with unique keys.

    By default a renderer that fails raises :class:`RenderError`. A host that
    composes other people's sources passes ``on_render_error``: the failing
    source is then set aside for that round, as if unavailable (its stored
    entry stays, nothing is said), and the handler is told, to name the culprit.

    ``withheld`` lists key prefixes (``"acme/"``; ``""`` for every key) of
    sources that could not even be listed this round: a plugin whose hook
    failed, a configuration file that does not parse. A stored key under such a
    prefix that is missing now is *unavailable*, not gone: it keeps its entry
    and no removal is said; a replacement baseline is blocked on it. (A host
    that wants a *first* baseline blocked too adds an unavailable source.)

    ``on_unavailable`` is told about each source whose loader raised, timed
    out or returned a value over the size limit, once per round, so a host can
    name the plugin in one warning; without it the engine logs the warning.
    """

    __slots__ = ("_keys", "_sources", "on_render_error", "on_unavailable", "withheld")

    def __init__(
        self,
        sources: Iterable[ContextSource] = (),
        *,
        on_render_error: RenderErrorHandler | None = None,
        on_unavailable: UnavailableHandler | None = None,
        withheld: Iterable[str] = (),
    ) -> None:
        self.on_render_error = on_render_error
        self.on_unavailable = on_unavailable
        self.withheld = tuple(withheld)
        ordered = tuple(sources)
        seen: set[str] = set()
        for source in ordered:
            if not isinstance(source, ContextSource):
                raise TypeError(f"expected a ContextSource, got {type(source).__name__}")
            if source.key in seen:
                raise DuplicateSourceKey(source.key)
            seen.add(source.key)
        self._sources = ordered
        self._keys = tuple(source.key for source in ordered)  # asked at every boundary

    @classmethod
    def make(cls, source: ContextSource) -> SystemContext:
        """A context holding exactly one source."""
        return cls((source,))

    @classmethod
    def combine(cls, *contexts: SystemContext) -> SystemContext:
        """Concatenate contexts in caller order; a duplicate key fails at once.

        The result keeps the first ``on_render_error`` handler among them.
        """
        handler = next((ctx.on_render_error for ctx in contexts if ctx.on_render_error), None)
        unavailable = next((ctx.on_unavailable for ctx in contexts if ctx.on_unavailable), None)
        withheld = [prefix for ctx in contexts for prefix in ctx.withheld]
        return cls(
            (s for ctx in contexts for s in ctx._sources),
            on_render_error=handler,
            on_unavailable=unavailable,
            withheld=withheld,
        )

    def holds(self, key: str) -> bool:
        """Whether ``key`` falls under a withheld prefix (see the class docstring)."""
        return any(key.startswith(prefix) for prefix in self.withheld)

    @property
    def keys(self) -> tuple[str, ...]:
        return self._keys

    @property
    def sources(self) -> tuple[ContextSource, ...]:
        return self._sources

    def __len__(self) -> int:
        return len(self._sources)

    def __iter__(self) -> Iterator[ContextSource]:
        return iter(self._sources)

    def __repr__(self) -> str:
        return f"SystemContext({list(self.keys)})"


@dataclass(frozen=True)
class Generation:
    """A baseline's text and the snapshot it was rendered from."""

    baseline: str
    snapshot: Snapshot
    spans: tuple[tuple[str, int, int], ...] = ()
    """``(key, start, end)``: where each source's text lies in ``baseline``, in order.

    Offsets, not copies: the baseline is held once, never beside its pieces.
    """

    @property
    def parts(self) -> tuple[tuple[str, str], ...]:
        """``(key, text)`` for each source in the baseline, in order (cut from it on demand)."""
        baseline = self.baseline
        return tuple((key, baseline[start:end]) for key, start, end in self.spans)

    def sizes(self) -> dict[str, int]:
        """Each source's share of the baseline in UTF-8 bytes, without copying the baseline apart."""
        baseline = self.baseline
        if baseline.isascii():
            return {key: end - start for key, start, end in self.spans}
        return {key: len(baseline[start:end].encode("utf-8", "surrogatepass")) for key, start, end in self.spans}


ChangeKind = Literal["added", "updated", "removed"]


@dataclass(frozen=True)
class Change:
    key: str
    kind: ChangeKind
    text: str


@dataclass(frozen=True)
class Unchanged:
    """Nothing to tell the model; the snapshot stays as it is."""

    observations: tuple[Observation, ...] = dataclasses.field(default=(), compare=False, repr=False)


@dataclass(frozen=True)
class Updated:
    """One combined mid-conversation system message and the snapshot it advances to."""

    text: str
    snapshot: Snapshot
    changes: tuple[Change, ...] = ()
    observations: tuple[Observation, ...] = dataclasses.field(default=(), compare=False, repr=False)


@dataclass(frozen=True)
class ReplacementReady:
    """The baseline must be (or was asked to be) replaced; here is the fresh one."""

    generation: Generation
    reason: str = ""
    observations: tuple[Observation, ...] = dataclasses.field(default=(), compare=False, repr=False)


@dataclass(frozen=True)
class ReplacementBlocked:
    """A replacement is needed but admitted sources are unavailable; keep the old baseline."""

    keys: tuple[str, ...]
    reason: str = ""
    observations: tuple[Observation, ...] = dataclasses.field(default=(), compare=False, repr=False)


Reconciliation = Unchanged | Updated | ReplacementReady | ReplacementBlocked
Replacement = ReplacementReady | ReplacementBlocked

# Encoding memo, kept on the source: a loader that returns the very same immutable
# object as last time (a stat-cached file, say) costs an identity check, not a JSON dump.
_IMMUTABLE = (str, bytes, int, float, bool, tuple, frozenset, type(None))


def _memoizable(value: Any) -> bool:
    if isinstance(value, _IMMUTABLE):
        return True
    params = getattr(type(value), "__dataclass_params__", None)
    return bool(params is not None and params.frozen)


_BY_VALUE_LIMIT = 4096
_by_value: OrderedDict[int, tuple[Any, Any, str]] = OrderedDict()
"""Second memo, by value identity and codec: producers that build new source
objects at every load (but hand out the same cached value) still skip the dump."""
_by_value_lock = threading.Lock()


def _adopt(source: ContextSource, value: Any, stored: str) -> None:
    """Remember ``stored`` (the snapshot's equal text) as ``value``'s encoding: one copy in memory, not two."""
    object.__setattr__(source, "_encoded", (value, stored))
    shared = _by_value.get(id(value))
    if shared is not None and shared[0] is value:
        with _by_value_lock:
            _by_value[id(value)] = (value, shared[1], stored)


def encode(source: ContextSource, value: Any) -> str:
    """Canonical JSON of ``value`` through the source's codec."""
    memo = source._encoded  # type: ignore[attr-defined]
    if memo is not None and memo[0] is value:
        return memo[1]  # type: ignore[no-any-return]
    if not _memoizable(value):
        return canonical_json(source.codec.encode(value))
    codec = source.codec
    shared = _by_value.get(id(value))
    if shared is not None and shared[0] is value and shared[1] is codec:
        encoded = shared[2]
    else:
        encoded = canonical_json(codec.encode(value))
        with _by_value_lock:
            _by_value[id(value)] = (value, codec, encoded)
            if len(_by_value) > _BY_VALUE_LIMIT:
                _by_value.popitem(last=False)
    object.__setattr__(source, "_encoded", (value, encoded))
    return encoded


def decode(source: ContextSource, stored: str) -> Any:
    return source.codec.decode(json.loads(stored))


def _compare(source: ContextSource, stored: str, value: Any) -> tuple[str, Any]:
    """``("changed", previous)`` or ``("same", None)`` for a value whose JSON differs from the stored one,
    or ``(why, None)`` when the stored value can no longer be decoded (worded where it ran)."""
    try:
        previous = decode(source, stored)
    except Exception as exc:  # noqa: BLE001 - any decode failure means replace
        return f"{type(exc).__name__}: {message_of(exc)}", None
    if same_value(previous, value):  # as the reference: a new encoding of an equal value is no change
        return "same", None
    return "changed", previous


def _comparisons(differ: Sequence[tuple[ContextSource, Any, str, str]]) -> list[tuple[str, Any]]:
    """:func:`_compare` of each ``(source, value, encoded, stored)``: here for plain JSON values, as plugin
    code under :data:`CODEC_TIMEOUT` for the rest (their codec decodes, their ``__eq__`` compares)."""
    results: list[tuple[str, Any] | None] = [
        _compare(source, stored, value) if _nia_code_only(source, value) else None
        for source, value, _, stored in differ
    ]
    waiting = [index for index, result in enumerate(results) if result is None]
    calls = [functools.partial(_compare, differ[i][0], differ[i][3], differ[i][1]) for i in waiting]
    for index, outcome in zip(waiting, call_each(calls, CODEC_TIMEOUT), strict=True):
        if outcome.error is None:
            results[index] = outcome.value
        elif isinstance(outcome.error, Late):
            results[index] = (f"decoding or comparing did not finish in {outcome.error.seconds:g} s", None)
        else:
            results[index] = (outcome.error.text, None)
    return [result for result in results if result is not None]


def same_value(stored: Any, current: Any) -> bool:
    """Whether the decoded stored value equals the current one (``==``, but ``True`` is not ``1``).

    Only asked when the canonical JSON texts differ: a codec whose output
    changed (a timestamp now rendered with milliseconds) then sends no update
    for a value that did not. A value whose ``==`` raises counts as changed.
    """
    if isinstance(stored, bool) or isinstance(current, bool):
        return type(stored) is type(current) and stored == current
    if isinstance(stored, dict) and isinstance(current, dict):
        return stored.keys() == current.keys() and all(same_value(v, current[k]) for k, v in stored.items())
    if isinstance(stored, list | tuple) and isinstance(current, list | tuple):
        return len(stored) == len(current) and all(same_value(a, b) for a, b in zip(stored, current, strict=True))
    try:
        return bool(stored == current)
    except Exception:  # noqa: BLE001 - a value type with a broken __eq__ is treated as changed
        return False


def _render(source: ContextSource, renderer: str, *args: Any) -> str:
    """One renderer call and the checks of its text; run as plugin code (see :class:`_Rendering`)."""
    fn: Callable[..., Any] | None
    if renderer == "baseline":
        fn = source.baseline
    elif renderer == "update":
        fn = source.update or (lambda _previous, current: source.baseline(current))
    else:
        fn = source.removal
    assert fn is not None
    try:
        text = fn(*args)  # on a worker: its prints go to stderr, never into nia's output
    except BaseException as exc:  # SystemExit, a plugin's own KeyboardInterrupt...: a failure like any other
        raise RenderError(
            source.key, renderer, f"raised {type(exc).__name__}: {message_of(exc)}{where_raised(exc)}"
        ) from exc
    if type(text) is not str:  # a str subclass's methods are the plugin's code
        if not isinstance(text, str):
            raise RenderError(source.key, renderer, f"returned {type(text).__name__}, not text")
        text = str.__str__(text)
    if not text.strip():
        raise RenderError(source.key, renderer, "returned empty text")
    if not text.isascii() and not _utf8(text):
        raise RenderError(source.key, renderer, "returned text that is not valid UTF-8 (a lone surrogate)")
    return text


def _utf8(text: str) -> bool:
    """Whether ``text`` can be printed, stored and sent: a lone surrogate would fail at the last step."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


RENDER_TIMEOUT = PLUGIN_TIMEOUT
"""Seconds one renderer call may take."""

Wanted = tuple[ContextSource, str, tuple[Any, ...]]
"""A renderer call: the source, which renderer (``baseline``, ``update``, ``removal``), its arguments."""


class _Rendering:
    """The renderer calls of one round; with a handler, a failing source is set aside, not raised.

    Renderers are plugin code: the calls of a round run in turn on a worker
    thread, each under :data:`RENDER_TIMEOUT` (:func:`nia_core.deadline.call_each`);
    one that loops is abandoned and fails like one that raises.
    """

    def __init__(self, ctx: SystemContext) -> None:
        self.handler = ctx.on_render_error
        self.failed: dict[str, str] = {}

    def run(self, wanted: Sequence[Wanted]) -> list[Outcome]:
        return call_each([functools.partial(_render, s, r, *args) for s, r, args in wanted], RENDER_TIMEOUT)

    def text(self, source: ContextSource, renderer: str, outcome: Outcome) -> str | None:
        """The text one call rendered; a failure goes to the handler (the source is set aside), or is raised."""
        if outcome.error is None:
            return outcome.value  # type: ignore[no-any-return]
        error = _render_error(source, renderer, outcome.error)
        if self.handler is None:
            raise error
        self.failed[source.key] = error.reason
        self.handler(error)
        return None

    def entries(
        self, wanted: Sequence[tuple[ContextSource, Any, str, str, tuple[Any, ...]]]
    ) -> list[tuple[ContextSource, str, SnapshotEntry]]:
        """For each ``(source, value, encoded, renderer, args)``: its text and snapshot entry (with its
        removal text), or nothing when a renderer failed; in order."""
        calls: list[Wanted] = []
        for source, value, _, renderer, args in wanted:
            calls.append((source, renderer, args))
            if source.removable:
                calls.append((source, "removal", (value,)))
        outcomes = iter(self.run(calls))
        done = []
        for source, _, encoded, renderer, _ in wanted:
            text = self.text(source, renderer, next(outcomes))
            removal = next(outcomes) if source.removable else None
            if text is None:
                continue  # its removal text is not asked for: the source is set aside already
            entry = SnapshotEntry(encoded, None)
            if removal is not None:
                removal_text = self.text(source, "removal", removal)
                if removal_text is None:
                    continue
                entry = SnapshotEntry(encoded, removal_text)
            done.append((source, text, entry))
        return done

    def observations(self, observed: Sequence[Observation]) -> tuple[Observation, ...]:
        """The round's observations, a set-aside source shown as an error with its reason."""
        return tuple(
            Observation(o.key, UNAVAILABLE, "error", self.failed[o.key], o.seconds) if o.key in self.failed else o
            for o in observed
        )


def _render_error(source: ContextSource, renderer: str, error: PluginRaised | Late) -> RenderError:
    if isinstance(error, Late):
        return RenderError(source.key, renderer, f"did not finish in {error.seconds:g} s")
    if isinstance(error.original, RenderError):
        return error.original
    return RenderError(source.key, renderer, f"raised {error.text}{where_raised(error.original)}")


CODEC_TIMEOUT = PLUGIN_TIMEOUT
"""Seconds encoding, decoding or comparing one value may take when that runs a plugin's code."""


def _plain(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` is JSON data of the exact built-in types: encoding and comparing it runs no
    plugin code (a ``str`` or ``dict`` subclass may override what ``json`` and ``==`` call)."""
    kind = type(value)
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return True
    if depth > 64:
        return False
    if kind is list or kind is tuple:
        return all(_plain(item, depth + 1) for item in value)
    if kind is dict:
        return all(type(key) is str and _plain(item, depth + 1) for key, item in value.items())
    return False


def _nia_code_only(source: ContextSource, value: Any) -> bool:
    """Whether encoding, decoding and comparing the source's value is nia's own code: its JSON codec
    over plain data. Anything else (a codec of the plugin's, a value of its own types) is plugin code."""
    return type(source.codec) is JsonCodec and _plain(value)


def _encode_or_reason(source: ContextSource, value: Any) -> tuple[str | None, str]:
    """``(json, "")``, or ``(None, why)`` when the codec cannot encode the value (worded where it ran)."""
    try:
        return encode(source, value), ""
    except Exception as exc:  # noqa: BLE001 - a custom codec may raise anything; the source is unavailable
        return None, f"codec could not encode the value: {message_of(exc)}{where_raised(exc)}"


def _encodings(
    pending: Sequence[tuple[ContextSource, Any]],
) -> list[tuple[str | None, str]]:
    """:func:`_encode_or_reason` of each ``(source, value)``, as plugin code under :data:`CODEC_TIMEOUT`."""
    results = []
    for outcome in call_each([functools.partial(_encode_or_reason, s, v) for s, v in pending], CODEC_TIMEOUT):
        if outcome.error is None:
            results.append(outcome.value)
        elif isinstance(outcome.error, Late):
            results.append((None, f"codec did not finish in {outcome.error.seconds:g} s"))
        else:
            said = f"{outcome.error.text}{where_raised(outcome.error.original)}"
            results.append((None, f"codec could not encode the value: {said}"))
    return results


def _encode_observations(
    ctx: SystemContext, observations: Sequence[Observation]
) -> tuple[list[tuple[ContextSource, Any, str]], list[str], list[Observation]]:
    """Split into ``(source, value, json)`` for available sources and keys unavailable.

    A value encoded before (the very same object) costs an identity check; a
    plain value is encoded here; any other runs under a deadline, all of a
    round together (see :func:`_nia_code_only`).
    """
    available: list[tuple[ContextSource, Any, str]] = []
    unavailable: list[str] = []
    final: list[Observation] = []
    default = max_source_bytes()
    pending = [
        (index, source, obs.value)
        for index, (source, obs) in enumerate(zip(ctx.sources, observations, strict=True))
        if obs.status == "ok"
        and not ((memo := source._encoded) is not None and memo[0] is obs.value)  # type: ignore[attr-defined]
        and not _nia_code_only(source, obs.value)
    ]
    encoded_by_worker = dict(
        zip((index for index, _, _ in pending), _encodings([(s, v) for _, s, v in pending]), strict=True)
    )
    for index, (source, obs) in enumerate(zip(ctx.sources, observations, strict=True)):
        if obs.status == "ok":
            limit = source.value_limit(default)
            memo = source._encoded  # type: ignore[attr-defined]
            if memo is not None and memo[0] is obs.value and len(memo[1]) * 4 <= limit:
                # The hot path of an unchanged source: the very same value as last time, known small enough.
                available.append((source, obs.value, memo[1]))
                final.append(obs)
                continue
            done = encoded_by_worker.get(index)
            encoded, reason = _encode_or_reason(source, obs.value) if done is None else done
            if encoded is None:
                obs = Observation(source.key, obs.value, "error", reason)
                unavailable.append(source.key)
            else:
                oversized = too_large(obs, encoded, limit)
                if oversized is None:
                    available.append((source, obs.value, encoded))
                else:
                    obs = oversized
                    unavailable.append(source.key)
        else:
            unavailable.append(source.key)
        if obs.status in ("error", "timeout"):
            _report(ctx, obs)
        final.append(obs)
    return available, unavailable, final


def _report(ctx: SystemContext, obs: Observation) -> None:
    """One warning per failed source per round: the host's (naming the plugin), else the engine's."""
    if ctx.on_unavailable is not None:
        ctx.on_unavailable(obs)
    else:
        log.warning("context source %s: %s; counted unavailable", obs.key, obs.reason)


def _generation(rendering: _Rendering, available: Sequence[tuple[ContextSource, Any, str]]) -> Generation:
    keys: list[str] = []
    texts: list[str] = []
    entries: dict[str, SnapshotEntry] = {}
    for source, text, entry in rendering.entries([(s, v, e, "baseline", (v,)) for s, v, e in available]):
        keys.append(source.key)
        texts.append(text)
        entries[source.key] = entry
    spans, start, step = [], 0, len(SEPARATOR)
    for key, text in zip(keys, texts, strict=True):
        spans.append((key, start, start + len(text)))
        start += len(text) + step
    baseline = SEPARATOR.join(texts)
    texts.clear()  # the pieces go as soon as they are joined: only offsets into the baseline are kept
    return Generation(baseline, Snapshot(entries), tuple(spans))


def initialize(ctx: SystemContext, *, timeout: float = LOADER_TIMEOUT) -> Generation:
    """Observe every source once and render a fresh baseline.

    Raises :class:`InitializationBlocked` naming every unavailable key: an
    incomplete baseline is never produced.
    """
    available, unavailable, _ = _encode_observations(ctx, observe(ctx.sources, timeout))
    if unavailable:
        raise InitializationBlocked(tuple(unavailable))
    rendering = _Rendering(ctx)
    generation = _generation(rendering, available)
    if rendering.failed:
        raise InitializationBlocked(tuple(rendering.failed))
    return generation


def _replacement(
    ctx: SystemContext,
    available: Sequence[tuple[ContextSource, Any, str]],
    unavailable: Sequence[str],
    snapshot: Snapshot,
    reason: str,
    observed: Sequence[Observation],
) -> Replacement:
    blocked = tuple(key for key in unavailable if key in snapshot)
    if ctx.withheld:
        present = set(ctx.keys)
        blocked += tuple(key for key in snapshot.entries if key not in present and ctx.holds(key))
    if blocked:
        return ReplacementBlocked(blocked, reason, tuple(observed))
    rendering = _Rendering(ctx)
    generation = _generation(rendering, available)
    observations = rendering.observations(observed)
    blocked = tuple(key for key in rendering.failed if key in snapshot)
    if blocked:
        return ReplacementBlocked(blocked, reason, observations)
    return ReplacementReady(generation, reason, observations)


def replace(ctx: SystemContext, snapshot: Snapshot, *, timeout: float = LOADER_TIMEOUT) -> Replacement:
    """Render a fresh baseline unless a source already admitted is unavailable."""
    available, unavailable, observed = _encode_observations(ctx, observe(ctx.sources, timeout))
    return _replacement(ctx, available, unavailable, snapshot, "replacement requested", observed)


def reconcile(ctx: SystemContext, snapshot: Snapshot, *, timeout: float = LOADER_TIMEOUT) -> Reconciliation:
    """Observe once and compare with ``snapshot``; see the module docstring."""
    available, unavailable, observed = _encode_observations(ctx, observe(ctx.sources, timeout))
    present = set(ctx.keys)

    # First pass: decide whether the baseline must be replaced, before any update renderer runs.
    changed: list[tuple[ContextSource, Any, Any, str]] = []
    added: list[tuple[ContextSource, Any, str]] = []
    differ: list[tuple[ContextSource, Any, str, str]] = []
    stored = snapshot.entries  # the plain dict: this loop runs once per source per boundary
    for source, value, encoded in available:
        entry = stored.get(source.key)
        if entry is None:
            added.append((source, value, encoded))
        elif entry.value is encoded:
            continue  # the stored text itself: the hot path of a long-lived process
        elif entry.value == encoded:  # equal text is equal value: the common case costs one string compare
            _adopt(source, value, entry.value)
        else:
            differ.append((source, value, encoded, entry.value))
    for (source, value, encoded, _), (verdict, previous) in zip(differ, _comparisons(differ), strict=True):
        if verdict == "changed":
            changed.append((source, previous, value, encoded))
        elif verdict != "same":
            reason = f"stored value of {source.key} can no longer be decoded ({verdict})"
            return _replacement(ctx, available, unavailable, snapshot, reason, observed)
    held = {key for key in stored if key not in present and ctx.holds(key)} if ctx.withheld else set()
    gone = sorted(key for key in stored if key not in present and key not in held)
    for key in gone:
        if not (snapshot[key].removal or "").strip():  # an empty removal would admit an empty message
            reason = f"{key} is gone and has no removal text"
            return _replacement(ctx, available, unavailable, snapshot, reason, observed)

    if not changed and not added and not gone:
        return Unchanged(tuple(observed))

    # A source set aside by a failing renderer keeps its stored entry (or stays out), like an unavailable one.
    rendering = _Rendering(ctx)
    entries = {key: entry for key, entry in snapshot.items() if key in present or key in held}
    updates: dict[str, Change] = {}
    wanted: list[tuple[ContextSource, Any, str, str, tuple[Any, ...]]] = [
        (source, value, encoded, "update", (previous, value)) for source, previous, value, encoded in changed
    ]
    wanted += [(source, value, encoded, "baseline", (value,)) for source, value, encoded in added]
    for source, text, entry in rendering.entries(wanted):
        updates[source.key] = Change(source.key, "updated" if source.key in stored else "added", text)
        entries[source.key] = entry
    observations = rendering.observations(observed)
    if not updates and not gone:
        return Unchanged(observations)
    changes = [updates[key] for key in ctx.keys if key in updates]
    changes += [Change(key, "removed", snapshot[key].removal or "") for key in gone]
    text = SEPARATOR.join(change.text for change in changes)
    return Updated(text, Snapshot(entries), tuple(changes), observations)
