"""The runtime: plugin hosts, registry views, providers and the store, wired for boundaries and turns.

Every door (``nia session send``, the workflows, the agent hooks, ``nia mcp``,
an embedding program) asks a :class:`Runtime` for a boundary instead of
wiring the host, the providers and the store itself, so they all share one
path: registry -> observe -> reconcile -> admit -> render. It knows no click
and prints nothing: warnings come back as data in the reports.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from nia_core.context import ContextSource, Location, LocationContext, SystemContext
from nia_core.plugin_host import PluginHost, load_host
from nia_core.project.root import locate

if TYPE_CHECKING:  # imported on use: the agent hooks and MCP call no provider, so they never load HTTP code
    from nia_core.model import StreamCallback  # (nor `nia context show` models or workflows)
    from nia_core.project import Workflow
    from nia_core.providers.lookup import ProviderLookup

    # ... and a plugin host alone (``nia --help`` listing plugin commands) needs no store or sessions code
    from nia_core.runtime.reports import BoundaryReport, Watch
    from nia_core.runtime.turn_report import TurnReport
    from nia_core.sessions import ContextFor, Message, SessionRecord, Store, Summarizer

Where = Location | str | os.PathLike[str] | None
"""A Location, or a directory inside one (``None``: the current directory)."""


class Runtime:
    """One process's wiring: a plugin host per project, a registry view per Location, reused by every boundary.

    Opening a view per boundary would pile up views (and pluggy's historic
    call record) in a long-lived process, so each Location gets one for the
    runtime's lifetime. The store is the caller's: pass it to each call.
    """

    def __init__(
        self, *, plugins_dirs: Sequence[str | Path] = (), flags: Sequence[str] = (), strict: bool = False
    ) -> None:
        self.plugins_dirs = tuple(str(p) for p in plugins_dirs)
        self.flags = tuple(flags)
        """Plugin switches for this runtime, ``no:NAME`` each (like ``nia -p no:NAME``)."""
        self.strict = strict
        """Turn any plugin failure into an error (:class:`~nia_core.plugin_host.PluginError`)."""
        self._hosts: dict[Path, PluginHost] = {}
        self._views: dict[Location, LocationContext] = {}
        self._lock = threading.RLock()

    # -- the pieces -------------------------------------------------------------------

    def locate(self, where: Where = None) -> Location:
        """The Location of a directory (the project root is found upward: ``.nia/``, else ``.git``)."""
        return where if isinstance(where, Location) else locate(where)

    def host(self, where: Where = None) -> PluginHost:
        """The plugin host of the project at ``where``, loaded once per project."""
        location = self.locate(where)
        with self._lock:
            host = self._hosts.get(location.root)
            if host is None:
                host = load_host(location, plugins_dirs=self.plugins_dirs, flags=self.flags, strict=self.strict)
                self._hosts[location.root] = host
            return host

    def open(self, where: Where = None) -> tuple[PluginHost, LocationContext]:
        """The host and the Location's registry view, opened once per Location."""
        location = self.locate(where)
        host = self.host(location)
        with self._lock:
            view = self._views.get(location)
            if view is None:
                view = self._views[location] = host.open(location)
            return host, view

    def close(self) -> None:
        """Close every registry view this runtime opened (their background refreshes stop); the runtime is done."""
        with self._lock:
            views, self._views = list(self._views.values()), {}
            self._hosts = {}
        for view in views:
            view.close()

    def context_for(self, location: str) -> SystemContext:
        """The System Context at ``location`` as the plugin host assembles it: a :data:`ContextFor`."""
        host, view = self.open(location)
        return host.assemble(view).context

    def providers(self, where: Where = None) -> ProviderLookup:
        """``model -> Provider`` at ``where``: built-ins, the project's ``[providers]`` settings, plugins' providers.

        Built per call, so an edited ``project.toml`` counts at the next turn.
        """
        location = self.locate(where)
        from nia_core.providers.lookup import providers_at

        return providers_at(location, self.host(location))

    def default_model(self, where: Where = None) -> str:
        """The model of a new session at ``where``: ``NIA_MODEL``, else ``[session] model``, else ``echo/echo``.

        A ``project.toml`` that does not load is an error here (naming file and line): a session must not
        silently start on another model than the one the project asks for.
        """
        chosen = os.environ.get("NIA_MODEL", "").strip()
        if not chosen:
            from nia_core.project.config import load_project_config

            chosen = load_project_config(self.locate(where).root).session_model or ""
        from nia_core.model import DEFAULT_MODEL
        from nia_core.providers.names import canonical_model

        return canonical_model(chosen or DEFAULT_MODEL)

    @staticmethod
    def model_warnings(providers: ProviderLookup, model: str) -> list[str]:
        """What will make the first request with ``model`` fail, said before it is sent (a missing API key)."""
        provider = providers(model)
        settings = getattr(provider, "settings", None)
        if settings is not None and not getattr(settings, "api_key", None):
            variable = getattr(settings, "api_key_env", "the API key variable")
            from nia_core.model import split_model

            return [f"{variable} is not set: requests to {split_model(model)[0]} will be sent without an API key"]
        return []

    def summarizer(self, where: Where = None) -> Summarizer:
        """The first ``nia_summarize`` answer of the plugins at ``where``, else the default summary."""

        from nia_core.sessions import default_summary

        def summarize(messages: Sequence[Message]) -> str:
            # A plugin whose nia_summarize raises is marked broken with a warning naming it; the next one,
            # else the default summary, answers.
            answer = self.host(where).summarize(list(messages))
            return answer if answer is not None else default_summary(messages)

        return summarize

    # -- sessions ---------------------------------------------------------------------

    def create_session(
        self, store: Store, where: Where = None, model: str | None = None, *, session_id: str | None = None
    ) -> SessionRecord:
        """A new session at ``where`` (no epoch yet: its first boundary initializes one).

        ``model`` (default: ``DEFAULT_MODEL``, ``echo/echo``) may use a provider alias (``anthropic/…``,
        ``openai/…``); the session stores the full name.
        """
        from nia_core.model import DEFAULT_MODEL
        from nia_core.providers.names import canonical_model

        chosen = DEFAULT_MODEL if model is None else model
        return store.create_session(str(self.locate(where).path), canonical_model(chosen), session_id=session_id)

    def attach(
        self, store: Store, host: str, host_session_id: str, where: Where = None, *, model: str | None = None
    ) -> SessionRecord:
        """The session of an outside host's conversation, created at ``where`` on first use.

        See :func:`nia_core.runtime.attached.attach`.
        """
        from nia_core.runtime.attached import attach

        return attach(store, host, host_session_id, str(self.locate(where).path), model=model)

    def continue_fork(self, store: Store, host: str, parent_host_session_id: str, session_id: str) -> bool:
        """Give attached session ``session_id`` (a fork) the active epoch of the conversation it forks.

        ``parent_host_session_id`` is the host's id of that conversation.
        Whether there was an epoch to continue (see
        :func:`nia_core.runtime.attached.continue_fork`).
        """
        from nia_core.runtime.attached import attached_id, continue_fork
        from nia_core.sessions import UnknownSession

        parent = attached_id(host, parent_host_session_id)
        if parent == session_id:
            return False
        try:
            return continue_fork(store, parent, session_id)
        except UnknownSession:
            return False

    def move(self, store: Store, session_id: str, where: Where) -> SessionRecord:
        """Make ``where`` the session's Location; its context is rebuilt there at the next boundary."""
        from nia_core.sessions import move

        return move(store, session_id, str(self.locate(where).path))

    def boundary(
        self,
        store: Store,
        session_id: str,
        *,
        workflow: Workflow | None = None,
        leave_out: Collection[str] = (),
        narrow: Mapping[str, Narrow] | None = None,
        location: Location | None = None,
    ) -> BoundaryReport:
        """One safe boundary without a provider call, for a door whose host owns the conversation.

        Initializes the epoch when there is none (the report's ``text`` is
        then the baseline), else reconciles and durably admits what changed
        (``text`` is the mid-conversation system message, ``None`` when
        nothing changed). The context is observed every time. ``leave_out``:
        keys of sources the conversation gets some other way (an agent that
        loads ``AGENTS.md`` itself); they are neither observed nor rendered.
        ``narrow``: keys of sources the conversation gets *part* of some other
        way, each with the door's view of the source: a function given the
        source that returns the source to observe instead (one that keeps of
        the value only what the conversation still needs, the user-global
        ``AGENTS.md`` of ``nia/instructions`` say, with texts that say so),
        or ``None`` to leave it out. ``location``: the session's Location as
        the door found it (an agent hook, from the hook's folder); the
        context is assembled there without finding the project again (a
        session found at another path, moved meanwhile, is located anew).
        """
        from nia_core.runtime.reports import BoundaryReport, Watch
        from nia_core.sessions import Admitted, pass_boundary

        watch = Watch()
        result = pass_boundary(store, session_id, self._watched(watch, workflow, leave_out, narrow, location))
        if isinstance(result, Admitted):
            watch.admitted(result.admission)
        self._finish(watch, store, session_id, location)
        return BoundaryReport(result, watch.warnings())

    def start_over(
        self,
        store: Store,
        session_id: str,
        *,
        reason: str,
        workflow: Workflow | None = None,
        leave_out: Collection[str] = (),
        narrow: Mapping[str, Narrow] | None = None,
        location: Location | None = None,
    ) -> BoundaryReport:
        """A fresh epoch now, whatever is active (the host's conversation was cleared or compacted).

        The report's ``text`` is the new baseline. When the context is
        unavailable the result is ``Blocked``, the old epoch ends, and the
        next :meth:`boundary` initializes. ``leave_out``, ``narrow`` and ``location`` as for :meth:`boundary`.
        """
        from nia_core.runtime.reports import BoundaryReport, Watch
        from nia_core.sessions import start_over

        watch = Watch()
        context_for = self._watched(watch, workflow, leave_out, narrow, location)
        result = start_over(store, session_id, context_for, reason=reason)
        self._finish(watch, store, session_id, location)
        return BoundaryReport(result, watch.warnings())

    def turn(
        self,
        store: Store,
        session_id: str,
        text: str | None = None,
        *,
        stream: StreamCallback | None = None,
        workflow: Workflow | None = None,
        providers: ProviderLookup | None = None,
    ) -> TurnReport:
        """One turn: keep ``text`` pending, run the boundary, call the provider, store its reply.

        The provider is checked before anything is stored, so an unknown
        provider keeps nothing pending. Ordering and durability are
        :func:`nia_core.sessions.run_turn`'s. ``providers``: a lookup the
        caller already built (to check a model before creating the session).
        ``workflow``: each boundary composes it in front of the plugins' sources.
        """
        view = store.view(session_id)  # the turn starts from this read: the session is read once
        record = view.state.session
        if providers is None:
            providers = self.providers(record.location)
        providers.check(record.model)
        from nia_core.runtime.reports import Watch
        from nia_core.runtime.turn_report import TurnReport
        from nia_core.sessions import Replied, run_turn

        watch = Watch()
        context_for = self._watched(watch, workflow)
        result = run_turn(store, session_id, context_for, providers, text=text, stream=stream, view=view)
        if isinstance(result, Replied):
            watch.admitted(result.boundary.admission)
        self._finish(watch, store, session_id, record.location)
        return TurnReport(result, watch.warnings())

    # -- helpers ----------------------------------------------------------------------

    def _watched(
        self,
        watch: Watch,
        workflow: Workflow | None,
        leave_out: Collection[str] = (),
        narrow: Mapping[str, Narrow] | None = None,
        located: Location | None = None,
    ) -> ContextFor:
        """What the boundary assembles a Location's context with; each host it uses is noted in ``watch``.

        ``located``: the session's Location as the door found it, used for its path instead of finding it again.
        """

        def context_for(location: str) -> SystemContext:
            where: Where = located if located is not None and location == str(located.path) else location
            host, view = self.open(where)
            watch.hosts.append(host)
            return narrowed(watch.assembled(host.assemble(view)), narrow, leave_out)

        return workflow.context_for(context_for) if workflow is not None else context_for

    def _finish(self, watch: Watch, store: Store, session_id: str, location: Where = None) -> None:
        """The broken plugins of the hosts the boundary assembled with (else of the session's Location's host)."""
        try:
            hosts = watch.hosts
            if not hosts:  # nothing was assembled (an epoch awaiting tool results, say)
                hosts = [self.host(location if location is not None else store.session(session_id).location)]
            for host in dict.fromkeys(hosts):
                watch.broken_plugins(host)
        except Exception:  # noqa: BLE001 - a report never fails the boundary it reports on
            return


Narrow = Callable[[ContextSource], ContextSource | None]
"""A door's view of one source: the source to observe in its place, or ``None`` to leave it out."""


def narrowed(
    context: SystemContext, narrow: Mapping[str, Narrow] | None, leave_out: Collection[str] = ()
) -> SystemContext:
    """``context`` as a door sees it: ``leave_out`` gone, each source of ``narrow`` replaced by its view.

    The handlers and the withheld prefixes stay: a loader that raises is still said once naming its plugin,
    and a source a failed hook could not list is still unavailable, never removed.
    """
    if not leave_out and not narrow:
        return context
    kept = [
        narrow[source.key](source) if narrow and source.key in narrow else source
        for source in context.sources
        if source.key not in leave_out
    ]
    return SystemContext(
        [s for s in kept if s is not None],
        on_render_error=context.on_render_error,
        on_unavailable=context.on_unavailable,
        withheld=context.withheld,
    )
