"""The public API is chosen: what ``nia_core`` and ``nia_core.runtime`` export, what they load, what the docs teach."""

from __future__ import annotations

import ast
import importlib
import json
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

import nia_core

ROOT = Path(__file__).resolve().parent.parent
PUBLIC = {
    "nia_core",
    "nia_core.testing",
    "nia_core.runtime",
    "nia_core.hookspecs",
    "nia_core.context",  # the engine, for tests and tools
    # provisional, documented as such in docs/plugins.md
    "nia_core.http",  # the one HTTP client, for plugins that call a web service
    "nia_core.providers.remote",
    "nia_core.plugin_host.reload",
    "nia_core.plugin_host.watch",
}
INTERNAL_PACKAGES = ["project", "plugin_host", "sessions", "providers", "cli", "agents", "mcp"]


def loaded_by(statement: str) -> list[str]:
    code = f"import json, sys; {statement}; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    return json.loads(done.stdout)


def test_importing_nia_core_loads_nothing_until_a_name_is_used():
    """PEP 562: ``nia --help`` and other commands that use no engine name do not pay for the engine."""
    modules = loaded_by("import nia_core")
    assert [m for m in modules if m.startswith("nia_core.")] == ["nia_core.lazy"]  # the mechanism: stdlib only
    assert "pluggy" not in modules and "dataclasses" not in modules


def test_importing_nia_core_loads_the_engine_only():
    modules = loaded_by("import nia_core; nia_core.ContextSource; nia_core.Message; nia_core.hookimpl")
    heavy = [
        m
        for m in modules
        if m.split(".")[:2]
        in (
            ["nia_core", p]
            for p in ("project", "plugin_host", "sessions", "providers", "runtime", "cli", "agents", "mcp")
        )
        or m in ("click", "http.client", "urllib.request", "sqlite3", "tomlkit")
    ]
    assert "nia_core.context" in modules and "nia_core.message" in modules
    assert heavy == []


@pytest.mark.parametrize("module", ["nia_core", "nia_core.runtime"])
def test_every_exported_name_resolves(module):
    imported = importlib.import_module(module)
    assert imported.__all__ and all(hasattr(imported, name) for name in imported.__all__)
    assert set(imported.__all__) <= set(dir(imported))
    with pytest.raises(AttributeError, match="no attribute 'not_exported'"):
        imported.not_exported  # noqa: B018 - the lookup is the test


def test_a_provider_needs_nothing_but_nia_core():
    import nia_core

    class Shout:
        name = "shout"

        def lower(self, request: nia_core.ModelRequest) -> dict:
            return {"last": request.messages[-1].text}

        def send(self, request: nia_core.ModelRequest, *, stream: nia_core.StreamCallback | None = None):
            if not request.messages:
                raise nia_core.ProviderError("shout: nothing to shout")
            return nia_core.Reply(text=self.lower(request)["last"].upper())

    request = nia_core.ModelRequest("s1", "shout/x", "base", (nia_core.Message("user", "hi"),))
    assert isinstance(Shout(), nia_core.Provider)
    assert Shout().send(request).text == "HI"
    assert nia_core.split_model("shout/x") == ("shout", "x")


def test_every_doc_example_imports_only_public_modules():
    offenders = []
    for doc in [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]:
        for block in re.findall(r"```python\n(.*?)```", doc.read_text(), re.S):
            try:
                tree = ast.parse(block)
            except SyntaxError:
                continue  # a fragment, not a program
            for node in ast.walk(tree):
                names = []
                if isinstance(node, ast.ImportFrom) and node.module:
                    names = [node.module]
                elif isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                offenders += [f"{doc.name}: {n}" for n in names if n.startswith("nia_core") and n not in PUBLIC]
    assert offenders == []


@pytest.mark.parametrize("package", INTERNAL_PACKAGES)
def test_internal_packages_say_so(package):
    doc = importlib.import_module(f"nia_core.{package}").__doc__ or ""
    assert "Internal: not part of nia's public API" in doc


def test_no_exported_name_is_also_a_module_of_its_package():
    """Python binds a submodule to its package's attribute of the same name once it is imported, so an exported
    function named like its own module (``project/locate.py`` exporting ``locate``) turns into the module for
    every later ``from package import name``."""
    clashes = []
    for info in pkgutil.walk_packages(nia_core.__path__, "nia_core."):
        if not info.ispkg or info.name.startswith("nia_core.templates"):
            continue
        package = importlib.import_module(info.name)
        modules = {m.name for m in pkgutil.iter_modules(package.__path__)}
        clashes += [f"{info.name}.{name}" for name in getattr(package, "__all__", ()) if name in modules]
    modules = {m.name for m in pkgutil.iter_modules(nia_core.__path__)}
    clashes += [f"nia_core.{name}" for name in nia_core.__all__ if name in modules]
    assert clashes == []


def test_the_engine_is_nia_core_context_and_its_old_top_level_names_warn():
    import nia_core.context

    for name in ("initialize", "reconcile", "replace", "SystemContextRegistry", "Snapshot"):
        assert name not in nia_core.__all__ and name in nia_core.context.__all__
        with pytest.warns(DeprecationWarning, match=f"nia_core.{name} is the engine.s: import it from nia_core.con"):
            assert getattr(nia_core, name) is getattr(nia_core.context, name)


@pytest.mark.parametrize("package", ["nia_core", "nia_core.runtime", "nia_core.sessions", "nia_core.project"])
def test_each_public_name_is_written_once_in_its_packages_type_checking_block(package):
    """``nia_core.lazy`` reads the names from there: no second table to keep in step."""
    from nia_core.lazy import exported

    module = importlib.import_module(package)
    source = Path(module.__file__).read_text(encoding="utf-8")
    assert sorted(exported(package)) == module.__all__
    for name in module.__all__:
        assert source.count(f" as {name}\n") == 1, name
