"""Another tool's settings file (an agent's hooks, an MCP client's servers), read and written inside its edge.

``nia hook install`` and ``nia mcp install`` edit files that live in the
project (``.claude/settings.json``, ``.codex/hooks.json``, ``.mcp.json``) or in
the user's home (``~/.claude/settings.json``, ``~/.codex/config.toml``). A
repository may have put a symlink, a FIFO or a 3 GB file there, so every
read goes through :func:`nia_core.files.read_checked` and every write through
:func:`nia_core.files.replace_inside`, confined to the file's *edge*: the
project root for project files, the home folder for the user's own (or the
folder an environment variable such as ``CODEX_HOME`` names, when it lies
outside the home folder: the user chose it). A link out of the edge, a file
that is not a regular file, a file over :data:`MAX_SETTINGS_BYTES` or nested
deeper than :data:`MAX_NESTING` is one :class:`SettingsError` line naming the
file (and the link), and nothing is written.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from nia_core.errors import UsageError
from nia_core.files import Refused, link_out, read_checked, remove_inside, replace_inside

MAX_SETTINGS_BYTES = 4 * 1024 * 1024
"""A settings file larger than this is refused (4 MiB; the hosts' own files are a few KB)."""
MAX_NESTING = 100
"""Arrays and objects nested deeper than this make a settings file unreadable to nia."""

_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


class SettingsError(UsageError):
    """A settings file nia was asked to read or edit cannot be used; the message names it, and nothing was written."""

    def __init__(self, path: object, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = str(path)
        self.problem = problem


class SettingsFile:
    """One settings file and the folder it must stay inside (its edge)."""

    def __init__(self, path: Path, root: Path, edge: str) -> None:
        self.path = path
        self.root = root
        self.edge = edge
        """The edge in words: ``the project``, ``the home folder``."""
        self._real: str | None = None

    @classmethod
    def in_project(cls, root: Path, *parts: str) -> SettingsFile:
        return cls(root.joinpath(*parts), root, "the project")

    @classmethod
    def in_user_folder(cls, folder: Path, *parts: str) -> SettingsFile:
        """A file of the user's own configuration folder (``~/.claude``, ``$CODEX_HOME``).

        Below the home folder, the home folder is the edge; a folder the
        user named elsewhere (``CODEX_HOME=/srv/codex``) is its own edge.
        """
        home = Path(os.path.abspath(os.path.expanduser("~")))
        folder = Path(os.path.abspath(folder))
        if folder == home or home in folder.parents:
            return cls(folder.joinpath(*parts), home, "the home folder")
        return cls(folder.joinpath(*parts), folder, str(folder))

    def __repr__(self) -> str:
        return f"SettingsFile({str(self.path)!r})"

    # -- reading ---------------------------------------------------------------------

    def read_text(self) -> str | None:
        """The file's text, ``None`` when it does not exist; :class:`SettingsError` when it cannot be used."""
        try:
            content = read_checked(self.path, self.root, MAX_SETTINGS_BYTES, edge=self.edge)
        except (FileNotFoundError, NotADirectoryError):
            out = link_out(self.root, self.path, self.edge)
            if out is not None:  # absent out there: still nothing nia may read or create
                raise SettingsError(self.path, f"{out}; nia neither reads nor writes it") from None
            return None
        except Refused as exc:
            raise SettingsError(self.path, f"{self._refusal(exc)}; nia neither reads nor writes it") from None
        except OSError as exc:
            raise SettingsError(self.path, f"cannot read it: {exc.strerror or exc}") from None
        if content.oversize:
            raise SettingsError(self.path, f"larger than {MAX_SETTINGS_BYTES // (1024 * 1024)} MiB; not read")
        self._real = content.real if content.real != os.fspath(self.path) else None
        try:
            return content.data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SettingsError(
                self.path, f"not UTF-8 text (byte 0x{content.data[exc.start]:02x} at offset {exc.start})"
            ) from None

    def _refusal(self, exc: Refused) -> str:
        """The refusal's clause, naming the link on the way that leads out when there is one."""
        return link_out(self.root, self.path, self.edge) or exc.problem

    # -- writing ---------------------------------------------------------------------

    def write(self, text: str) -> None:
        """Replace the file's content in one rename (a link inside the edge keeps pointing at the new content)."""
        target = self._real or self.path
        try:
            if self.edge != "the project":  # a configuration folder the user named may not exist yet
                os.makedirs(self.root, exist_ok=True)
            replace_inside(self.root, target, text.encode("utf-8"))
        except Refused as exc:
            raise SettingsError(self.path, f"{self._refusal(exc)}; nothing was written") from None
        except OSError as exc:
            raise SettingsError(self.path, f"cannot write it: {exc.strerror or exc}; it was not changed") from None

    def remove(self) -> bool:
        """Delete the file (a file nia created and left empty); whether it was there."""
        target = self._real or self.path
        try:
            return remove_inside(self.root, target)
        except Refused as exc:
            raise SettingsError(self.path, f"{self._refusal(exc)}; it was not removed") from None
        except OSError as exc:
            raise SettingsError(self.path, f"cannot remove it: {exc.strerror or exc}") from None

    def remove_folder_if_empty(self) -> bool:
        """Remove the file's folders that nothing is left in (a ``.claude`` nia created), up to the edge.

        Whether any went. A folder with anything in it stays, and so does every folder above it.
        """
        removed = False
        folder = self.path.parent
        while folder != self.root and self.root in folder.parents:
            try:
                if not remove_inside(self.root, folder, folder=True):
                    break
            except OSError:
                break
            removed = True
            folder = folder.parent
        return removed


def check_json_nesting(text: str, name: str, limit: int = MAX_NESTING) -> None:
    """Refuse JSON nested deeper than ``limit`` before :mod:`json` recurses into it (one line naming the file)."""
    if text.count("[") + text.count("{") <= limit:
        return
    depth = 0
    for match in _JSON_TOKENS.finditer(text):
        char = match.group()[0]
        if char in "[{":
            depth += 1
            if depth > limit:
                line = text.count("\n", 0, match.start()) + 1
                raise SettingsError(f"{name}:{line}", f"nested more than {limit} levels deep; nia refuses such a file")
        elif char in "]}":
            depth -= 1


def parse_json_object(text: str, name: str) -> dict[str, Any]:
    """``text`` as a JSON object; :class:`SettingsError` naming ``name`` otherwise."""
    check_json_nesting(text, name)
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise SettingsError(name, f"not valid JSON ({exc}); nothing was changed") from None
    except RecursionError:
        raise SettingsError(name, "nested too deeply; nia refuses such a file") from None
    if not isinstance(data, dict):
        raise SettingsError(name, "expected a JSON object at the top; nothing was changed")
    return data
