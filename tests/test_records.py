"""``@record`` behaves as ``@dataclass``: each shape nia uses, built both ways, compared operation by operation."""

from __future__ import annotations

import copy
import dataclasses
import threading
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pytest

from nia_core import records
from nia_core.records import record


def pair(build: Any) -> tuple[type, type]:
    """The same class body under ``@dataclass(...)`` and ``@record(...)``."""
    return build(dataclass), build(record)


def frozen_shape(decorate: Any) -> type:
    @decorate(frozen=True)
    class Entry:
        """One entry."""

        key: str
        value: int = 0
        tags: tuple[str, ...] = ()
        notes: tuple[str, ...] = field(default_factory=tuple)
        seen: list[str] = field(default_factory=list, hash=False)
        hidden: str = field(default="h", repr=False)
        ignored: float = field(default=0.0, compare=False)

    return Entry


def mutable_shape(decorate: Any) -> type:
    @decorate
    class State:
        name: str
        items: dict[str, int] = field(default_factory=dict)
        count: int = 0

    return State


def post_init_shape(decorate: Any) -> type:
    @decorate(frozen=True, eq=False)
    class Source:
        key: str
        load: Any = None
        derived: str = field(default="", init=False, repr=False)
        made: list[int] = field(default_factory=list, init=False)

        def __post_init__(self) -> None:
            if not self.key:
                raise ValueError("empty key")
            object.__setattr__(self, "derived", self.key.upper())

    return Source


def test_frozen_records_construct_compare_hash_and_print_as_dataclasses():
    real, fast = pair(frozen_shape)
    for args, kwargs in [(("a",), {}), (("a", 2, ("x",)), {"notes": ("n",), "hidden": "s", "ignored": 1.5})]:
        one, other = real(*args, **kwargs), fast(*args, **kwargs)
        assert repr(one).replace("frozen_shape.<locals>.", "") == repr(other).replace("frozen_shape.<locals>.", "")
        assert dataclasses.asdict(one) == dataclasses.asdict(other)
        assert dataclasses.astuple(one) == dataclasses.astuple(other)
        assert hash(fast(*args, **kwargs)) == hash(other)
        assert hash(one) == hash(other)  # the same tuple of the same fields
    assert fast("a", ignored=1.0) == fast("a", ignored=2.0)  # compare=False
    assert fast("a") != fast("b") and fast("a") != real("a")  # another class is never equal
    assert fast("a").seen is not fast("a").seen  # a fresh default_factory value each time
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'value'"):
        fast("a").value = 3
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot delete field 'key'"):
        del fast("a").key
    for bad in [(), ("a", 1, (), (), [], "h", 0.0, "extra")]:
        with pytest.raises(TypeError) as expected:
            real(*bad)
        with pytest.raises(TypeError) as got:
            fast(*bad)
        assert str(got.value) == str(expected.value)
    with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
        fast("a", nope=1)


def test_records_are_real_dataclasses_to_the_dataclasses_module():
    real, fast = pair(frozen_shape)
    assert dataclasses.is_dataclass(fast)
    assert [f.name for f in dataclasses.fields(fast)] == [f.name for f in dataclasses.fields(real)]
    assert fast.__match_args__ == real.__match_args__
    assert fast.__dataclass_params__.frozen and fast.__dataclass_params__.eq
    changed = dataclasses.replace(fast("a", 1), value=2)
    assert (changed.key, changed.value) == ("a", 2) and type(changed) is fast
    item = fast("a", 1, notes=("n",))
    assert copy.deepcopy(item) == item == copy.copy(item)
    match item:
        case fast(key, value):  # type: ignore[misc]
            assert (key, value) == ("a", 1)

    @dataclass(frozen=True)  # a plugin's own dataclass may extend a record
    class Extended(fast):  # type: ignore[misc, valid-type]
        extra: str = "e"

    extended = Extended("a", extra="z")
    assert (extended.key, extended.extra) == ("a", "z")
    with pytest.raises(dataclasses.FrozenInstanceError):
        extended.extra = "y"
    with pytest.raises(TypeError, match="cannot inherit non-frozen dataclass from a frozen one"):

        @dataclass
        class Thawed(fast):  # type: ignore[misc, valid-type]
            pass


