"""``nia plugins``: list, install, uninstall, enable and disable plugins; ``nia plugin new``."""

from __future__ import annotations

import importlib
import json
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import click

from nia_core.about import DISTRIBUTION
from nia_core.cli.app import App
from nia_core.cli.options import location_option
from nia_core.context import Location
from nia_core.errors import NiaError, UsageError
from nia_core.plugin_host import PluginError, PluginHost, PluginInfo, epcache, health, load_host, switches
from nia_core.plugin_host.discovery import ENTRY_POINT_GROUP
from nia_core.plugin_template import PluginNames, nia_source, render
from nia_core.project.paths import shown_path
from nia_core.project.toml import ConfigError

LOCATION_OPTION = location_option()


def _status(info: PluginInfo) -> str:
    if not info.enabled:
        return "disabled"
    return "broken" if info.error else "enabled"


def _load(app: App, location: Location) -> PluginHost:
    """Every plugin, broken ones included: listing shows problems rather than stopping at the first."""
    return load_host(location, plugins_dirs=app.plugins_dirs, flags=app.flags, strict=False)


@click.group()
def plugins() -> None:
    """List, install, uninstall and switch plugins on and off."""


@plugins.command("list")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per plugin, in a list.")
@click.option("--all", "include_builtins", is_flag=True, help="Include nia's built-in plugins.")
@LOCATION_OPTION
@click.pass_context
def list_plugins(ctx: click.Context, as_json: bool, include_builtins: bool, location: str | None) -> None:
    """Show each plugin: version, origin, status, hooks, source keys and the error if broken.

    Every plugin's sources are produced, observed and rendered once at the
    Location, so a plugin that only misbehaves there shows up as broken too;
    a problem that leaves a plugin working (a hook function without @hookimpl)
    is a warning line. With --strict, exits 1 on any of them.
    """
    app = App.of(ctx)
    where = app.locate(location)
    if not app.debug:  # the list reports every problem itself; warnings would say each twice
        logging.getLogger("nia").setLevel(logging.ERROR)
    host = _load(app, where)
    health.check(host, where)
    from nia_core.providers.lookup import check_plugin_providers  # only this command pays for the HTTP clients

    check_plugin_providers(where, host)
    infos = host.infos(include_builtins=include_builtins)
    if as_json:
        click.echo(json.dumps([{**info.to_json(), "status": _status(info)} for info in infos], indent=2))
    elif not infos:
        click.echo("No plugins installed. (--all shows nia's built-in plugins.)")
    else:
        for info in infos:
            click.echo(_describe(info))
    for message in host.left_out:  # not in the list: say so, or the plugin would vanish without a word
        click.echo(f"Warning: {message}", err=True)
    problem = host.config_problem(where)
    if problem is not None:  # the list cannot know which plugins the file switches off, nor their settings
        raise ConfigError(problem)
    problems = [
        f"plugin {info.name!r}: {problem}"
        for info in host.infos()
        if info.enabled
        for problem in ([info.error] if info.error else info.warnings)
    ]
    if app.strict and (problems or host.left_out):
        raise PluginError("; ".join([*problems, *host.left_out]))


def _describe(info: PluginInfo) -> str:
    origin: str = info.origin
    if info.distribution and info.distribution != info.name:
        origin += f" from {info.distribution}"
    elif info.path:
        origin += f" {info.path}"
    lines = [f"{info.name} {info.version or '(no version)'} [{origin}] {_status(info)}"]
    if not info.enabled:
        lines.append(f"  disabled by: {info.disabled_by or 'configuration'}")
    if info.error:
        lines.append(f"  error: {info.error}")
    if info.enabled and not info.error:
        lines.append(f"  hooks: {', '.join(info.hooks) or '-'}")
        lines.append(f"  sources: {', '.join(info.source_keys) or '-'}")
        lines.extend(f"  warning: {warning}" for warning in info.warnings)
    return "\n".join(lines)


# -- install / uninstall ------------------------------------------------------------------


