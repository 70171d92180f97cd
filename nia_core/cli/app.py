"""The state one ``nia`` invocation carries: global options and a lazily built runtime."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

from nia_core.cli.logs import configure_logging

if TYPE_CHECKING:  # imported on first use: `nia --help` loads no session layer, `nia --version` no engine
    from nia_core.context import Location, LocationContext
    from nia_core.host import PluginHost
    from nia_core.runtime import Runtime


@dataclass
class App:
    debug: bool = False
    strict: bool = False
    flags: tuple[str, ...] = ()
    plugins_dirs: tuple[str, ...] = ()
    _runtime: Runtime | None = None

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

    @property
    def runtime(self) -> Runtime:
        """The invocation's runtime: one plugin host per project, one registry view per Location."""
        if self._runtime is None:
            from nia_core.runtime import Runtime

            self._runtime = Runtime(plugins_dirs=self.plugins_dirs, flags=self.flags, strict=self.strict)
        return self._runtime

    def locate(self, directory: str | Path | None = None) -> Location:
        from nia_core.project.location import locate

        return locate(directory)

    def host(self, location: Location) -> PluginHost:
        """The plugin host for ``location``'s project (loaded once per project per run)."""
        return self.runtime.host(location)

    def open(self, directory: str | Path | None = None) -> tuple[PluginHost, LocationContext]:
        """The host and the Location's registry view, opened once per Location per run (see :class:`Runtime`)."""
        return self.runtime.open(directory)
