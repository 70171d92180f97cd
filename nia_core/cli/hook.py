"""``nia hook``: nia's context inside agents that own their conversation (Claude Code, Codex).

``nia hook HOST`` (one per host of :data:`nia_core.agents.ADAPTERS`) is what the host's hooks run;
``install``/``uninstall``/``status`` manage those hook entries (``status`` also
lists the resident processes answering hooks, ``stop`` ends them); ``log`` shows
what each hook told its agent, and which process answered it. See docs/hosts.md.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from nia_core.agents import ADAPTERS, HostAdapter, adapter
from nia_core.cli.app import App
from nia_core.errors import escape_name

if TYPE_CHECKING:
    from nia_core.agents.hook_install import Scope


class _Hosts(click.ParamType[str]):
    """A host of :data:`nia_core.agents.ADAPTERS`, looked up when the command runs (the one table of hosts)."""

    name = "host"

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "[" + "|".join(sorted(ADAPTERS)) + "]"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> str:
        if value in ADAPTERS:
            return str(value)
        self.fail(f"unknown host {value!r} (known: {', '.join(sorted(ADAPTERS))})", param, ctx)


HOSTS = _Hosts()


class _HookGroup(click.Group):
    """``nia hook``: its commands, plus one ``nia hook HOST`` per host of the table, made when asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*super().list_commands(ctx), *sorted(ADAPTERS)]

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in ADAPTERS:
            return _hook_command(name)
        return super().get_command(ctx, name)


@click.group(cls=_HookGroup)
def hook() -> None:
    """Agent hooks (Claude Code, Codex): the baseline once per epoch, then only what changed."""


def _hook_command(name: str) -> click.Command:
    @click.command(name)
    @click.pass_context
    def run_hook(ctx: click.Context) -> None:
        import os

        from nia_core.agents import answer
        from nia_core.resident import client

        app = App.of(ctx)

        def in_process(data: bytes, why: str, seconds: float) -> None:
            answer.answer(name, app.runtime, data=data, fallback=why, seconds=seconds)

        if app.debug and os.environ.get("NIA_DEBUG") != "1":  # --debug: tracebacks and logging here
            answer.answer(name, app.runtime, fallback="--debug")
            return
        options = {"plugins_dirs": list(app.plugins_dirs), "flags": list(app.flags), "strict": app.strict}
        client.hook(name, in_process, options if any(options.values()) else None)

    run_hook.help = (
        f"The command {name}'s hooks run: reads the hook JSON on stdin, prints the context update (or nothing). "
        "Always exits 0; problems go to stderr and to 'nia hook log'."
    )
    return run_hook


def _scope(adapter: HostAdapter, project: bool, local: bool, user: bool) -> Scope:
    if project + local + user > 1:
        raise click.UsageError("--project, --local and --user exclude each other")
    if local and adapter.settings.local is None:
        raise click.UsageError(f"{adapter.title} has no personal project scope; use --project or --user")
    return "user" if user else "local" if local else "project"


def _root(app: App) -> Path:
    return app.locate().root


def _project_root(app: App, scope: Scope) -> Path:
    """The project root, said first for a project's settings: which folder nia took, and why (issue 27.7).

    Run outside any project, nia takes the working directory itself, and the
    hooks would land in a folder the user may not have meant.
    """
    location = app.locate()
    if scope != "user":
        if location.has_project_dir:
            why = "the nearest folder holding .nia/"
        elif location.is_git:
            why = "the nearest folder holding .git; no .nia/ above"
        else:
            why = (
                "no .nia/ or .git here or above, so the current folder is taken as the project; "
                "if your project is elsewhere, run this in its root (or create .nia/ there first)"
            )
        click.echo(f"Project root: {location.root} ({why})")
    return location.root


_PROJECT = click.option("--project", "project", is_flag=True, help="This project's settings, to commit (the default).")
_LOCAL = click.option(
    "--local", "local", is_flag=True, help="Your personal settings for this project, not committed (Claude Code)."
)
_USER = click.option("--user", "user", is_flag=True, help="Your user settings, for every project.")


@hook.command("install")
@click.argument("host", type=HOSTS)
@_PROJECT
@_LOCAL
@_USER
@click.option(
    "--program",
    default=None,
    help="How the host should run nia (default: this installation's absolute path, so the host needs no PATH).",
)
@click.option(
    "--no-host-git-status",
    "no_git_snapshot",
    is_flag=True,
    help="Also switch off the host's own git status snapshot, which never updates (Claude Code: "
    "includeGitInstructions = false); nia/git's live status stands in for it. Undone by uninstall.",
)
@click.pass_context
def install_command(
    ctx: click.Context,
    host: str,
    project: bool,
    local: bool,
    user: bool,
    program: str | None,
    no_git_snapshot: bool,
) -> None:
    """Add nia's hooks to HOST's settings (idempotent)."""
    from nia_core.agents.hook_install import install, this_program

    chosen = adapter(host)
    scope = _scope(chosen, project, local, user)
    root = _project_root(App.of(ctx), scope)
    outcome = install(chosen, scope, root, program=program or this_program(), no_git_snapshot=no_git_snapshot)
    if not outcome.changes:
        click.echo(f"nia's {host} hooks are already installed; nothing changed")
    for change in outcome.changes:
        click.echo(f"{change.path}: {change.what}")
    for note in outcome.notes:
        click.echo(note)


