"""Calling plugin hooks through pluggy, with each implementation isolated from the others.

nia calls every hook the way pytest does, through ``pm.hook.NAME(...)``, so
pluggy decides the order (``tryfirst``, plain, ``trylast``; the plugin
registered last first) and a ``firstresult`` hook stops where pluggy stops
it. What pluggy calls is not the plugin's function itself but a guard made by
:func:`guarded`, registered in its place (see
:mod:`nia_core.plugin_host.implementations`). Inside a :class:`HookCall`, the
guard runs the plugin's function and keeps what it answered or raised for
that call, so one plugin that raises never stops the others and is named in
the report. A call made on the command's thread runs each implementation
as plugin code under a deadline (:mod:`nia_core.deadline`): one that loops is
abandoned and reported like one that raises. Outside a :class:`HookCall` (a
test calling ``pm.hook.NAME(...)`` itself), the guard is the plugin's
function: pluggy's semantics, exceptions included.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from nia_core.deadline import Late, PluginRaised, call, worded
from nia_core.plugin_host.implementations import MARKER
from nia_core.plugin_host.plugin import HookProblem
from nia_core.process import is_user_interrupt


class PerPlugin:
    """A hook argument each implementation gets a value of its own for: ``value_for(plugin name)``.

    Its ``[plugins.NAME]`` table as ``config``, a command group of its own as ``cli``.
    """

    __slots__ = ("value_for",)

    def __init__(self, value_for: Callable[[str], Any]) -> None:
        self.value_for = value_for


class HookCall:
    """One call of a hook into every plugin, as a ``with`` block: what each plugin answered, and who raised.

    ``skip(plugin)`` says which plugins are left out of it (the broken ones),
    ``only`` keeps one plugin, and ``every`` makes each guard answer ``None``
    to pluggy, so a ``firstresult`` hook asks every implementation (a check).
    ``seconds`` is each implementation's deadline; ``None`` runs it on the
    caller's thread, for a caller that is already plugin code under a
    deadline of its own (a registry producer).
    """

    __slots__ = ("_token", "answers", "every", "hook", "only", "problems", "seconds", "skip")

    def __init__(
        self,
        hook: str,
        *,
        skip: Callable[[str], bool] | None = None,
        only: str | None = None,
        every: bool = False,
        seconds: float | None = None,
    ) -> None:
        self.hook = hook
        self.seconds = seconds
        self.skip = skip
        self.only = only
        self.every = every
        self.answers: list[tuple[str, Any]] = []
        self.problems: list[HookProblem] = []
        self._token: Any = None

    def __enter__(self) -> HookCall:
        self._token = _current.set(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _current.reset(self._token)

    def run(self, plugin: str, function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Call one plugin's implementation; its answer goes to pluggy, what it raised to :attr:`problems`."""
        if (self.only is not None and plugin != self.only) or (self.skip is not None and self.skip(plugin)):
            return None
        args = tuple(arg.value_for(plugin) if type(arg) is PerPlugin else arg for arg in args)
        if kwargs:
            kwargs = {k: v.value_for(plugin) if type(v) is PerPlugin else v for k, v in kwargs.items()}
        if self.seconds is None:
            try:
                result = function(*args, **kwargs)  # on a worker: its prints go to stderr
            except BaseException as exc:
                if is_user_interrupt(exc):
                    raise
                text = worded(exc)
                self.problems.append(HookProblem(plugin, self.hook, f"raised {text}", exc, text))
                return None
        else:
            try:
                result = call(functools.partial(function, *args, **kwargs), self.seconds)
            except PluginRaised as exc:  # worded on the worker: the plugin's __str__ does not run here
                self.problems.append(HookProblem(plugin, self.hook, f"raised {exc.text}", exc.original, exc.text))
                return None
            except Late as exc:
                self.problems.append(HookProblem(plugin, self.hook, str(exc)))
                return None
        self.answers.append((plugin, result))
        return None if self.every else result


_current: ContextVar[HookCall | None] = ContextVar("nia_hook_call", default=None)


def guarded(plugin: str, function: Callable[..., Any], opts: dict[str, Any]) -> Callable[..., Any]:
    """What pluggy registers for ``plugin``'s ``function``: the same signature (pluggy reads the argument
    names through ``__wrapped__``) and ``@hookimpl`` options, run through the current :class:`HookCall`."""

    def guard(*args: Any, **kwargs: Any) -> Any:
        call = _current.get()
        if call is None:
            return function(*args, **kwargs)
        return call.run(plugin, function, args, kwargs)

    functools.update_wrapper(guard, function)
    vars(guard)[MARKER] = opts
    return guard
