"""Every hook test runs twice: answered in the hook's own process, and by a resident process.

In the resident mode each hook after the first is answered by the resident
process the first one started: the helper waits for it between hooks (a hook
that finds it still starting is answered in-process, which is right, but
would test the other path), and the test's hook log must show it answered.
"""

from __future__ import annotations

import pytest

from tests.resident_helpers import assert_resident_answered


@pytest.fixture(autouse=True)
def both_modes(hook_mode):
    yield hook_mode
    if hook_mode == "resident":
        assert_resident_answered()
