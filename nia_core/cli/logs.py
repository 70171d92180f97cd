"""Logging for the CLI: warnings as one ``Warning: ...`` line on stderr, details with ``--debug``."""

from __future__ import annotations

import logging
import sys


class WarningFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        prefix = "Warning" if record.levelno >= logging.WARNING else record.levelname.title()
        return f"{prefix}: {record.getMessage()}"


def configure_logging(debug: bool, verbose: bool = False) -> None:
    logger = logging.getLogger("nia")
    for handler in list(logger.handlers):
        if getattr(handler, "_nia", False):
            logger.removeHandler(handler)
    handler = _StderrHandler()
    handler._nia = True  # type: ignore[attr-defined]
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s") if debug else WarningFormatter())
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG if debug else logging.INFO if verbose else logging.WARNING)
    logger.propagate = False


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is *now*: click's test runner swaps it per invocation."""

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)
