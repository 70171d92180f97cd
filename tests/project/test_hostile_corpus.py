"""The hostile-file corpus, run against every reader of project files.

Every case plants one hostile thing (a symlink out of the project, a symlinked
folder on the way, a chain of links, a link into the home folder or to a
system or device file, a FIFO, ...) at the path a reader reads, and every
reader meets it: ``--context-file``, ``--context-dir``, ``[[project.context]]``
(through ``nia context show`` and through a workflow), ``[[workflows.context]]``,
AGENTS.md at the project root and in a subfolder, ``.nia/project.toml``,
``.nia/commands.toml``. Each run goes through the CLI and must: finish, print no
byte of anything outside the project, print no traceback, and say what it
refused. Lenient readers (``nia context show``) must still render the rest.

The folders nia writes into (transaction logs) get the same treatment at the
end of the file.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from nia_core.cli import cli

SECRET = "SECRETMARK-7f3a"
"""In every outside file; valid as Markdown and as TOML, so a config read by mistake would show it too."""
OUTSIDE_TEXT = f'[project]\ndescription = "{SECRET}"\n'
GOOD = "GOOD-CONTENT-1b2c"
COMMANDS = '[[workflows]]\ntarget = "code"\n[[workflows.operations]]\nname = "create"\n'


@dataclass
class World:
    repo: Path
    outside: Path
    home: Path


Plant = Callable[[World, Path], None]
"""Put a hostile thing at a path inside the repository."""


def _link(target: Callable[[World, Path], str]) -> Plant:
    def plant(world: World, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target(world, path), path)

    return plant


def _fifo(world: World, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)


def _chain(world: World, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    hop = path.parent / f".hop-{path.name}"
    os.symlink(world.outside / "secret.md", hop)
    os.symlink(hop.name, path)


def _relative(world: World, path: Path) -> str:
    return os.path.relpath(world.outside / "secret.md", path.parent)


@dataclass(frozen=True)
class Case:
    id: str
    plant: Plant
    realm: str
    """What the refusal says about where the link points."""


CASES = [
    Case("symlink-absolute", _link(lambda w, p: str(w.outside / "secret.md")), "outside the project"),
    Case("symlink-relative", _link(_relative), "outside the project"),
    Case("symlink-chain", _chain, "outside the project"),
    Case("symlink-into-home", _link(lambda w, p: str(w.home / ".ssh" / "id_rsa")), "the home folder"),
    Case("symlink-to-etc-passwd", _link(lambda w, p: "/etc/passwd"), "a system folder"),
    Case("symlink-to-dev-zero", _link(lambda w, p: "/dev/zero"), "a device or kernel file"),
    Case("symlink-to-outside-fifo", _link(lambda w, p: str(w.outside / "pipe")), "outside the project"),
    Case("symlink-dangling-outside", _link(lambda w, p: str(w.outside / "missing.md")), ""),
    Case("symlink-to-outside-folder", _link(lambda w, p: str(w.outside / "dir")), "outside the project"),
    Case("fifo", _fifo, ""),
]


@pytest.fixture
def world(tmp_path, isolated_environment) -> World:
    repo = tmp_path / "repo"
    (repo / ".nia").mkdir(parents=True)
    (repo / "docs").mkdir()
    (repo / "docs" / "ok.md").write_text(f"{GOOD}\n")
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "secret.md").write_text(OUTSIDE_TEXT)
    (outside / "dir" / "x.md").write_text(OUTSIDE_TEXT)
    os.mkfifo(outside / "pipe")
    home = Path(isolated_environment)
    (home / ".ssh").mkdir(parents=True, exist_ok=True)
    (home / ".ssh" / "id_rsa").write_text(OUTSIDE_TEXT)
    return World(repo, outside, home)


def run(cwd: Path, *args: str, deadline: float = 60.0) -> Result:
    """``nia ARGS`` in ``cwd``, in-process; a run that does not finish in ``deadline`` seconds fails the test."""
    box: dict[str, Result] = {}

    def invoke() -> None:
        previous = os.getcwd()
        os.chdir(cwd)
        try:
            box["result"] = CliRunner().invoke(cli, list(args))
        finally:
            os.chdir(previous)

    worker = threading.Thread(target=invoke, daemon=True)
    worker.start()
    worker.join(deadline)
    assert not worker.is_alive(), f"nia {' '.join(args)} hung"
    return box["result"]


def assert_no_leak(result: Result) -> None:
    everything = result.stdout + result.stderr
    assert SECRET not in everything
    assert "root:x:0:0" not in everything  # /etc/passwd
    assert "\x00" * 16 not in everything  # /dev/zero
    assert "Traceback" not in everything
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)


# -- the readers: each plants the case where it reads, runs the CLI, and checks its own outcome ---------------


def _workflow(world: World, extra: str = "") -> None:
    (world.repo / ".nia" / "commands.toml").write_text(COMMANDS + extra)


def read_context_file(world: World, case: Case) -> Result:
    case.plant(world, world.repo / "docs" / "hostile.md")
    _workflow(world)
    result = run(world.repo, "code", "create", "--context-file", "docs/hostile.md", "--print-prompt")
    assert result.exit_code == 2  # strict: the first load names the refused entry
    assert "Source: --context-file" in result.stderr
    return result


def read_context_file_via_symlinked_folder(world: World, case: Case) -> Result:
    """The hostile thing sits in an outside folder reached through a symlinked folder inside the project."""
    target = world.outside / "dir" / "planted"
    target.mkdir()
    if case.id != "symlink-relative":
        case.plant(world, target / "hostile.md")
    else:
        (target / "hostile.md").write_text(OUTSIDE_TEXT)
    os.symlink(target, world.repo / "docs" / "ext")
    _workflow(world)
    result = run(world.repo, "code", "create", "--context-file", "docs/ext/hostile.md", "--print-prompt")
    assert result.exit_code == 2
    return result


def read_context_dir(world: World, case: Case) -> Result:
    case.plant(world, world.repo / "docs" / "hostile.md")
    _workflow(world)
    result = run(world.repo, "code", "create", "--context-dir", "docs", "--print-prompt")
    assert result.exit_code in (0, 2)
    if result.exit_code == 0:  # skipped (a FIFO, a dangling link): the rest is there
        assert GOOD in result.stdout
    return result


def read_context_dir_below_a_symlinked_parent(world: World, case: Case) -> Result:
    """``--context-dir docs/sub`` where ``docs`` itself is a symlink to a folder outside."""
    case.plant(world, world.outside / "dir" / "hostile.md")
    docs = world.repo / "docs"
    (docs / "ok.md").unlink()
    docs.rmdir()
    os.symlink(world.outside, docs)
    _workflow(world)
    result = run(world.repo, "code", "create", "--context-dir", "docs/dir", "--print-prompt")
    assert result.exit_code == 2
    assert "outside the repository" in result.stderr
    return result


def read_project_context_in_context_show(world: World, case: Case) -> Result:
    case.plant(world, world.repo / "docs" / "hostile.md")
    (world.repo / ".nia" / "project.toml").write_text(
        '[project]\nname = "p"\n'
        '[[project.context]]\ntype = "file"\npath = "docs/ok.md"\n'
        '[[project.context]]\ntype = "file"\npath = "docs/hostile.md"\n'
    )
    result = run(world.repo, "context", "show")
    assert result.exit_code == 0, result.output
    assert GOOD in result.stdout  # the rest of the project context still renders
    assert "docs/hostile.md" in result.stderr  # the refusal names the entry
    return result


def read_project_context_in_a_workflow(world: World, case: Case) -> Result:
    case.plant(world, world.repo / "docs" / "hostile.md")
    (world.repo / ".nia" / "project.toml").write_text('[[project.context]]\ntype = "directory"\npath = "docs"\n')
    _workflow(world)
    result = run(world.repo, "code", "create", "--print-prompt")
    assert result.exit_code in (0, 2)
    if result.exit_code == 0:
        assert GOOD in result.stdout
    return result


def read_workflow_context(world: World, case: Case) -> Result:
    case.plant(world, world.repo / "docs" / "hostile.md")
    _workflow(world, '[[workflows.operations.context]]\ntype = "file"\npath = "docs/hostile.md"\n')
    result = run(world.repo, "code", "create", "--print-prompt")
    assert result.exit_code == 2
    assert "Source: commands.toml [[workflows]][0].operations[0].context[0]" in result.stderr
    return result


def read_agents_md_at_the_root(world: World, case: Case) -> Result:
    case.plant(world, world.repo / "AGENTS.md")
    (world.repo / "sub").mkdir()
    (world.repo / "sub" / "AGENTS.md").write_text(f"{GOOD}\n")
    result = run(world.repo / "sub", "context", "show")
    assert result.exit_code == 0, result.output
    assert GOOD in result.stdout  # the nearer AGENTS.md still renders
    if case.realm:
        assert f"{world.repo / 'AGENTS.md'}" in result.stderr and case.realm in result.stderr
    return result


def read_agents_md_in_a_subfolder(world: World, case: Case) -> Result:
    (world.repo / "AGENTS.md").write_text(f"{GOOD}\n")
    case.plant(world, world.repo / "sub" / "AGENTS.md")
    result = run(world.repo / "sub", "context", "show")
    assert result.exit_code == 0, result.output
    assert GOOD in result.stdout
    if case.realm:
        assert "sub/AGENTS.md" in result.stderr and case.realm in result.stderr
    return result


def read_project_toml(world: World, case: Case) -> Result:
    case.plant(world, world.repo / ".nia" / "project.toml")
    (world.repo / "AGENTS.md").write_text(f"{GOOD}\n")
    result = run(world.repo, "context", "show")
    assert result.exit_code == 0, result.output
    assert GOOD in result.stdout  # an ignored project.toml does not take the rest down
    if case.realm:
        assert ".nia/project.toml" in result.stderr and case.realm in result.stderr
    return result


def read_commands_toml(world: World, case: Case) -> Result:
    case.plant(world, world.repo / ".nia" / "commands.toml")
    result = run(world.repo, "code", "create", "--print-prompt")
    assert result.exit_code == 2  # no workflow "code": the outside file was not read
    assert_no_leak(run(world.repo, "--help"))
    return result


def _hook(world: World, cwd: Path) -> Result:
    payload = {"session_id": "corpus-1", "cwd": str(cwd), "hook_event_name": "SessionStart", "source": "startup"}
    previous = os.environ.get("NIA_HOOK_DEADLINE")
    os.environ["NIA_HOOK_DEADLINE"] = "600"  # in-process: the watchdog must never end pytest
    try:
        box: dict[str, Result] = {}
        stdin = json.dumps(payload)
        worker = threading.Thread(
            target=lambda: box.update(result=CliRunner().invoke(cli, ["hook", "claude-code"], input=stdin)),
            daemon=True,
        )
        worker.start()
        worker.join(60)
        assert not worker.is_alive(), "nia hook hung"
        return box["result"]
    finally:
        if previous is None:
            del os.environ["NIA_HOOK_DEADLINE"]
        else:
            os.environ["NIA_HOOK_DEADLINE"] = previous


def read_agents_md_through_a_host_hook(world: World, case: Case) -> Result:
    """The door an agent opens in every repository: AGENTS.md delivered by ``nia hook`` (the switch on)."""
    case.plant(world, world.repo / "AGENTS.md")
    (world.repo / ".nia" / "project.toml").write_text("[hooks]\ndeliver_native_files = true\n")
    (world.repo / "sub").mkdir()
    (world.repo / "sub" / "AGENTS.md").write_text(f"{GOOD}\n")
    result = _hook(world, world.repo / "sub")
    assert result.exit_code == 0, result.output
    assert GOOD in result.stdout
    return result


def read_project_toml_through_a_host_hook(world: World, case: Case) -> Result:
    case.plant(world, world.repo / ".nia" / "project.toml")
    (world.repo / "AGENTS.md").write_text(f"{GOOD}\n")
    result = _hook(world, world.repo)
    assert result.exit_code == 0, result.output
    assert "Environment:" in result.stdout  # the hook answered; the hostile file was not read
    return result


TEMPLATE = Path(__file__).resolve().parents[2] / "plugin-template" / "src" / "nia_template_plugin" / "__init__.py"


def _template_plugin(world: World) -> None:
    """nia's plugin template, as the local plugin ``notes`` (what ``nia plugin new`` gives an author)."""
    (world.repo / ".nia" / "plugins").mkdir(exist_ok=True)
    (world.repo / ".nia" / "plugins" / "notes.py").write_text(TEMPLATE.read_text())
    (world.repo / "AGENTS.md").write_text(f"{GOOD}\n")


