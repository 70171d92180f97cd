"""Rendering the plugin template into a new plugin package (``nia plugin new``).

The template is ``plugin-template/`` in nia's repository, a real package that
installs and passes its tests as it is. nia ships it as package data
(``nia_core/templates/plugin`` points at it), so a wheel install can render it
too. Rendering swaps the template's own names for the new plugin's: its
distribution and plugin name, its module, and its key namespace.
"""

from __future__ import annotations

import keyword
import os
import re
from dataclasses import dataclass
from pathlib import Path

from nia_core.about import DISTRIBUTION
from nia_core.context.keys import RESERVED_NAMESPACE, validate_key
from nia_core.errors import InvalidSourceKey, NiaError, UsageError

TEMPLATE_NAME = "nia-template-plugin"
TEMPLATE_MODULE = "nia_template_plugin"
TEMPLATE_NAMESPACE = "template-plugin"
SOURCE_DEFAULT = "${NIA_SOURCE:-nia-context}"
"""How the template installs nia: ``NIA_SOURCE`` names where from; :func:`render` writes this nia's own source as
the default, since nia is not on the package index yet."""
_SHELL_SAFE = re.compile(r"[\w./:@+=,~% -]+")

NAME_PATTERN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")
SKIPPED_FOLDERS = {"__pycache__", "build", "dist", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".venv", ".git"}
SKIPPED_SUFFIXES = (".pyc", ".pyo", ".egg-info")
TAKEN_MODULES = {"nia_core", "nia_plugins", "nia_local_plugins"}


@dataclass(frozen=True)
class PluginNames:
    """The names a new plugin package is rendered with."""

    name: str
    """Distribution and plugin (entry point) name, e.g. ``acme-jira``."""
    module: str
    """Import name, e.g. ``acme_jira``."""
    namespace: str
    """Key namespace (``NIA_NAMESPACE``), e.g. ``jira`` for keys like ``jira/issues``."""

    @classmethod
    def from_name(cls, name: str, namespace: str | None = None) -> PluginNames:
        """Derive the module and namespace from ``name``; raises :class:`UsageError` for unusable names."""
        if not NAME_PATTERN.fullmatch(name):
            raise UsageError(
                f"plugin name {name!r} is not a package name: use letters, digits, '-', '_' and '.', "
                "starting and ending with a letter or digit"
            )
        module = re.sub(r"[-.]+", "_", name.lower())
        if not module.isidentifier() or keyword.iskeyword(module):
            raise UsageError(f"plugin name {name!r} gives the module name {module!r}, which Python cannot import")
        if module in TAKEN_MODULES:
            raise UsageError(f"plugin name {name!r} gives the module name {module!r}, which nia itself uses")
        if namespace is None:
            lowered = name.lower()
            namespace = lowered[len("nia-") :] if lowered.startswith("nia-") and len(lowered) > 4 else lowered
        try:
            validate_key(f"{namespace}/x")
        except InvalidSourceKey:
            raise UsageError(
                f"namespace {namespace!r} is not a key namespace: lowercase letters, digits, '-', '_' and '.'"
            ) from None
        if namespace == RESERVED_NAMESPACE:
            raise UsageError(f"namespace {namespace!r} is reserved for nia's built-in plugins")
        return cls(name, module, namespace)


def template_dir() -> Path:
    """The bundled template (a symlink to ``plugin-template/`` in a checkout, a copy in a wheel)."""
    folder = Path(__file__).resolve().parent / "templates" / "plugin"
    if not (folder / "pyproject.toml").is_file():
        raise NiaError(f"the plugin template is missing from this nia installation ({folder})")
    return folder


def _skipped(name: str) -> bool:
    return name in SKIPPED_FOLDERS or name.endswith(SKIPPED_SUFFIXES)


def template_files(template: Path) -> list[Path]:
    """The template's files, relative to it, without caches and build output."""
    found = []
    for folder, folders, files in os.walk(template):
        folders[:] = sorted(f for f in folders if not _skipped(f))
        for name in sorted(files):
            if not _skipped(name):
                found.append((Path(folder) / name).relative_to(template))
    return found


