"""``nia-python-lint`` (off until configured): ruff's and mypy's findings, from the results file your runs write.

nia never runs a linter or a type checker at a boundary: it reads the file
the user's own runs leave behind (an editor task, a pre-commit hook, a
``watch`` loop), named in ``.nia/project.toml``::

    [plugins.nia-python-lint]
    ruff = ".nia/ruff.json"   # ruff check --output-format json --output-file .nia/ruff.json
    mypy = ".nia/mypy.json"   # mypy -O json src > .nia/mypy.json

A results file may be a JSON array (ruff's ``json``), JSON lines (mypy's
``-O json``, ruff's ``json-lines``) or text lines (``path:line[:col]: ...``,
mypy's and ruff's ``concise`` output). Their caches are not read: ruff's is a
binary format of its own and mypy's holds no findings.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from nia_core import ContextSource, Location, hookimpl

from nia_python.layout import files, shown, why_not
from nia_python.settings import MIB, check_keys, relative_path, whole
from nia_python.text import MAX_NAME, code, plain, plural, shorten, within

NIA_NAMESPACE = "python"

PLUGIN = "nia-python-lint"
KEEP = 200
TOOLS = {
    "ruff": ("Ruff", "ruff check --output-format json --output-file {file}"),
    "mypy": ("mypy", "mypy -O json . > {file}"),
}
_TEXT = re.compile(
    r"(?P<path>[^:\n]+):(?P<line>\d+):(?:(?P<col>\d+):)?\s*(?:(?P<severity>error|warning|note):\s*)?(?P<message>.*)"
)
_MYPY_CODE = re.compile(r"\s+\[(?P<code>[a-z0-9-]+)\]$")
_RUFF_CODE = re.compile(r"(?P<code>[A-Z]+[0-9]+)\s+(?P<message>.*)")


@dataclass(frozen=True)
class Settings:
    """``[plugins.nia-python-lint]``."""

    ruff: str | None = None
    mypy: str | None = None
    show: int = 10
    max_bytes: int = 4 * MIB


def settings_from(config: dict[str, Any]) -> Settings:
    check_keys(PLUGIN, config, ("ruff", "mypy", "show", "max_bytes"))
    return Settings(
        ruff=relative_path(PLUGIN, config, "ruff", None),
        mypy=relative_path(PLUGIN, config, "mypy", None),
        show=whole(PLUGIN, config, "show", 10),
        max_bytes=whole(PLUGIN, config, "max_bytes", 4 * MIB, least=1),
    )


# -- reading ----------------------------------------------------------------------------------

Finding = tuple[str, int, int, str, str]
"""``(path, line, column, code, message)``."""


def _from_json(item: Any, root: str) -> Finding | None:
    if not isinstance(item, dict):
        return None
    if item.get("severity") == "note":
        return None
    found = item.get("location")
    location: dict[str, Any] = found if isinstance(found, dict) else {}
    path = item.get("filename", item.get("file"))
    line = location.get("row", item.get("line"))
    column = location.get("column", item.get("column", 0))
    message = item.get("message")
    rule = item.get("code") or ""
    if not isinstance(path, str) or not isinstance(message, str) or not isinstance(rule, str):
        return None
    if not isinstance(line, int) or not isinstance(column, int) or isinstance(line, bool):
        return None
    return (shown(path, root) if os.path.isabs(path) else path, line, column, rule, message)


def _from_text(line: str, root: str) -> Finding | None:
    match = _TEXT.fullmatch(line.strip())
    if match is None or match["severity"] == "note":
        return None
    message, rule = match["message"], ""
    mypy = _MYPY_CODE.search(message)
    if mypy is not None:
        message, rule = message[: mypy.start()], mypy["code"]
    else:
        ruff = _RUFF_CODE.fullmatch(message)
        if ruff is not None:
            rule, message = ruff["code"], ruff["message"]
    path = match["path"]
    return (
        shown(path, root) if os.path.isabs(path) else path,
        int(match["line"]),
        int(match["col"] or 0),
        rule,
        message,
    )


def parse_results(data: bytes, root: str) -> dict[str, Any]:
    """``{"findings": [...], "count": n, "files": m}``, or ``{"error": clause}``."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return {"error": f"is not UTF-8 (byte {exc.start})"}
    stripped = text.lstrip()
    found: list[Finding] = []
    try:
        if stripped.startswith("["):
            items = json.loads(stripped)
            if not isinstance(items, list):
                return {"error": "is not a list of findings"}
            found = [f for f in (_from_json(item, root) for item in items) if f is not None]
        elif stripped.startswith("{"):
            items = [json.loads(line) for line in stripped.splitlines() if line.strip()]
            found = [f for f in (_from_json(item, root) for item in items) if f is not None]
        else:
            found = [f for f in (_from_text(line, root) for line in text.splitlines()) if f is not None]
    except (ValueError, RecursionError):
        return {"error": "is not valid JSON"}
    found.sort()
    kept = [
        [shorten(path, MAX_NAME), line, col, rule[:40], shorten(text, 300)]
        for path, line, col, rule, text in found[:KEEP]
    ]
    return {"findings": within(kept), "count": len(found), "files": len({f[0] for f in found})}


