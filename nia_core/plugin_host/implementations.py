"""A plugin's hook implementations, read without running any of its code.

pluggy's ``register(plugin)`` looks at ``dir(plugin)`` and compares plugins
with ``==``: a plugin's ``__dir__`` (a module may define one at module level,
an object's class may too) or ``__eq__`` is its own code, and one that never
returns would freeze the command after the import deadline, where nothing
bounds it. So nia never hands the plugin itself to pluggy. It reads the
plugin's hook implementations statically, as pluggy would find them
(:func:`implementations`), and registers a :class:`HookNamespace` holding
them with pluggy's own, unmodified ``PluginManager.register``: the names
pluggy sees are the namespace's, and plugins compare by identity.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

MARKER = "nia_impl"
"""The attribute ``@nia_core.hookimpl`` sets on a function (pluggy's ``PROJECT_impl``)."""


def static_names(plugin: object) -> list[str]:
    """The names ``dir(plugin)`` lists for an ordinary plugin, found without running any of its code.

    For a module these are the keys of its ``__dict__``; for an object, those
    of its own ``__dict__`` and of every class in its MRO (what
    ``object.__dir__`` lists); for a class, those of every class in its MRO.
    Read through the types' own descriptors, so no ``__dir__``,
    ``__getattr__`` or ``__getattribute__`` of the plugin's (or of its
    metaclass) runs. Only plain ``str`` names count: any other key could not
    name a hook anyway.
    """
    if type(plugin) is types.ModuleType:
        spaces: list[Any] = [vars(plugin)]  # the module type's own descriptor: no module __getattr__ runs
    else:
        klass = plugin if issubclass(type(plugin), type) else type(plugin)
        spaces = [] if klass is plugin else [_instance_dict(plugin)]
        spaces.extend(_CLASS_DICT(base) for base in _CLASS_MRO(klass))
    names: set[str] = set()
    for space in spaces:
        names.update(key for key in list(space) if type(key) is str)
    return sorted(names)


_CLASS_DICT = type.__dict__["__dict__"].__get__
_CLASS_MRO = type.__dict__["__mro__"].__get__
_ABSENT = object()


def _instance_dict(plugin: object) -> dict[str, Any]:
    """An object's own ``__dict__``, read with ``object.__getattribute__``, or ``{}``."""
    try:
        space = object.__getattribute__(plugin, "__dict__")
    except Exception:  # noqa: BLE001 - a class's own __dict__ property: no names from there
        return {}
    return space if type(space) is dict else {}


def _bound(plugin: object, name: str) -> tuple[object, Callable[..., Any]] | None:
    """``(marker holder, function as getattr would bind it)`` for a hookable attribute, else ``None``.

    Hookable, as for pluggy: plain functions, ``staticmethod``, ``classmethod``
    and bound methods; never a property or anything only ``__getattr__`` gives.
    The holder is what may carry the ``@hookimpl`` marker (the
    ``staticmethod``/``classmethod`` object when it was applied above it).
    """
    if type(plugin) is types.ModuleType:
        value = vars(plugin).get(name, _ABSENT)
        if type(value) is types.FunctionType:
            return value, value
        if value is _ABSENT:
            return None
        static: object = value
    else:
        if not issubclass(type(plugin), type):
            value = _instance_dict(plugin).get(name, _ABSENT)
            if value is _ABSENT:
                slot = inspect.getattr_static(plugin, name, None)
                if type(slot) is types.MemberDescriptorType:  # reading a slot runs no plugin code
                    try:
                        value = slot.__get__(plugin, type(plugin))
                    except AttributeError:
                        value = _ABSENT
            if value is not _ABSENT:  # what getattr hands out as it is, unbound
                if type(value) is types.MethodType:
                    return value.__func__, value
                if type(value) is types.FunctionType:
                    return value, value
                return None
        static = inspect.getattr_static(plugin, name, None)
    kind = type(static)  # type(), never isinstance(): that would ask the value's own __class__
    if kind is staticmethod:
        return static, static.__func__  # type: ignore[attr-defined]
    if kind is classmethod:
        owner = plugin if issubclass(type(plugin), type) else type(plugin)
        return static, static.__get__(owner, owner)  # type: ignore[attr-defined]
    if kind is types.MethodType:
        return static.__func__, static  # type: ignore[attr-defined,return-value]
    if kind is types.FunctionType:
        if issubclass(type(plugin), type) or type(plugin) is types.ModuleType:
            return static, static  # type: ignore[return-value]
        return static, types.MethodType(static, plugin)  # type: ignore[arg-type]
    return None


def _marker(holder: object) -> dict[str, Any] | None:
    """The ``@hookimpl`` options on ``holder`` (or on its ``__func__``), as pluggy reads them."""
    for candidate in (holder, _attribute(holder, "__func__")):
        if candidate is None:
            continue
        opts = _attribute(candidate, MARKER)
        if opts is not None:
            return opts if isinstance(opts, dict) else None
    return None


def _attribute(holder: object, name: str) -> Any:
    """An attribute of a function, method, ``staticmethod`` or ``classmethod``: plain data, no plugin code."""
    kind = type(holder)
    if (kind is staticmethod or kind is classmethod) and name == "__func__":
        return holder.__func__  # type: ignore[attr-defined]
    if kind is types.FunctionType or kind is staticmethod or kind is classmethod:
        return vars(holder).get(name)
    if kind is types.MethodType:
        return holder.__func__ if name == "__func__" else vars(holder.__func__).get(name)  # type: ignore[attr-defined]
    return None


def marker_opts(plugin: object, name: str) -> dict[str, Any] | None:
    """The ``@hookimpl`` options of attribute ``name``, or ``None`` when it is no hook implementation."""
    found = _bound(plugin, name)
    return None if found is None else _marker(found[0])


@dataclass(frozen=True)
class Implementation:
    """One hook implementation of a plugin: the attribute it is under, the hook it implements, its options."""

    attribute: str
    hook: str
    function: Callable[..., Any]
    opts: dict[str, Any]


def implementations(plugin: object) -> list[Implementation]:
    """Every hook implementation of ``plugin``, by attribute name, as pluggy's ``register`` would find them."""
    found = []
    for name in static_names(plugin):
        bound = _bound(plugin, name)
        if bound is None:
            continue
        opts = _marker(bound[0])
        if opts is None:
            continue
        found.append(Implementation(name, opts.get("specname") or name, bound[1], opts))
    return found


class HookNamespace:
    """What nia registers with pluggy in a plugin's place: one attribute per hook implementation.

    Its ``dir()`` lists those attributes only, and it compares by identity,
    so pluggy's ``register``, ``unregister`` and ``get_name`` run none of the
    plugin's code. Each attribute holds a callable made by the host (see
    :mod:`nia_core.plugin_host.calls`) that carries the implementation's
    ``@hookimpl`` options and its signature.
    """

    def __init__(self, functions: dict[str, Callable[..., Any]]) -> None:
        vars(self).update(functions)

    def __dir__(self) -> list[str]:
        return list(vars(self))

    def __repr__(self) -> str:
        return f"<HookNamespace {', '.join(vars(self))}>"
