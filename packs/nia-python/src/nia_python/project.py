"""``nia-python``: the interpreter and virtualenv in use, and the project's ``pyproject.toml``.

Two sources, in a folder that is a Python project's (see
:func:`nia_python.layout.python_folder`):

- ``python/interpreter``: the active virtualenv (``VIRTUAL_ENV``) or conda
  environment (``CONDA_PREFIX``), else the project's own ``.venv``/``venv``
  that is not active, else the ``python3`` on ``PATH``; the Python version
  from the environment's ``pyvenv.cfg``. Nothing is run: a repository's
  ``.venv/bin/python`` is the repository's program.
- ``python/project``: ``[project]`` name, version and ``requires-python``
  (Poetry's ``[tool.poetry]`` when there is no ``[project]``).
"""

from __future__ import annotations

import os
import re
import shutil
from functools import lru_cache
from typing import Any

from nia_core import ContextSource, Location, hookimpl

from nia_python.layout import PYPROJECT_LIMIT, files, parse_toml, python_folder, shown, why_not
from nia_python.settings import check_keys
from nia_python.text import code, plain, shorten

NIA_NAMESPACE = "python"

PYVENV_LIMIT = 64 * 1024
PROJECT_VENVS = (".venv", "venv")
_VERSION = re.compile(r"(\d+\.\d+(?:\.\d+)?(?:(?:a|b|rc)\d+)?)(?:\.(?:final|alpha|beta|candidate)\.\d+)?")
_IMPLEMENTATION = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,30}")


# -- the interpreter ---------------------------------------------------------------------------


def pyvenv(folder: str, root: str) -> tuple[str | None, str | None]:
    """``(version, implementation)`` from ``folder/pyvenv.cfg``; only values that look like them reach a prompt."""
    try:
        content = files.read(os.path.join(folder, "pyvenv.cfg"), root=root, limit=PYVENV_LIMIT)
    except OSError:
        return None, None
    fields: dict[str, str] = {}
    for line in content.data[:PYVENV_LIMIT].decode("utf-8", errors="replace").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            fields.setdefault(key.strip().lower(), value.strip())
    version = None
    for key in ("version_info", "version"):
        match = _VERSION.fullmatch(fields.get(key, ""))
        if match:
            version = match.group(1)
            break
    implementation = fields.get("implementation", "")
    return version, implementation if _IMPLEMENTATION.fullmatch(implementation) else None


def observe_interpreter(folder: str, root: str) -> dict[str, Any]:
    """What ``python`` means for the agent's commands here (read from the environment and files; nothing runs)."""
    active = os.environ.get("VIRTUAL_ENV", "").strip()
    if active and os.path.isabs(active):
        inside = shown(active, root) != active
        version, implementation = pyvenv(active, root if inside else active)  # the user's own venv is its own edge
        return {
            "env": "virtualenv",
            "path": shown(active, root),
            "active": True,
            "python": version,
            "implementation": implementation,
        }
    conda = os.environ.get("CONDA_PREFIX", "").strip()
    if conda and os.path.isabs(conda):
        name = os.environ.get("CONDA_DEFAULT_ENV", "").strip() or os.path.basename(conda)
        return {"env": "conda", "path": shown(conda, root), "active": True, "name": name}
    for base in dict.fromkeys((folder, root)):
        for name in PROJECT_VENVS:
            candidate = os.path.join(base, name)
            if os.path.lexists(os.path.join(candidate, "pyvenv.cfg")):
                version, implementation = pyvenv(candidate, root)
                return {
                    "env": "virtualenv",
                    "path": shown(candidate, root),
                    "active": False,
                    "python": version,
                    "implementation": implementation,
                }
    found = shutil.which("python3") or shutil.which("python")
    return {"env": "none", "python3": None if found is None else shown(found, root)}


def render_interpreter(value: dict[str, Any]) -> str:
    if value["env"] == "conda":
        return f"Python: the conda environment {code(value['name'])} is active ({code(value['path'])})."
    if value["env"] == "none":
        where = value.get("python3")
        on_path = f"`python3` on PATH is {code(where)}" if where else "no `python3` is on PATH"
        return f"Python: no virtualenv is active and the project has none; {on_path}."
    details = ", ".join(str(part) for part in (value.get("python"), value.get("implementation")) if part)
    version = f" (Python {details})" if details else ""
    path = value["path"]
    if value["active"]:
        return f"Python: the virtualenv {code(path)} is active{version}: `python` and its tools run from it."
    return (
        f"Python: no virtualenv is active in the agent's environment; the project has one at {code(path)}"
        f"{version}: run its tools as {code(os.path.join(path, 'bin', 'python') + ' -m ...')}."
    )


