"""Switching a plugin off (or on again) for one project: ``[plugins] disabled`` in ``.nia/project.toml``.

The file is the user's: it is edited with tomlkit, so every comment, blank
line and key order outside the ``disabled`` entry stays byte-for-byte as it
was, and written atomically, so a crash never leaves half a file.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Any

import tomlkit

from nia_core.files import Refused, open_folder_inside, read_checked
from nia_core.project.toml import BOM, MAX_CONFIG_BYTES, ConfigError, config_text, parse_toml, project_root_of


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
    root = project_root_of(path)
    try:  # checked like every project read: a project.toml or .nia leading outside is not edited
        raw = read_checked(path, root, MAX_CONFIG_BYTES).data
    except FileNotFoundError:
        raw = b""
    except Refused as exc:
        raise ConfigError(f"{path}: not edited: the file {exc.problem}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    parse_toml(raw, str(path))  # a broken file fails here, with its file and line
    text = config_text(raw, str(path))  # from bytes: keep CRLF line ends
    mark = BOM if raw.startswith(BOM.encode()) else ""  # the file keeps the byte-order mark its editor wrote
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
    _write(path, mark + tomlkit.dumps(document))
    return True


def _write(path: Path, text: str) -> None:
    """Replace ``path`` atomically; under a project's ``.nia``, only through a folder checked to be inside it."""
    root = project_root_of(path)
    if root is None:
        path.parent.mkdir(parents=True, exist_ok=True)
        folder = os.open(path.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    else:
        try:
            folder = open_folder_inside(root, (".nia",))
        except Refused as exc:
            raise ConfigError(f"{path}: not edited: {exc.problem}") from None
    try:
        _replace(folder, path.name, text)
    finally:
        os.close(folder)


def _replace(folder: int, name: str, text: str) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    temporary = f".project-{secrets.token_hex(8)}.toml.tmp"
    handle = os.open(temporary, flags, 0o666, dir_fd=folder)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            out.write(text)
        try:
            mode = os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode & 0o7777
            os.chmod(temporary, mode, dir_fd=folder)
        except FileNotFoundError:
            pass
        os.replace(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        try:
            os.unlink(temporary, dir_fd=folder)
        except FileNotFoundError:
            pass
        raise
