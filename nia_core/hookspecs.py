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
    from nia_core.model import Message, Provider


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


@hookspec(firstresult=True)
def nia_summarize(messages: list[Message]) -> str | None:
    """Summarize a session's history for compaction (``nia session compact``).

    ``messages`` is what the model sees now (a previous summary first, if
    any). Return the summary text that will open the next context epoch in
    place of those messages, or ``None`` to leave it to the next plugin; the
    first non-``None`` answer wins. Without any, nia uses its offline,
    deterministic one-line-per-message summary.

    Example::

        @hookimpl
        def nia_summarize(messages):
            return "We talked about: " + ", ".join(m.text[:20] for m in messages if m.kind == "user")
    """


@hookspec
def nia_providers(location: Location, config: dict[str, Any]) -> list[Provider] | None:
    """Return the model providers this plugin adds (see ``docs/providers.md``).

    A provider serves every model named ``NAME/MODEL`` where ``NAME`` is its
    ``name`` (lowercase letters, digits, ``-``; the built-in providers' names,
    which ``nia models`` lists, are taken). It implements
    :class:`nia_core.Provider`: ``lower(request) -> dict``, pure
    and byte-deterministic, and ``send(request, stream=None) -> Reply``, which
    raises ``ProviderError`` on failure. ``config`` is this plugin's own table
    in ``.nia/project.toml`` (``[plugins.NAME]``), or ``{}``. Called when a
    session at ``location`` looks up its provider; a plugin whose hook raises or
    returns something else is reported by name and left out.

    Example::

        @hookimpl
        def nia_providers(config):
            return [AcmeProvider(endpoint=config.get("endpoint", "http://localhost:9000"))]
    """
