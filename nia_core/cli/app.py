"""The state one ``nia`` invocation carries: global options and a lazily loaded host."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import click

from nia_core.cli.logs import configure_logging
from nia_core.context import Location, LocationContext
from nia_core.host import PluginHost, load_host
from nia_core.project import locate


@dataclass
class App:
    debug: bool = False
    strict: bool = False
    flags: tuple[str, ...] = ()
    plugins_dirs: tuple[str, ...] = ()
    _hosts: dict[Path, PluginHost] = field(default_factory=dict)
    _views: dict[Location, LocationContext] = field(default_factory=dict)

    @classmethod
    def of(cls, ctx: click.Context) -> App:
        """The App of this invocation (also before the group callback ran, as for ``--help``)."""
        root = ctx.find_root()
        if isinstance(root.obj, App):
            return root.obj
        params = root.params
        app = cls(
            debug=bool(params.get("debug")) or os.environ.get("NIA_DEBUG") == "1",
            strict=bool(params.get("strict")),
            flags=tuple(params.get("plugin_flags") or ()),
            plugins_dirs=tuple(params.get("plugins_dirs") or ()),
        )
        root.obj = app
        # Dynamic commands resolve before the group callback runs; their warnings must show too.
        configure_logging(app.debug)
        return app

    def locate(self, directory: str | Path | None = None) -> Location:
        return locate(directory)

    def host(self, location: Location) -> PluginHost:
        """The plugin host for ``location``'s project (loaded once per project per run)."""
        host = self._hosts.get(location.root)
        if host is None:
            host = load_host(location, plugins_dirs=self.plugins_dirs, flags=self.flags, strict=self.strict)
            self._hosts[location.root] = host
        return host

    def open(self, directory: str | Path | None = None) -> tuple[PluginHost, LocationContext]:
        """The host and the Location's registry view, opened once per Location per run.

        A session's boundaries reuse the view: opening one per boundary would
        pile up views (and pluggy's historic call record) in a long-lived process.
        """
        location = self.locate(directory)
        host = self.host(location)
        view = self._views.get(location)
        if view is None:
            view = self._views[location] = host.open(location)
        return host, view
