"""``nia hook install|uninstall|status`` for a host that loads a code module nia writes (OpenCode's plugins).

The module is one file at the host's settings place for the scope
(:attr:`HostAdapter.settings`), made by :attr:`PluginModule.render` for the
program to run. It is nia's only while it is byte for byte what nia wrote for
some program: install replaces such a file (a newer nia, another program) and
refuses any other, uninstall removes it and leaves any other alone.

The module names this machine's nia, so in a project it is kept out of
``git status``: a ``.gitignore`` beside it lists it (nia creates that file,
listing itself too, or appends its marked lines to the one there), and
uninstall takes back exactly what install added. Every file goes through the
checked settings reader and writer (:mod:`nia_core.agents.settings_file`).
"""

from __future__ import annotations

from pathlib import Path

from nia_core.agents.contract import HostAdapter, PluginModule
from nia_core.agents.hook_install import Change, Outcome, Scope, Status, command_for, hooks_file, program_problem
from nia_core.agents.hook_install import resolve_program as _resolve
from nia_core.agents.settings_file import SettingsError, SettingsFile

IGNORE = ".gitignore"
HEADER = "# nia hook install: nia's plugin names this machine's nia, so git leaves it out"


def _module(adapter: HostAdapter) -> PluginModule:
    assert adapter.module is not None
    return adapter.module


def _ignore_block(module: PluginModule, *, created: bool) -> str:
    names = [*module.ignored, *((IGNORE,) if created else ())]
    return HEADER + "\n" + "".join(f"/{name}\n" for name in names)


def _ignore_file(adapter: HostAdapter, scope: Scope, settings: SettingsFile) -> SettingsFile | None:
    if scope == "user" or not _module(adapter).ignored:
        return None
    return SettingsFile(settings.path.with_name(IGNORE), settings.root, settings.edge)


def install(adapter: HostAdapter, scope: Scope, root: Path, program: str) -> Outcome:
    """Write nia's module for ``program`` (idempotent; nia's module for another program is replaced)."""
    module = _module(adapter)
    settings = hooks_file(adapter, scope, root)
    outcome = Outcome()
    text = settings.read_text()
    ignore = _ignore_file(adapter, scope, settings)
    ignored = ignore.read_text() if ignore is not None else None  # everything is read before the first write
    wanted = module.render(program)
    if text is not None and text != wanted and module.program(text) is None:
        raise SettingsError(
            settings.path,
            "is not nia's plugin as nia wrote it (edited, or someone else's); nothing was changed: "
            "move it away, then install again",
        )
    if text != wanted:
        settings.write(wanted)
        said = f"nia's {module.event} plugin" + (" (updated: it ran another nia)" if text is not None else "")
        outcome.changes.append(Change(settings.path, said))
    if ignore is not None:
        if ignored is None or not ignored.strip():
            ignore.write(_ignore_block(module, created=True))
            outcome.changes.append(Change(ignore.path, f"keeps {', '.join(module.ignored)} out of git"))
        elif _ignore_block(module, created=False) not in ignored and _ignore_block(module, created=True) != ignored:
            glue = "" if ignored.endswith("\n") else "\n"
            ignore.write(ignored + glue + _ignore_block(module, created=False))
            outcome.changes.append(Change(ignore.path, f"added {', '.join(module.ignored)} (kept out of git)"))
    outcome.notes.extend(adapter.notes)
    return outcome


def uninstall(adapter: HostAdapter, scope: Scope, root: Path) -> Outcome:
    """Remove nia's module (only while it is exactly nia's) and the ignore lines install added."""
    module = _module(adapter)
    settings = hooks_file(adapter, scope, root)
    outcome = Outcome()
    text = settings.read_text()
    ignore = _ignore_file(adapter, scope, settings)
    ignored = ignore.read_text() if ignore is not None else None
    if text is not None:
        if module.program(text) is None:
            outcome.notes.append(f"{settings.path} is not nia's plugin as nia wrote it; it was left alone")
            return outcome
        settings.remove()
        outcome.changes.append(Change(settings.path, "removed (nia's plugin)"))
    if ignore is not None and ignored is not None:
        created = _ignore_block(module, created=True)
        appended = _ignore_block(module, created=False)
        if ignored == created:
            ignore.remove()
            outcome.changes.append(Change(ignore.path, "removed (nia's lines were all it held)"))
        elif appended in ignored:
            ignore.write(ignored.replace(appended, "", 1))
            outcome.changes.append(Change(ignore.path, f"removed nia's lines for {', '.join(module.ignored)}"))
    if outcome.changes:
        settings.remove_folder_if_empty()
    return outcome


def status(adapter: HostAdapter, scope: Scope, root: Path) -> Status:
    """Whether nia's module is there, exactly as nia wrote it, and whether the nia it runs resolves."""
    module = _module(adapter)
    settings = hooks_file(adapter, scope, root)
    result = Status(adapter.name, scope, settings.path, [])
    try:
        text = settings.read_text()
    except SettingsError as exc:
        result.problem = exc.problem
        return result
    if text is None:
        return result
    program = module.program(text)
    if program is None:
        result.problem = "a file that is not nia's plugin as nia wrote it is there"
        return result
    result.events = [module.event]
    result.command = command_for(adapter.name, program)
    result.runs = _resolve(result.command)
    result.command_problem = program_problem(result.command)
    return result
