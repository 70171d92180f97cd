"""``nia dev``: watch the plugins under development and show what the next boundary would say."""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from nia_core.cli.app import App
from nia_core.cli.options import WATCHED_PLUGINS_DIR, location_option
from nia_core.context import ReplacementBlocked, ReplacementReady, Unchanged, Updated
from nia_core.context.system import Reconciliation
from nia_core.terminal import OWN_STYLING, on_a_terminal, terminal_safe

if TYPE_CHECKING:  # imported when the command runs: watchfiles and metadata scanning cost every `nia` call
    from nia_core.plugin_host.reload import Baseline, DevSession, ReloadResult
    from nia_core.plugin_host.watch import ChangeWatcher, WatchSettings

MARKS = {"added": "+", "updated": "~", "removed": "-"}


def secho(message: str, *, err: bool = False, **styles: Any) -> None:
    """``click.secho`` for nia's own colours on a terminal: the text is escaped first, then styled.

    Everything else reaches a terminal escaped as a whole (:mod:`nia_core.terminal`),
    which would show a colour's own escape sequence as text.
    """
    if not on_a_terminal(err=err):  # plain text, every byte as it is
        click.echo(message, err=err)
        return
    with OWN_STYLING:
        click.secho(terminal_safe(message), err=err, **styles)


@click.command()
@location_option("The working directory to assemble for (default: the current one).")
@WATCHED_PLUGINS_DIR
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per line, for editor integrations.")
@click.option(
    "--poll",
    is_flag=True,
    help="Poll for changes instead of relying on file events (network mounts, WSL); "
    "WATCHFILES_FORCE_POLLING=1 does the same.",
)
@click.option(
    "--interval",
    type=click.FloatRange(0),
    default=5.0,
    show_default=True,
    help="Seconds between re-observations of sources that are not files (0: only on file changes).",
)
@click.option("--step-ms", type=click.IntRange(1), default=None, hidden=True)
@click.option("--debounce-ms", type=click.IntRange(1), default=None, hidden=True)
@click.option("--settle-ms", type=click.IntRange(0), default=None, hidden=True)
@click.pass_context
def dev(
    ctx: click.Context,
    location: str | None,
    plugins_dirs: tuple[str, ...],
    as_json: bool,
    poll: bool,
    interval: float,
    step_ms: int | None,
    debounce_ms: int | None,
    settle_ms: int | None,
) -> None:
    """Live reload while developing a plugin.

    Prints the baseline once, then watches the local plugin folders, the
    plugins installed in editable mode and .nia/project.toml. After each save
    it reloads only the plugins that changed and prints what the next safe
    boundary would tell the model: Unchanged, each source added, updated or
    removed with its text, or a baseline replacement. A plugin that fails to
    reload is reported with file and line, and its previous version stays
    loaded. The files the sources read (AGENTS.md, a plugin's NOTES.md) are
    watched too, and every other source is looked at again every --interval
    seconds; those print only what changed. Ctrl-C stops.
    """
    app = App.of(ctx)
    if not app.debug:
        # nia dev reports plugin problems itself, once per change, not at every assembly.
        for name in ("nia.registry", "nia.host", "nia.context"):
            logging.getLogger(name).setLevel(logging.ERROR)
    printer = JsonPrinter() if as_json else TextPrinter()
    from nia_core.plugin_host.reload import DevSession
    from nia_core.plugin_host.watch import WatchSettings

    tuning = {"step_ms": step_ms, "debounce_ms": debounce_ms, "settle_ms": settle_ms}
    settings = WatchSettings(poll=True if poll else None, **{k: v for k, v in tuning.items() if v is not None})
    try:
        session = DevSession.open(
            app.locate(location), plugins_dirs=(*app.plugins_dirs, *plugins_dirs), flags=app.flags
        )
        printer.baseline(session, session.start())
        watch(session, settings, printer, interval=interval or None, debug=app.debug)
    except KeyboardInterrupt:
        pass
    printer.stopped()


