"""SHA-256 of small inputs without loading OpenSSL.

``import hashlib`` loads OpenSSL's ``_hashlib`` (~2.5 ms) for any digest, and an
agent hook, a fresh process at every prompt, needs only a few of a few bytes
each (its session id, short texts' content ids). CPython's own SHA-256 module,
the one ``hashlib`` falls back to, loads in ~0.2 ms and gives the same digest;
large inputs still go to ``hashlib``, whose OpenSSL code is the faster one.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

SMALL = 64 * 1024
"""Inputs up to this many bytes are hashed by CPython's own SHA-256."""


def _builtin() -> Callable[[bytes], Any] | None:
    for module in ("_sha256", "_sha2"):  # CPython 3.11; 3.12 and later
        try:
            constructor: Callable[[bytes], Any] = importlib.import_module(module).sha256
        except (ImportError, AttributeError):
            continue
        return constructor
    return None


_small = _builtin()


def sha256_hex(data: bytes) -> str:
    """The hex SHA-256 digest of ``data``, as ``hashlib.sha256(data).hexdigest()``."""
    if _small is not None and len(data) <= SMALL:
        return str(_small(data).hexdigest())
    import hashlib

    return hashlib.sha256(data).hexdigest()


__all__ = ["SMALL", "sha256_hex"]
