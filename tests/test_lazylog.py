"""nia_core.lazylog: a logger that imports logging on first use behaves as ``logging.getLogger(name)``."""

from __future__ import annotations

import logging

from nia_core import lazylog


def emit_both(log) -> None:
    log.debug("debug %s", "one")
    log.warning("warning %s", "two")


def test_records_are_the_real_loggers_and_name_the_caller(caplog):
    caplog.set_level(logging.DEBUG, logger="nia.lazytest")
    emit_both(lazylog.lazy_logger("nia.lazytest"))
    lazy = [(r.name, r.levelno, r.getMessage(), r.funcName, r.pathname) for r in caplog.records]
    caplog.clear()
    emit_both(logging.getLogger("nia.lazytest"))
    real = [(r.name, r.levelno, r.getMessage(), r.funcName, r.pathname) for r in caplog.records]
    assert lazy == real and [m for _n, _l, m, _f, _p in lazy] == ["debug one", "warning two"]
    assert {f for _n, _l, _m, f, _p in lazy} == {"emit_both"} and all(p == __file__ for *_x, p in lazy)


def test_levels_and_attributes_come_from_the_real_logger(caplog):
    log = lazylog.lazy_logger("nia.lazytest2")
    caplog.set_level(logging.WARNING, logger="nia.lazytest2")
    assert not log.isEnabledFor(lazylog.DEBUG) and log.isEnabledFor(lazylog.WARNING)
    caplog.set_level(logging.DEBUG, logger="nia.lazytest2")
    assert log.isEnabledFor(lazylog.DEBUG) and log.getEffectiveLevel() == logging.DEBUG
    assert log.name == "nia.lazytest2" and log.parent is logging.getLogger("nia")
