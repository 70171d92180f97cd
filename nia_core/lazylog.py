"""Loggers that import :mod:`logging` on first use, and set-up that waits for that import.

``import logging`` costs an agent hook ~3 ms (it brings :mod:`traceback`,
:mod:`string`, :mod:`atexit`), and an unchanged prompt logs nothing. A module
on the hook's path says ``log = lazy_logger("nia.x")``: the object stands for
``logging.getLogger("nia.x")``, imports :mod:`logging` when a method is first
looked up, then hands every attribute over to the real logger, so records,
levels, handlers and ``caplog`` behave exactly as with the real one (the
caller's frame calls the real method, so file and line are the caller's).

:func:`when_imported` runs a set-up (the hook door's ``nia:`` handler) as soon
as anyone imports :mod:`logging` -- a nia module, a plugin, the standard
library -- so no record can be emitted before the handler is in place.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

DEBUG = 10
WARNING = 30
"""``logging``'s level numbers, without importing it."""


class LazyLogger:
    """``logging.getLogger(name)``, fetched when first used."""

    __slots__ = ("_logger", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self._logger: Any = None

    def _real(self) -> Any:
        logger = self._logger
        if logger is None:
            import logging

            logger = self._logger = logging.getLogger(self.name)
        return logger

    def isEnabledFor(self, level: int) -> bool:
        """As the real logger's; before anything imported :mod:`logging`, nothing configured a level.

        Then every logger's effective level is the root's default, ``WARNING``.
        A set-up waiting in :func:`when_imported` must not lower it (the hook
        door configures ``--debug``/``NIA_DEBUG`` at once).
        """
        if self._logger is None and "logging" not in sys.modules:
            return level >= WARNING
        return bool(self._real().isEnabledFor(level))

    def debug(self, message: object, *args: object, **kwargs: Any) -> None:
        """As the real logger's; a debug line before :mod:`logging` is imported is dropped, as the real one would."""
        if self._logger is None and "logging" not in sys.modules:
            return
        kwargs["stacklevel"] = kwargs.get("stacklevel", 1) + 1  # the record names our caller, not this method
        self._real().debug(message, *args, **kwargs)

    def info(self, message: object, *args: object, **kwargs: Any) -> None:
        """As :meth:`debug`, for ``INFO`` (below the default ``WARNING`` too)."""
        if self._logger is None and "logging" not in sys.modules:
            return
        kwargs["stacklevel"] = kwargs.get("stacklevel", 1) + 1
        self._real().info(message, *args, **kwargs)

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self._real(), attribute)

    def __repr__(self) -> str:
        return f"<LazyLogger {self.name}>"


def lazy_logger(name: str) -> Any:
    """A logger for ``name`` that costs nothing until it is used (typed ``Any``, as a ``logging.Logger`` stand-in)."""
    return LazyLogger(name)


class _Loader:
    """Executes ``logging`` with its own loader, then runs the waiting set-ups."""

    def __init__(self, inner: Any, watch: _Watch) -> None:
        self.inner, self.watch = inner, watch

    def create_module(self, spec: Any) -> Any:
        return self.inner.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self.inner.exec_module(module)
        module.__loader__ = module.__spec__.loader = self.inner
        self.watch.done()


class _Watch:
    """A ``sys.meta_path`` finder that only notices ``import logging``; the import itself is the usual one."""

    def __init__(self) -> None:
        self.callbacks: list[Callable[[], None]] = []

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name != "logging":
            return None
        for finder in list(sys.meta_path):
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Loader(spec.loader, self)
                return spec
        return None

    def done(self) -> None:
        global _watch
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        if _watch is self:
            _watch = None
        callbacks, self.callbacks = self.callbacks, []
        for callback in callbacks:
            callback()


_watch: _Watch | None = None


def when_imported(callback: Callable[[], None]) -> None:
    """Run ``callback`` once :mod:`logging` is imported: now if it is, else right after its import."""
    global _watch
    if "logging" in sys.modules:
        callback()
        return
    if _watch is None:
        _watch = _Watch()
        sys.meta_path.insert(0, _watch)
    _watch.callbacks.append(callback)


__all__ = ["DEBUG", "WARNING", "LazyLogger", "lazy_logger", "when_imported"]