def read_notes_through_the_plugin_template(world: World, case: Case) -> Result:
    _template_plugin(world)
    case.plant(world, world.repo / "NOTES.md")
    result = run(world.repo, "context", "show")
    assert result.exit_code == 0, result.output
    assert GOOD in result.stdout and "Project notes" not in result.stdout
    if case.realm:
        assert str(world.repo / "NOTES.md") in result.stderr and case.realm in result.stderr
    return result


def read_a_configured_file_through_the_plugin_template(world: World, case: Case) -> Result:
    _template_plugin(world)
    case.plant(world, world.repo / "docs" / "notes.txt")
    (world.repo / ".nia" / "project.toml").write_text('[plugins.notes]\nfile = "docs/notes.txt"\n')
    result = run(world.repo, "context", "show")
    assert result.exit_code == 0, result.output
    assert GOOD in result.stdout and "Project notes" not in result.stdout
    if case.realm:
        assert "docs/notes.txt" in result.stderr and case.realm in result.stderr
    return result


READERS = [
    read_context_file,
    read_context_file_via_symlinked_folder,
    read_context_dir,
    read_context_dir_below_a_symlinked_parent,
    read_project_context_in_context_show,
    read_project_context_in_a_workflow,
    read_workflow_context,
    read_agents_md_at_the_root,
    read_agents_md_in_a_subfolder,
    read_project_toml,
    read_commands_toml,
    read_agents_md_through_a_host_hook,
    read_project_toml_through_a_host_hook,
    read_notes_through_the_plugin_template,
    read_a_configured_file_through_the_plugin_template,
]


