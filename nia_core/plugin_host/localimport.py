"""Importing local plugins (``.nia/plugins``, ``--plugins-dir``) straight from source.

Local plugin code is what someone is editing right now, so it is always
compiled from the ``.py`` file and never from a cached ``.pyc``: two saves of
the same size within one second must both take effect. Each local plugin lives
under the ``nia_local_plugins`` package, so its modules (and only its modules)
can be dropped from :data:`sys.modules` for a reload.

Plugins installed in editable mode (``pip install -e``) are under development
too: :class:`EditableSourceFinder` makes their packages compile from source as
well, and :func:`editable_packages` finds their source folders from each
distribution's ``direct_url.json``.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import sys
import threading
import types
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from nia_core.files import Refused, read_checked

if TYPE_CHECKING:  # importing it costs every `nia` call; only nia dev needs it, and passes entry points in
    import importlib_metadata

PACKAGE = "nia_local_plugins"


SOURCE_LIMIT = 16 * 1024 * 1024
"""The largest plugin module nia compiles: a module is code someone wrote, not data."""


class SourceOnlyLoader(importlib.machinery.SourceFileLoader):
    """Compiles from source every time; never reads or writes bytecode.

    The source is read through the checked reader: a local plugin of a project
    is project code, so a module whose real path leaves the project (a symlink
    out, a folder on the way that is one, a hard link) is refused like any
    other project file, and a FIFO or a device is never opened for reading.
    """

    def __init__(self, fullname: str, path: str, edge: Path | None = None) -> None:
        super().__init__(fullname, path)
        self.edge = edge

    def get_code(self, fullname: str) -> types.CodeType:
        path = self.get_filename(fullname)
        return self.source_to_code(self.get_data(path), path)  # type: ignore[return-value]

    def get_data(self, path: str) -> bytes:
        try:
            content = read_checked(path, self.edge, SOURCE_LIMIT)
        except Refused as exc:
            raise ImportError(f"{self._shown(path)} {exc.problem}", path=path) from None
        if content.oversize:
            raise ImportError(f"{self._shown(path)} is larger than {SOURCE_LIMIT // (1024 * 1024)} MiB", path=path)
        return content.data

    def _shown(self, path: str) -> str:
        if self.edge is None:
            return path
        return os.path.relpath(path, self.edge)


class LocalPluginFinder:
    """Finds ``nia_local_plugins.NAME[.sub...]`` in the folders local plugins came from.

    The import system calls finders and loaders by protocol: the :mod:`importlib.abc`
    base classes would only add the import of ``importlib.resources`` to every start.
    """

    def __init__(self) -> None:
        self.roots: dict[str, Path] = {}
        self.edges: dict[str, Path | None] = {}
        self._lock = threading.Lock()

    def add(self, name: str, path: Path, edge: Path | None = None) -> str:
        """Import local plugin ``name`` from ``path``; its modules must stay inside ``edge`` (the project)."""
        with self._lock:
            self.roots[name] = path
            self.edges[name] = edge
        return f"{PACKAGE}.{name}"

    def discard(self, name: str) -> None:
        with self._lock:
            self.roots.pop(name, None)
            self.edges.pop(name, None)

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
        edge = self.edges.get(parts[0])
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
                fullname,
                init,
                loader=SourceOnlyLoader(fullname, str(init), edge),
                submodule_search_locations=[str(location)],
            )
        if location.is_file():
            return importlib.util.spec_from_file_location(
                fullname, location, loader=SourceOnlyLoader(fullname, str(location), edge)
            )
        return None


class _NamespaceLoader:
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        module.__path__ = []


FINDER = LocalPluginFinder()


def install() -> LocalPluginFinder:
    if FINDER not in sys.meta_path:
        sys.meta_path.insert(0, FINDER)
    if PACKAGE not in sys.modules:
        spec = importlib.machinery.ModuleSpec(PACKAGE, _NamespaceLoader(), is_package=True)  # type: ignore[arg-type]
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        sys.modules[PACKAGE] = module
    return FINDER


def module_name(name: str) -> str:
    return f"{PACKAGE}.{name}"


def edge_of(path: Path, project: Path) -> Path | None:
    """The folder a local plugin's modules must stay in: the project, for a plugin found inside it.

    Decided by the path as written (``.nia/plugins/x.py``, a ``--plugins-dir``
    inside the project), not by where its links lead: a ``.nia`` that is itself
    a link out is still the project's, and refused by the reader. A
    ``--plugins-dir`` outside the project is the user's own choice of code.
    """
    return project if os.path.abspath(path).startswith(os.path.join(os.path.abspath(project), "")) else None


def import_local(name: str, path: Path, edge: Path | None = None) -> Any:
    """Import the local plugin ``name`` from ``path`` (a ``.py`` file or a package folder), inside ``edge``."""
    install()
    fullname = FINDER.add(name, path, edge)
    drop_modules(name)
    importlib.invalidate_caches()
    spec = FINDER.find_spec(fullname)
    if spec is None:
        raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
    return exec_fresh(spec)


def exec_fresh(spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
    """A new module object for ``spec``, executed: the importlib docs' recipe for importing a file directly.

    Not ``import_module``: that waits for the module's import lock, and an
    earlier import of the same plugin that ran past its deadline still holds
    it (a thread cannot be stopped), so the fixed version saved under
    ``nia dev`` would wait for it forever.
    """
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)  # type: ignore[union-attr]
    except BaseException:
        if sys.modules.get(spec.name) is module:
            del sys.modules[spec.name]
        raise
    module = sys.modules.get(spec.name, module)  # a module may put something else in its place, as import allows
    parent, _, child = spec.name.rpartition(".")
    if parent in sys.modules:
        setattr(sys.modules[parent], child, module)
    return module


def drop_modules(name: str) -> list[str]:
    """Remove the plugin's module and submodules (and nothing else) from :data:`sys.modules`."""
    return list(take_modules(module_name(name)))