def _pip(*arguments: str) -> subprocess.CompletedProcess[str]:
    """pip of the interpreter nia runs in, so plugins land where nia can import them.

    pip's output goes to stderr as it comes, so a slow resolve or download shows
    progress instead of seconds of silence; it is also returned for parsing.
    """
    lines: list[str] = []
    with subprocess.Popen(
        [sys.executable, "-m", "pip", *arguments],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        errors="replace",
    ) as process:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            click.echo(line.rstrip("\n"), err=True)
    return subprocess.CompletedProcess(process.args, process.returncode, "".join(lines), "")


def _fail(action: str, result: subprocess.CompletedProcess[str]) -> NiaError:
    return NiaError(f"pip {action} failed (exit status {result.returncode}); its output is above")


def _installed_plugins() -> dict[str, epcache.EntryPointRecord]:
    importlib.invalidate_caches()
    return {record.name: record for record in epcache.scan_uncached(ENTRY_POINT_GROUP)}


@plugins.command("install")
@click.argument("packages", nargs=-1)
@click.option(
    "-e",
    "--editable",
    "editables",
    multiple=True,
    metavar="PATH",
    help="Install a plugin under development from its folder, in editable mode (repeatable).",
)
@click.option("-U", "--upgrade", is_flag=True, help="Upgrade the packages if already installed.")
@click.option("--json", "as_json", is_flag=True, help="Print what was installed as JSON.")
def install(packages: tuple[str, ...], editables: tuple[str, ...], upgrade: bool, as_json: bool) -> None:
    """Install plugin packages with pip, into the environment nia runs in.

    PACKAGES are anything pip accepts: names, version specifiers, paths, URLs.
    """
    if not packages and not editables:
        raise UsageError("name at least one package to install (or -e PATH)")
    before = _installed_plugins()
    arguments = ["install", *(["--upgrade"] if upgrade else []), *packages]
    for path in editables:
        arguments += ["-e", path]
    result = _pip(*arguments)
    epcache.forget(ENTRY_POINT_GROUP)
    if result.returncode != 0:
        raise _fail("install", result)
    installed = [
        word
        for line in result.stdout.splitlines()
        if line.startswith("Successfully installed ")
        for word in line.split()[2:]
    ]
    after = _installed_plugins()
    added = sorted(name for name, record in after.items() if before.get(name) != record)
    if as_json:
        click.echo(json.dumps({"installed": installed, "plugins_added": added}, indent=2))
        return
    if not installed:
        click.echo("Nothing new to install.")
    if added:
        click.echo("Plugins now available: " + ", ".join(added))


@plugins.command("uninstall")
@click.argument("packages", nargs=-1, required=True)
@click.option("-y", "--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option(
    "--json", "as_json", is_flag=True, help="Print what was uninstalled as JSON (the question goes to stderr)."
)
def uninstall(packages: tuple[str, ...], yes: bool, as_json: bool) -> None:
    """Uninstall plugin packages with pip.

    Each of PACKAGES is a distribution name or the name of a plugin it
    provides. Uninstalling a plugin pack removes every plugin in it.
    """
    installed = _installed_plugins()
    distributions: list[str] = []
    for package in packages:
        record = installed.get(package)
        distribution = record.distribution if record is not None and record.distribution else package
        if _normalize(distribution) in {_normalize(DISTRIBUTION), "nia"}:
            raise UsageError(f"nia cannot uninstall itself here; use pip uninstall {DISTRIBUTION}")
        if distribution not in distributions:
            distributions.append(distribution)
    leaving = sorted(
        name
        for name, record in installed.items()
        if record.distribution and _normalize(record.distribution) in {_normalize(d) for d in distributions}
    )
    if not yes:
        what = ", ".join(distributions) + (f" (plugins: {', '.join(leaving)})" if leaving else "")
        click.confirm(f"Uninstall {what}?", abort=True, err=as_json)
    result = _pip("uninstall", "--yes", *distributions)
    epcache.forget(ENTRY_POINT_GROUP)
    if result.returncode != 0:
        raise _fail("uninstall", result)
    lines = [line.strip() for line in result.stdout.splitlines()]
    done = [line for line in lines if line.startswith("Successfully uninstalled ")]
    said = [_normalize(line.removeprefix("Successfully uninstalled ")) for line in done]
    removed = {_normalize(d) for d in distributions if any(name.startswith(_normalize(d) + "-") for name in said)}
    # Decided from pip's own report: an editable project's metadata stays importable in this process.
    gone = [name for name in leaving if _normalize(installed[name].distribution or "") in removed]
    if as_json and done:
        uninstalled = [line.removeprefix("Successfully uninstalled ") for line in done]
        click.echo(json.dumps({"uninstalled": uninstalled, "plugins_removed": gone}, indent=2))
    elif gone:
        click.echo("Plugins removed: " + ", ".join(gone))
    refused = [line for line in lines if line.startswith(("Not uninstalling ", "Can't uninstall "))]
    if refused:
        raise NiaError("pip did not uninstall everything: " + " ".join(refused))
    if not done:
        raise NiaError(f"nothing was uninstalled: {', '.join(distributions)} not installed for {sys.executable}")


