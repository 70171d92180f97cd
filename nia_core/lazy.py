"""Packages whose names are imported on first use (PEP 562), so importing a package costs nothing yet.

A lazy package writes each exported name once, as type checkers need it:
``from MODULE import NAME as NAME`` under ``if TYPE_CHECKING:``. At run time
that block does not run; :func:`lazy_exports` reads the package's own source
for it (as ``lazy_loader.attach_stub`` reads a stub, SPEC 1) and imports each
name from its module on first use. ``__all__`` is those names.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable

TYPE_CHECKING = False  # not typing's: the hook's thin client imports this module (typing costs it ~4 ms)
if TYPE_CHECKING:
    from typing import Any


def exported(package: str) -> dict[str, str]:
    """``name -> module`` of the ``from MODULE import NAME as NAME`` lines under the package's ``if TYPE_CHECKING:``."""
    spec = sys.modules[package].__spec__
    assert spec is not None and spec.origin is not None and spec.loader is not None
    text = spec.loader.get_data(spec.origin).decode("utf-8")  # type: ignore[attr-defined]
    found: dict[str, str] = {}
    block = text.partition("\nif TYPE_CHECKING:")[2].partition("\n")[2]
    for line in block.splitlines():
        if line and not line.startswith(" "):
            break  # the end of the block
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if len(words) != 6 or words[0] != "from" or words[2] != "import" or words[4] != "as" or words[3] != words[5]:
            raise ImportError(f"{spec.origin}: under TYPE_CHECKING, expected 'from MODULE import NAME as NAME': {line}")
        found[words[3]] = words[1]
    return found


def lazy_exports(package: str) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """``(__all__, __getattr__, __dir__)`` for ``package``, exporting the names its ``TYPE_CHECKING`` block imports."""
    exports = exported(package)

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
