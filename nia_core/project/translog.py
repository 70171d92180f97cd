"""Transaction logs: what each workflow run put into the prompt, and what it left out.

Each run writes ``.nia/logs/transactions/<UTC timestamp>.json`` and replaces
``latest.json``, both by writing a temporary file and renaming it, so a reader
never sees half a log. Older logs beyond ``[logs] keep_transactions`` are
removed.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import re
import secrets
from pathlib import Path
from typing import Any

from nia_core.context import Generation
from nia_core.files import Refused, open_folder_inside
from nia_core.project.generated import ignore_generated
from nia_core.project.merge import ContextFile, Merged, Skip
from nia_core.project.prompt import CONTEXT_FILES, PROJECT_FILES, file_key
from nia_core.project.workflow import Workflow

log = logging.getLogger("nia.project")

LOG_VERSION = 1
LOG_PARTS = (".nia", "logs", "transactions")
LOG_FOLDER = "/".join(LOG_PARTS)
LATEST = "latest.json"
_LOG_NAME = re.compile(r"\d{8}T\d{6}\.\d{6}Z(?:-\d+)?\.json")


def log_dir(root: Path) -> Path:
    return root.joinpath(*LOG_PARTS)


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
        entry["sections"] = [{"key": key, "bytes": size} for key, size in generation.sizes().items()]
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


def _write_temp(folder: int, data: bytes) -> str:
    """A new temporary file in the folder ``folder`` (a descriptor) holding ``data``; its name."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    while True:
        name = f".tmp-{secrets.token_hex(8)}.json"
        try:
            handle = os.open(name, flags, 0o666, dir_fd=folder)
            break
        except FileExistsError:
            continue
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
    except BaseException:
        os.unlink(name, dir_fd=folder)
        raise
    return name


def write(root: Path, entry: dict[str, Any], *, keep: int) -> Path | None:
    """Write ``entry`` as a new log and as ``latest.json``, then prune to ``keep`` logs; the new log's path.

    Everything is written through a descriptor on the log folder that was
    opened folder by folder without following symlinks out of the project
    (:func:`nia_core.files.open_folder_inside`): when ``.nia``, ``.nia/logs``
    or the log folder is a symlink pointing outside the project, nothing is
    written, a warning says why, and ``None`` is returned. Any other failure
    to write (a full disk, a read-only folder) is a warning too: a log never
    fails the run it records.
    """
    try:
        data = (json.dumps(entry, indent=2, ensure_ascii=False) + "\n").encode()
    except UnicodeEncodeError:  # an undecodable file name: JSON's \u escapes keep it, and keep the file valid
        data = (json.dumps(entry, indent=2) + "\n").encode()
    stamp = dt.datetime.fromisoformat(entry["timestamp"].replace("Z", "+00:00")).strftime("%Y%m%dT%H%M%S.%fZ")
    try:
        folder = open_folder_inside(root, LOG_PARTS)
    except Refused as exc:
        log.warning("Transaction log not written: %s", exc.problem)
        return None
    except OSError as exc:
        log.warning("Transaction log not written: %s: %s", LOG_FOLDER, exc.strerror or exc)
        return None
    try:
        ignore_generated(root)
        name = _publish(folder, data, stamp)
        _prune(folder, keep)
    except OSError as exc:
        log.warning("Transaction log not written: %s: %s", LOG_FOLDER, exc.strerror or exc)
        return None
    finally:
        os.close(folder)
    return log_dir(root) / name


def _publish(folder: int, data: bytes, stamp: str) -> str:
    temp = _write_temp(folder, data)
    try:
        number = 0
        while True:
            name = f"{stamp}-{number}.json" if number else f"{stamp}.json"
            try:  # never overwrites: a second run in the same microsecond gets "-1"
                os.link(temp, name, src_dir_fd=folder, dst_dir_fd=folder, follow_symlinks=False)
                break
            except FileExistsError:
                number += 1
            except (OSError, NotImplementedError):  # no hard links here: a rename still keeps readers safe
                os.replace(temp, name, src_dir_fd=folder, dst_dir_fd=folder)
                break
    finally:
        try:
            os.unlink(temp, dir_fd=folder)
        except FileNotFoundError:
            pass
    os.replace(_write_temp(folder, data), LATEST, src_dir_fd=folder, dst_dir_fd=folder)
    return name


def prune(folder: Path, keep: int) -> list[Path]:
    """Remove all but the newest ``keep`` timestamped logs in ``folder``; the paths removed."""
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        return [folder / name for name in _prune(fd, keep)]
    finally:
        os.close(fd)


def _prune(folder: int, keep: int) -> list[str]:
    logs = sorted(name for name in os.listdir(folder) if _LOG_NAME.fullmatch(name))
    removed = []
    for name in logs[: max(0, len(logs) - keep)]:
        try:
            os.unlink(name, dir_fd=folder)
            removed.append(name)
        except FileNotFoundError:
            pass  # another run pruned it first
    return removed
