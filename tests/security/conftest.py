"""The hostile-repository cases that run agent hooks run twice: answered in-process, and by a resident process."""

from __future__ import annotations

import pytest

from tests.resident_helpers import resident_mode


@pytest.fixture(params=["in-process", "resident"])
def hook_mode(request, monkeypatch):
    with resident_mode(monkeypatch, request.param == "resident") as mode:
        yield mode
