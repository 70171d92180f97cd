"""Whether a warm runtime still loads what a fresh process would: plugin code by content, nia's code by stat.

A hook in a new process imports every plugin from its files as they are now.
A resident process imported them earlier, so before each hook it compares
what that import depended on with what is on disk:

- each project's local plugins (``.nia/plugins``, every file by content, with
  :class:`~nia_core.plugin_host.fingerprint.DigestCache`'s "racy" rule) and its
  ``.nia/project.toml`` (``[plugins] disabled`` decides what loads); and whether
  another project's local plugin of the same name is imported (one process
  holds one module of a name);
- the source of editable-installed plugins (``pip install -e``), likewise;
- nia's own modules, by ``stat`` signature (an editable checkout of nia), and
  every module imported from outside the ``sys.path`` folders of the scope (a
  helper a plugin imports from the project): a change ends the process, as a
  new one imports it afresh.

The fingerprint of a project is taken before its plugins are imported, so an
edit made while they load is seen at the next hook. Installed (not editable)
plugins change only with a ``sys.path`` folder, which is part of the scope.
"""

from __future__ import annotations

import importlib
import os
import sys
import types
from pathlib import Path
from typing import Any

from nia_core.context import Location
from nia_core.errors import escape_name
from nia_core.files import Signature, signature
from nia_core.plugin_host.discovery import local_plugin_paths
from nia_core.plugin_host.fingerprint import WATCHED_ENTRIES, DigestCache, TooMany
from nia_core.plugin_host.load import local_folders
from nia_core.plugin_host.localimport import PACKAGE, take_modules


class TooLarge(Exception):
    """The project's plugin folders hold more than :data:`WATCHED_ENTRIES`: no resident answers for it."""


class Freshness:
    def __init__(
        self, plugins_dirs: tuple[str, ...] = (), path: tuple[str, ...] = (), installed: tuple[Any, ...] = ()
    ) -> None:
        self.plugins_dirs = plugins_dirs
        watched = [entry for entry, mtime in zip(path, installed, strict=False) if mtime is not None]
        self.installed = tuple(os.path.join(entry, "") for entry in watched if os.path.isabs(entry))
        """The ``sys.path`` folders (and zip files) the scope watches: what is installed there changes the scope."""
        self.digests = DigestCache()
        self.prints: dict[Path, tuple[Any, ...]] = {}
        self.imported: dict[str, Path] = {}
        """The local plugins the warm hosts imported (or will): name -> where from."""
        self.code: dict[str, Signature | None] = {}
        self._seen: set[str] = set()
        self._editable: list[tuple[str, Path]] | None = None
        self.too_large: dict[Path, str] = {}
        """Projects this process does not answer for, and why (:class:`TooLarge`)."""

    # -- plugins ------------------------------------------------------------------------

    def check(self, location: Location) -> bool:
        """Whether the warm plugin hosts must be dropped before ``location``'s project is answered (then forget all).

        They must when the plugin code of the project changed since its host was
        loaded, and when one of its local plugins has the name of another
        project's local plugin already imported: local plugins are modules named
        ``nia_local_plugins.NAME`` in the whole process, so two of one name
        cannot be loaded side by side (the other project's host would import the
        submodules of this one's, and the reverse). Projects whose local plugins
        have different names keep their hosts warm together.
        """
        current = self.fingerprint(location)
        local = self.local_plugins(location)
        clash = any(self.imported.get(name, path) != path for name, path in local.items())
        known = self.prints.get(location.root)
        if clash or (known is not None and known != current):
            self.prints = {location.root: current}  # every project's host is loaded afresh after a rebuild
            self.imported = local
            return True
        self.prints[location.root] = current
        self.imported.update(local)
        return False

    def local_plugins(self, location: Location) -> dict[str, Path]:
        """The local plugins a host of ``location`` imports: name -> file or package folder."""
        found: dict[str, Path] = {}
        for folder in local_folders(location, self.plugins_dirs):
            for name, path in local_plugin_paths(folder):
                found.setdefault(name, path)
        return found

    def fingerprint(self, location: Location) -> tuple[Any, ...]:
        """What the project's plugin code depends on; :class:`TooLarge` past :data:`WATCHED_ENTRIES`."""
        if location.root in self.too_large:
            raise TooLarge(self.too_large[location.root])
        budget = [WATCHED_ENTRIES]
        try:
            folders = [self.digests.fingerprint(f, budget) for f in local_folders(location, self.plugins_dirs)]
            editable = [self.digests.fingerprint(root, budget) for _, root in self.editable()]
        except TooMany as exc:
            why = (
                f"the plugin folders of {escape_name(str(location.root))} hold more than {WATCHED_ENTRIES:,} files "
                f"and folders ({escape_name(str(exc))}): too many to check at every hook"
            )
            self.too_large[location.root] = why  # for this process's life: a later walk would cost as much
            raise TooLarge(why) from None
        config = self.digests.digest(str(location.nia_dir / "project.toml"))
        return (*folders, config, *editable)

    def editable(self) -> list[tuple[str, Path]]:
        """``(top-level package, source)`` of each editable-installed plugin, found once (the scope fixes them)."""
        if self._editable is None:
            from nia_core.plugin_host.discovery import ENTRY_POINT_GROUP, entry_point_records

            found: list[tuple[str, Path]] = []
            if any(record.editable for record in entry_point_records()):
                import importlib_metadata

                from nia_core.plugin_host.localimport import editable_packages

                points = importlib_metadata.entry_points(group=ENTRY_POINT_GROUP)
                found = [(package.package, package.root) for package in editable_packages(points)]
            self._editable = found
        return self._editable

    def forget_modules(self) -> None:
        """Drop local and editable plugin modules: the next host imports them from their files, as a new process."""
        take_modules(PACKAGE)
        for package, _ in self.editable():
            take_modules(package)
        importlib.invalidate_caches()

    # -- nia itself ---------------------------------------------------------------------

    def remember_code(self) -> None:
        """Note the files of the modules imported so far that the scope does not cover (later hooks compare them).

        nia's own modules, and every module imported from outside the ``sys.path``
        folders the scope watches (whose installed distributions it covers): a
        helper a plugin imports from a folder it put on ``sys.path`` or from the
        project, or loads from a file. Local and editable plugins are compared by content instead.
        """
        skipped = (PACKAGE, *(package for package, _ in self.editable()))
        for name, module in list(sys.modules.items()):
            if name in self._seen:
                continue
            self._seen.add(name)
            if name.partition(".")[0] in skipped or not issubclass(type(module), types.ModuleType):
                continue
            path = vars(module).get("__file__")
            if not isinstance(path, str):
                continue
            if name.startswith(("nia_core", "nia_plugins")) or not path.startswith(self.installed):
                self.code[path] = _signature(path)

    def code_changed(self) -> str | None:
        """The first module file of :meth:`remember_code` that changed since it was imported, or ``None``."""
        for path, known in self.code.items():
            if _signature(path) != known:
                return path
        return None


def _signature(path: str) -> Signature | None:
    try:
        return signature(os.stat(path))
    except OSError:
        return None
