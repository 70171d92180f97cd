"""The ``nia`` command line: the table of built-in commands and the root group."""

from __future__ import annotations

import click

from nia_core.about import __version__
from nia_core.cli.app import App
from nia_core.cli.group import LISTING, NiaGroup

COMMAND_MODULES: dict[str, tuple[str, str]] = {
    "init": ("nia_core.cli.init:init_command", "Write a commented .nia/project.toml and commands.toml here."),
    "context": ("nia_core.cli.context:context", "Inspect the system context nia assembles."),
    "session": ("nia_core.cli.session:session", "Durable sessions: a stable baseline per context epoch."),
    "dev": ("nia_core.cli.dev:dev", "Live-reload plugins under development and show what changes."),
    "plugins": ("nia_core.cli.plugins:plugins", "List, install, switch on and off nia plugins."),
    "plugin": ("nia_core.cli.plugins:plugin_group", "Create a new plugin package from the template."),
    "workflows": ("nia_core.cli.workflows:workflows", "The workflows defined in .nia/commands.toml."),
    "models": ("nia_core.cli.models:models", "The providers and models here: capabilities, prices, keys."),
    "db": ("nia_core.cli.db:db", "Migrate and check the session database (NIA_DB)."),
    "hook": ("nia_core.cli.hook:hook", "Claude Code and Codex hooks: the baseline once, then only what changed."),
    "mcp": ("nia_core.cli.mcp:mcp", "Serve the context and workflows over the Model Context Protocol."),
}
"""Built-in commands: name -> (``module:attribute`` of the command, short help).

Each command module exports its command and imports nothing of this one;
:class:`NiaGroup` imports it and attaches the command only when it runs, so
``nia --help`` and every command pay for their own imports only.
"""


# color=True: click never strips what looks like a colour code from output, so a pipe gets every byte of a
# file or a prompt; a terminal gets control characters shown, not obeyed (nia_core.terminal).
@click.group(cls=NiaGroup, context_settings={"help_option_names": ["-h", "--help"], "color": True})
@click.version_option(__version__, "--version", prog_name="nia", message="%(prog)s %(version)s")
@click.option("--debug", is_flag=True, help="Show tracebacks and debug logging.")
@click.option(
    "-p",
    "plugin_flags",
    multiple=True,
    metavar="no:NAME",
    help="Switch a plugin off for this run (repeatable), like pytest's -p no:NAME.",
)
@click.option(
    "--plugins-dir",
    "plugins_dirs",
    multiple=True,
    type=click.Path(file_okay=False),
    help="Also load local plugins from this folder (repeatable).",
)
@click.option("--strict", is_flag=True, help="Turn any plugin failure into an error.")
@click.pass_context
def cli(
    ctx: click.Context, debug: bool, plugin_flags: tuple[str, ...], plugins_dirs: tuple[str, ...], strict: bool
) -> None:
    """nia assembles the system context of AI coding agents from plugins.

    It keeps the first rendering of the context (the baseline) byte-for-byte
    stable for a whole context epoch, and tells the model what changed in one
    mid-conversation system message at each safe provider-turn boundary.
    """
    for flag in plugin_flags:
        if not flag.startswith("no:") or len(flag) <= 3:
            raise click.BadParameter(f"expected no:NAME, got {flag!r}", param_hint="-p")
    from nia_core.cli.logs import configure_logging  # not at import: a cached `nia --help` logs nothing

    app = App.of(ctx)
    configure_logging(app.debug)


NiaGroup.lazy_commands = COMMAND_MODULES


def plugin_commands(ctx: click.Context) -> dict[str, click.Command]:
    """Commands added by plugins through ``nia_register_commands``."""
    app = App.of(ctx)
    location = app.locate()
    host = app.host(location)
    problem = host.config_problem(location)
    if problem is not None and ctx.meta.get(LISTING):  # `nia --help` lists anyway, and says why the rest fails
        import logging

        logging.getLogger("nia.cli").warning("%s", problem)
    holder = click.Group()
    host.register_commands(holder)
    return dict(holder.commands)


def workflow_commands(ctx: click.Context) -> dict[str, click.Command]:
    """One command group per target in ``.nia/commands.toml``."""
    from nia_core.cli.workflows import workflow_commands as from_commands_toml

    return from_commands_toml(ctx)


NiaGroup.dynamic_providers += [plugin_commands, workflow_commands]


def main() -> None:
    """Console-script entry point: the process ends on nia's terms (see :mod:`nia_core.process`)."""
    from nia_core.process import run

    run(cli, prog_name="nia")