def watch(
    session: DevSession, settings: WatchSettings, printer: Printer, *, interval: float | None, debug: bool = False
) -> None:
    """Reload after each batch of changes until interrupted; one reload at a time.

    Watched as ``nia mcp`` follows a project: the plugins' folders, the project
    (when it is one) and the user's nia folder, the files sources read, and
    the rest on ``interval``; every batch is reconciled.
    """
    from nia_core.plugin_host.follow import follow, live_roots, project_files
    from nia_core.plugin_host.watch import ChangeWatcher

    extra = live_roots(session)

    def roots() -> list[Path]:
        return [*session.watch_roots(), *extra]

    watcher = ChangeWatcher(roots, project_files(session, extra), settings)
    follow(
        session,
        watcher,
        printer.result,
        printer.crash,
        on_watching=printer.watching,
        on_notice=printer.notice,
        reobserve=True,
        interval=interval,
        debug=debug,
    )


class Printer:
    _said: tuple[tuple[str, ...], bool] = ((), False)

    def news(self, result: ReloadResult) -> bool:
        """Whether ``result`` says anything new: a re-observation (a data file saved, the interval) that
        changed no plugin and no source, and neither raised a problem nor cleared one, prints nothing."""
        said = (result.problems, bool(result.errors))
        quiet = not (result.reloaded or result.loaded or result.unloaded or result.errors)
        quiet = quiet and isinstance(result.outcome, Unchanged) and said == self._said
        self._said = said
        return not quiet

    def notice(self, message: str) -> None:
        raise NotImplementedError

    def baseline(self, session: DevSession, baseline: Baseline) -> None:
        raise NotImplementedError

    def watching(self, watcher: ChangeWatcher) -> None:
        raise NotImplementedError

    def result(self, result: ReloadResult) -> None:
        raise NotImplementedError

    def crash(self, exc: Exception) -> None:
        raise NotImplementedError

    def stopped(self) -> None:
        raise NotImplementedError


def _display(path: str | Path, base: str | None) -> str:
    """``path`` relative to ``base``, the folder ``nia dev`` started in (it may be deleted while it runs)."""
    try:
        return str(Path(path).relative_to(base)) if base else str(path)
    except ValueError:
        return str(path)


class TextPrinter(Printer):
    """Human-readable output: the baseline once, then one block per change."""

    def __init__(self) -> None:
        try:
            self.base: str | None = os.getcwd()
        except OSError:
            self.base = None

    def baseline(self, session: DevSession, baseline: Baseline) -> None:
        keys = [key for key, _, _ in baseline.generation.spans]
        secho(f"Baseline ({len(keys)} sources: {', '.join(keys) or 'none'})", bold=True)
        click.echo(baseline.generation.baseline)
        for error in baseline.errors:
            secho(f"Error: {error}", fg="red", err=True)
        reported = {error.plugin for error in baseline.errors}
        for info in session.host.infos():
            if info.error and info.name not in reported:
                secho(f"Error: plugin {info.name!r}: {info.error}", fg="red", err=True)
        if baseline.unavailable:
            click.echo("Warning: unavailable, shown without them: " + ", ".join(baseline.unavailable), err=True)

    def watching(self, watcher: ChangeWatcher) -> None:
        how = "Polling" if watcher.polling else "Watching"
        if watcher.watching:
            folders = ", ".join(_display(p, self.base) for p in watcher.watching)
            secho(f"\n{how} {folders} for changes (Ctrl-C to stop)", dim=True)
        else:
            secho(f"\n{how} for .nia/plugins/ to appear (or pass --plugins-dir) (Ctrl-C to stop)", dim=True)

    def result(self, result: ReloadResult) -> None:
        if not self.news(result):
            return
        stamp = time.strftime("%H:%M:%S")
        what = [f"reloaded {', '.join(result.reloaded)}"] if result.reloaded else []
        what += [f"loaded {', '.join(result.loaded)}"] if result.loaded else []
        what += [f"unloaded {', '.join(result.unloaded)}"] if result.unloaded else []
        failed = sorted({e.plugin for e in result.errors if e.plugin})
        what += [f"{', '.join(failed)} failed to reload"] if failed else []
        what += ["config changed"] if not what and any(e.plugin is None for e in result.errors) else []
        files = ", ".join(_display(p, self.base) for p in result.paths[:3]) + (" ..." if len(result.paths) > 3 else "")
        head = f"\n[{stamp}] {files or 'check'}"
        secho(f"{head}: {'; '.join(what) or 'no plugin code changed'} ({result.seconds * 1000:.0f} ms)", dim=True)
        for error in result.errors:
            secho(f"Error: {error}", fg="red")
        for problem in result.problems:
            secho(f"Error: {problem}", fg="red")
        _print_outcome(result.outcome)

    def notice(self, message: str) -> None:
        secho(f"Warning: {message}", fg="yellow", err=True)

    def crash(self, exc: Exception) -> None:
        secho(f"Error: reload failed: {type(exc).__name__}: {exc} (still watching)", fg="red")

    def stopped(self) -> None:
        click.echo("Stopped.", err=True)


