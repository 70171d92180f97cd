"""Importing local plugins (``.nia/plugins``, ``--plugins-dir``) straight from source.

Local plugin code is what someone is editing right now, so it is always
compiled from the ``.py`` file and never from a cached ``.pyc``: two saves of
the same size within one second must both take effect. Each local plugin lives
under the ``nia_local_plugins`` package, so its modules (and only its modules)
can be dropped from :data:`sys.modules` for a reload.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any

PACKAGE = "nia_local_plugins"


class SourceOnlyLoader(importlib.machinery.SourceFileLoader):
    """Compiles from source every time; never reads or writes bytecode."""

    def get_code(self, fullname: str) -> types.CodeType:
        path = self.get_filename(fullname)
        return self.source_to_code(self.get_data(path), path)  # type: ignore[return-value]


class LocalPluginFinder(importlib.abc.MetaPathFinder):
    """Finds ``nia_local_plugins.NAME[.sub...]`` in the folders local plugins came from."""

    def __init__(self) -> None:
        self.roots: dict[str, Path] = {}
        self._lock = threading.Lock()

    def add(self, name: str, path: Path) -> str:
        with self._lock:
            self.roots[name] = path
        return f"{PACKAGE}.{name}"

    def discard(self, name: str) -> None:
        with self._lock:
            self.roots.pop(name, None)

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == PACKAGE:
            return importlib.machinery.ModuleSpec(PACKAGE, None, is_package=True)
        if not fullname.startswith(PACKAGE + "."):
            return None
        parts = fullname.split(".")[1:]
        root = self.roots.get(parts[0])
        if root is None:
            return None
        location = root
        for part in parts[1:]:
            location = location / part
            if not location.is_dir():
                location = location.with_suffix(".py")
        if location.is_dir():
            init = location / "__init__.py"
            if not init.is_file():
                return None
            return importlib.util.spec_from_file_location(
                fullname, init, loader=SourceOnlyLoader(fullname, str(init)), submodule_search_locations=[str(location)]
            )
        if location.is_file():
            return importlib.util.spec_from_file_location(
                fullname, location, loader=SourceOnlyLoader(fullname, str(location))
            )
        return None


class _NamespaceLoader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        module.__path__ = []


FINDER = LocalPluginFinder()


def install() -> LocalPluginFinder:
    if FINDER not in sys.meta_path:
        sys.meta_path.insert(0, FINDER)
    if PACKAGE not in sys.modules:
        spec = importlib.machinery.ModuleSpec(PACKAGE, _NamespaceLoader(), is_package=True)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        sys.modules[PACKAGE] = module
    return FINDER


def module_name(name: str) -> str:
    return f"{PACKAGE}.{name}"


def import_local(name: str, path: Path) -> Any:
    """Import the local plugin ``name`` from ``path`` (a ``.py`` file or a package folder)."""
    install()
    fullname = FINDER.add(name, path)
    drop_modules(name)
    importlib.invalidate_caches()
    return importlib.import_module(fullname)


def drop_modules(name: str) -> list[str]:
    """Remove the plugin's module and submodules (and nothing else) from :data:`sys.modules`."""
    prefix = module_name(name)
    dropped = [m for m in list(sys.modules) if m == prefix or m.startswith(prefix + ".")]
    for module in dropped:
        del sys.modules[module]
    return dropped
