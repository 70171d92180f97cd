"""What nia/git takes from ``nia_core`` beyond its public API, in one place so it is switched in one place.

The built-ins are to use only ``nia_core``'s public names; until the ones
below are public, every module of the package imports them from here.
"""

from __future__ import annotations

import logging

from nia_core.project.generated import GENERATED_NAMES

__all__ = ["GENERATED_NAMES", "log"]

log = logging.getLogger("nia.plugins.git")
