"""The public value types are plain dataclasses: what ``dataclasses``, ``inspect`` and a plugin's subclass expect."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

import nia_core
from nia_core import ContextSource, Message, Reply, Usage


def test_public_types_report_their_real_signature_from_the_first_instance():
    """Editors and ``help()`` read the signature: it names the fields, not ``*args, **kwargs``."""
    assert list(inspect.signature(ContextSource).parameters)[:2] == ["key", "load"]
    assert list(inspect.signature(Message).parameters)[:2] == ["kind", "text"]
    assert "text" in inspect.signature(Reply).parameters
    assert repr(Message("user", "hi")).startswith("Message(kind='user', text='hi'")


def test_every_public_class_built_as_a_dataclass_is_one_to_the_dataclasses_module():
    public = [getattr(nia_core, name) for name in nia_core.__all__]
    built = [cls for cls in public if isinstance(cls, type) and "__dataclass_fields__" in vars(cls)]
    assert {ContextSource, Message, Reply, Usage} <= set(built)
    for cls in built:
        assert dataclasses.is_dataclass(cls) and dataclasses.fields(cls), cls


def test_frozen_public_types_refuse_assignment_and_replace_makes_a_copy():
    message = Message("user", "hi")
    with pytest.raises(dataclasses.FrozenInstanceError):
        message.text = "changed"  # type: ignore[misc]
    changed = dataclasses.replace(message, text="bye")
    assert (message.text, changed.text, type(changed)) == ("hi", "bye", Message)
    assert changed == Message("user", "bye") and hash(changed) == hash(Message("user", "bye"))


def test_a_plugins_own_frozen_dataclass_may_extend_a_public_type():
    @dataclasses.dataclass(frozen=True)
    class Tagged(Message):
        tag: str = "t"

    tagged = Tagged("user", "hi", tag="x")
    assert (tagged.kind, tagged.tag) == ("user", "x")
    with pytest.raises(TypeError, match="cannot inherit non-frozen dataclass from a frozen one"):

        @dataclasses.dataclass
        class Thawed(Message):
            pass
