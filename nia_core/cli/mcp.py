"""``nia mcp``: serve the context over the Model Context Protocol, and configure clients for it.

The SDK (the ``mcp`` extra) is imported only when the server starts:
``nia --help``, every other command and ``nia mcp install`` never load it.
"""

from __future__ import annotations

from pathlib import Path

import click

from nia_core.cli.app import App
from nia_core.cli.options import WATCHED_PLUGINS_DIR, location_option
from nia_core.errors import UsageError
from nia_core.mcp import missing_sdk


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
    )
    if options.http is None:
        run.serve_stdio(options)
    else:
        run.serve_http(options)


@mcp.command("install")
@click.argument("client", type=click.Choice(["claude-code", "codex", "json"]))
@click.option(
    "--location",
    type=click.Path(exists=True, file_okay=False),
    default=None,
    help="The project (default: the current directory's).",
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="The file to update (default: .mcp.json for claude-code, $CODEX_HOME/config.toml for codex; "
    "json prints unless given).",
)
@click.option("--print", "print_only", is_flag=True, help="Print the resulting configuration instead of writing it.")
@click.pass_context
def install(ctx: click.Context, client: str, location: str | None, config_path: str | None, print_only: bool) -> None:
    """Configure an MCP client to start `nia mcp` for this project, keeping its other servers.

    claude-code: the project's .mcp.json (what `claude mcp add --scope project` writes).
    codex: [mcp_servers.nia] in ~/.codex/config.toml. json: the `mcpServers`
    entry editors expect, printed (or merged into --config FILE).
    """
    from nia_core.mcp import client_config as installer

    app = App.of(ctx)
    where = app.locate(location)
    root = where.root
    # A project file is shared and opened from the project: no absolute --location in it.
    server_location = None if client == "claude-code" and config_path is None else where.path
    extra = tuple(arg for folder in app.plugins_dirs for arg in ("--plugins-dir", str(Path(folder).resolve())))
    launch = installer.launch(server_location, extra)
    path = installer.given_file(config_path) if config_path else installer.default_path(client, root)
    if path is None:
        click.echo(installer.json_entry(launch), nl=False)
        return
    planned = installer.plan(client, launch, path)
    if print_only:
        click.echo(planned.text, nl=False)
        return
    installer.write(planned)
    click.echo(
        f"{'Updated' if planned.existed else 'Wrote'} {planned.path}: server {installer.SERVER_NAME!r} runs "
        f"{' '.join([launch.command, *launch.args])}",
        err=True,
    )