def _normalize(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


# -- enable / disable ---------------------------------------------------------------------


def _known(app: App, location: Location, name: str) -> PluginHost:
    host = _load(app, location)
    if name not in host.plugins:
        raise UsageError(f"no plugin named {name!r} here; 'nia plugins list --all' shows the names")
    return host


@plugins.command("disable")
@click.argument("name")
@LOCATION_OPTION
@click.pass_context
def disable(ctx: click.Context, name: str, location: str | None) -> None:
    """Switch plugin NAME off for this project ([plugins] disabled in .nia/project.toml)."""
    app = App.of(ctx)
    where = app.locate(location)
    _known(app, where, name)
    path = where.nia_dir / "project.toml"
    if switches.set_disabled(path, name, True):
        click.echo(f"Disabled {name} in {shown_path(path)}")
    else:
        click.echo(f"{name} is already disabled in {shown_path(path)}")


@plugins.command("enable")
@click.argument("name")
@LOCATION_OPTION
@click.pass_context
def enable(ctx: click.Context, name: str, location: str | None) -> None:
    """Switch plugin NAME back on for this project (removes it from [plugins] disabled)."""
    app = App.of(ctx)
    where = app.locate(location)
    path = where.nia_dir / "project.toml"
    changed = switches.set_disabled(path, name, False)
    if changed:
        click.echo(f"Enabled {name} in {shown_path(path)}")
    else:
        _known(app, where, name)
        click.echo(f"{name} is not disabled in {shown_path(path)}")
    info = _load(app, where).plugins.get(name)
    if info is not None and not info.enabled:
        click.echo(f"Note: {name} is still switched off by {info.disabled_by}", err=True)


# -- nia plugin new -----------------------------------------------------------------------


@click.group("plugin")
def plugin_group() -> None:
    """Create a new plugin package."""


@plugin_group.command("new")
@click.argument("name")
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The folder to create (default: ./NAME). An existing folder must be empty.",
)
@click.option("--namespace", default=None, help="The key namespace (default: NAME without a leading 'nia-').")
def new(name: str, directory: Path | None, namespace: str | None) -> None:
    """Create a plugin package NAME from nia's plugin template.

    It holds a pyproject.toml with the nia entry point, one example context
    source, tests written with nia's test kit, a README and a CI workflow.
    """
    names = PluginNames.from_name(name, namespace)
    target = (directory or Path(name)).absolute()
    nia = nia_source()
    render(target, names, nia=nia)
    click.echo(f"Created {names.name} in {target}")
    details: dict[str, Any] = {"module": names.module, "keys": f"{names.namespace}/..."}
    click.echo("  " + ", ".join(f"{key}: {value}" for key, value in details.items()))
    click.echo(f"  nia for its own virtualenv: {nia} (NIA_SOURCE; see its README)")
    click.echo("Next:")
    click.echo(f"  cd {target}")
    click.echo('  nia plugins install -e ".[test]"   # into the Python nia runs in (README: a virtualenv of its own)')
    click.echo("  python -m pytest")
    click.echo("  nia context show                   # NOTES.md here, in the context through your plugin")
    click.echo("  nia dev                            # live reload while you edit")