def test_the_corpus_covers_every_reader_and_enough_cases():
    assert len(CASES) >= 10 and len(READERS) >= 15


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
@pytest.mark.parametrize("reader", READERS, ids=[r.__name__ for r in READERS])
def test_no_reader_lets_an_outside_byte_through(world, reader, case):
    result = reader(world, case)
    assert_no_leak(result)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_dot_nia_folder_pointing_outside_is_ignored_with_a_warning(world, case):
    """``.nia`` itself is the link: no project.toml, commands.toml or log is read from or written there."""
    (world.repo / ".nia").rmdir()
    target = world.outside / "dir" / "dotnia"
    target.mkdir()
    (target / "project.toml").write_text(OUTSIDE_TEXT)
    (target / "commands.toml").write_text(COMMANDS + f'description = "{SECRET}"\n')
    os.symlink(target, world.repo / ".nia")
    (world.repo / "AGENTS.md").write_text(f"{GOOD}\n")
    shown = run(world.repo, "context", "show")
    assert shown.exit_code == 0 and GOOD in shown.stdout
    assert ".nia/project.toml resolves outside the project: ignored (path security" in shown.stderr
    assert_no_leak(shown)
    workflow = run(world.repo, "code", "create", "--print-prompt")
    assert workflow.exit_code == 2
    assert_no_leak(workflow)
    assert sorted(os.listdir(target)) == ["commands.toml", "project.toml"]  # nothing written out there