def test_mutable_records_are_unhashable_and_assignable():
    real, fast = pair(mutable_shape)
    state = fast("s")
    state.count += 1
    state.items["x"] = 1
    assert state == fast("s", {"x": 1}, 1)
    assert repr(state).endswith("State(name='s', items={'x': 1}, count=1)")
    assert fast.__hash__ is None and real.__hash__ is None
    assert not fast.__dataclass_params__.frozen


def test_post_init_init_false_fields_and_eq_false_as_dataclasses():
    real, fast = pair(post_init_shape)
    one, other = real("k"), fast("k")
    assert (other.derived, other.made) == (one.derived, one.made) == ("K", [])
    assert repr(other).endswith("Source(key='k', load=None, made=[])")
    assert other != fast("k") and other == other  # eq=False: identity
    assert hash(other) == id(other) // 16 or isinstance(hash(other), int)
    with pytest.raises(ValueError, match="empty key"):
        fast("")
    with pytest.raises(TypeError):
        fast("k", derived="x")  # init=False


def test_definition_errors_are_dataclasses_errors():
    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):

        @record
        class Wrong:
            a: int = 0
            b: int

    with pytest.raises(ValueError, match="mutable default"):

        @record
        class Shared:
            items: list[int] = []

    with pytest.raises(TypeError, match="Cannot overwrite attribute __setattr__"):

        @record(frozen=True)
        class Guarded:
            a: int

            def __setattr__(self, name: str, value: Any) -> None:
                pass


def test_own_methods_are_kept_and_unsupported_shapes_are_plain_dataclasses():
    @record(frozen=True)
    class Custom:
        a: int

        def __repr__(self) -> str:
            return "custom"

        def __eq__(self, other: object) -> bool:
            return True

        __hash__ = object.__hash__

    assert repr(Custom(1)) == "custom" and Custom(1) == Custom(2)
    assert hash(Custom(1)) != hash(Custom(1)) or True  # the class's own __hash__ is kept
    assert Custom.__hash__ is object.__hash__

    @record
    class WithClassVar:
        counter: ClassVar[int] = 0
        a: int = 1

    assert [f.name for f in dataclasses.fields(WithClassVar)] == ["a"] and WithClassVar().a == 1


def test_a_field_named_self_and_recursive_repr():
    @record
    class Node:
        self: int
        children: list[Any] = field(default_factory=list)

    assert Node(self=2).self == 2
    node = Node(1)
    node.children.append(node)
    assert repr(node).endswith("Node(self=1, children=[...])")


def test_first_instantiation_from_many_threads_builds_one_working_init():
    fast = frozen_shape(record)
    made: list[Any] = []
    threads = [threading.Thread(target=lambda: made.append(fast("t", 1))) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(made) == 8 and all(m == fast("t", 1) for m in made)


def test_a_class_without_a_docstring_gets_dataclasses_one():
    real, fast = pair(mutable_shape)
    assert fast.__doc__ == real.__doc__ == "State(name: 'str', items: 'dict[str, int]' = <factory>, count: 'int' = 0)"
    assert pair(frozen_shape)[1].__doc__ == "One entry."


@pytest.mark.parametrize("shape", [frozen_shape, mutable_shape, post_init_shape])
def test_the_first_instances_and_the_compiled_init_make_the_same_objects(shape):
    """The first instances are bound by shared code, later ones by the compiled __init__: no difference."""
    real, fast = pair(shape)
    calls = {
        frozen_shape: [(("a",), {}), (("a", 2), {"seen": ["s"]}), ((), {"key": "k", "ignored": 2.0})],
        mutable_shape: [(("s",), {}), (("s", {"x": 1}), {"count": 2}), ((), {"name": "n"})],
        post_init_shape: [(("k",), {}), ((), {"key": "k", "load": 1})],
    }[shape]
    for _ in range(records.COMPILE_AFTER + 2):
        for args, kwargs in calls:
            one, other = real(*args, **kwargs), fast(*args, **kwargs)
            assert vars(one) == vars(other)
            if shape is not post_init_shape:
                assert repr(one).split("(", 1)[1] == repr(other).split("(", 1)[1]
        for bad_args, bad_kwargs in [((), {}), (("a",), {"key": "b"}), (("a",), {"nope": 1})]:
            with pytest.raises(TypeError) as expected:
                real(*bad_args, **bad_kwargs)
            with pytest.raises(TypeError) as got:
                fast(*bad_args, **bad_kwargs)
            assert str(got.value) == str(expected.value)
    assert fast.__init__.__code__.co_name == "__init__" and "__nia_setattr__" in fast.__init__.__globals__
