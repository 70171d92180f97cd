"""nia's test kit for plugin authors (a pytest plugin, registered as ``pytest11``).

Its fixtures do nothing unless a test asks for them: no autouse fixtures, no
hooks, and the engine's pieces are imported only inside them.

- ``nia_project``: a temporary project folder (holding ``.nia/``) with helpers
  to write files and plugin config.
- ``nia_location``: that project's :class:`~nia_core.Location`.
- ``nia_host``: ``nia_host(plugin, ...)`` makes a host with only those plugins registered.
- ``nia_boundaries``: drives safe boundaries the way a session would: register,
  reconcile, change something, reconcile again, unregister, and returns the
  texts the model would see.

The helpers work without pytest too: :func:`make_host`, :class:`Conversation`,
:class:`BoundaryDriver`.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pytest

if TYPE_CHECKING:
    from nia_core.context import Assembly, Change, ContextSource, Location, LocationContext, Snapshot
    from nia_core.plugin_host import PluginHost, PluginInfo

__all__ = [
    "Boundary",
    "BoundaryDriver",
    "BoundaryTexts",
    "Conversation",
    "Project",
    "add_plugin",
    "make_host",
    "nia_boundaries",
    "nia_host",
    "nia_location",
    "nia_project",
]

BoundaryKind = Literal["unchanged", "updated", "replaced", "blocked"]


# -- a temporary project ------------------------------------------------------------------


@dataclass
class Project:
    """A project folder for a test: ``root`` holds ``.nia/``."""

    root: Path

    @property
    def location(self) -> Location:
        return self.location_at(".")

    def location_at(self, relative: str | Path) -> Location:
        """The Location of a folder inside the project (created if missing)."""
        from nia_core.project import locate

        folder = self.root / relative
        folder.mkdir(parents=True, exist_ok=True)
        return locate(folder)

    def path(self, relative: str | Path) -> Path:
        return self.root / relative

    def write(self, relative: str | Path, text: str) -> Path:
        """Write a UTF-8 text file inside the project, creating folders; returns its path."""
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def configure(self, plugin: str, **table: Any) -> Path:
        """Set ``[plugins.PLUGIN]`` in ``.nia/project.toml`` (what the plugin's ``config`` argument receives)."""
        import tomlkit

        path = self.root / ".nia" / "project.toml"
        document = tomlkit.parse(path.read_text(encoding="utf-8")) if path.exists() else tomlkit.document()
        plugins = document.setdefault("plugins", tomlkit.table(is_super_table=True))
        plugins[plugin] = table
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(tomlkit.dumps(document), encoding="utf-8")
        return path


# -- a host with only the plugins under test ----------------------------------------------


class _Sources:
    """Ready-made context sources wrapped as a plugin, for testing a source on its own."""

    def __init__(self, sources: Sequence[ContextSource]) -> None:
        self.sources = list(sources)

    def nia_context_sources(self) -> list[ContextSource]:
        return list(self.sources)


def _as_plugin(plugin: object) -> object:
    from nia_core import ContextSource, hookimpl

    if isinstance(plugin, ContextSource):
        plugin = [plugin]
    if isinstance(plugin, list | tuple) and plugin and all(isinstance(s, ContextSource) for s in plugin):
        if not hasattr(_Sources.nia_context_sources, "nia_impl"):
            hookimpl(_Sources.nia_context_sources)
        return _Sources(plugin)
    return plugin


def _builtin_name(plugin: object) -> str | None:
    from nia_plugins import BUILTINS

    module = getattr(plugin, "__name__", None) if isinstance(plugin, types.ModuleType) else None
    return next((name for name, value in BUILTINS.items() if value == module), None)


def plugin_name(plugin: object) -> str:
    """A default name: the built-in's name, else the module name with ``-`` for ``_`` (``acme_jira``: ``acme-jira``)."""
    builtin = _builtin_name(plugin)
    if builtin is not None:
        return builtin
    if isinstance(plugin, types.ModuleType):
        return plugin.__name__.rsplit(".", 1)[-1].replace("_", "-")
    if isinstance(plugin, _Sources):
        return "sources-under-test"
    cls = plugin if isinstance(plugin, type) else type(plugin)
    return cls.__name__.lower().replace("_", "-")


def add_plugin(host: PluginHost, plugin: object, *, name: str | None = None, builtin: bool | None = None) -> PluginInfo:
    """Register ``plugin`` (a module, an object with hookimpls, or context sources) as nia would.

    It goes through the same checks as an installed plugin (namespace, hook
    signatures, unknown hooks). ``builtin`` defaults to whether it is one of
    nia's built-ins; only built-ins may use the reserved ``nia/`` namespace.
    """
    from nia_core.plugin_host import PluginInfo
    from nia_core.plugin_host.discovery import register_imported
    from nia_plugins import BUILTINS

    if builtin is None:
        builtin = _builtin_name(plugin) is not None
    wrapped = _as_plugin(plugin)
    info = PluginInfo(
        name or plugin_name(wrapped),
        "built-in" if builtin else "entry point",
        module=getattr(wrapped, "__name__", type(wrapped).__name__),
    )
    order = list(BUILTINS).index(info.name) if builtin and info.name in BUILTINS else None  # as nia orders them
    return register_imported(host, info, lambda: wrapped, priority=order)


def make_host(
    *plugins: object, strict: bool = True, timeout: float | None = None, builtin: bool | None = None
) -> PluginHost:
    """A host with only ``plugins`` registered (no built-ins, nothing installed, no local folders).

    ``strict`` (the default) turns any plugin failure into a ``PluginError``, so
    a test fails loudly; pass ``strict=False`` to see how nia isolates it.
    """
    from nia_core.context import LOADER_TIMEOUT
    from nia_core.plugin_host import PluginHost

    host = PluginHost(strict=strict, timeout=LOADER_TIMEOUT if timeout is None else timeout)
    for plugin in plugins:
        add_plugin(host, plugin, builtin=builtin)
    return host


# -- boundaries ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Boundary:
    """What one safe provider-turn boundary did.

    ``text`` is what the model sees: the mid-conversation system message when
    ``updated``, the fresh baseline when ``replaced``, else ``None``.
    """

    kind: BoundaryKind
    text: str | None = None
    changes: tuple[Change, ...] = ()
    blocked_on: tuple[str, ...] = ()
    reason: str = ""

    @property
    def changed(self) -> dict[str, str]:
        """Source key → ``added`` / ``updated`` / ``removed``."""
        return {change.key: change.kind for change in self.changes}


class Conversation:
    """A pretend conversation at one Location: a baseline, then one boundary at a time.

    The snapshot advances exactly as a session's would, so what each
    :meth:`boundary` returns is what the model would be told at that point.
    """

    def __init__(self, host: PluginHost, location: Location) -> None:
        from nia_core.context import EMPTY_SNAPSHOT

        self.host = host
        self.location = location
        self.view: LocationContext = host.open(location)
        self.snapshot: Snapshot = EMPTY_SNAPSHOT
        self.baseline: str | None = None
        self.history: list[Boundary] = []

    def assemble(self) -> Assembly:
        return self.host.assemble(self.view)

    def start(self) -> Boundary:
        """Render the baseline a new conversation would begin with (``blocked`` when a source is unavailable)."""
        from nia_core.context import ReplacementReady, replace

        assembly = self.assemble()
        result = replace(assembly.context, self.snapshot, timeout=self.host.timeout)
        self.host.report_observations(assembly, result.observations)
        if isinstance(result, ReplacementReady) and not _unavailable(result.observations):
            self.baseline = result.generation.baseline
            self.snapshot = result.generation.snapshot
            return self._note(Boundary("replaced", self.baseline))
        return self._note(Boundary("blocked", None, blocked_on=_unavailable(result.observations)))

    def boundary(self) -> Boundary:
        """Reconcile once against the current snapshot and advance it."""
        from nia_core.context import ReplacementReady, Unchanged, Updated, reconcile

        if self.baseline is None:
            return self.start()
        assembly = self.assemble()
        result = reconcile(assembly.context, self.snapshot, timeout=self.host.timeout)
        self.host.report_observations(assembly, result.observations)
        if isinstance(result, Unchanged):
            return self._note(Boundary("unchanged"))
        if isinstance(result, Updated):
            self.snapshot = result.snapshot
            return self._note(Boundary("updated", result.text, result.changes))
        if isinstance(result, ReplacementReady):
            self.baseline = result.generation.baseline
            self.snapshot = result.generation.snapshot
            return self._note(Boundary("replaced", self.baseline, reason=result.reason))
        return self._note(Boundary("blocked", None, blocked_on=result.keys, reason=result.reason))

    @property
    def messages(self) -> list[str]:
        """Every mid-conversation system message so far, in order."""
        return [b.text for b in self.history if b.kind == "updated" and b.text is not None]

    def close(self) -> None:
        self.view.close()

    def _note(self, boundary: Boundary) -> Boundary:
        self.history.append(boundary)
        return boundary


def _unavailable(observations: Iterable[Any]) -> tuple[str, ...]:
    return tuple(o.key for o in observations if not o.available)


@dataclass(frozen=True)
class BoundaryTexts:
    """What the model would see across one plugin's life in a conversation (see :meth:`BoundaryDriver.drive`)."""

    baseline: str | None
    """The baseline a conversation started with the plugin registered would get; ``None`` when blocked."""
    added: str | None
    """The message when the plugin arrives mid-conversation (its sources' baseline texts)."""
    updates: list[str | None]
    """One per change: the message at the next boundary, or ``None`` when nothing changed."""
    removal: str | None
    """The message after the plugin is unregistered (its sources' removal texts)."""
    boundaries: list[Boundary] = field(default_factory=list)
    """Every boundary in order (added, one per change, removal), for the kinds and change lists."""

    @property
    def messages(self) -> list[str]:
        """Every mid-conversation system message, in order."""
        return [b.text for b in self.boundaries if b.kind == "updated" and b.text is not None]


class BoundaryDriver:
    """Drives safe boundaries at one Location."""

    def __init__(self, location: Location, *, strict: bool = True, timeout: float | None = None) -> None:
        self.location = location
        self.strict = strict
        self.timeout = timeout

    def conversation(self, *plugins: object, builtin: bool | None = None) -> Conversation:
        """A conversation whose baseline already holds ``plugins``' sources."""
        host = make_host(*plugins, strict=self.strict, timeout=self.timeout, builtin=builtin)
        conversation = Conversation(host, self.location)
        conversation.start()
        return conversation

    def drive(
        self,
        plugin: object,
        *changes: Callable[[], Any],
        name: str | None = None,
        builtin: bool | None = None,
    ) -> BoundaryTexts:
        """Register ``plugin`` into a running conversation, apply each change, then unregister it.

        One boundary follows each step, so the result holds the texts the
        model would see: the plugin's sources arriving, each change, and their
        removal.
        """
        fresh = Conversation(make_host(strict=self.strict, timeout=self.timeout), self.location)
        info = add_plugin(fresh.host, plugin, name=name, builtin=builtin)
        baseline = fresh.start().text
        fresh.close()

        conversation = Conversation(make_host(strict=self.strict, timeout=self.timeout), self.location)
        conversation.start()
        add_plugin(conversation.host, plugin, name=info.name, builtin=builtin)
        added = conversation.boundary()
        updates = []
        for change in changes:
            change()
            updates.append(conversation.boundary())
        conversation.host.unregister(info.name)
        removal = conversation.boundary()
        conversation.close()
        return BoundaryTexts(
            baseline=baseline,
            added=added.text,
            updates=[b.text for b in updates],
            removal=removal.text,
            boundaries=[added, *updates, removal],
        )


# -- fixtures -----------------------------------------------------------------------------


@pytest.fixture
def nia_project(tmp_path: Path) -> Project:
    """A temporary project folder holding an empty ``.nia/``."""
    root = tmp_path / "project"
    (root / ".nia").mkdir(parents=True)
    return Project(root.resolve())


@pytest.fixture
def nia_location(nia_project: Project) -> Location:
    """The temporary project's Location."""
    return nia_project.location


@pytest.fixture
def nia_host() -> Callable[..., PluginHost]:
    """``nia_host(plugin, ..., strict=True, timeout=None)``: a host with only those plugins."""
    return make_host


@pytest.fixture
def nia_boundaries(nia_location: Location) -> BoundaryDriver:
    """A :class:`BoundaryDriver` at the temporary project's Location."""
    return BoundaryDriver(nia_location)