class Interpreter:
    """The loader: the very same value object while nothing changed, so nia compares it for free."""

    def __init__(self, folder: str, root: str) -> None:
        self.folder, self.root = folder, root
        self.last: dict[str, Any] | None = None

    def __call__(self) -> dict[str, Any]:
        value = observe_interpreter(self.folder, self.root)
        if value != self.last:
            self.last = value
        assert self.last is not None
        return self.last


@lru_cache(maxsize=64)
def interpreter_source(folder: str, root: str) -> ContextSource:
    return ContextSource(
        key="python/interpreter",
        load=Interpreter(folder, root),
        baseline=render_interpreter,
        update=lambda _old, new: "The Python environment changed. " + render_interpreter(new),
        removal=lambda _old: "The Python environment given earlier no longer applies.",
        timeout=1.0,
        description="The virtualenv and Python version the agent's commands run with.",
    )


# -- pyproject.toml ----------------------------------------------------------------------------


def project_value(data: bytes, file: str) -> dict[str, Any]:
    table, error = parse_toml(data)
    if table is None:
        return {"file": file, "error": error}
    project = table.get("project")
    poetry = table.get("tool", {}).get("poetry") if isinstance(table.get("tool"), dict) else None
    value: dict[str, Any] = {"file": file}
    if isinstance(project, dict):
        value["name"] = project.get("name")
        dynamic = project.get("dynamic")
        version = project.get("version")
        if version is None and isinstance(dynamic, list) and "version" in dynamic:
            version = "(dynamic)"
        value["version"] = version
        value["requires_python"] = project.get("requires-python")
    elif isinstance(poetry, dict):
        value["name"] = poetry.get("name")
        value["version"] = poetry.get("version")
        dependencies = poetry.get("dependencies")
        value["requires_python"] = dependencies.get("python") if isinstance(dependencies, dict) else None
    for key in ("name", "version", "requires_python"):
        if not isinstance(value.get(key), str) or not value[key].strip():
            value[key] = None
        else:
            value[key] = shorten(value[key], 200)
    return value


def _describe(value: dict[str, Any]) -> str:
    if value.get("error"):
        return f"{code(value['file'])} cannot be read: it {plain(value['error'])}"
    parts = [code(value["name"]) if value.get("name") else "no name"]
    if value.get("version"):
        parts.append(plain(value["version"], 60))
    text = " ".join(parts)
    if value.get("requires_python"):
        text += f", requires Python {plain(value['requires_python'], 60)}"
    return text


def render_project(value: dict[str, Any]) -> str:
    if value.get("error"):
        return f"Python project: {_describe(value)}."
    return f"Python project ({code(value['file'])}): {_describe(value)}."


def render_project_update(old: dict[str, Any], new: dict[str, Any]) -> str:
    if old.get("error") or new.get("error"):
        return "The Python project changed. " + render_project(new)
    return f"The Python project ({code(new['file'])}) is now {_describe(new)} (was {_describe(old)})."


@lru_cache(maxsize=64)
def project_source(folder: str, root: str) -> ContextSource:
    file = shown(os.path.join(folder, "pyproject.toml"), root)
    return ContextSource(
        key="python/project",
        load=files.loader(
            os.path.join(folder, "pyproject.toml"),
            root=root,
            limit=PYPROJECT_LIMIT,
            derive=lambda content: (
                {"file": file, "error": f"is larger than {PYPROJECT_LIMIT // 1024 // 1024} MiB"}
                if content.oversize
                else project_value(content.data, file)
            ),
            on_error=lambda exc: {"file": file, "error": why_not(exc)},
        ),
        baseline=render_project,
        update=render_project_update,
        removal=lambda old: f"The Python project details given earlier ({code(old['file'])}) no longer apply.",
        timeout=1.0,
        description="The project's name, version and supported Python, from pyproject.toml.",
    )


@hookimpl
def nia_context_sources(location: Location, config: dict[str, Any]) -> list[ContextSource]:
    check_keys("nia-python", config, ())
    root = str(location.root)
    folder = python_folder(str(location.path), root)
    if folder is None:
        return []
    sources = [interpreter_source(folder, root)]
    if os.path.lexists(os.path.join(folder, "pyproject.toml")):
        sources.append(project_source(folder, root))
    return sources
