"""``@record``: a dataclass whose generated methods cost nothing until they are used.

Python 3.11's ``@dataclass`` compiles each generated method from source when
the class is defined: about 0.5 ms for a frozen class (``__init__``,
``__repr__``, ``__eq__``, ``__hash__``, ``__setattr__``, ``__delattr__``). An
agent hook is a fresh process at every prompt and defines some seventy such
classes, most of which it never instantiates, so this alone was a quarter of
its time. ``@record`` makes a real dataclass (``dataclasses.fields``,
``replace``, ``asdict``, ``is_dataclass`` and ``__match_args__`` work as for any
other, and ``__dataclass_params__`` says ``frozen``/``eq`` truthfully) with the
same behaviour, but compiles ``__init__`` at the first instantiation and serves
``__repr__``, ``__eq__``, ``__hash__`` and the frozen guards from shared code.

Supported: ``frozen`` and ``eq``, fields with defaults, ``default_factory``,
``init=False``, ``repr=False``, ``compare=False``, ``hash=``, ``__post_init__``.
Anything else (a dataclass base, ``ClassVar``/``InitVar`` fields, ``__slots__``)
is handed to ``@dataclass`` itself, so a record is never subtly different.

Internal: not part of nia's public API; it may change in any release (docs/plugins.md, "What is public").
"""

from __future__ import annotations

import dataclasses
import inspect  # already imported by dataclasses
import threading
from collections.abc import Callable
from operator import attrgetter
from typing import Any, TypeVar, dataclass_transform, overload

T = TypeVar("T", bound=type)

MISSING = dataclasses.MISSING
_HAS_FACTORY = object()
"""The default of an ``__init__`` parameter whose field has a ``default_factory``."""


def _say_params(cls: type, frozen: bool, eq: bool) -> None:
    """``__dataclass_params__`` as ``@dataclass(frozen=..., eq=...)`` sets it (a subclass checks ``frozen``)."""
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    try:
        params.init, params.repr, params.eq, params.frozen = True, True, eq, frozen
    except AttributeError:  # read-only in some Python: take one from a real dataclass
        template: Any = dataclasses.dataclass(type("_Template", (), {}), frozen=frozen, eq=eq)
        cls.__dataclass_params__ = template.__dataclass_params__  # type: ignore[attr-defined]


def _unsupported(cls: type) -> bool:
    if "__slots__" in cls.__dict__ or any(dataclasses.is_dataclass(base) for base in cls.__mro__[1:]):
        return True
    for annotation in inspect.get_annotations(cls).values():
        text = annotation if isinstance(annotation, str) else repr(annotation)
        if "ClassVar" in text or "InitVar" in text:
            return True
    return False


@overload
def record(cls: T, /) -> T: ...


@overload
def record(*, frozen: bool = False, eq: bool = True) -> Callable[[T], T]: ...


@dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
def record(cls: T | None = None, /, *, frozen: bool = False, eq: bool = True) -> T | Callable[[T], T]:
    """``@dataclass``, ``@dataclass(frozen=True)``, ``@dataclass(frozen=True, eq=False)``: the same, built lazily."""

    def wrap(cls: T) -> T:
        if _unsupported(cls):
            return dataclasses.dataclass(cls, frozen=frozen, eq=eq)  # type: ignore[return-value]
        return _process(cls, frozen, eq)

    return wrap if cls is None else wrap(cls)


def _process(cls: T, frozen: bool, eq: bool) -> T:
    own = dict(cls.__dict__)  # what the class body defined, before dataclass adds anything
    if not own.get("__doc__"):  # dataclass would ask inspect.signature (~1 ms the first time); said below
        cls.__doc__ = "-"
    dataclasses.dataclass(cls, init=False, repr=False, eq=False)  # fields, defaults checked, __match_args__
    _say_params(cls, frozen, eq)
    fields = dataclasses.fields(cls)
    seen_default = False
    for f in fields:  # what @dataclass reports when it builds __init__
        if not f.init:
            continue
        has_default = f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        if seen_default and not has_default:
            raise TypeError(f"non-default argument {f.name!r} follows default argument")
        seen_default = seen_default or has_default
    if not own.get("__doc__"):
        cls.__doc__ = f"{cls.__name__}({', '.join(_parameter(f) for f in fields if f.init)})"
    if "__init__" not in own:
        cls.__init__ = _lazy_init(cls, frozen)  # type: ignore[misc]
    if "__repr__" not in own:
        cls.__repr__ = _repr_for(cls, [f.name for f in fields if f.repr])  # type: ignore[assignment]
    compared = [f.name for f in fields if f.compare]
    if eq and "__eq__" not in own:
        cls.__eq__ = _eq_for(cls, compared)  # type: ignore[method-assign, assignment]
    explicit_hash = "__hash__" in own and not (own["__hash__"] is None and "__eq__" in own)
    if eq and not explicit_hash:
        if frozen:
            hashed = [f.name for f in fields if (f.compare if f.hash is None else f.hash)]
            cls.__hash__ = _hash_for(hashed)  # type: ignore[method-assign, assignment]
        else:
            cls.__hash__ = None  # type: ignore[assignment]
    if frozen:
        for name in ("__setattr__", "__delattr__"):
            if name in own:
                raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")
        names = frozenset(f.name for f in fields)
        cls.__setattr__, cls.__delattr__ = _frozen_guards(cls, names)  # type: ignore[method-assign, assignment]
    return cls


