"""The hook door: one host hook invocation through the runtime's one boundary path.

``SessionStart`` (``startup``, ``clear``, ``compact``) starts a fresh context
epoch and prints its baseline; ``SessionStart`` (``resume``) and
``UserPromptSubmit`` are boundaries: the combined update when something
changed, nothing at all when nothing did. The conversation is the host's; the
attached session in nia's store (keyed by host and host session id) holds the
epochs, snapshots and admitted messages, exactly as for nia's own sessions.

Nothing here may fail the host's turn: every problem becomes a line on
stderr and in ``nia hook log``, the exit status is 0, and a watchdog ends a
hook that would outlive :data:`nia_core.agents.DEADLINE` seconds.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from nia_core import stdio
from nia_core.agents import deadline, hook_log
from nia_core.agents.contract import HOOK_TIMEOUT, PROMPT, START, HookInput, HostAdapter, HostInputError
from nia_core.agents.delivered import delivered
from nia_core.agents.hook_settings import deliver_native_files
from nia_core.agents.native import views
from nia_core.agents.output_limit import fit, printed, spill_path
from nia_core.agents.transcript import Transcript
from nia_core.errors import NiaError, message_of
from nia_core.process import end, guard_exit
from nia_core.terminal import guard_terminals, written_to

if TYPE_CHECKING:
    from nia_core.context import Location
    from nia_core.runtime import BoundaryReport, Runtime
    from nia_core.sessions import Store


@dataclass
class HookRun:
    """What one hook invocation prints, and what it logs."""

    stdout: str = ""
    entry: hook_log.Entry = field(default_factory=lambda: hook_log.Entry("", "", "", ""))

    @property
    def warnings(self) -> list[str]:
        return self.entry.warnings


def run(
    adapter: HostAdapter,
    data: bytes,
    runtime: Runtime,
    caller: Mapping[str, str] | None = None,
    store: Callable[[], AbstractContextManager[Store]] | None = None,
    location: Location | None = None,
) -> HookRun:
    """Answer one hook: parse, attach, run the boundary, fit the text. Never raises.

    A function of its input: the hook's stdin ``data``, and ``caller``, what
    :attr:`HostAdapter.caller` gathered in the hook's own process about the
    host process it runs under (gather it there, never where this runs: a
    resident process has another parent). ``store`` gives the store to use
    (default: :func:`~nia_core.sessions.open_store`, opened and closed for
    this hook; a resident process keeps one open between hooks).
    ``location``: the Location of the hook's ``cwd`` when the caller found it
    already (a resident process checks that project's plugin code before it
    answers: the hook answers for the very project checked); else it is found
    here. Either way the hook finds its project once, and every step of it
    (attaching, the boundary, the report) uses that one Location.
    """
    result = HookRun(entry=hook_log.Entry(adapter.name, "", "", ""))
    entry = result.entry
    try:
        hook = adapter.parse(data, caller)
    except HostInputError as exc:
        entry.outcome, entry.warnings = "failed", [str(exc)]
        return result
    entry.host_session, entry.event, entry.source, entry.cwd = hook.session_id, hook.event, hook.source, hook.cwd
    entry.turn = adapter.turn(hook)
    if adapter.role(hook.event) is None:
        entry.outcome = "ignored"
        return result
    foreign = adapter.foreign(hook)
    if foreign:  # another host runs this host's hooks and drops what they print: nothing may count as delivered
        entry.outcome, entry.warnings = "ignored", [foreign]
        return result
    try:
        _answer(adapter, hook, runtime, result, store, location)
    except Exception as exc:  # noqa: BLE001 - the host's turn must never fail because of nia
        entry.outcome = "failed"
        said = str(exc) if isinstance(exc, NiaError) else f"unexpected {type(exc).__name__}: {message_of(exc)}"
        entry.warnings.append(said)
    return result


def _answer(
    adapter: HostAdapter,
    hook: HookInput,
    runtime: Runtime,
    result: HookRun,
    store_of: Callable[[], AbstractContextManager[Store]] | None,
    located: Location | None,
) -> None:
    from nia_core.sessions import open_store

    entry = result.entry
    location = located if located is not None else runtime.locate(hook.cwd)
    version = adapter.host_version(hook.transcript_path)
    deliver, problem = deliver_native_files(location.root, adapter.name)
    if problem:
        entry.warnings.append(problem)
    native = {} if deliver else views(adapter.native_keys(version, location.root), location.root)
    with (store_of or open_store)() as store:
        session = runtime.attach(store, adapter.name, hook.session_id, location)
        entry.session = session.id
        if session.location != str(location.path):
            runtime.move(store, session.id, location)  # the agent changed folders: its context is rebuilt there
        missing: list[str] = []
        role = adapter.role(hook.event)
        starts = role == START and hook.source in adapter.fresh
        previous = hook_log.last_entry(session.id)  # nia's previous hook of this conversation (they run one at a time)
        forked = _fork(adapter, hook, runtime, store, session.id, entry, previous)
        if forked == "waiting":
            entry.outcome = "fork-waiting"
            return
        if starts and not _answered(adapter, hook, store, session.id, location.root):
            reason = f"{adapter.title} {hook.source}"
            report = runtime.start_over(store, session.id, reason=reason, narrow=native, location=location)
        else:
            gone = False
            checked = not starts and forked != "continued"
            if checked and not _in_flight(adapter, hook, previous) and not _same_prompt(entry, previous):
                missing, gone = _missing(adapter, store, session.id, hook, location.root)
            if gone:  # compacted away (or never recorded): the model has none of this epoch, so a new one starts
                missing = []
                reason = f"{adapter.title}: nia's context is gone from its transcript"
                report = runtime.start_over(store, session.id, reason=reason, narrow=native, location=location)
                entry.warnings.append(
                    f"nia's context is not in what the {adapter.title} model sees; a new epoch starts"
                )
            else:
                report = runtime.boundary(store, session.id, narrow=native, location=location)
        _report(adapter, hook, report, missing, location.root, result)
        if forked == "continued":
            entry.outcome = f"forked+{entry.outcome}"


def _fork(
    adapter: HostAdapter,
    hook: HookInput,
    runtime: Runtime,
    store: Store,
    session_id: str,
    entry: hook_log.Entry,
    previous: dict[str, Any] | None,
) -> str:
    """A fork continues the epoch of the conversation it copies: ``continued``, ``waiting`` or ``''``.

    The fork's model has the parent's whole conversation, nia's baseline and
    updates included; a new baseline would be a second, stale one in every
    later request. So the fork's attached session copies the parent's epoch
    and the boundary that follows says only what changed since (``continued``).
    A host that names the parent only after the fork's first turn
    (:attr:`HostAdapter.fork_recorded_late`) may not say yet: then nothing is
    said to the fork (``waiting``) until a hook of it can tell, rather than a
    baseline. A fork whose parent nia never attached to starts as usual ('').
    A host that runs no hook for a fork (:attr:`HostAdapter.forks_copied`) is
    asked at a conversation's first prompt.
    """
    role = adapter.role(hook.event)
    fork_start = role == START and hook.source in adapter.forks
    copied = adapter.forks_copied and role == PROMPT
    if not fork_start and not copied and not _waiting_fork(previous):
        return ""
    if store.state(session_id).epoch is not None:
        return ""
    parent = adapter.fork_parent(hook)
    if parent is not None and runtime.continue_fork(store, adapter.name, parent, session_id):
        return "continued"
    if parent is None and adapter.fork_recorded_late and Transcript.open(hook.transcript_path) is None:
        return "waiting"
    return ""


def _waiting_fork(previous: dict[str, Any] | None) -> bool:
    return previous is not None and previous.get("outcome") == "fork-waiting"


def _answered(
    adapter: HostAdapter, hook: HookInput, store: Store, session_id: str, root: os.PathLike[str] | str
) -> bool:
    """Whether a start hook (``compact``) is for a compaction nia already started a new epoch for.

    Codex 0.169.0 compacts before a resumed turn and then runs SessionStart
    ``resume`` and ``compact`` in that order (codex-rs core/src/hook_runtime.rs
    ``run_pending_session_start_hooks``); the ``resume`` hook finds the epoch
    compacted away and starts a new one, which the ``compact`` hook then
    finds after the transcript's compaction record: it must not say it twice.
    Only for hosts that write that record before the hook runs.
    """
    if hook.source != "compact" or not adapter.compaction or not adapter.compaction_recorded_first:
        return False
    transcript = conversation(adapter, hook)
    if transcript is None or not transcript.is_compacted():
        return False
    epoch = store.state(session_id).epoch
    if epoch is None:
        return False
    outputs = transcript.outputs(adapter.output_marker, adapter.hook_outputs, whole=True)
    printer = _printer(adapter, root, hook.transcript_path)
    return 0 in delivered([epoch.baseline], outputs, printer, adapter.recorded, adapter.joins)


def _in_flight(adapter: HostAdapter, hook: HookInput, previous: dict[str, Any] | None) -> bool:
    """Whether this prompt's turn began with a start hook whose output is not in the transcript yet.

    Claude Code 2.1.328 writes a resumed turn's SessionStart output to the
    transcript only after the prompt's hook has run
    (:attr:`HostAdapter.start_recorded_late`), so checking for it then would
    wrongly re-send it. The start hook's own check covers the turn before.
    """
    if not adapter.start_recorded_late or adapter.role(hook.event) != PROMPT:
        return False
    return previous is not None and adapter.role(str(previous.get("event"))) == START


def _same_prompt(entry: hook_log.Entry, previous: dict[str, Any] | None) -> bool:
    """Whether nia's previous hook of this conversation answered this same prompt moments ago, and printed.

    Two of nia's hooks can answer one prompt (installed at two scopes; a host
    that runs them at once): the host records the prompt only after both
    ran, so the first one's text is on its way, not lost. Looking for it
    would send it again, or start a second epoch. Hooks of one conversation
    run one at a time (:func:`hook_log.conversation_lock`), so the previous
    one's log entry is there; one older than the host's own timeout for a
    hook is from an earlier prompt.
    """
    if not entry.turn or previous is None or previous.get("turn") != entry.turn:
        return False
    return bool(previous.get("printed")) and hook_log.recent(previous, HOOK_TIMEOUT)


def _printer(adapter: HostAdapter, root: os.PathLike[str] | str, transcript_path: str | None) -> Callable[[str], str]:
    """What nia prints for a text over ``adapter``'s limit in project ``root`` (pure: nothing is written)."""
    from pathlib import Path

    folder = adapter.spill_folder(transcript_path)

    def printed_for(text: str) -> str:
        if adapter.measure(text) <= adapter.output_limit:
            return text
        where = str(spill_path(Path(root), text, folder))
        return printed(text, adapter.output_limit, adapter.measure, where, adapter.unit)

    return printed_for


