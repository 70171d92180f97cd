"""Where a failed reload points: one line for the user, starting with ``file:line:`` when it is known.

``nia dev`` and ``nia mcp`` show these instead of a traceback: the file and
line are those of the plugin's own code (the last frame inside the unit that
was reloaded), or the first line of its source naming what went wrong (a
hook, a source key), shown relative to the project root.
"""

from __future__ import annotations

import dataclasses
import re
import traceback
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nia_core.errors import escape_name
from nia_core.files import read_checked
from nia_core.plugin_host.importing import ImportDeadline, PluginRaised, describe
from nia_core.plugin_host.localimport import SOURCE_LIMIT
from nia_core.plugin_host.watch import ignored

if TYPE_CHECKING:
    from nia_core.context import Location
    from nia_core.plugin_host.units import Unit


@dataclass(frozen=True)
class ReloadError:
    """Why a plugin (or the project config) could not be reloaded, with where it happened."""

    plugin: str | None
    """The plugin, or ``None`` for the project's config file."""
    message: str
    """One line, starting with ``file:line:`` when known."""
    file: str | None = None
    line: int | None = None
    kept_previous: bool = False
    """Whether the previous working version stays loaded (its sources stay admitted)."""

    def __str__(self) -> str:
        who = f"plugin {self.plugin!r}" if self.plugin else "config"
        kept = " (the previous version stays loaded)" if self.kept_previous else ""
        return f"{who}: {self.message}{kept}"

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def within(filename: str, root: Path) -> bool:
    try:
        path = Path(filename).resolve()
    except (OSError, ValueError):
        return False
    return path == root or root in path.parents


def where(file: str | None, line: int | None, location: Location) -> str:
    if file is None:
        return ""
    shown = escape_name(file)
    try:
        shown = escape_name(str(Path(file).resolve().relative_to(location.root)))
    except ValueError:
        pass
    return f"{shown}:{line}: " if line else f"{shown}: "


def exception_error(
    name: str, exc: BaseException, unit: Unit, location: Location, kept: bool, *, prefix: str = ""
) -> ReloadError:
    file: str | None = None
    line: int | None = None
    if isinstance(exc, ImportDeadline):
        return ReloadError(name, f"{prefix}{exc}", None, None, kept)
    text: str | None = None
    if isinstance(exc, PluginRaised):  # worded on the worker: the plugin's __str__ does not run here
        text = exc.text
        exc = exc.original
    if isinstance(exc, SyntaxError):
        file, line = exc.filename, exc.lineno
        what = f"{type(exc).__name__}: {exc.msg}"
    else:
        # From the code objects alone: extract_tb would read each frame's line through linecache, which
        # opens whatever file the code names (a FIFO in the plugin would freeze nia dev here).
        frames = [(frame.f_code.co_filename, number) for frame, number in traceback.walk_tb(exc.__traceback__)]
        inside = [frame for frame in frames if within(frame[0], unit.root)]
        if inside or frames:
            file, line = (inside or frames)[-1]
        what = describe(exc) if text is None else text
    return ReloadError(name, f"{where(file, line, location)}{prefix}{what}", file, line, kept)


def registration_needle(error: str) -> str:
    hook = re.search(r"\b(nia_\w+)", error)
    if hook:
        return f"def {hook.group(1)}"
    return "NIA_NAMESPACE" if "NIA_NAMESPACE" in error else ""


def unit_files(unit: Unit) -> Sequence[Path]:
    if unit.root.is_file():
        return [unit.root]
    return sorted(p for p in unit.root.rglob("*.py") if not ignored(p.relative_to(unit.root).parts))


def find_in_unit(unit: Unit, needle: str) -> tuple[str | None, int | None]:
    """The first ``file:line`` of the unit's source mentioning ``needle``."""
    if not needle:
        return None, None
    edge = unit.root if unit.root.is_dir() else unit.root.parent
    for path in unit_files(unit):
        try:  # the checked reader: a FIFO named like a module, or a link out of the plugin, is never read
            lines = read_checked(path, edge, SOURCE_LIMIT).data.decode("utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for number, text in enumerate(lines, 1):
            if needle in text:
                return str(path), number
    return None, None