def test_symlinks_that_stay_inside_the_project_are_followed_everywhere(world):
    repo = world.repo
    (repo / "shared").mkdir()
    (repo / "shared" / "rules.md").write_text("INSIDE-RULES\n")
    (repo / "shared" / "project.toml").write_text('[[project.context]]\ntype = "directory"\npath = "linked-docs"\n')
    os.symlink("shared/rules.md", repo / "AGENTS.md")
    os.symlink("docs", repo / "linked-docs")
    os.symlink("../shared/project.toml", repo / ".nia" / "project.toml")
    result = run(repo, "context", "show")
    assert result.exit_code == 0, result.output
    assert "INSIDE-RULES" in result.stdout and GOOD in result.stdout
    assert "Warning" not in result.stderr


def test_the_global_agents_md_is_exempt_from_the_root_check(world, isolated_environment):
    """The user put ``$XDG_CONFIG_HOME/nia/AGENTS.md`` there: it may point anywhere the user likes."""
    mine = world.outside / "my-rules.md"
    mine.write_text("MY-GLOBAL-RULES\n")
    folder = Path(isolated_environment) / ".config" / "nia"
    folder.mkdir(parents=True)
    os.symlink(mine, folder / "AGENTS.md")
    result = run(world.repo, "context", "show")
    assert result.exit_code == 0 and "MY-GLOBAL-RULES" in result.stdout


