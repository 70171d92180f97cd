"""What Gemini CLI and its fork Qwen Code keep in their settings that nia reads: trusted folders, context files.

**Trusted folders**: which projects' hooks they run. Both keep the user's
decisions in ``trustedFolders.json`` in their user folder
(``{"<path>": "TRUST_FOLDER" | "TRUST_PARENT" | "DO_NOT_TRUST"}``); the rule
whose path is longest among those holding the project decides, and
``TRUST_PARENT`` stands for the folder that holds its path (Gemini CLI 0.61.0
``config/trustedFolders.js`` ``isPathTrusted``; Qwen Code, its fork, keeps the
format). That record is the user's consent: nia reads it and never writes it.

**Context files**: the instruction files they load into every session
themselves, ``context.fileName`` (a name or a list) in the user's and the
project's settings, the project's winning; Gemini CLI loads ``GEMINI.md`` by
default, Qwen Code ``QWEN.md`` and ``AGENTS.md`` (both measured with the
binaries: ``AGENTS.md`` from the working directory up is loaded exactly when
the list names it).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nia_core.agents.contract import SettingsPlaces
from nia_core.agents.settings_file import SettingsError, SettingsFile

LEVELS = ("TRUST_FOLDER", "TRUST_PARENT", "DO_NOT_TRUST")


def record_file(variable: str, default: SettingsFile) -> SettingsFile:
    """The trusted-folders file: the one an environment variable names, else the host's default."""
    where = os.environ.get(variable)
    if not where:
        return default
    path = Path(os.path.abspath(where))
    return SettingsFile.in_user_folder(path.parent, path.name)


def is_trusted(record: SettingsFile, project: Path, problems: list[str]) -> bool:
    """Whether the host's record trusts ``project``; a record nia cannot read is said in ``problems``."""
    try:
        text = record.read_text()
        rules = json.loads(text) if text and text.strip() else {}
    except SettingsError as exc:
        problems.append(str(exc))
        return False
    except ValueError as exc:
        problems.append(f"{record.path}: not valid JSON ({exc})")
        return False
    return isinstance(rules, dict) and _decides(rules, project)


def _decides(rules: Mapping[str, Any], project: Path) -> bool:
    real = os.path.realpath(project)
    longest, level = -1, None
    for path, value in rules.items():
        if value not in LEVELS:
            continue
        folder = os.path.realpath(os.path.dirname(path) if value == "TRUST_PARENT" else path)
        if (real == folder or real.startswith(folder.rstrip(os.sep) + os.sep)) and len(path) > longest:
            longest, level = len(path), value
    return level in ("TRUST_FOLDER", "TRUST_PARENT")


def settings_files(places: SettingsPlaces, root: Path) -> tuple[SettingsFile, SettingsFile]:
    """The host's user and project settings files (the hook's path: without the installer's imports)."""
    variable, default = places.user_folder
    folder = Path(os.environ.get(variable) or Path.home() / default)
    return SettingsFile.in_user_folder(folder, *places.user), SettingsFile.in_project(root, *places.project)


def context_files(files: tuple[SettingsFile, ...], default: tuple[str, ...]) -> tuple[str, ...]:
    """The context file names the last of ``files`` that sets ``context.fileName`` says, else ``default``.

    A file nia cannot read or parse (comments, say, which the hosts accept)
    says nothing, and the host's default stands.
    """
    names = default
    for settings in files:
        try:
            text = settings.read_text()
            data = json.loads(text) if text and text.strip() else {}
        except (SettingsError, ValueError):
            continue
        if not isinstance(data, dict):
            continue
        context = data.get("context")
        value = context.get("fileName") if isinstance(context, dict) else data.get("contextFileName")
        if isinstance(value, str) and value:
            names = (value,)
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            names = tuple(value)
    return names
