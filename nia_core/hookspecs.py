"""nia's hook specifications. Each hook is documented here, where it is declared.

A plugin implements any subset of these with ``@nia_core.hookimpl``; an
implementation may accept fewer arguments than the spec names (pluggy passes
only those it asks for). See ``docs/plugin_hooks.md`` for an example of each.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nia_core.markers import hookspec

if TYPE_CHECKING:
    import click

    from nia_core.context import ContextSource, Location, LocationContext


@hookspec
def nia_context_sources(location: Location, config: dict[str, Any]) -> list[ContextSource] | None:
    """Return the context sources this plugin contributes at ``location``.

    Called at every load of a Location's context (each safe boundary), so it
    should be cheap: discover *which* sources exist here, and leave reading
    their values to each source's loader. ``config`` is this plugin's own
    table in ``.nia/project.toml`` (``[plugins.NAME]``), or ``{}``.

    Return a list of :class:`nia_core.ContextSource` (or ``None`` for none). A
    source that the plugin stops returning is removed at the next boundary,
    with its removal text.

    Example::

        @hookimpl
        def nia_context_sources(location):
            return [ContextSource(key="acme/branch", load=..., baseline=...)]
    """


@hookspec(historic=True)
def nia_location_opened(location: Location, context: LocationContext) -> None:
    """Called once for every Location the host opens.

    Historic: a plugin registered after a Location was opened is called for it
    too, so per-Location setup never misses a Location. ``context`` accepts
    Location-local contributions (``context.register(...)``).
    """


@hookspec
def nia_register_commands(cli: click.Group) -> None:
    """Add click commands or groups to the ``nia`` command line.

    Example::

        @hookimpl
        def nia_register_commands(cli):
            @cli.command()
            def hello():
                click.echo("hi")
    """
