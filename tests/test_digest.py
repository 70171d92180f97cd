"""``sha256_hex`` is SHA-256 at every size, whichever implementation hashes it."""

from __future__ import annotations

import hashlib

import pytest

from nia_core.digest import SMALL, sha256_hex


@pytest.mark.parametrize("size", [0, 1, 63, 64, 65, 1000, SMALL - 1, SMALL, SMALL + 1, 3 * SMALL])
def test_the_digest_is_hashlibs_at_every_size(size):
    data = bytes(range(256)) * (size // 256) + bytes(size % 256)
    assert sha256_hex(data) == hashlib.sha256(data).hexdigest()