def nia_source() -> str:
    """What pip installs this very nia from: its source folder, wheel or VCS URL (PEP 610), else its name.

    Read from the ``direct_url.json`` pip wrote when it installed nia, so a
    plugin made by ``nia plugin new`` installs the nia that made it, wherever
    that came from. An install from the package index has none: the name.
    """
    import json
    from importlib.metadata import PackageNotFoundError, distribution
    from urllib.parse import unquote, urlparse

    try:
        text = distribution(DISTRIBUTION).read_text("direct_url.json")
        data = json.loads(text) if text else None
    except (PackageNotFoundError, OSError, ValueError):
        return DISTRIBUTION
    if not isinstance(data, dict):
        return DISTRIBUTION
    url = data.get("url")
    if not isinstance(url, str) or not url:
        return DISTRIBUTION
    vcs = data.get("vcs_info")
    if isinstance(vcs, dict) and isinstance(vcs.get("vcs"), str):
        commit = vcs.get("commit_id")
        return f"{DISTRIBUTION} @ {vcs['vcs']}+{url}" + (f"@{commit}" if isinstance(commit, str) else "")
    parsed = urlparse(url)
    found = unquote(parsed.path) if parsed.scheme == "file" else f"{DISTRIBUTION} @ {url}"
    return found if _SHELL_SAFE.fullmatch(found) else DISTRIBUTION  # it goes inside "${NIA_SOURCE:-...}"


def substitute(text: str, names: PluginNames, source: str = DISTRIBUTION) -> str:
    """Swap the template's names for ``names`` (the longest first, so no name is swapped twice), and the nia
    its commands install for ``source``."""
    table = {
        TEMPLATE_NAME: names.name,
        TEMPLATE_MODULE: names.module,
        TEMPLATE_NAMESPACE: names.namespace,
        SOURCE_DEFAULT: SOURCE_DEFAULT.replace(DISTRIBUTION, source),
    }
    pattern = re.compile("|".join(re.escape(token) for token in sorted(table, key=len, reverse=True)))
    return pattern.sub(lambda match: table[match.group(0)], text)


def _name_max(folder: Path) -> int:
    """The longest file name the file system holding ``folder`` (or its nearest existing parent) takes."""
    for candidate in (folder, *folder.parents):
        try:
            if candidate.is_dir():
                return os.pathconf(candidate, "PC_NAME_MAX")
        except (OSError, ValueError):
            continue
    return 255


def _check_name_lengths(target: Path, relatives: list[Path], names: PluginNames) -> None:
    """A name too long for the file system is a usage error, before anything is written."""
    limit = _name_max(target.parent)
    for part in (target.name, *(part for relative in relatives for part in relative.parts)):
        size = len(os.fsencode(part))
        if size > limit:
            raise UsageError(
                f"plugin name {names.name[:40] + '...' if len(names.name) > 40 else names.name!r} is too long "
                f"for the file system: the file name {part[:40]}... would take {size} bytes, "
                f"at most {limit} are allowed here"
            )


def render(target: Path, names: PluginNames, template: Path | None = None, nia: str | None = None) -> list[Path]:
    """Write a new plugin package into ``target``; refuses a folder that exists and is not empty.

    ``nia``: what its install commands take nia from when ``NIA_SOURCE`` is unset (default: :func:`nia_source`).
    """
    nia = nia_source() if nia is None else nia
    source = template or template_dir()
    relatives = template_files(source)
    _check_name_lengths(target, [Path(substitute(str(relative), names)) for relative in relatives], names)
    try:
        if target.exists() and (not target.is_dir() or any(target.iterdir())):
            raise UsageError(f"{target} already exists; choose another --dir or remove it first")
    except OSError as exc:
        raise UsageError(f"cannot create the plugin in {target}: {exc.strerror or exc}") from None
    written = []
    for relative in relatives:
        text = (source / relative).read_text(encoding="utf-8")
        destination = target / substitute(str(relative), names)
        try:
            destination.parent.mkdir(parents=True, exist_ok=True)
            destination.write_text(substitute(text, names, nia), encoding="utf-8")
        except OSError as exc:
            raise NiaError(f"cannot create the plugin: {exc.filename or target}: {exc.strerror or exc}") from None
        written.append(destination)
    return written
