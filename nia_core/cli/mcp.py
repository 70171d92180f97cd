"""``nia mcp``: serve the context over the Model Context Protocol, and configure clients for it.

The SDK (the ``mcp`` extra) is imported only when the server starts:
``nia --help``, every other command and ``nia mcp install`` never load it.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import click

from nia_core.cli.app import App
from nia_core.cli.options import WATCHED_PLUGINS_DIR, location_option
from nia_core.errors import UsageError
from nia_core.mcp import missing_sdk

if TYPE_CHECKING:
    from nia_core.mcp.client_config import McpClient, Scope


class _Clients(click.ParamType[str]):
    """A client of :data:`nia_core.mcp.client_config.CLIENTS` (the one table of MCP clients)."""

    name = "client"

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "CLIENT"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> str:
        from nia_core.mcp.client_config import CLIENTS

        if value in CLIENTS:
            return str(value)
        self.fail(f"unknown MCP client {value!r} (known: {', '.join(CLIENTS)})", param, ctx)


@click.group(invoke_without_command=True)
@location_option("The working directory to serve the context of (default: the current one).")
@WATCHED_PLUGINS_DIR
@click.option(
    "--http",
    "http",
    metavar="[HOST:]PORT",
    default=None,
    help="Serve streamable HTTP on this address instead of stdio (host: 127.0.0.1 unless given).",
)
@click.option(
    "--allow-remote",
    is_flag=True,
    help="Allow --http on an address other than loopback: anyone who can reach it reads the context.",
)
@click.option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    metavar="NAME",
    help="With --allow-remote: another Host name clients reach the server by (repeatable).",
)
@click.option(
    "--interval",
    type=click.FloatRange(0),
    default=5.0,
    show_default=True,
    help="Seconds between re-observations of sources that are not files (0: only on file changes).",
)
@click.option(
    "--poll",
    is_flag=True,
    help="Poll for file changes instead of relying on file events (network mounts, WSL).",
)
@click.option(
    "--client",
    "client",
    type=_Clients(),
    default=None,
    help="The client this server serves (nia mcp install writes it): the files it loads itself (AGENTS.md) are "
    "left out of nia://context and context_changes, as the agent hooks leave them out.",
)
@click.pass_context
def mcp(
    ctx: click.Context,
    location: str | None,
    plugins_dirs: tuple[str, ...],
    http: str | None,
    allow_remote: bool,
    allowed_hosts: tuple[str, ...],
    interval: float,
    poll: bool,
    client: str | None,
) -> None:
    """Serve every context source and workflow over the Model Context Protocol.

    Resources: nia://context (the baseline, as `nia context show` prints it)
    and nia://source/KEY per source, announced when they change. Prompts: each
    workflow of .nia/commands.toml. Tool: context_changes(cursor), what a nia
    session would admit since the cursor. stdio by default; --http serves
    streamable HTTP on 127.0.0.1. See docs/mcp.md.
    """
    if ctx.invoked_subcommand is not None:
        return
    app = App.of(ctx)
    try:
        from nia_core.mcp import run
    except ImportError as exc:
        if (exc.name or "").partition(".")[0] == "nia_core":
            raise
        raise UsageError(missing_sdk(exc)) from None
    from nia_core.plugin_host.watch import WatchSettings

    options = run.Options(
        location=app.locate(location),
        plugins_dirs=(*app.plugins_dirs, *plugins_dirs),
        flags=app.flags,
        interval=interval or None,
        watch=WatchSettings(poll=True) if poll else None,
        http=run.parse_address(http) if http is not None else None,
        allow_remote=allow_remote,
        allowed_hosts=allowed_hosts,
        client=client,
    )
    if options.http is None:
        run.serve_stdio(options)
    else:
        run.serve_http(options)


CLIENT = click.argument("client", type=_Clients())
_PROJECT = click.option(
    "--project", "project", is_flag=True, help="The project's file, to commit (most clients' default)."
)
_LOCAL = click.option("--local", "local", is_flag=True, help="Your personal settings for this project (Claude Code).")
_USER = click.option("--user", "user", is_flag=True, help="Your user settings, for every project (Codex's default).")
_PROJECT_DIR = click.option(
    "--location",
    type=click.Path(exists=True, file_okay=False),
    default=None,
    help="The project (default: the current directory's).",
)
_CONFIG = click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Edit this file instead (in the client's format; json: the mcpServers entry editors take).",
)


def _scope(client: McpClient, project: bool, local: bool, user: bool) -> Scope:
    if project + local + user > 1:
        raise click.UsageError("--project, --local and --user exclude each other")
    return "user" if user else "local" if local else "project" if project else client.default


@mcp.command("install")
@CLIENT
@_PROJECT
@_LOCAL
@_USER
@_PROJECT_DIR
@_CONFIG
@click.option(
    "--program",
    default=None,
    help="How the client should run nia (default: this installation's absolute path; `nia` from PATH in a "
    "project file meant to be committed).",
)
@click.option("--print", "print_only", is_flag=True, help="Print the resulting configuration instead of writing it.")
@click.pass_context
def install(
    ctx: click.Context,
    client: str,
    project: bool,
    local: bool,
    user: bool,
    location: str | None,
    config_path: str | None,
    program: str | None,
    print_only: bool,
) -> None:
    """Add the MCP server `nia` to CLIENT's configuration, keeping every other server.

    claude-code: .mcp.json (--local: ~/.claude.json, this project only; --user).
    codex: ~/.codex/config.toml (--project: .codex/config.toml). gemini:
    .gemini/settings.json. opencode: opencode.json. copilot: .mcp.json or
    .github/mcp.json. qwen-code: .qwen/settings.json. Each has --user. json prints
    the `mcpServers` entry editors take (or merges it into --config FILE). The
    output says what the client still needs (an approval, a trusted folder).
    """
    from nia_core.agents.hook_install import this_program
    from nia_core.mcp import client_config as clients

    app = App.of(ctx)
    chosen = clients.CLIENTS[client]
    where = app.locate(location)
    config = clients.given_file(config_path) if config_path else None
    if not chosen.places and config is None:  # json: printed, for a client started anywhere
        run = clients.launch(chosen, program=program, shared=False, location=where.path, plugins_dirs=app.plugins_dirs)
        click.echo(clients.json_entry(run), nl=False)
        return
    scope = _scope(chosen, project, local, user)
    shared = config is None and chosen.place(scope, where.root).shared
    located = where.path if config is not None else None
    run = clients.launch(chosen, program=program, shared=shared, location=located, plugins_dirs=app.plugins_dirs)
    plan = clients.plan_install(chosen, scope, where.root, run, config)
    if print_only:
        click.echo(plan.text or "", nl=False)
        return
    plan.apply()
    click.echo(f"{plan.path}: {plan.what}")
    if shared and program is None:
        found = clients.on_path(run.command)
        mine = os.path.realpath(this_program())
        if found != mine:
            runs = f"runs {found}" if found else "is not on PATH here"
            click.echo(
                f"This file is meant to be shared, so it names `nia` from PATH, which {runs}; this nia is {mine}. "
                "For this machine only, install with --local or --user (or give --program)."
            )
    for note in plan.notes:
        click.echo(note)


@mcp.command("uninstall")
@CLIENT
@_PROJECT
@_LOCAL
@_USER
@_PROJECT_DIR
@_CONFIG
@click.pass_context
def uninstall(
    ctx: click.Context,
    client: str,
    project: bool,
    local: bool,
    user: bool,
    location: str | None,
    config_path: str | None,
) -> None:
    """Remove the MCP server `nia` from CLIENT's configuration; every other server stays.

    A file nia created and that holds nothing else afterwards is deleted.
    """
    from nia_core.mcp import client_config as clients

    app = App.of(ctx)
    chosen = clients.CLIENTS[client]
    config = clients.given_file(config_path) if config_path else None
    if not chosen.places and config is None:
        raise click.UsageError("json has no file of its own: give the file with --config")
    plan = clients.plan_uninstall(chosen, _scope(chosen, project, local, user), app.locate(location).root, config)
    plan.apply()
    click.echo(f"{plan.path}: {plan.what}")
