import dataclasses

import pytest

from nia_core import JSON, ContextSource, DataclassCodec
from nia_core.context import SystemContext, canonical_json, validate_key
from nia_core.errors import DuplicateSourceKey, InvalidSourceKey


@pytest.mark.parametrize("key", ["nia/date", "acme/jira", "a1/b-c_d.e", "acme/jira/issues"])
def test_valid_keys(key):
    assert validate_key(key) == key


@pytest.mark.parametrize(
    "key", ["", "date", "Acme/jira", "acme/Jira", "/jira", "acme/", "acme//x", "acme jira/x", "acme/ji ra", 3, None]
)
def test_invalid_keys_are_rejected_with_the_key_in_the_message(key):
    with pytest.raises(InvalidSourceKey) as info:
        ContextSource(key=key, load=lambda: 1, baseline=str)
    assert repr(key) in str(info.value)
    assert "owner/name" in str(info.value)


def test_renderers_must_be_callable():
    with pytest.raises(TypeError, match="acme/x"):
        ContextSource(key="acme/x", load=lambda: 1, baseline="not callable")  # type: ignore[arg-type]


def test_canonical_json_sorts_keys_whatever_the_dict_order():
    assert canonical_json({"b": 1, "a": [1, {"d": 2, "c": 3}]}) == canonical_json({"a": [1, {"c": 3, "d": 2}], "b": 1})
    assert canonical_json({"b": 1, "a": 2}) == '{"a":2,"b":1}'


def test_default_codec_is_plain_json():
    source = ContextSource(key="acme/x", load=lambda: 1, baseline=str)
    assert source.codec is JSON
    assert not source.removable


@dataclasses.dataclass(frozen=True)
class Ticket:
    id: str
    title: str


def test_dataclass_codec_round_trips():
    codec = DataclassCodec(Ticket)
    assert codec.decode(codec.encode(Ticket("A-1", "x"))) == Ticket("A-1", "x")
    with pytest.raises(TypeError):
        DataclassCodec(dict)


def test_combine_keeps_caller_order_and_rejects_duplicates():
    a = ContextSource(key="acme/a", load=lambda: 1, baseline=str)
    b = ContextSource(key="acme/b", load=lambda: 1, baseline=str)
    ctx = SystemContext.combine(SystemContext.make(b), SystemContext.make(a))
    assert ctx.keys == ("acme/b", "acme/a")
    with pytest.raises(DuplicateSourceKey, match="acme/a"):
        SystemContext.combine(ctx, SystemContext.make(ContextSource(key="acme/a", load=lambda: 2, baseline=str)))