@hook.command("uninstall")
@click.argument("host", type=HOSTS)
@_PROJECT
@_LOCAL
@_USER
@click.option("--program", default=None, help="Also remove entries that run nia by this program.")
@click.pass_context
def uninstall_command(
    ctx: click.Context, host: str, project: bool, local: bool, user: bool, program: str | None
) -> None:
    """Remove nia's hooks from HOST's settings; every other entry stays."""
    from nia_core.agents.hook_install import uninstall

    chosen = adapter(host)
    scope = _scope(chosen, project, local, user)
    outcome = uninstall(chosen, scope, _project_root(App.of(ctx), scope), program=program)
    if not outcome.changes and not outcome.notes:
        click.echo(f"no nia {host} hooks to remove")
    for change in outcome.changes:
        click.echo(f"{change.path}: {change.what}")
    for note in outcome.notes:
        click.echo(note)


@hook.command("status")
@click.option("--json", "as_json", is_flag=True, help="As JSON.")
@click.pass_context
def status_command(ctx: click.Context, as_json: bool) -> None:
    """Where nia's hooks are installed, per host and scope (and the host's switch and trust, where it has them),
    and the resident processes answering them."""
    from nia_core.agents.hook_install import scopes, status

    root = _root(App.of(ctx))
    found = [status(adapter(host), scope, root) for host in sorted(ADAPTERS) for scope in scopes(adapter(host))]
    if as_json:
        click.echo(json.dumps([s.as_json() for s in found], indent=2))
        return
    for s in found:
        state = ", ".join(s.events) if s.events else "not installed"
        line = f"{s.host:<12} {s.scope:<8} {state:<34} {escape_name(str(s.path))}"
        if s.problem:
            line += f"  ({s.problem})"
        click.echo(line)
        if s.command_problem:
            click.echo(f"{'':<21} {s.command_problem}")
        if s.events and (s.switch is not None or s.trusted is not None):
            said = []
            switch = adapter(s.host).switch
            if s.switch is not None and switch is not None:
                setting = f"[{switch.table}] {switch.key} = true"
                said.append(f"{setting} is set" if s.switch else f"{setting} is NOT set: install again to set it")
            if s.trusted is not None:
                yes, no = adapter(s.host).trust_said
                said.append((yes if set(s.events) <= set(s.trusted) else no).format(name=s.host))
            click.echo(f"{'':<21} {'; '.join(said)}")
    _residents_text()


def _residents_text() -> None:
    from nia_core.resident.client import enabled
    from nia_core.resident.residents import running

    found, problem = running()
    switch = "" if enabled() else " (NIA_RESIDENT=0: hooks answer in-process)"
    if problem:
        click.echo(f"resident processes: none usable: {problem}{switch}")
        return
    if not found:
        click.echo(f"resident processes: none{switch}")
        return
    click.echo(f"resident processes:{switch}")
    for r in found:
        memory = f"{r.memory / (1024 * 1024):.1f} MiB" if r.memory is not None else "?"
        where = ", ".join(map(escape_name, r.projects or (r.cwd,)))  # folder names come from repositories
        state = "" if r.ready else "  (starting)"
        click.echo(f"  pid {r.pid:<8} up {_duration(r.age):<9} {memory:>10}  {where}{state}")


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


@hook.command("residents")
@click.option("--json", "as_json", is_flag=True, help="As JSON.")
def residents_command(as_json: bool) -> None:
    """The resident processes answering hooks: project, pid, age, memory."""
    from nia_core.resident.residents import running

    found, problem = running()
    if as_json:
        click.echo(json.dumps({"residents": [r.as_json() for r in found], "problem": problem or None}, indent=2))
        return
    _residents_text()


@hook.command("stop")
def stop_command() -> None:
    """End every resident process of yours (the next hook starts a new one, unless NIA_RESIDENT=0)."""
    from nia_core.resident.residents import running, stop

    found, _problem = running()
    if not found:
        click.echo("no resident processes")
        return
    for r in found:
        ended = stop(r)
        click.echo(f"pid {r.pid}: {'ended' if ended else 'still running (it was sent SIGTERM)'}")


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
    for item in entries:  # the host's session id and working directory, and paths in fallbacks, come from outside
        if item.get("session") != current:
            current = item.get("session")
            host_session, where = (escape_name(str(item.get(k))) for k in ("host_session", "cwd"))
            click.echo(f"== {current or '(no session)'}  {item.get('host')} {host_session}  {where}")
        event = item.get("event", "") + (f":{item['source']}" if item.get("source") else "")
        epoch = f"epoch {item['epoch']}" if item.get("epoch") is not None else "no epoch"
        changed = " ".join(item.get("changed") or [])
        answered = item.get("answered_by") or ""
        click.echo(
            f"{item.get('time', '')[:23]}  {event:<22} {item.get('outcome', ''):<16} {epoch:<9} "
            f"{item.get('printed', 0):>6} B  {answered:<10} {changed}".rstrip()
        )
        if answered == "in-process" and item.get("fallback") and item["fallback"] != "NIA_RESIDENT=0":
            click.echo(f"{'':<25}in-process: {escape_name(str(item['fallback']))}")
        if item.get("full_text"):
            click.echo(f"{'':<25}full text: {escape_name(str(item['full_text']))}")
        for warning in item.get("warnings") or []:
            click.echo(f"{'':<25}warning: {warning}")
