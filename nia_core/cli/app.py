"""The state one ``nia`` invocation carries: global options and a lazily built runtime."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:  # imported on first use: `nia --help` loads no session layer, `nia --version` no engine
    from pathlib import Path

    from nia_core.context import Location, LocationContext
    from nia_core.plugin_host import PluginHost
    from nia_core.runtime import Runtime


class App:
    """Global options as given, the runtime built on first use, and the plugin hosts handed out."""

    def __init__(
        self,
        debug: bool = False,
        strict: bool = False,
        flags: tuple[str, ...] = (),
        plugins_dirs: tuple[str, ...] = (),
    ) -> None:
        self.debug = debug
        self.strict = strict
        self.flags = flags
        self.plugins_dirs = plugins_dirs
        self._runtime: Runtime | None = None
        self._hosts: list[PluginHost] = []
        """The hosts :meth:`host` handed out (what ``--help`` listed commands from)."""

    def __repr__(self) -> str:
        return f"App(debug={self.debug}, strict={self.strict}, flags={self.flags}, plugins_dirs={self.plugins_dirs})"

    @classmethod
    def of(cls, ctx: click.Context) -> App:
        """The App of this invocation (also before the group callback ran, as for ``--help``)."""
        root = ctx.find_root()
        if isinstance(root.obj, App):
            return root.obj
        params = root.params  # every global option, also for --help (see NiaGroup.get_help_option)
        app = cls(
            debug=bool(params.get("debug")) or os.environ.get("NIA_DEBUG") == "1",
            strict=bool(params.get("strict")),
            flags=tuple(params.get("plugin_flags") or ()),
            plugins_dirs=tuple(params.get("plugins_dirs") or ()),
        )
        root.obj = app  # logging is configured by the group callback, or by NiaGroup before dynamic commands
        return app

    @property
    def runtime(self) -> Runtime:
        """The invocation's runtime: one plugin host per project, one registry view per Location."""
        if self._runtime is None:
            from nia_core.runtime import Runtime

            self._runtime = Runtime(plugins_dirs=self.plugins_dirs, flags=self.flags, strict=self.strict)
        return self._runtime

    def clean(self) -> bool:
        """No plugin host of this run has a broken config, a broken or left-out plugin, or a warning."""
        return not any(
            host.config_error or host.left_out or any(i.error or i.warnings for i in host.infos())
            for host in self._hosts
        )

    def plugin_modules(self) -> set[str]:
        """The modules of every plugin loaded in this run (local plugins' own package included)."""
        return {info.module for host in self._hosts for info in host.infos() if info.module}

    def locate(self, directory: str | Path | None = None) -> Location:
        from nia_core.project.root import locate

        return locate(directory)

    def host(self, location: Location) -> PluginHost:
        """The plugin host for ``location``'s project (loaded once per project per run)."""
        host = self.runtime.host(location)
        if host not in self._hosts:
            self._hosts.append(host)
        return host

    def open(self, directory: str | Path | None = None) -> tuple[PluginHost, LocationContext]:
        """The host and the Location's registry view, opened once per Location per run (see :class:`Runtime`)."""
        return self.runtime.open(directory)