def _print_outcome(outcome: Reconciliation | None) -> None:
    if outcome is None:
        click.echo("(not reconciled: see the error above)")
    elif isinstance(outcome, Unchanged):
        click.echo("Unchanged")
    elif isinstance(outcome, Updated):
        count = len(outcome.changes)
        secho(f"Update ({count} {'change' if count == 1 else 'changes'}):", bold=True)
        for change in outcome.changes:
            secho(f"{MARKS[change.kind]} {change.kind} {change.key}", bold=True)
            click.echo(change.text)
    elif isinstance(outcome, ReplacementReady):
        secho(f"Replacement ({outcome.reason}); the new baseline:", bold=True)
        click.echo(outcome.generation.baseline)
    elif isinstance(outcome, ReplacementBlocked):
        secho(
            f"Replacement needed ({outcome.reason}) but blocked on: {', '.join(outcome.keys)}; the baseline stays",
            bold=True,
        )


class JsonPrinter(Printer):
    """One JSON object per line: ``baseline``, ``watching``, ``reload``, ``error``, ``problem``, ``stopped``."""

    def emit(self, payload: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(payload, ensure_ascii=False) + "\n")
        sys.stdout.flush()

    def baseline(self, session: DevSession, baseline: Baseline) -> None:
        self.emit(
            {
                "event": "baseline",
                "baseline": baseline.generation.baseline,
                "sources": [key for key, _, _ in baseline.generation.spans],
                "unavailable": list(baseline.unavailable),
                "errors": [e.to_json() for e in baseline.errors],
                "plugins": {
                    info.name: {"origin": info.origin, "enabled": info.enabled, "error": info.error}
                    for info in session.host.infos()
                },
            }
        )

    def watching(self, watcher: ChangeWatcher) -> None:
        self.emit({"event": "watching", "paths": [str(p) for p in watcher.watching], "polling": watcher.polling})

    def result(self, result: ReloadResult) -> None:
        if not self.news(result):
            return
        self.emit(
            {
                "event": "reload",
                "paths": list(result.paths),
                "reloaded": list(result.reloaded),
                "loaded": list(result.loaded),
                "unloaded": list(result.unloaded),
                "errors": [error.to_json() for error in result.errors],
                "problems": list(result.problems),
                "result": outcome_json(result.outcome),
                "ms": round(result.seconds * 1000, 2),
            }
        )

    def notice(self, message: str) -> None:
        self.emit({"event": "problem", "message": message})

    def crash(self, exc: Exception) -> None:
        from nia_core.plugin_host.reload import ReloadError

        error = ReloadError(None, f"reload failed: {type(exc).__name__}: {exc}")
        self.emit({"event": "error", "error": error.to_json()})

    def stopped(self) -> None:
        self.emit({"event": "stopped"})


def outcome_json(outcome: Reconciliation | None) -> dict[str, Any] | None:
    """A reconcile result as JSON (``kind``: unchanged, updated, replacement, replacement-blocked)."""
    if outcome is None:
        return None
    if isinstance(outcome, Unchanged):
        return {"kind": "unchanged"}
    if isinstance(outcome, Updated):
        return {
            "kind": "updated",
            "text": outcome.text,
            "changes": [{"key": c.key, "kind": c.kind, "text": c.text} for c in outcome.changes],
        }
    if isinstance(outcome, ReplacementReady):
        return {"kind": "replacement", "reason": outcome.reason, "baseline": outcome.generation.baseline}
    return {"kind": "replacement-blocked", "reason": outcome.reason, "keys": list(outcome.keys)}
