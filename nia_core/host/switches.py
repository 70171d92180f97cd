"""Switching a plugin off (or on again) for one project: ``[plugins] disabled`` in ``.nia/project.toml``.

The file is the user's: it is edited with tomlkit, so every comment, blank
line and key order outside the ``disabled`` entry stays byte-for-byte as it
was, and written atomically, so a crash never leaves half a file.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import tomlkit

from nia_core.project.toml import ConfigError, read_toml


def _plugins_table(document: Any, path: Path, *, create: bool) -> Any:
    plugins = document.get("plugins")
    if plugins is None:
        if not create:
            return None
        plugins = tomlkit.table()
        document["plugins"] = plugins
    if not isinstance(plugins, dict):
        raise ConfigError(f"{path}: [plugins] must be a table")
    return plugins


def _disabled_array(plugins: Any, path: Path) -> Any:
    disabled = plugins.get("disabled")
    if disabled is not None and not isinstance(disabled, list):
        raise ConfigError(f"{path}: plugins.disabled must be a list of plugin names")
    return disabled


def set_disabled(path: Path, name: str, disabled: bool) -> bool:
    """Add ``name`` to (or remove it from) ``[plugins] disabled``; returns whether the file changed.

    A missing file (and its ``.nia/`` folder) is created when disabling.
    """
    read_toml(path)  # a broken file fails here, with its file and line
    text = path.read_bytes().decode("utf-8") if path.exists() else ""  # bytes: keep CRLF line ends
    document = tomlkit.parse(text)
    plugins = _plugins_table(document, path, create=disabled)
    if plugins is None:
        return False
    names = _disabled_array(plugins, path)
    if disabled:
        if names is not None and name in names:
            return False
        if names is None:
            plugins["disabled"] = [name]
        else:
            names.append(name)
    else:
        if names is None or name not in names:
            return False
        for index in reversed([i for i, value in enumerate(names) if value == name]):
            del names[index]
    _write(path, tomlkit.dumps(document))
    return True


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".project-", suffix=".toml.tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            out.write(text)
        if path.exists():
            os.chmod(temporary, path.stat().st_mode & 0o7777)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
