"""The System Context Registry: scoped, replayable producers per Location.

Producers (a function of a :class:`Location` returning context sources)
register under a stable contribution key inside a :class:`Scope`. Closing a
scope removes exactly its contributions, so the next reconcile emits their
removal text. Registration is replayed both ways: a Location opened later sees
every live contribution, and a contribution made later reaches every open
Location. Each load evaluates producers concurrently and combines them in
contribution order, so the rendered context is deterministic.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import types
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, NoReturn

from nia_core.context.concurrent import call_all
from nia_core.context.keys import RESERVED_NAMESPACE, namespace_of
from nia_core.context.location import Location
from nia_core.context.refresh import Refreshers
from nia_core.context.source import LOADER_TIMEOUT, ContextSource
from nia_core.context.system import SystemContext
from nia_core.deadline import PLUGIN_TIMEOUT, Late, PluginRaised, call
from nia_core.errors import DuplicateContribution, DuplicateSourceKey, NiaError, where_raised

log = logging.getLogger("nia.registry")

Producer = Callable[[Location], Any]
ProblemKind = Literal["raised", "timeout", "bad-return", "namespace", "duplicate-key"]


@dataclass(frozen=True)
class Contribution:
    key: str
    producer: Producer
    contributor: str
    """Who contributed it, for error messages (``plugin 'acme'``)."""
    scope: Scope
    namespace: str | None = None
    """When set, every source key must live in this namespace."""
    reserved: bool = False
    """Whether it may use the reserved ``nia/`` namespace (built-ins only)."""
    priority: int = 100
    """Lower sorts first; ties sort by contribution key."""
    owner: str | None = None
    """Who answers for it, as data (the plugin host passes the plugin's name); ``contributor`` is its text."""

    @property
    def order(self) -> tuple[int, str]:
        return (self.priority, self.key)


@dataclass(frozen=True)
class Problem:
    """A contribution that was left out of this load, and why."""

    contribution: str
    contributor: str
    kind: ProblemKind
    message: str
    error: BaseException | None = field(default=None, compare=False, repr=False)
    """What a strict load raises: the producer's own exception, or a :class:`DuplicateKey`."""
    key: str | None = None
    """The source key at fault (``namespace``, ``duplicate-key``)."""
    other: str | None = None
    """For ``duplicate-key``: the contribution that already has the key (the text only names its contributor)."""

    def __str__(self) -> str:
        return f"{self.contributor}: {self.message}"


@dataclass(frozen=True)
class Assembly:
    """One load of a Location's context."""

    context: SystemContext
    problems: tuple[Problem, ...] = ()
    contributors: dict[str, str] = field(default_factory=dict)
    """Source key → contributor (text, for messages)."""
    owners: dict[str, str] = field(default_factory=dict)
    """Source key → the owner of its contribution, for the keys of contributions that name one."""


class ContributionError(NiaError):
    """Raised by a strict load when a contribution misbehaved (timed out, returned no sources, left its namespace)."""


class DuplicateKey(DuplicateSourceKey, ContributionError):
    """A strict load met one source key from two contributions; names both contributors."""


Listener = Callable[[], None]


class Scope:
    """A set of contributions that leave together (one plugin, one session, one reload)."""

    def __init__(self, registry: SystemContextRegistry, name: str) -> None:
        self.registry = registry
        self.name = name
        self.closed = False

    def register(
        self,
        key: str,
        producer: Producer,
        *,
        contributor: str | None = None,
        namespace: str | None = None,
        reserved: bool = False,
        priority: int = 100,
        owner: str | None = None,
    ) -> Contribution:
        if self.closed:
            raise NiaError(f"scope {self.name!r} is closed")
        contribution = Contribution(key, producer, contributor or self.name, self, namespace, reserved, priority, owner)
        self.registry._add(contribution)
        return contribution

    def close(self) -> None:
        """Withdraw every contribution of this scope from every open Location."""
        if not self.closed:
            self.closed = True
            self.registry._remove_scope(self)

    def __enter__(self) -> Scope:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Scope({self.name!r}{', closed' if self.closed else ''})"


LATE_CLAUSE = "its sources are left out until it answers in time (a busy machine, a slow disk?)"
"""Said of a contribution that ran past its deadline: the user's context is missing a part, and why."""


class SystemContextRegistry:
    """Global producers, replayed into each open :class:`LocationContext`."""

    def __init__(self, *, producer_timeout: float = LOADER_TIMEOUT) -> None:
        self.producer_timeout = producer_timeout
        self._lock = threading.RLock()
        self._contributions: dict[str, Contribution] = {}
        self._open: list[LocationContext] = []

    def scope(self, name: str) -> Scope:
        return Scope(self, name)

    @property
    def contributions(self) -> tuple[Contribution, ...]:
        with self._lock:
            return tuple(sorted(self._contributions.values(), key=lambda c: c.order))

    def open(self, location: Location) -> LocationContext:
        """A Location's view: every live contribution is replayed into it."""
        view = LocationContext(self, location)
        with self._lock:
            for contribution in self._contributions.values():
                view._add(contribution)
            self._open.append(view)
        return view

    def _add(self, contribution: Contribution) -> None:
        with self._lock:
            existing = self._contributions.get(contribution.key)
            if existing is not None:
                raise DuplicateContribution(
                    f"duplicate contribution key {contribution.key!r}: "
                    f"registered by {existing.contributor} and by {contribution.contributor}"
                )
            self._contributions[contribution.key] = contribution
            views = list(self._open)
        for view in views:
            view._add(contribution)

    def _remove_scope(self, scope: Scope) -> None:
        with self._lock:
            for key in [k for k, c in self._contributions.items() if c.scope is scope]:
                del self._contributions[key]
            views = list(self._open)
        for view in views:
            view._remove_scope(scope)

    def _closed(self, view: LocationContext) -> None:
        with self._lock:
            if view in self._open:
                self._open.remove(view)


class LocationContext:
    """The registry as seen from one Location; it may hold contributions of its own."""

    def __init__(self, registry: SystemContextRegistry, location: Location) -> None:
        self.registry = registry
        self.location = location
        self._lock = threading.RLock()
        self._contributions: dict[str, Contribution] = {}
        self._listeners: list[Listener] = []
        self._local = Scope(registry, f"location {location.path}")
        self._refreshers = Refreshers()
        """The last observations of the sources with ``refresh`` set, kept for as long as this view is open."""

    def register(self, key: str, producer: Producer, **options: Any) -> Contribution:
        """A contribution visible in this Location only."""
        contribution = Contribution(key, producer, options.pop("contributor", None) or key, self._local, **options)
        self._add(contribution)
        return contribution

    def scope(self, name: str) -> LocalScope:
        return LocalScope(self, name)

    def withdraw(self, *keys: str) -> list[str]:
        """Remove these contributions from this Location only; returns the keys that were present.

        For a host reloading a plugin that contributed here directly (from
        ``nia_location_opened``): the new version registers the same keys again.
        """
        with self._lock:
            removed = [key for key in keys if self._contributions.pop(key, None) is not None]
        if removed:
            self._notify()
        return removed

    def on_change(self, listener: Listener) -> None:
        """Call ``listener`` whenever a contribution arrives or leaves."""
        self._listeners.append(listener)

    @property
    def contributions(self) -> tuple[Contribution, ...]:
        with self._lock:
            return tuple(sorted(self._contributions.values(), key=lambda c: c.order))

    def _add(self, contribution: Contribution) -> None:
        with self._lock:
            existing = self._contributions.get(contribution.key)
            if existing is not None and existing is not contribution:
                raise DuplicateContribution(
                    f"duplicate contribution key {contribution.key!r}: "
                    f"registered by {existing.contributor} and by {contribution.contributor}"
                )
            self._contributions[contribution.key] = contribution
        self._notify()

    def _remove_scope(self, scope: Scope) -> None:
        with self._lock:
            keys = [k for k, c in self._contributions.items() if c.scope is scope]
            for key in keys:
                del self._contributions[key]
        if keys:
            self._notify()

    def _notify(self) -> None:
        """Tell each listener, as plugin code under a deadline: one that raises or hangs is a warning, no more."""
        for listener in list(self._listeners):
            try:
                call(listener, PLUGIN_TIMEOUT)
            except (PluginRaised, Late) as exc:
                log.warning("a change listener of %s (%s): %s", self.location.path, _named(listener), exc)

    def close(self) -> None:
        self._refreshers.close()
        self.registry._closed(self)

    def assemble(self, *, strict: bool = False) -> Assembly:
        """Evaluate every producer concurrently and compose their sources.

        A producer that raises, times out, returns something other than
        sources, strays outside its namespace or repeats another contributor's
        key is left out whole and reported as a :class:`Problem` (``strict``
        raises instead). The earlier contribution keeps a clashing key.
        """
        contributions = self.contributions
        location = self.location
        outcomes = call_all(
            [_bind(c.producer, location) for c in contributions],
            [self.registry.producer_timeout] * len(contributions),
        )
        problems: list[Problem] = []
        owners: dict[str, Contribution] = {}
        sources: list[ContextSource] = []
        for contribution, outcome in zip(contributions, outcomes, strict=True):
            problem: Problem | None
            if outcome.status == "timeout":
                seconds = self.registry.producer_timeout
                problem = _problem(contribution, "timeout", f"timed out after {seconds:g}s; {LATE_CLAUSE}")
            elif outcome.status == "error":
                exc = outcome.error
                said = f"raised {type(exc).__name__}: {outcome.message}{where_raised(exc)}"
                problem = _problem(contribution, "raised", said, exc)
            else:
                accepted, problem = _check(contribution, outcome.value, owners)
                if problem is None:
                    for source in accepted:
                        owners[source.key] = contribution
                    sources.extend(accepted)
                    continue
            assert problem is not None
            problems.append(problem)
            log.warning("%s", problem)
            if problem.kind == "raised" and problem.error is not None:  # --debug: where, in the plugin's code
                log.debug("%s: traceback", problem, exc_info=problem.error)
        if strict and problems:
            _raise_strict(problems[0])
        if any(source.refresh is not None for source in sources):
            sources = self._refreshed(sources, owners)
        else:
            self._refreshers.keep(())
        return Assembly(
            SystemContext(sources),
            tuple(problems),
            {key: c.contributor for key, c in owners.items()},
            {key: c.owner for key, c in owners.items() if c.owner is not None},
        )

    def _refreshed(self, sources: list[ContextSource], owners: dict[str, Contribution]) -> list[ContextSource]:
        """Each source with ``refresh`` set, its loader replaced by this view's :class:`Refreshed` for it."""
        live = []
        out = []
        for source in sources:
            if source.refresh is None:
                out.append(source)
                continue
            ident = (owners[source.key], source.key)
            live.append(ident)
            loader = self._refreshers.loader(*ident, source.load, source.asynchronous, source.refresh)
            out.append(dataclasses.replace(source, load=loader))
        self._refreshers.keep(live)
        return out


class LocalScope(Scope):
    """A scope whose contributions live in one Location only."""

    def __init__(self, view: LocationContext, name: str) -> None:
        super().__init__(view.registry, name)
        self.view = view

    def register(self, key: str, producer: Producer, **options: Any) -> Contribution:
        if self.closed:
            raise NiaError(f"scope {self.name!r} is closed")
        contributor = options.pop("contributor", None) or self.name
        contribution = Contribution(key, producer, contributor, self, **options)
        self.view._add(contribution)
        return contribution

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.view._remove_scope(self)


def _bind(producer: Producer, location: Location) -> Callable[[], Any]:
    def call() -> Any:
        value = producer(location)
        if isinstance(value, Iterator):  # a generator's body runs here, under the timeout, not in assemble
            value = list(value)
        return value

    return call


def _problem(
    contribution: Contribution,
    kind: ProblemKind,
    message: str,
    error: BaseException | None = None,
    *,
    key: str | None = None,
    other: str | None = None,
) -> Problem:
    return Problem(contribution.key, contribution.contributor, kind, message, error, key=key, other=other)


def _raise_strict(problem: Problem) -> NoReturn:
    """A strict load fails with the first problem's own error, not a wrapper.

    A producer that raised re-raises its exception, with a note naming its
    contributor; a duplicate key raises :class:`DuplicateKey` naming both
    contributors; anything else raises :class:`ContributionError`.
    """
    error = problem.error
    if error is None:
        raise ContributionError(str(problem))
    if problem.kind == "raised":
        error.add_note(f"raised by the context producer {problem.contribution!r} of {problem.contributor}")
    raise error


def _check(
    contribution: Contribution, value: Any, owners: dict[str, Contribution]
) -> tuple[list[ContextSource], Problem | None]:
    if value is None:
        return [], None
    if isinstance(value, SystemContext):
        value = list(value.sources)
    if (
        isinstance(value, ContextSource | str | bytes | dict | set | frozenset)  # iterable, but not a list of sources
        or not isinstance(value, Iterable)
    ):
        return [], _problem(contribution, "bad-return", f"returned {type(value).__name__}, not a list of ContextSource")
    items = list(value)
    seen: set[str] = set()
    for item in items:
        if not isinstance(item, ContextSource):
            return [], _problem(
                contribution, "bad-return", f"returned a {type(item).__name__} in its list, not a ContextSource"
            )
        namespace = namespace_of(item.key)
        if contribution.namespace is not None and namespace != contribution.namespace:
            return [], _problem(
                contribution,
                "namespace",
                f"source key {item.key!r} is outside its declared namespace '{contribution.namespace}/'",
                key=item.key,
            )
        if namespace == RESERVED_NAMESPACE and not contribution.reserved:
            return [], _problem(
                contribution,
                "namespace",
                f"source key {item.key!r} uses the namespace 'nia/', reserved for built-ins",
                key=item.key,
            )
        other = owners.get(item.key)
        if other is not None or item.key in seen:
            first = other.contributor if other is not None else contribution.contributor
            return [], _problem(
                contribution,
                "duplicate-key",
                f"source key {item.key!r} is already contributed by {first}",
                DuplicateKey(item.key, first, contribution.contributor),
                key=item.key,
                other=other.key if other is not None else contribution.key,
            )
        seen.add(item.key)
    return items, None


def _named(function: Callable[..., Any]) -> str:
    """``module.qualname`` of a plain function or method (read as data), else its type's name."""
    code = function.__func__ if type(function) is types.MethodType else function
    if type(code) is not types.FunctionType:
        return type(function).__name__
    return f"{code.__module__}.{code.__qualname__}"
