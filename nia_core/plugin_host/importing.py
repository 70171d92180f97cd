"""Importing a plugin under a deadline, with every exception it raises isolated.

A plugin's import runs arbitrary code: ``while True: pass`` at module level
would freeze every ``nia`` command, ``--help`` included. So each import runs
as plugin code under a deadline (:mod:`nia_core.deadline`) of
:func:`import_deadline` seconds. Past it the import is abandoned (it keeps
running, and keeps its module's import lock, until the process ends), the
plugin is reported broken, and everything else goes on. Whatever the import
raises comes back as a :class:`~nia_core.deadline.PluginRaised`, worded on
the worker.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from nia_core.deadline import Ahead, Late, PluginRaised, call, describe

THREAD = "nia-plugin-import"
IMPORT_TIMEOUT_ENV = "NIA_IMPORT_TIMEOUT"
DEFAULT_IMPORT_TIMEOUT = 5.0
log = logging.getLogger("nia.host")

__all__ = ["ImportAhead", "ImportDeadline", "PluginRaised", "describe", "import_deadline", "import_plugin"]


class ImportDeadline(Exception):
    """The import ran past its deadline and was abandoned."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"import did not finish in {seconds:g} s")
        self.seconds = seconds


def import_deadline(environ: Mapping[str, str] | None = None) -> float:
    """Seconds a plugin's import may take: ``NIA_IMPORT_TIMEOUT``, else 5."""
    env = os.environ if environ is None else environ
    raw = env.get(IMPORT_TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_IMPORT_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0 or value == float("inf"):
        log.warning(
            "%s=%r is not a positive number of seconds; using %g", IMPORT_TIMEOUT_ENV, raw, DEFAULT_IMPORT_TIMEOUT
        )
        return DEFAULT_IMPORT_TIMEOUT
    return value


def import_plugin(load: Callable[[], Any], deadline: float) -> Any:
    """``load()`` as plugin code; raises :class:`ImportDeadline` past ``deadline`` seconds.

    Whatever the import raised comes back as :class:`PluginRaised`, worded on the worker.
    """
    try:
        return call(load, deadline, thread=THREAD)
    except Late:
        raise ImportDeadline(deadline) from None


class ImportAhead:
    """Imports ``loads`` in turn on one worker thread, ahead of the caller, who takes each outcome in order.

    With one import at a time, every plugin costs two thread switches (to the
    worker and back), more than a small plugin's import on a busy machine.
    Here the worker goes from one import to the next while the caller
    registers the plugins already imported; each import keeps its own
    deadline (see :class:`nia_core.deadline.Ahead`).
    """

    def __init__(self, loads: Sequence[Callable[[], Any]], deadline: float) -> None:
        self._ahead = Ahead(loads, deadline, thread=THREAD)
        self._deadline = deadline

    def take(self, index: int) -> Callable[[], Any]:
        """A ``load`` that answers as :func:`import_plugin` would for ``loads[index]``: the module, or the error."""
        return lambda: self._result(index)

    def _result(self, index: int) -> Any:
        try:
            return self._ahead.take(index)
        except Late:
            raise ImportDeadline(self._deadline) from None

    def close(self) -> None:
        """No further imports: the worker ends after the one it is in."""
        self._ahead.close()