def _parameter(f: dataclasses.Field[Any]) -> str:
    """As ``inspect.signature`` shows the parameter in the docstring ``@dataclass`` writes."""
    text = f"{f.name}: {f.type!r}" if isinstance(f.type, str) else f"{f.name}: {getattr(f.type, '__name__', f.type)}"
    if f.default_factory is not dataclasses.MISSING:
        return text + " = <factory>"
    return text if f.default is dataclasses.MISSING else f"{text} = {f.default!r}"


COMPILE_AFTER = 16
"""Instances made by the shared ``__init__`` before the class gets a compiled one (most never need it)."""


def _lazy_init(cls: type, frozen: bool) -> Callable[..., None]:
    """Binds the arguments itself for the first :data:`COMPILE_AFTER` instances, then compiles ``__init__``.

    Only the plain case is bound here: a missing, extra or repeated argument
    goes to the compiled ``__init__``, so its error is exactly ``@dataclass``'s.
    """
    fields = dataclasses.fields(cls)
    names = [f.name for f in fields if f.init]
    known = frozenset(names)
    assign: Callable[[Any, str, Any], None] = object.__setattr__ if frozen else setattr
    post_init = getattr(cls, "__post_init__", None) is not None
    made = 0

    def compiled(self: Any, /, *args: Any, **kwargs: Any) -> None:
        built = _build_init(cls, frozen)
        cls.__init__ = built  # type: ignore[misc]
        built(self, *args, **kwargs)

    def __init__(self: Any, /, *args: Any, **kwargs: Any) -> None:  # positional-only: a field may be named self
        nonlocal made
        if made >= COMPILE_AFTER or len(args) > len(names):
            return compiled(self, *args, **kwargs)
        given = dict(zip(names, args, strict=False))
        for name, value in kwargs.items():
            if name in given or name not in known:
                return compiled(self, *args, **kwargs)
            given[name] = value
        for f in fields:
            if f.init and f.name not in given and f.default is MISSING and f.default_factory is MISSING:
                return compiled(self, *args, **kwargs)
        made += 1
        for f in fields:  # as the compiled __init__ does, field by field in order
            if f.init and f.name in given:
                assign(self, f.name, given[f.name])
            elif f.default_factory is not MISSING:
                assign(self, f.name, f.default_factory())
            elif f.init:
                assign(self, f.name, f.default)
        if post_init:
            self.__post_init__()
        return None

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    return __init__


def _build_init(cls: type, frozen: bool) -> Callable[..., None]:
    """The ``__init__`` ``@dataclass`` would have compiled, compiled now (once per class)."""
    fields = dataclasses.fields(cls)
    names = {f.name for f in fields}
    this = "__dataclass_self__" if "self" in names else "self"
    namespace: dict[str, Any] = {"__nia_has_factory__": _HAS_FACTORY, "__nia_setattr__": object.__setattr__}
    params = [this]
    body = []
    for number, f in enumerate(fields):
        default = f"__nia_default_{number}__"
        if f.default_factory is not dataclasses.MISSING:
            namespace[default] = f.default_factory
            if f.init:
                params.append(f"{f.name}=__nia_has_factory__")
                value = f"{default}() if {f.name} is __nia_has_factory__ else {f.name}"
            else:
                value = f"{default}()"
        elif f.init:
            if f.default is not dataclasses.MISSING:
                namespace[default] = f.default
                params.append(f"{f.name}={default}")
            else:
                params.append(f.name)
            value = f.name
        else:
            continue  # init=False with a plain default: the class attribute holds it, as with @dataclass
        body.append(f"__nia_setattr__({this}, {f.name!r}, {value})" if frozen else f"{this}.{f.name} = {value}")
    if hasattr(cls, "__post_init__"):
        body.append(f"{this}.__post_init__()")
    source = f"def __init__({', '.join(params)}):\n" + "".join(f"    {line}\n" for line in body or ["pass"])
    exec(source, namespace)  # our own text, built from field names (identifiers)
    init: Callable[..., None] = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__annotations__ = {f.name: f.type for f in fields if f.init} | {"return": None}
    return init


_repr_running = threading.local()


def _repr_for(cls: type, names: list[str]) -> Callable[[Any], str]:
    def __repr__(self: Any) -> str:
        running = _repr_running.__dict__.setdefault("ids", set())
        if id(self) in running:  # as dataclasses' recursive_repr
            return "..."
        running.add(id(self))
        try:
            inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        finally:
            running.discard(id(self))
        return f"{self.__class__.__qualname__}({inner})"

    __repr__.__qualname__ = f"{cls.__qualname__}.__repr__"
    return __repr__


def _values(names: list[str]) -> Callable[[Any], tuple[Any, ...]]:
    if not names:
        return lambda _obj: ()
    if len(names) == 1:
        get = attrgetter(names[0])
        return lambda obj: (get(obj),)
    return attrgetter(*names)


def _eq_for(cls: type, names: list[str]) -> Callable[[Any, Any], Any]:
    values = _values(names)

    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented

    __eq__.__qualname__ = f"{cls.__qualname__}.__eq__"
    return __eq__


def _hash_for(names: list[str]) -> Callable[[Any], int]:
    values = _values(names)

    def __hash__(self: Any) -> int:
        return hash(values(self))

    return __hash__


def _frozen_guards(cls: type, names: frozenset[str]) -> tuple[Callable[..., None], Callable[..., None]]:
    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)  # type: ignore[arg-type]

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)  # type: ignore[arg-type]

    return __setattr__, __delattr__


__all__ = ["record"]
