"""The package import graph, read from the source with ``ast`` (nothing is imported or run).

A package that imports one that imports it back only works through lazy
imports and import order; the layers in docs/architecture.md say which way
each import may go. Every import counts: at module level, inside functions,
and under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("nia_core", "nia_plugins")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> list[str]:
    """Every module ``path`` imports, relative imports resolved."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            found.append(target)
            # ``from nia_core import sessions`` imports the subpackage, not a name of nia_core.
            found.extend(
                f"{target}.{alias.name}"
                for alias in node.names
                if (ROOT / target.replace(".", "/") / alias.name).is_dir()
            )
    return found


def _unit(module: str) -> str:
    """``nia_core.sessions.store`` -> ``nia_core.sessions``: nodes are nia_core's subpackages and modules."""
    return ".".join(module.split(".")[:2])


def _sources() -> dict[str, list[str]]:
    return {
        _module_name(path): _imports(path) for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))
    }


def _unit_graph(sources: dict[str, list[str]]) -> dict[str, dict[str, set[str]]]:
    """unit -> imported unit -> the modules of the first unit that import it."""
    graph: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for module, imports in sources.items():
        if not module.startswith("nia_core"):
            continue
        for target in imports:
            if target.startswith("nia_core") and _unit(target) != _unit(module):
                graph[_unit(module)][_unit(target)].add(module)
    return graph


def _cycles(graph: dict[str, dict[str, set[str]]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in graph.get(node, {}):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in list(graph):
        if node not in index:
            visit(node)
    return found


def test_no_package_of_nia_core_imports_one_that_imports_it_back():
    graph = _unit_graph(_sources())
    problems = []
    for component in _cycles(graph):
        edges = [
            f"{a} -> {b} (in {', '.join(sorted(graph[a][b]))})" for a in component for b in component if b in graph[a]
        ]
        problems.append("cycle: " + "; ".join(edges))
    assert problems == []


def test_nothing_outside_the_cli_imports_the_cli():
    offenders = [
        module
        for module, imports in _sources().items()
        if not module.startswith("nia_core.cli")
        and any(target == "nia_core.cli" or target.startswith("nia_core.cli.") for target in imports)
    ]
    assert offenders == []


def test_the_checker_sees_a_cycle_and_a_cli_import():
    """The checks above would pass vacuously if the parsing found nothing: they must see real imports."""
    sources = _sources()
    graph = _unit_graph(sources)
    assert "nia_core.context" in graph["nia_core.sessions"]
    assert graph["nia_core.cli"], "the CLI imports the layers below it"
    graph["nia_core.context"]["nia_core.sessions"].add("nia_core.context.example")
    assert _cycles(graph) == [["nia_core.context", "nia_core.sessions"]]


PLUGIN_MODULES = {"nia_core", "nia_core.hookspecs", "nia_core.testing", "nia_core.http"}
"""What a plugin may import from nia: ``nia_core``'s exported names, the hook declarations, the test kit,
the one HTTP client (provisional)."""
PLUGIN_FOLDERS = ("nia_plugins", "packs")
"""The built-in plugins, and plugin packs kept in this repository: written as any third party's would be."""


def _non_public(source: str, exported: set[str]) -> list[str]:
    """Each use of a ``nia_core`` name a third-party plugin could not use, in ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            module = node.module
            if module == "nia_core":
                found += [f"from nia_core import {a.name}" for a in node.names if a.name not in exported]
            elif module.startswith("nia_core.") and module not in PLUGIN_MODULES:
                found.append(f"from {module} import ...")
        elif isinstance(node, ast.Import):
            found += [
                f"import {a.name}"
                for a in node.names
                if a.name.startswith("nia_core.") and a.name not in PLUGIN_MODULES
            ]
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "nia_core"
            and node.attr not in exported
            and f"nia_core.{node.attr}" not in PLUGIN_MODULES
        ):
            found.append(f"nia_core.{node.attr}")
    return found


def test_built_ins_and_packs_use_only_nia_cores_public_names():
    """README: the built-in plugins use only the public API, so a third party can write each of them."""
    import nia_core

    exported = set(nia_core.__all__)
    offenders = [
        f"{path.relative_to(ROOT)}: {use}"
        for folder in PLUGIN_FOLDERS
        if (ROOT / folder).is_dir()
        for path in sorted((ROOT / folder).rglob("*.py"))
        for use in _non_public(path.read_text(encoding="utf-8"), exported)
    ]
    assert offenders == []
    assert (ROOT / "nia_plugins" / "instructions.py").is_file()  # the check read real plugins


def test_the_public_name_check_sees_each_kind_of_non_public_use():
    exported = {"ContextSource", "hookimpl"}
    source = (
        "import nia_core\nimport nia_core.files\nfrom nia_core import ContextSource, Snapshot\n"
        "from nia_core.project.paths import escape_name\nfrom nia_core.hookspecs import nia_summarize\n"
        "x = nia_core.markers\ny = nia_core.hookimpl\n"
    )
    assert _non_public(source, exported) == [
        "import nia_core.files",
        "from nia_core import Snapshot",
        "from nia_core.project.paths import ...",
        "nia_core.markers",
    ]
