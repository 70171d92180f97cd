"""Packages whose names are imported on first use (PEP 562), so importing a package costs nothing yet.

Each lazy package keeps one table, module -> names; ``__all__`` and the look-up
come from it. Type checkers still need the names imported under
``TYPE_CHECKING``, which is the only other place they are written.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def lazy_exports(
    package: str, table: Mapping[str, Sequence[str]]
) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """``(__all__, __getattr__, __dir__)`` for ``package`` exporting ``table``'s names from their modules."""
    exports = {name: module for module, names in table.items() for name in names}

    def __getattr__(name: str) -> Any:
        """Import an exported name on first use and keep it, so later look-ups are plain attribute reads."""
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *exports})

    return sorted(exports), __getattr__, __dir__