def conversation(adapter: HostAdapter, hook: HookInput) -> Transcript | None:
    """What the host recorded of this conversation: the transcript the hook input names, else the host's store."""
    if adapter.conversation is not None:
        return adapter.conversation(hook)
    ancestors = adapter.ancestors(hook.transcript_path) if hook.transcript_path else ()
    return Transcript.open(hook.transcript_path, adapter.compaction, ancestors)


def _missing(
    adapter: HostAdapter, store: Store, session_id: str, hook: HookInput, root: os.PathLike[str] | str
) -> tuple[list[str], bool]:
    """Admitted texts of the active epoch that never reached the host's transcript, oldest first.

    The texts after the newest one the host recorded as hook output are what
    the host lost (a crash, dropped output); every text of the epoch is
    looked for, however many, and nothing else in the transcript is. Only
    the transcript after its last compaction record counts (the model sees
    nothing before it but what that record kept). The flag says the epoch is
    gone: none of its texts is there, or a compaction kept some of them but
    not the baseline. Without a readable transcript nothing is concluded.
    """
    transcript = conversation(adapter, hook)
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
    if not texts:
        return [], False
    printer = _printer(adapter, root, hook.transcript_path)

    def found_in(whole: bool) -> set[int]:
        outputs = transcript.outputs(adapter.output_marker, adapter.hook_outputs, whole=whole)
        return delivered(texts, outputs, printer, adapter.recorded, adapter.joins)

    found = found_in(False)
    if (not found or max(found) < len(texts) - 1) and not transcript.whole:  # the end did not answer: read it all
        found |= found_in(True)
    if not found or (transcript.compacted and 0 not in found):
        # A compaction that kept the newest turns (Gemini CLI, Qwen Code) can leave updates without their baseline.
        return list(texts), True
    return texts[max(found) + 1 :], False


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
    folder = adapter.spill_folder(hook.transcript_path)
    fitted = fit(text, adapter.output_limit, adapter.measure, Path(root), adapter.unit, folder)
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
        if line in _SAID:
            continue  # already on stderr as it happened (the log handler); the hook log still keeps it
        try:
            sys.stderr.write(f"nia: {line}\n")
        except OSError:
            break
    hook_log.append(entry.stamp())


