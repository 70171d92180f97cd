"""The hook door: one host hook invocation through the runtime's one boundary path.

``SessionStart`` (``startup``, ``clear``, ``compact``) starts a fresh context
epoch and prints its baseline; ``SessionStart`` (``resume``) and
``UserPromptSubmit`` are boundaries: the combined update when something
changed, nothing at all when nothing did. The conversation is the host's; the
attached session in nia's store (keyed by host and host session id) holds the
epochs, snapshots and admitted messages, exactly as for nia's own sessions.

Nothing here may fail the host's turn: every problem becomes a line on
stderr and in ``nia hook log``, the exit status is 0, and a watchdog ends a
hook that would outlive :data:`DEADLINE` seconds.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator
from dataclasses import field
from typing import TYPE_CHECKING, NoReturn

from nia_core.agents import hook_log
from nia_core.agents.contract import EVENTS, STARTS, HookInput, HostAdapter, HostInputError
from nia_core.agents.hook_settings import deliver_native_files
from nia_core.agents.output_limit import SPILLED, fit, spilled_texts
from nia_core.agents.transcript import Transcript
from nia_core.errors import NiaError, message_of
from nia_core.records import record

if TYPE_CHECKING:
    from nia_core.runtime import BoundaryReport, Runtime
    from nia_core.sessions import Store

DEADLINE = 20.0
"""Seconds a hook may run before nia gives up (the host's own timeout for it is longer)."""

RESEND_DEPTH = 20
"""How many admitted texts back the transcript check looks for one that arrived."""


@record
class HookRun:
    """What one hook invocation prints, and what it logs."""

    stdout: str = ""
    entry: hook_log.Entry = field(default_factory=lambda: hook_log.Entry("", "", "", ""))

    @property
    def warnings(self) -> list[str]:
        return self.entry.warnings


def deadline() -> float:
    try:
        return float(os.environ.get("NIA_HOOK_DEADLINE", DEADLINE))
    except ValueError:
        return DEADLINE


def run(adapter: HostAdapter, data: bytes, runtime: Runtime) -> HookRun:
    """Answer one hook: parse, attach, run the boundary, fit the text. Never raises."""
    result = HookRun(entry=hook_log.Entry(adapter.name, "", "", ""))
    entry = result.entry
    try:
        hook = adapter.parse(data)
    except HostInputError as exc:
        entry.outcome, entry.warnings = "failed", [str(exc)]
        return result
    entry.host_session, entry.event, entry.source, entry.cwd = hook.session_id, hook.event, hook.source, hook.cwd
    if hook.event not in EVENTS:
        entry.outcome = "ignored"
        return result
    try:
        _answer(adapter, hook, runtime, result)
    except Exception as exc:  # noqa: BLE001 - the host's turn must never fail because of nia
        entry.outcome = "failed"
        said = str(exc) if isinstance(exc, NiaError) else f"unexpected {type(exc).__name__}: {message_of(exc)}"
        entry.warnings.append(said)
    return result


def _answer(adapter: HostAdapter, hook: HookInput, runtime: Runtime, result: HookRun) -> None:
    from nia_core.sessions import open_store

    entry = result.entry
    location = runtime.locate(hook.cwd)
    version = adapter.host_version(hook.transcript_path)
    deliver, problem = deliver_native_files(location.root, adapter.name)
    if problem:
        entry.warnings.append(problem)
    leave_out = () if deliver else adapter.native_keys(version)
    with open_store() as store:
        session = runtime.attach(store, adapter.name, hook.session_id, location)
        entry.session = session.id
        if session.location != str(location.path):
            runtime.move(store, session.id, location)  # the agent changed folders: its context is rebuilt there
        missing: list[str] = []
        starts = hook.event == "SessionStart" and hook.source in STARTS
        if starts and not _answered(adapter, hook, store, session.id, location.root):
            report = runtime.start_over(store, session.id, reason=f"{adapter.title} {hook.source}", leave_out=leave_out)
        else:
            gone = False
            if not starts and not _in_flight(hook, session.id):
                missing, gone = _missing(adapter, store, session.id, hook.transcript_path, location.root)
            if gone:  # compacted away (or never recorded): the model has none of this epoch, so a new one starts
                missing = []
                reason = f"{adapter.title}: nia's context is gone from its transcript"
                report = runtime.start_over(store, session.id, reason=reason, leave_out=leave_out)
                entry.warnings.append(
                    f"nia's context is not in what the {adapter.title} model sees; a new epoch starts"
                )
            else:
                report = runtime.boundary(store, session.id, leave_out=leave_out)
        _report(adapter, hook, report, missing, location.root, result)


def _answered(
    adapter: HostAdapter, hook: HookInput, store: Store, session_id: str, root: os.PathLike[str] | str
) -> bool:
    """Whether a ``SessionStart`` (``compact``) is for a compaction nia already started a new epoch for.

    Codex 0.169.0 compacts before a resumed turn and then runs SessionStart
    ``resume`` and ``compact`` in that order (codex-rs core/src/hook_runtime.rs
    ``run_pending_session_start_hooks``); the ``resume`` hook finds the epoch
    compacted away and starts a new one, which the ``compact`` hook then
    finds after the transcript's compaction record: it must not say it twice.
    Only for hosts that write that record before the hook runs.
    """
    if hook.source != "compact" or not adapter.compaction or not adapter.compaction_recorded_first:
        return False
    transcript = Transcript.open(hook.transcript_path, adapter.compaction)
    if transcript is None or not transcript.is_compacted():
        return False
    epoch = store.state(session_id).epoch
    return epoch is not None and transcript.contains(_printed(adapter, epoch.baseline, root))


def _in_flight(hook: HookInput, session_id: str) -> bool:
    """Whether this prompt's turn began with a SessionStart hook whose output is not in the transcript yet.

    Claude Code 2.1.328 writes a resumed turn's SessionStart output to the
    transcript only after the prompt's hook has run, so checking for it then
    would wrongly re-send it. A SessionStart's own check covers the turn before.
    """
    if hook.event != "UserPromptSubmit":
        return False
    previous = hook_log.last_entry(session_id)
    return previous is not None and previous.get("event") == "SessionStart"


def _printed(adapter: HostAdapter, text: str, root: os.PathLike[str] | str) -> str:
    from pathlib import Path

    return fit(text, adapter.output_limit, adapter.measure, Path(root), adapter.unit).text


def _missing(
    adapter: HostAdapter, store: Store, session_id: str, transcript_path: str | None, root: os.PathLike[str] | str
) -> tuple[list[str], bool]:
    """Admitted texts of the active epoch that never reached the host's transcript, oldest first.

    The newest admitted text is looked up first, then older ones, until one
    is found: the ones after it are what the host lost (a crash, dropped
    output). Only the transcript after its last compaction record counts
    (the model sees nothing before it). The flag says none of the texts is
    there: the epoch is gone. Without a readable transcript nothing is
    concluded.
    """
    transcript = Transcript.open(transcript_path, adapter.compaction)
    if transcript is None:
        return [], False
    state = store.state(session_id)
    if state.epoch is None:
        return [], False
    number = state.epoch.number
    texts = [state.epoch.baseline]
    texts += [
        e.message.text
        for e in store.history(session_id)
        if e.message.kind == "system_update" and e.message.epoch == number
    ]
    texts = [text for text in texts if text.strip()]  # a blank text was never printed: nothing to look for
    lost: list[str] = []
    spilled: list[str] | None = None
    for text in reversed(texts[-RESEND_DEPTH:]):
        if transcript.contains(_printed(adapter, text, root)):
            break
        if spilled is None:  # sent inside a longer text that went to a file: the model was pointed at it
            from pathlib import Path

            spilled = spilled_texts(Path(root), transcript.mentions(SPILLED))
        if any(text in whole for whole in spilled):
            break
        lost.append(text)
    else:
        return list(reversed(lost)), bool(lost)
    return list(reversed(lost)), False


def _report(
    adapter: HostAdapter,
    hook: HookInput,
    report: BoundaryReport,
    missing: list[str],
    root: os.PathLike[str] | str,
    result: HookRun,
) -> None:
    from pathlib import Path

    entry = result.entry
    entry.outcome = report.outcome
    entry.epoch = report.epoch
    entry.changed = [f"{_MARK.get(c.kind, '?')}{c.key}" for c in report.changes]
    entry.warnings.extend(report.warnings)
    if report.outcome == "blocked":
        entry.warnings.append(
            f"the context is unavailable (waiting for: {', '.join(report.blocked_on)}); "
            "nothing was added now, nia sends it at the next prompt"
        )
    if report.outcome in ("initialized", "replaced"):
        missing = []  # a fresh baseline says everything the lost messages said
    parts = [*missing, *([report.text] if report.text is not None else [])]
    if missing:
        entry.outcome = f"{entry.outcome}+resent"
        entry.warnings.append(
            f"{len(missing)} earlier context message(s) are not in the {adapter.title} transcript; sent again"
        )
    if not parts:
        return
    text = "\n\n".join(parts)
    fitted = fit(text, adapter.output_limit, adapter.measure, Path(root), adapter.unit)
    if fitted.problem:
        entry.warnings.append(fitted.problem)
    entry.full_text = fitted.full_path
    entry.printed = len(fitted.text.encode("utf-8"))
    result.stdout = adapter.render(hook.event, fitted.text)


_MARK = {"added": "+", "updated": "~", "removed": "-"}


def emit(result: HookRun) -> None:
    """Print the hook's answer and its warnings, and log it; broken pipes and full disks are ignored."""
    entry = result.entry
    try:
        if result.stdout:
            sys.stdout.write(result.stdout + "\n")
            sys.stdout.flush()
    except OSError:
        entry.warnings.append("the host closed nia's stdout before the context was written")
    for line in entry.warnings:
        try:
            sys.stderr.write(f"nia: {line}\n")
        except OSError:
            break
    hook_log.append(entry.stamp())


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """While plugins run, anything written to stdout (fd 1 too) goes to stderr: only nia's answer reaches the host."""
    sys.stdout.flush()
    saved = os.dup(1)
    previous = sys.stdout
    try:
        os.dup2(2, 1)
        sys.stdout = sys.stderr
        yield
    finally:
        sys.stdout.flush()
        sys.stdout = previous
        os.dup2(saved, 1)
        os.close(saved)


def watchdog(host: str, seconds: float) -> threading.Timer:
    """End the process with status 0 after ``seconds``: a hanging plugin must not freeze the agent."""

    def expire() -> None:
        try:
            sys.stderr.write(f"nia: the {host} hook gave up after {seconds:g}s; nothing was added this time\n")
            hook_log.append(hook_log.Entry(host, "", "", "", outcome="timed-out", warnings=["deadline passed"]).stamp())
        finally:
            os._exit(0)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
    return timer


def answer(host: str, runtime: Runtime) -> None:
    """One hook process: stdin to stdout (nothing else on it), under the watchdog; always returns."""
    from nia_core.agents import adapter

    timer = watchdog(host, deadline())
    try:
        data = sys.stdin.buffer.read()
    except OSError:
        data = b""
    with stdout_to_stderr():
        result = run(adapter(host), data, runtime)
    emit(result)
    timer.cancel()


def main(host: str) -> NoReturn:
    """``nia hook HOST`` without click: the agent waits for this at every prompt, so it loads only what it uses.

    The process ends through :func:`nia_core.process.end`, as every nia command does: a plugin's thread or
    ``atexit`` handler never keeps the agent waiting.
    """
    from nia_core.lazylog import when_imported
    from nia_core.process import begin, end
    from nia_core.runtime import Runtime

    begin()
    if os.environ.get("NIA_DEBUG") == "1":
        _log_to_stderr()
    else:  # an unchanged prompt logs nothing: the handler waits for whoever imports logging first
        when_imported(_log_to_stderr)
    answer(host, Runtime())
    end(0)


def _log_to_stderr() -> None:
    """Records of ``nia.*`` go to stderr as ``nia: message`` (debug ones too under ``NIA_DEBUG=1``)."""
    import logging

    logger = logging.getLogger("nia")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("nia: %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG if os.environ.get("NIA_DEBUG") == "1" else logging.WARNING)
        logger.propagate = False
