"""Codecs turn a source's typed value into JSON and back.

The snapshot compares values by their canonical JSON (sorted keys, no
whitespace), so two equal values always compare equal whatever their dict order.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

T = TypeVar("T")


@runtime_checkable
class Codec(Protocol[T]):
    """Encodes a value to JSON-compatible data and decodes it back."""

    def encode(self, value: T) -> Any: ...

    def decode(self, data: Any) -> T: ...


class JsonCodec:
    """The default codec: the value is already JSON-compatible."""

    def encode(self, value: Any) -> Any:
        return value

    def decode(self, data: Any) -> Any:
        return data

    def __repr__(self) -> str:
        return "JsonCodec()"


JSON = JsonCodec()


class DataclassCodec(Generic[T]):
    """A codec for a (flat or nested) dataclass built from JSON-compatible fields."""

    def __init__(self, cls: type[T]) -> None:
        if not dataclasses.is_dataclass(cls):
            raise TypeError(f"{cls!r} is not a dataclass")
        self.cls = cls

    def encode(self, value: T) -> Any:
        return dataclasses.asdict(value)  # type: ignore[call-overload]

    def decode(self, data: Any) -> T:
        if not isinstance(data, dict):
            raise ValueError(f"expected an object for {self.cls.__name__}, got {type(data).__name__}")
        return self.cls(**data)

    def __repr__(self) -> str:
        return f"DataclassCodec({self.cls.__name__})"


def canonical_json(data: Any) -> str:
    """Serialize JSON-compatible data canonically; raises ``TypeError``/``ValueError`` otherwise."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