def gave_up(host: str, seconds: float, why: str = "deadline passed") -> None:
    """Say (stderr, the hook log) that the hook ended at its deadline of ``seconds`` without an answer."""
    sys.stderr.write(f"nia: the {host} hook gave up after {seconds:g}s; nothing was added this time\n")
    hook_log.append(hook_log.Entry(host, "", "", "", outcome="timed-out", warnings=[why]).stamp())


def watchdog(host: str, seconds: float, deadline_seconds: float | None = None) -> threading.Timer:
    """End the process with status 0 after ``seconds``: a hanging plugin must not freeze the agent.

    ``deadline_seconds``: the hook's whole deadline, when ``seconds`` is what is left of it.
    """
    said = seconds if deadline_seconds is None else deadline_seconds

    def expire() -> None:
        try:
            stdio.release_captured()  # the agent's stderr again, to say why there is no answer
            gave_up(host, said)
        finally:
            end(0)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
    return timer


def answer(
    host: str, runtime: Runtime, *, data: bytes | None = None, fallback: str = "", seconds: float | None = None
) -> None:
    """One hook in this process: stdin (or ``data``) to stdout (nothing else on it), under the watchdog; always returns.

    ``fallback`` says why a resident process did not answer it (``nia hook
    log``); ``seconds`` is what is left of the hook's deadline.
    """
    from nia_core.agents import adapter

    timer = watchdog(host, deadline() if seconds is None else seconds, deadline())
    if data is None:
        try:
            data = sys.stdin.buffer.read()
        except OSError:
            data = b""
    chosen = adapter(host)
    record_logged()  # whichever handler prints warnings as they come, the summary does not repeat them
    stdio.redirect_fd()  # as every nia command: only nia's answer reaches the host, whatever a plugin prints
    # A process a plugin starts (and leaves running) must hold none of the agent's pipes, which the agent reads
    # until every copy is closed: while the boundary runs, fds 1 and 2 are a file of nia's own (a real process).
    own_fds = stdio.real_stdout_fd() != 1
    with hook_log.conversation_lock(session_of(chosen, data)), stdio.protect():
        with stdio.captured() if own_fds else contextlib.nullcontext() as output:
            result = run(chosen, data, runtime, chosen.caller(os.getppid()))
        if output is not None:
            _pass_on(output.getvalue())
        result.entry.answered_by = "in-process"
        result.entry.fallback = fallback
        emit(result)
    timer.cancel()


