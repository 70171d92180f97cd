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
        if isinstance(handler, _StderrHandler):
            logger.removeHandler(handler)
    handler = _StderrHandler()
    if debug:
        from nia_core.tracebacks import CheckedFormatter, print_uncaught

        handler.setFormatter(CheckedFormatter("%(levelname)s %(name)s: %(message)s"))
        sys.excepthook = print_uncaught  # what --debug lets through is printed with its lines read checked too
    else:
        handler.setFormatter(WarningFormatter())
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG if debug else logging.INFO if verbose else logging.WARNING)
    logger.propagate = False


class _StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is *now*: click's test runner swaps it per invocation."""

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)


class WarningCounter(logging.Handler):
    """Counts warnings logged (by nia or by a plugin) while the handler is attached."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0
        self.alone = False

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1
        if record.name == "nia" or record.name.startswith("nia."):
            return  # the nia logger's own handler printed it
        if self.alone and logging.lastResort is not None and record.levelno >= logging.lastResort.level:
            logging.lastResort.handle(record)  # as without this handler: the root had none, so it printed

    def __enter__(self) -> WarningCounter:
        logging.getLogger("nia").addHandler(self)
        self.alone = not logging.getLogger().handlers
        logging.getLogger().addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        logging.getLogger("nia").removeHandler(self)
        logging.getLogger().removeHandler(self)
