"""Context source keys: ``owner/name``, lowercase, stable across releases."""

from __future__ import annotations

import re

from nia_core.errors import InvalidSourceKey

KEY_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_.-]*/[a-z0-9][a-z0-9_.\-/]*$")
RESERVED_NAMESPACE = "nia"


def validate_key(key: object) -> str:
    """Return ``key`` if it is a valid source key, else raise :class:`InvalidSourceKey`."""
    if not isinstance(key, str) or not KEY_PATTERN.match(key) or key.endswith("/") or "//" in key:
        raise InvalidSourceKey(
            f"invalid context source key {key!r}: keys are 'owner/name' in lowercase "
            "(letters, digits, '-', '_', '.'), for example 'acme/jira'"
        )
    return key


def namespace_of(key: str) -> str:
    """The owner part of a key (``acme`` for ``acme/jira``)."""
    return key.split("/", 1)[0]
