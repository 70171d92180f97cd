"""Transaction logs: what each workflow run put into the prompt, and what it left out.

Each run writes ``.nia/logs/transactions/<UTC timestamp>.json`` and replaces
``latest.json``, both by writing a temporary file and renaming it, so a reader
never sees half a log. Older logs beyond ``[logs] keep_transactions`` are
removed.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from nia_core.context import Generation
from nia_core.project.generated import ignore_generated
from nia_core.project.merge import ContextFile, Merged, Skip
from nia_core.project.prompt import CONTEXT_FILES, PROJECT_FILES, file_key
from nia_core.project.workflow import Workflow

LOG_VERSION = 1
LATEST = "latest.json"
_LOG_NAME = re.compile(r"\d{8}T\d{6}\.\d{6}Z(?:-\d+)?\.json")


def log_dir(root: Path) -> Path:
    return root / ".nia" / "logs" / "transactions"


def _file(category: str, file: ContextFile) -> dict[str, Any]:
    prefix = PROJECT_FILES if category == "project" else CONTEXT_FILES
    return {
        "category": category,
        "key": file_key(prefix, file.path),
        "original_path": file.original_path,
        "canonical_path": file.canonical,
        "path": file.path,
        "origin": file.origin,
        "directory": file.directory,
        "size": file.size,
        "description": file.description,
    }


def _skip(category: str, skip: Skip) -> dict[str, Any]:
    return {
        "category": category,
        "original_path": skip.original_path,
        "canonical_path": skip.canonical,
        "origin": skip.origin,
        "size": skip.size,
        "reason": skip.reason,
    }


def _category(name: str, merged: Merged) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    return [_file(name, f) for f in merged.files], [_skip(name, s) for s in merged.skipped]


def record(
    workflow: Workflow,
    *,
    command: str,
    status: str,
    generation: Generation | None = None,
    input_source: str | None = None,
    error: str | None = None,
    now: dt.datetime | None = None,
) -> dict[str, Any]:
    """The log entry for one run of ``workflow``."""
    moment = now or dt.datetime.now(dt.UTC)
    project_files, project_skips = _category("project", workflow.category1.merged)
    context_files, context_skips = _category("context", workflow.category2)
    entry: dict[str, Any] = {
        "version": LOG_VERSION,
        "timestamp": moment.isoformat().replace("+00:00", "Z"),
        "command": command,
        "target": workflow.target.name,
        "operation": workflow.operation.name,
        "status": status,
        "error": error,
        "location": str(workflow.location.path),
        "root": str(workflow.location.root),
        "format": workflow.format,
        "service": workflow.category1.service.name if workflow.category1.service else None,
        "user_input": (
            {"source": input_source, "bytes": len(workflow.user_input.encode())}
            if workflow.user_input is not None
            else None
        ),
        "context_sources": project_files + context_files,
        "skipped": project_skips + context_skips,
        "warnings": list(workflow.warnings),
    }
    if generation is not None:
        entry["sections"] = [{"key": key, "bytes": len(text.encode())} for key, text in generation.parts]
        entry["baseline_bytes"] = len(generation.baseline.encode())
    return entry


def failure(command: str, target: str, operation: str, location: Any, error: str) -> dict[str, Any]:
    """The log entry for a run that failed before its context could be assembled."""
    return {
        "version": LOG_VERSION,
        "timestamp": dt.datetime.now(dt.UTC).isoformat().replace("+00:00", "Z"),
        "command": command,
        "target": target,
        "operation": operation,
        "status": "error",
        "error": error,
        "location": str(location.path),
        "root": str(location.root),
        "context_sources": [],
        "skipped": [],
        "warnings": [],
    }


def _write_temp(folder: Path, data: bytes) -> str:
    handle, temp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
    except BaseException:
        os.unlink(temp)
        raise
    return temp


def write(root: Path, entry: dict[str, Any], *, keep: int) -> Path:
    """Write ``entry`` as a new log and as ``latest.json``, then prune to ``keep`` logs; the new log's path."""
    folder = log_dir(root)
    folder.mkdir(parents=True, exist_ok=True)
    ignore_generated(root)
    data = (json.dumps(entry, indent=2, ensure_ascii=False) + "\n").encode()
    stamp = dt.datetime.fromisoformat(entry["timestamp"].replace("Z", "+00:00")).strftime("%Y%m%dT%H%M%S.%fZ")
    temp = _write_temp(folder, data)
    try:
        number = 0
        while True:
            path = folder / (f"{stamp}-{number}.json" if number else f"{stamp}.json")
            try:
                os.link(temp, path)  # never overwrites: a second run in the same microsecond gets "-1"
                break
            except FileExistsError:
                number += 1
            except OSError:  # no hard links here: a rename still keeps readers safe
                os.replace(temp, path)
                break
    finally:
        if os.path.exists(temp):
            os.unlink(temp)
    os.replace(_write_temp(folder, data), folder / LATEST)
    prune(folder, keep)
    return path


def prune(folder: Path, keep: int) -> list[Path]:
    """Remove all but the newest ``keep`` timestamped logs; the paths removed."""
    logs = sorted(name for name in os.listdir(folder) if _LOG_NAME.fullmatch(name))
    removed = []
    for name in logs[: max(0, len(logs) - keep)]:
        try:
            os.unlink(folder / name)
            removed.append(folder / name)
        except FileNotFoundError:
            pass  # another run pruned it first
    return removed