def test_the_global_agents_md_still_must_be_a_regular_file(world, isolated_environment):
    folder = Path(isolated_environment) / ".config" / "nia"
    folder.mkdir(parents=True)
    os.symlink("/dev/zero", folder / "AGENTS.md")
    (world.repo / "AGENTS.md").write_text(f"{GOOD}\n")
    result = run(world.repo, "context", "show")
    assert result.exit_code == 0 and GOOD in result.stdout
    assert "is not a regular file: left out" in result.stderr
    assert_no_leak(result)


# -- writes ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("linked", [".nia/logs", ".nia/logs/transactions"])
def test_transaction_logs_are_never_written_through_a_symlink_out(world, linked):
    _workflow(world)
    sink = world.outside / "sink"
    sink.mkdir()
    link = world.repo / linked
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(sink, link)
    result = run(world.repo, "code", "create", "--context-file", "docs/ok.md", "--print-prompt")
    assert result.exit_code == 0, result.output
    assert GOOD in result.stdout
    assert "Transaction log not written" in result.stderr and "outside the project" in result.stderr
    assert str(sink) not in result.stderr  # the realm, not the outside path
    assert list(sink.rglob("*")) == []


def test_transaction_logs_follow_a_symlink_that_stays_inside(world):
    _workflow(world)
    (world.repo / "var" / "logs").mkdir(parents=True)
    os.symlink("../var/logs", world.repo / ".nia" / "logs")
    result = run(world.repo, "code", "create", "--context-file", "docs/ok.md", "--print-prompt")
    assert result.exit_code == 0, result.output
    assert "Warning" not in result.stderr
    assert (world.repo / "var" / "logs" / "transactions" / "latest.json").is_file()


@pytest.mark.parametrize("linked", [".nia", ".nia/project.toml"])
def test_plugin_switches_never_edit_a_file_outside_the_project(world, linked):
    """``nia plugins disable`` edits ``.nia/project.toml``: never through a link that leads outside."""
    sink = world.outside / "sink"
    sink.mkdir()
    (sink / "project.toml").write_text(OUTSIDE_TEXT)
    if linked == ".nia":
        (world.repo / ".nia").rmdir()
        os.symlink(sink, world.repo / ".nia")
    else:
        os.symlink(sink / "project.toml", world.repo / ".nia" / "project.toml")
    result = run(world.repo, "plugins", "disable", "nia-date")
    assert result.exit_code == 2, result.output
    assert "not edited" in result.stderr and "outside the project" in result.stderr
    assert_no_leak(result)
    assert sorted(os.listdir(sink)) == ["project.toml"]
    assert (sink / "project.toml").read_text() == OUTSIDE_TEXT


