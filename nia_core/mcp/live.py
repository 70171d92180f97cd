"""The context at one Location, kept current the way ``nia dev`` keeps it, for many readers.

A :class:`LiveContext` owns the plugin host (a :class:`DevSession`), follows
the project on a thread of its own with the shared loop of
:mod:`nia_core.plugin_host.follow` (plugins reloaded in-process when their code
changes, a reconcile at every saved file, a re-observation every
``interval`` seconds for sources that are not files) and publishes a
:class:`ContextView` after each. Listeners hear which URIs changed, once per
change.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from nia_core.context import Location, SystemContext, observe
from nia_core.context.registry import Assembly
from nia_core.files import Refused, read_checked
from nia_core.mcp.view import ContextView, build_view
from nia_core.plugin_host.follow import follow, live_roots, project_files
from nia_core.plugin_host.reload import DevSession, ReloadResult
from nia_core.plugin_host.watch import ChangeWatcher, WatchSettings
from nia_core.project.commands_config import COMMANDS_FILE
from nia_core.project.toml import MAX_CONFIG_BYTES
from nia_core.runtime.runtime import Narrow, narrowed

log = logging.getLogger("nia.mcp")

DEFAULT_INTERVAL = 5.0
"""Seconds between re-observations of sources no file event announces (a git branch, a service)."""


@dataclass(frozen=True)
class Change:
    """What one reload changed, as MCP announces it."""

    uris: tuple[str, ...] = ()
    """Resources whose reading changed (``nia://context`` first when it did)."""
    resources_listed: bool = False
    """Sources appeared, disappeared, or changed plugin."""
    prompts_listed: bool = False
    """The workflows in ``.nia/commands.toml`` changed."""

    def __bool__(self) -> bool:
        return bool(self.uris or self.resources_listed or self.prompts_listed)

    def merged(self, later: Change) -> Change:
        """This change and a later one as one announcement (each URI once)."""
        return Change(
            tuple(dict.fromkeys((*self.uris, *later.uris))),
            self.resources_listed or later.resources_listed,
            self.prompts_listed or later.prompts_listed,
        )


Listener = Callable[[Change], None]


class LiveContext:
    """A DevSession that follows its project and keeps the current view of every source."""

    def __init__(
        self,
        location: Location,
        *,
        plugins_dirs: Iterable[str | Path] = (),
        flags: Iterable[str] = (),
        interval: float | None = DEFAULT_INTERVAL,
        settings: WatchSettings | None = None,
        narrow: Callable[[], Mapping[str, Narrow]] | None = None,
    ) -> None:
        self.location = location
        self.narrow = narrow
        """The client's view of the sources it gets part of some other way (files it loads itself), asked
        afresh at each observation; the view and :meth:`context` serve the sources through it."""
        self.plugins_dirs = tuple(plugins_dirs)
        self.flags = tuple(flags)
        self.interval = interval
        self.settings = settings
        self.view = ContextView()
        self._listeners: list[Listener] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._session: DevSession | None = None
        self._workflows = self._workflows_fingerprint()
        self._lock = threading.Lock()
        """One view update at a time (the follower thread and a cursor's full check both publish)."""

    @property
    def session(self) -> DevSession:
        assert self._session is not None, "LiveContext.open() first"
        return self._session

    def open(self) -> LiveContext:
        """Load every plugin, render the baseline and the first view (plugins run here: stdout must be safe)."""
        session = DevSession.open(self.location, plugins_dirs=self.plugins_dirs, flags=self.flags)
        self._session = session
        # Not session.start(): a plugin development session unloads a plugin whose renderer fails,
        # all its sources with it; a server keeps the plugin and shows that one source as an error.
        result = session.reload(frozenset(), reobserve=True)
        if result is not None:
            self._publish(result, announce=False)
        return self

    def subscribe(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def start(self) -> None:
        """Follow the project on a thread of its own until :meth:`stop`."""
        session = self.session
        extra = live_roots(session)

        def watch_roots() -> list[Path]:
            return [*session.watch_roots(), *extra]  # a folder that does not exist yet is picked up when it appears

        watcher = ChangeWatcher(watch_roots, project_files(session, extra), self.settings)
        self._thread = threading.Thread(
            target=follow,
            args=(session, watcher, self._on_result, self._on_crash),
            kwargs={"reobserve": True, "interval": self.interval, "stop": self._stop, "on_notice": self._on_notice},
            name="nia-mcp-follow",
            daemon=True,
        )
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None and self._thread.is_alive():
            self._thread.join(timeout)
        elif self._session is not None and self._thread is None:
            self._session.close()

    def context(self, *, whole: bool = False) -> SystemContext:
        """The sources a session at this Location is built from, now (for the cursor tool and prompts).

        Plugin code saved a moment ago is loaded first (a full check, by
        content): a boundary never runs last minute's plugins. What that
        reload changes is announced like any other change. The client's view
        of the files it loads itself applies unless ``whole`` (a workflow's
        prompt is what ``--print-prompt`` prints).
        """
        session = self.session
        with session._lock:  # a reload in progress swaps plugins in and out of the host
            result = session.reload(None)
            if result is not None:
                self._on_result(result)
            context = session.host.assemble(session.view).context
        return context if whole or self.narrow is None else narrowed(context, self.narrow())

    # -- after each reload ------------------------------------------------------------

    def _on_result(self, result: ReloadResult) -> None:
        try:
            for error in result.errors:
                log.warning("%s", error)
            self._publish(result, announce=True)
        except Exception as exc:  # noqa: BLE001 - the follower never dies: this one is reported, the next runs
            self._on_crash(exc)

    def _on_notice(self, message: str) -> None:
        log.warning("%s", message)

    def _on_crash(self, exc: Exception) -> None:
        log.warning("reload failed: %s: %s (still watching)", type(exc).__name__, exc)

    def _publish(self, result: ReloadResult, *, announce: bool) -> None:
        with self._lock:
            self._publish_locked(result, announce=announce)

    def _publish_locked(self, result: ReloadResult, *, announce: bool) -> None:
        outcome = result.outcome
        workflows = self._workflows_fingerprint()
        prompts = workflows != self._workflows
        self._workflows = workflows
        if result.assembly is None:
            change = Change(prompts_listed=prompts)
        else:
            # A renderer that failed stopped the reconcile (outcome None): observe once more, and
            # let the view set that one source aside, so one broken source never freezes the others.
            assembly = result.assembly
            timeout = self.session.host.timeout
            observations = outcome.observations if outcome is not None else observe(assembly.context.sources, timeout)
            narrow = self.narrow() if self.narrow is not None else None
            if narrow:  # the sources the client gets part of some other way: observed as it sees them
                context = narrowed(assembly.context, narrow)
                assembly = Assembly(context, assembly.problems, assembly.contributors, assembly.owners)
                seen = [o for o in observations if o.key not in narrow]
                observations = [*seen, *observe([s for s in context.sources if s.key in narrow], timeout)]
            view = build_view(assembly, observations, self.view)
            uris, listed = self.view.changed(view)
            self.view = view
            change = Change(tuple(uris), listed, prompts)
        if announce and change:
            for listener in list(self._listeners):
                try:
                    listener(change)
                except Exception:  # one broken listener must not stop the others
                    log.exception("change listener failed")

    def _workflows_fingerprint(self) -> str:
        """What ``.nia/commands.toml`` holds now, through the checked reader (no FIFO, link out or endless file)."""
        root = self.location.root
        try:
            content = read_checked(root / ".nia" / COMMANDS_FILE, root, MAX_CONFIG_BYTES)
        except Refused as exc:
            return f"refused: {exc.problem}"
        except OSError:
            return ""
        return hashlib.sha256(content.data).hexdigest()