def take_modules(prefix: str) -> dict[str, types.ModuleType]:
    """Remove module ``prefix`` and its submodules from :data:`sys.modules`; return them for a rollback."""
    taken = {m: sys.modules[m] for m in list(sys.modules) if m == prefix or m.startswith(prefix + ".")}
    for module in taken:
        sys.modules.pop(module, None)
    return taken


def restore_modules(prefix: str, modules: dict[str, types.ModuleType]) -> None:
    """Put back what :func:`take_modules` took, dropping whatever was imported since under ``prefix``."""
    take_modules(prefix)
    sys.modules.update(modules)
    parent = sys.modules.get(prefix.rpartition(".")[0]) if "." in prefix else None
    own = modules.get(prefix)
    if parent is not None and own is not None:
        setattr(parent, prefix.rpartition(".")[2], own)


# -- editable installs ------------------------------------------------------------------


class EditableSourceFinder:
    """Swaps in :class:`SourceOnlyLoader` for the packages of editable-installed plugins.

    It asks the finders after it (the path finder, setuptools' editable
    finder...) where a module is, and only changes how its code is loaded, so
    it works for every editable layout.
    """

    def __init__(self) -> None:
        self.packages: set[str] = set()
        self._busy = threading.local()

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname.partition(".")[0] not in self.packages or getattr(self._busy, "active", False):
            return None
        self._busy.active = True
        try:
            spec = _find_after(self, fullname, path, target)
        finally:
            self._busy.active = False
        if spec is not None and spec.origin and type(spec.loader) is importlib.machinery.SourceFileLoader:
            spec.loader = SourceOnlyLoader(fullname, spec.origin)
        return spec


def _find_after(
    finder: object, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None
) -> importlib.machinery.ModuleSpec | None:
    meta_path = list(sys.meta_path)
    for other in meta_path[meta_path.index(finder) + 1 :] if finder in meta_path else meta_path:
        find_spec = getattr(other, "find_spec", None)
        if find_spec is None:
            continue
        spec = find_spec(fullname, path, target)
        if spec is not None:
            return spec  # type: ignore[no-any-return]
    return None


EDITABLE_FINDER = EditableSourceFinder()


def compile_from_source(packages: Iterable[str]) -> EditableSourceFinder:
    """From now on, import these top-level packages (and their submodules) from source only."""
    EDITABLE_FINDER.packages.update(packages)
    if EDITABLE_FINDER not in sys.meta_path:
        sys.meta_path.insert(0, EDITABLE_FINDER)
    return EDITABLE_FINDER


@dataclass
class EditablePackage:
    """A top-level package of an editable-installed distribution that declares nia plugins."""

    package: str
    distribution: str
    project: Path
    """The project folder the distribution was installed from (``direct_url.json``)."""
    root: Path
    """The package's source: its folder, or its ``.py`` file for a single module."""
    plugins: list[str] = field(default_factory=list)
    """Entry-point names (plugin names) whose module lives in this package."""


def editable_project(dist: Any) -> Path | None:
    """The project folder of an editable install, from ``direct_url.json`` (PEP 610), else ``None``."""
    try:
        text = dist.read_text("direct_url.json")
        data = json.loads(text) if text else None
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not (data.get("dir_info") or {}).get("editable"):
        return None
    url = urlparse(str(data.get("url", "")))
    if url.scheme != "file":
        return None
    return Path(unquote(url.path)).resolve()


def package_root(package: str, project: Path) -> Path:
    """Where ``package``'s source lives (without importing it); the project folder if unknown."""
    try:
        spec = _find_after(EDITABLE_FINDER, package, None, None)
    except (ImportError, ValueError):
        spec = None
    if spec is not None:
        if spec.submodule_search_locations:
            return Path(next(iter(spec.submodule_search_locations))).resolve()
        if spec.origin and spec.origin not in ("built-in", "frozen"):
            return Path(spec.origin).resolve()
    return project


def editable_packages(entry_points: Iterable[importlib_metadata.EntryPoint]) -> list[EditablePackage]:
    """The packages of editable-installed distributions among ``entry_points``, one per top-level package."""
    found: dict[str, EditablePackage] = {}
    for entry_point in entry_points:
        dist = entry_point.dist
        project = editable_project(dist) if dist is not None else None
        if dist is None or project is None:
            continue
        package = entry_point.module.partition(".")[0]
        editable = found.get(package)
        if editable is None:
            root = package_root(package, project)
            editable = found[package] = EditablePackage(package, dist.name, project, root)
        if entry_point.name not in editable.plugins:
            editable.plugins.append(entry_point.name)
    return list(found.values())