def _pass_on(said: bytes) -> None:
    """What the boundary wrote to fds 1 and 2, to the hook's stderr (shown, not obeyed, on a terminal)."""
    view = memoryview(written_to(2, said))
    with contextlib.suppress(OSError):
        while view:
            view = view[os.write(2, view) :]


def session_of(adapter: HostAdapter, data: bytes) -> str:
    """The attached session a hook input is for (its lock's name); ``{host}-unattached`` when it names none.

    The resident process takes the same lock: hooks of one conversation run one at a time wherever answered.
    """
    from nia_core.runtime.attached import attached_id

    try:
        return attached_id(adapter.name, adapter.parse(data).session_id)
    except (HostInputError, NiaError):
        return f"{adapter.name}-unattached"


def in_process(host: str, data: bytes, fallback: str, seconds: float) -> None:
    """``nia hook HOST`` answered in its own process (no resident process could): a runtime of its own.

    The caller ends the process through :func:`nia_core.process.exit_command`, as every nia command
    does: a plugin's thread or ``atexit`` handler never keeps the agent waiting.
    """
    from nia_core.process import begin
    from nia_core.runtime import Runtime

    guard_exit()
    guard_terminals()  # a person running the hook by hand: what the agent reads is a pipe, never wrapped
    begin()
    log_to_stderr()
    os.register_at_fork(after_in_child=_let_go_of_the_agent)
    answer(host, Runtime(), data=data, fallback=fallback, seconds=seconds)


def _let_go_of_the_agent() -> None:
    """In a process a plugin forks from the hook's: the agent's pipes become ``/dev/null``.

    The agent reads the hook's output until every copy of its pipes is closed: a forked helper that outlives
    the hook (a ``multiprocessing`` worker, a background indexer) would keep the agent waiting for it.
    """
    with contextlib.suppress(OSError):
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.close(null)
        private = stdio.real_stdout_fd()
        if private > 2:
            os.close(private)
    stdio.drop_captured()


_SAID: set[str] = set()
"""Warnings already logged (and so printed, by whichever handler prints them): :func:`emit` does not repeat them."""


def record_logged() -> None:
    """From now on, note each warning logged under ``nia`` (the handler is added once per process).

    Called as each hook starts: a resident process answers many, and each hook's report says its own warnings.
    """
    import logging

    class Said(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            _SAID.add(record.getMessage())

    _SAID.clear()
    logger = logging.getLogger("nia")
    if not any(type(h).__name__ == "Said" for h in logger.handlers):
        logger.addHandler(Said(logging.WARNING))


def log_to_stderr() -> None:
    """Records of ``nia.*`` go to stderr as ``nia: message`` (debug ones too under ``NIA_DEBUG=1``)."""
    import logging

    logger = logging.getLogger("nia")
    if not logger.handlers:
        from nia_core.tracebacks import CheckedFormatter

        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(CheckedFormatter("nia: %(message)s"))  # NIA_DEBUG's tracebacks: lines read checked
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG if os.environ.get("NIA_DEBUG") == "1" else logging.WARNING)
        logger.propagate = False
