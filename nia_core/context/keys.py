"""Context source keys: ``owner/name``, lowercase, stable across releases."""

from __future__ import annotations

import re
from typing import TypeGuard

from nia_core.errors import InvalidSourceKey

KEY_PATTERN = re.compile(r"[a-z0-9][a-z0-9_.-]*/[a-z0-9][a-z0-9_.\-/]*")
"""Matched against the whole key (``fullmatch``): ``$`` would let a trailing newline through."""
RESERVED_NAMESPACE = "nia"


def is_valid_key(key: object) -> TypeGuard[str]:
    """Whether ``key`` is a valid source key (the whole string; no trailing newline slips through)."""
    return isinstance(key, str) and KEY_PATTERN.fullmatch(key) is not None and not key.endswith("/") and "//" not in key


def validate_key(key: object) -> str:
    """Return ``key`` if it is a valid source key, else raise :class:`InvalidSourceKey`."""
    if not is_valid_key(key):
        raise InvalidSourceKey(
            f"invalid context source key {key!r}: keys are 'owner/name' in lowercase "
            "(letters, digits, '-', '_', '.'), for example 'acme/jira'"
        )
    return key


def namespace_of(key: str) -> str:
    """The owner part of a key (``acme`` for ``acme/jira``)."""
    return key.split("/", 1)[0]