def test_plugin_switches_still_edit_the_projects_own_file(world):
    (world.repo / ".nia" / "project.toml").write_text("# mine\n")
    result = run(world.repo, "plugins", "disable", "nia-date")
    assert result.exit_code == 0, result.output
    assert (world.repo / ".nia" / "project.toml").read_text().startswith("# mine\n")
    assert "nia-date" in (world.repo / ".nia" / "project.toml").read_text()


# -- .git: inside the root, but git's data, written by the user's git (it can hold credentials) ----------

GIT_CONFIG = '[remote "origin"]\n\turl = https://user:GITTOKEN-9c1d@example.com/x.git\n'


@pytest.fixture
def with_git(world) -> World:
    (world.repo / ".git").mkdir()
    (world.repo / ".git" / "config").write_text(GIT_CONFIG)
    _workflow(world)
    return world


GIT_WAYS = {
    "explicit-file": ("--context-file", ".git/config", None),
    "explicit-dir": ("--context-dir", ".git", None),
    "dotdot-into-git": ("--context-file", "docs/../.git/config", None),
    "symlink-file": ("--context-file", "docs/cfg.md", ("docs/cfg.md", "../.git/config")),
    "symlink-in-folder": ("--context-dir", "docs", ("docs/cfg.md", "../.git/config")),
    "symlinked-folder": ("--context-dir", "docs", ("docs/g", "../.git")),
}


@pytest.mark.parametrize("flag,path,link", GIT_WAYS.values(), ids=GIT_WAYS.keys())
def test_nothing_inside_dot_git_reaches_a_prompt(with_git, flag, path, link):
    repo = with_git.repo
    if link is not None:
        os.symlink(link[1], repo / link[0])
    result = run(repo, "code", "create", flag, path, "--print-prompt")
    assert "GITTOKEN" not in result.output
    assert result.exit_code == 2, result.output
    assert "inside a .git folder" in result.stderr


def test_nothing_inside_dot_git_reaches_a_prompt_from_project_toml_or_agents_md(with_git):
    repo = with_git.repo
    (repo / ".nia" / "project.toml").write_text(
        '[[project.context]]\ntype = "file"\npath = "docs/ok.md"\n'
        '[[project.context]]\ntype = "file"\npath = ".git/config"\n'
    )
    os.symlink(".git/config", repo / "AGENTS.md")
    result = run(repo, "context", "show")
    assert result.exit_code == 0, result.output
    assert GOOD in result.stdout and "GITTOKEN" not in result.output
    assert "inside a .git folder" in result.stderr and "resolves into a .git folder" in result.stderr


def test_a_submodule_git_file_is_not_context(world):
    _workflow(world)
    (world.repo / "docs" / "sub").mkdir()
    (world.repo / "docs" / "sub" / ".git").write_text("gitdir: ../../.git/modules/sub\n")
    result = run(world.repo, "code", "create", "--context-dir", "docs", "--print-prompt")
    assert result.exit_code == 0 and "gitdir:" not in result.stdout


@pytest.mark.parametrize(
    "configured", ["../outside/secret.md", "/etc/passwd", ".git/config", "sub/../../outside/secret.md"]
)
def test_the_plugin_template_never_reads_a_configured_file_outside_the_project(world, configured):
    _template_plugin(world)
    (world.repo / "sub").mkdir()
    (world.repo / ".git").mkdir()
    (world.repo / ".git" / "config").write_text(OUTSIDE_TEXT)
    (world.repo / ".nia" / "project.toml").write_text(f'[plugins.notes]\nfile = "{configured}"\n')
    result = run(world.repo, "context", "show")
    assert result.exit_code == 0, result.output
    assert_no_leak(result)
    assert GOOD in result.stdout and "Project notes" not in result.stdout
    assert "template-plugin:" in result.stderr and "left out" in result.stderr