class Results:
    """The loader of one results file; the same value object while the file is unchanged."""

    def __init__(self, tool: str, path: str, written: str, root: str, max_bytes: int) -> None:
        self.tool, self.root = tool, root
        inside = shown(path, root) != path
        self.label = shown(path, root) if inside else written  # no outside path is shown, only the setting
        self.load = files.loader(
            path,
            root=root,
            limit=max_bytes,
            derive=lambda content: self._value(
                {"error": f"is larger than {max_bytes:,} bytes (the {PLUGIN} max_bytes setting)"}
                if content.oversize
                else parse_results(content.data, root)
            ),
            on_error=lambda exc: self._value(
                {"missing": True} if isinstance(exc, FileNotFoundError) else {"error": why_not(exc)}
            ),
        )

    def _value(self, parsed: dict[str, Any]) -> dict[str, Any]:
        return {"tool": self.tool, "file": self.label, **parsed}


# -- rendering -------------------------------------------------------------------------------


def _finding(finding: list[Any]) -> str:
    path, line, column, rule, message = finding
    where = code(f"{path}:{line}" + (f":{column}" if column else ""))
    return f"- {where}{' ' + plain(rule, 40) if rule else ''} {plain(message)}"


def _findings(value: dict[str, Any], show: int) -> str:
    lines = [_finding(f) for f in value["findings"][:show]]
    rest = value["count"] - len(lines)
    if rest > 0:
        lines.append(f"- and {rest:,} more")
    return "\n".join(lines)


def _name(value: dict[str, Any]) -> str:
    return TOOLS[value["tool"]][0]


def render_baseline(value: dict[str, Any], show: int) -> str:
    name, file = _name(value), code(value["file"])
    if value.get("missing"):
        command = TOOLS[value["tool"]][1].format(file=value["file"])
        return f"{name}: no results file yet ({file}); nia reads the one your runs write: {code(command)}."
    if "error" in value:
        return f"{name}: the results in {file} cannot be read: it {plain(value['error'])}."
    if not value["count"]:
        return f"{name} (results in {file}): no findings."
    found = f"{plural(value['count'], 'finding')} in {plural(value['files'], 'file')}"
    return f"{name} (results in {file}): {found}:\n{_findings(value, show)}"


def render_update(old: dict[str, Any], new: dict[str, Any], show: int) -> str:
    if "count" not in old or "count" not in new:
        return "Now: " + render_baseline(new, show)
    name, file = _name(new), code(new["file"])
    if not new["count"]:
        return f"{name} (results in {file}): no findings now (was {old['count']:,})."
    found = f"{plural(new['count'], 'finding')} in {plural(new['files'], 'file')}"
    return f"{name} (results in {file}): now {found} (was {old['count']:,}):\n{_findings(new, show)}"


@lru_cache(maxsize=64)
def results_source(tool: str, written: str, root: str, show: int, max_bytes: int) -> ContextSource:
    name = TOOLS[tool][0]
    return ContextSource(
        key=f"python/{tool}",
        load=Results(tool, os.path.normpath(os.path.join(root, written)), written, root, max_bytes).load,
        baseline=lambda value: render_baseline(value, show),
        update=lambda old, new: render_update(old, new, show),
        removal=lambda old: f"The {name} findings given earlier no longer apply.",
        timeout=1.0,
        description=f"{name}'s findings, from the results file its runs write.",
    )


@hookimpl
def nia_context_sources(location: Location, config: dict[str, Any]) -> list[ContextSource]:
    settings = settings_from(config)
    root = str(location.root)
    return [
        results_source(tool, file, root, settings.show, settings.max_bytes)
        for tool, file in (("ruff", settings.ruff), ("mypy", settings.mypy))
        if file is not None
    ]
