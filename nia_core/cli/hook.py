"""``nia hook``: nia's context inside agents that own their conversation (Claude Code, Codex).

``nia hook claude-code`` and ``nia hook codex`` are what the host's hooks run;
``install``/``uninstall``/``status`` manage those hook entries; ``log`` shows
what each hook told its agent. See docs/hosts.md.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from nia_core.agents import ADAPTERS
from nia_core.cli.app import App


@click.group()
def hook() -> None:
    """Claude Code and Codex hooks: the baseline once per epoch, then only what changed."""


def _hook_command(name: str) -> click.Command:
    @click.command(name)
    @click.pass_context
    def run_hook(ctx: click.Context) -> None:
        from nia_core.agents import answer

        answer.answer(name, App.of(ctx).runtime)

    run_hook.help = (
        f"The command {name}'s hooks run: reads the hook JSON on stdin, prints the context update (or nothing). "
        "Always exits 0; problems go to stderr and to 'nia hook log'."
    )
    return run_hook


for _name in ADAPTERS:
    hook.add_command(_hook_command(_name))

HOSTS = click.Choice(sorted(ADAPTERS))


def _scope(project: bool, user: bool) -> str:
    if project and user:
        raise click.UsageError("--project and --user exclude each other")
    return "user" if user else "project"


def _root(app: App) -> Path:
    return app.locate().root


@hook.command("install")
@click.argument("host", type=HOSTS)
@click.option("--project", "project", is_flag=True, help="This project's settings (the default).")
@click.option("--user", "user", is_flag=True, help="Your user settings, for every project.")
@click.option("--program", default="nia", show_default=True, help="How the host should run nia (a path, say).")
@click.pass_context
def install_command(ctx: click.Context, host: str, project: bool, user: bool, program: str) -> None:
    """Add nia's SessionStart and UserPromptSubmit hooks to HOST's settings (idempotent)."""
    from nia_core.agents.hook_install import install

    outcome = install(host, _scope(project, user), _root(App.of(ctx)), program=program)  # type: ignore[arg-type]
    if not outcome.changes:
        click.echo(f"nia's {host} hooks are already installed; nothing changed")
    for change in outcome.changes:
        click.echo(f"{change.path}: {change.what}")
    for note in outcome.notes:
        click.echo(note)


@hook.command("uninstall")
@click.argument("host", type=HOSTS)
@click.option("--project", "project", is_flag=True, help="This project's settings (the default).")
@click.option("--user", "user", is_flag=True, help="Your user settings.")
@click.pass_context
def uninstall_command(ctx: click.Context, host: str, project: bool, user: bool) -> None:
    """Remove nia's hooks from HOST's settings; every other entry stays."""
    from nia_core.agents.hook_install import uninstall

    outcome = uninstall(host, _scope(project, user), _root(App.of(ctx)))  # type: ignore[arg-type]
    if not outcome.changes:
        click.echo(f"no nia {host} hooks to remove")
    for change in outcome.changes:
        click.echo(f"{change.path}: {change.what}")


@hook.command("status")
@click.option("--json", "as_json", is_flag=True, help="As JSON.")
@click.pass_context
def status_command(ctx: click.Context, as_json: bool) -> None:
    """Where nia's hooks are installed, per host and scope (and, for Codex, the feature flag and trust)."""
    from nia_core.agents.hook_install import status

    root = _root(App.of(ctx))
    found = [status(host, scope, root) for host in sorted(ADAPTERS) for scope in ("project", "user")]  # type: ignore[arg-type]
    if as_json:
        click.echo(json.dumps([s.as_json() for s in found], indent=2))
        return
    for s in found:
        state = ", ".join(s.events) if s.events else "not installed"
        line = f"{s.host:<12} {s.scope:<8} {state:<34} {s.path}"
        if s.problem:
            line += f"  ({s.problem})"
        click.echo(line)
        if s.host == "codex" and s.events:
            flag = "on" if s.feature else "OFF: set [features] hooks = true"
            review = "reviewed" if set(s.events) <= set(s.trusted) else "not reviewed yet: approve them in codex"
            click.echo(f"{'':<21} feature flag {flag}; hooks {review}")


@hook.command("log")
@click.option("--json", "as_json", is_flag=True, help="As JSON lines.")
@click.option("--session", default=None, help="Only this attached session (id prefix).")
@click.option("--last", default=20, show_default=True, type=click.IntRange(1), help="Entries per session.")
def log_command(as_json: bool, session: str | None, last: int) -> None:
    """The last hook runs per attached session: event, epoch, bytes printed, sources changed, warnings."""
    from nia_core.agents.hook_log import read

    entries = read(last, session)
    if as_json:
        for item in entries:
            click.echo(json.dumps(item, ensure_ascii=False))
        return
    if not entries:
        click.echo("no hook runs logged yet")
        return
    current = None
    for item in entries:
        if item.get("session") != current:
            current = item.get("session")
            click.echo(
                f"== {current or '(no session)'}  {item.get('host')} {item.get('host_session')}  {item.get('cwd')}"
            )
        event = item.get("event", "") + (f":{item['source']}" if item.get("source") else "")
        epoch = f"epoch {item['epoch']}" if item.get("epoch") is not None else "no epoch"
        changed = " ".join(item.get("changed") or [])
        click.echo(
            f"{item.get('time', '')[:23]}  {event:<22} {item.get('outcome', ''):<16} {epoch:<9} "
            f"{item.get('printed', 0):>6} B  {changed}"
        )
        if item.get("full_text"):
            click.echo(f"{'':<25}full text: {item['full_text']}")
        for warning in item.get("warnings") or []:
            click.echo(f"{'':<25}warning: {warning}")
