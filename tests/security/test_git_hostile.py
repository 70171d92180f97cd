"""Hostile repositories against ``nia-git``, through the installed CLI: no repository program runs, no outside byte.

Each world is a project holding a git repository, an outside folder with a
private repository whose commit subject and file name are a secret, and a
home of its own. A repository that could make git run a program is first
*armed*: plain git, run the way nia runs it but without nia's protection,
must run the program (it writes a marker file). Then ``nia context show`` and
the agent hook run, and the marker must never appear.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.resident_helpers import check_answered, env_for_mode, is_hook, warm

GIT = shutil.which("git")
pytestmark = pytest.mark.skipif(GIT is None, reason="git is not installed")

_SCRIPT = Path(sys.executable).with_name("nia")
NIA = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-c", "from nia_core.cli import main; main()"]
LIMIT = 40.0
SECRET = "OUTSIDE-SECRET-41c9e2"
"""The private repository's commit subject and file name: never in any output."""
UNAVAILABLE = "Git: the status of this repository is not available ("


class World:
    """A project with a repository, an outside private repository, an isolated home; markers go in ``base``."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.home = base / "home"
        self.home.mkdir()
        (self.home / ".gitconfig").write_text("[user]\n\tname = Ada\n\temail = ada@example.com\n")
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_CACHE_HOME": str(self.home / ".cache"),
            "XDG_DATA_HOME": str(self.home / ".local" / "share"),
            "XDG_STATE_HOME": str(self.home / ".local" / "state"),
            "NIA_DB": str(self.home / "nia.db"),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CEILING_DIRECTORIES": str(base),
            "LANG": "C.UTF-8",
        }
        self.private = base / "outside" / "private"
        self.private.mkdir(parents=True)
        self.git("init", "-q", "-b", "main", cwd=self.private)
        (self.private / f"{SECRET}-file.txt").write_text(f"{SECRET}\n")
        self.git("add", "-A", cwd=self.private)
        self.git("commit", "-q", "-m", SECRET, cwd=self.private)
        self.outside_commit = self.git("rev-parse", "HEAD", cwd=self.private).strip()
        self.root = base / "proj"
        self.root.mkdir()
        self.git("init", "-q", "-b", "main")
        (self.root / "AGENTS.md").write_text("Be brief.\n")
        (self.root / "app.py").write_text("print('app')\n")
        self.git("add", "-A")
        self.git("commit", "-q", "-m", "Initial commit")
        (self.root / ".nia").mkdir()

    @property
    def dotgit(self) -> Path:
        return self.root / ".git"

    def git(self, *args: str, cwd: Path | None = None, check: bool = True, env: dict[str, str] | None = None) -> str:
        done = subprocess.run(
            [GIT, *args],
            cwd=cwd or self.root,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=LIMIT,
            check=False,
        )
        if check and done.returncode != 0:
            raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
        return done.stdout

    def nia(self, *args: str, stdin: bytes = b"", env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        argv = [*NIA, "-p", "no:nia-date", *args]
        environment = env_for_mode({**self.env, **(env or {})})
        if is_hook(args):  # in the resident mode, a resident process answers it: started and waited for first
            warm(argv, environment, self.root)
        try:
            done = subprocess.run(
                argv,
                input=stdin,
                capture_output=True,
                cwd=self.root,
                env=environment,
                timeout=LIMIT,
            )
        except subprocess.TimeoutExpired:
            pytest.fail(f"nia {' '.join(args)} hung")
        if is_hook(args):
            check_answered(environment, stdin)
        result = subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(), done.stderr.decode())
        both = result.stdout + result.stderr
        assert SECRET not in both, f"outside bytes reached the output:\n{both[-3000:]}"
        assert "Traceback" not in result.stderr, result.stderr[-3000:]
        return result

    def shown(self, env: dict[str, str] | None = None) -> str:
        """The git part of ``nia context show --json``'s baseline."""
        result = self.nia("context", "show", "--json", env=env)
        assert result.returncode == 0, result.stderr
        return git_part(json.loads(result.stdout)["baseline"])

    def hooked(self, env: dict[str, str] | None = None) -> str:
        """The git part of what the Claude Code hook adds at a prompt."""
        prompt = {"hook_event_name": "UserPromptSubmit", "session_id": "s1", "cwd": str(self.root), "prompt": "hi"}
        result = self.nia("hook", "claude-code", stdin=json.dumps(prompt).encode(), env=env)
        assert result.returncode == 0, result.stderr
        return git_part(json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"])

    def both(self, env: dict[str, str] | None = None) -> list[str]:
        return [self.shown(env), self.hooked(env)]

    def markers(self) -> list[str]:
        return sorted(p.name for p in self.base.iterdir() if p.name.startswith("ran"))

    def script(self, path: Path, tag: str, then: str = "") -> Path:
        """An executable writing the marker ``ran-TAG``, then running ``then``."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"#!/bin/sh\ntouch {self.base}/ran-{tag}\n{then}\n")
        path.chmod(0o755)
        return path

    def touch_marker(self, tag: str) -> str:
        return f"touch {self.base}/ran-{tag}"

    def stat_dirty(self, *names: str) -> None:
        """Old timestamps: git must read these files again (through any filter) to know they did not change."""
        for name in names:
            os.utime(self.root / name, (1, 1))

    def armed(self, *args: str, env: dict[str, str] | None = None) -> list[str]:
        """The markers plain git (no nia protection) leaves when run as ``args``; then they are removed."""
        self.git("--no-optional-locks", *args, check=False, env=env)
        found = self.markers()
        for name in found:
            (self.base / name).unlink()
        return found


def git_part(text: str) -> str:
    """From the git header (or the one-line "not available"), to the end."""
    for marker in ("Git status (", "Git: "):
        if marker in text:
            return text[text.index(marker) :]
    raise AssertionError(f"no git part in:\n{text}")


@pytest.fixture
def world(tmp_path: Path, hook_mode: str) -> World:
    return World(tmp_path)


def quote_subsection(name: str) -> str:
    return name.replace("\\", "\\\\").replace('"', '\\"')


# -- 1. no repository program ever runs --------------------------------------------------------------

FILTER_NAMES = ["x=y", "", "a.b.c", 'q"uo\\te', "UPPER", "x=y.clean=z"]
"""Names ``-c filter.NAME.clean=`` cannot express (``=``, empty), dots, quotes, case: none may escape."""


def define_filter(world: World, name: str, where: str) -> None:
    """Filter ``name`` (clean and process both mark) defined in the repository's config by way of ``where``."""
    text = (
        f'[filter "{quote_subsection(name)}"]\n'
        f"\tclean = {world.touch_marker('clean')}; cat\n"
        f"\tprocess = {world.touch_marker('process')}\n"
        "\trequired = true\n"
    )
    config = world.dotgit / "config"
    if where == "local":
        config.write_text(config.read_text() + text)
    elif where == "include":  # a file outside the project, pulled in by the repository's config
        (world.base / "outside" / "evil.cfg").write_text(text)
        config.write_text(config.read_text() + f"[include]\n\tpath = {world.base / 'outside' / 'evil.cfg'}\n")
    elif where == "includeif":  # a file of the work tree, pulled in when the git dir matches
        (world.root / "tools.cfg").write_text(text)
        config.write_text(config.read_text() + f'[includeIf "gitdir:{world.dotgit}"]\n\tpath = ../tools.cfg\n')
    else:  # per-worktree config
        world.git("config", "extensions.worktreeConfig", "true")
        (world.dotgit / "config.worktree").write_text(text)


@pytest.mark.parametrize(
    ("name", "where"),
    [(name, "local") for name in FILTER_NAMES] + [("x=y", "include"), ("", "includeif"), ("a.b.c", "worktree")],
    ids=lambda value: repr(value),
)
def test_no_repository_filter_runs_whatever_its_name_or_where_it_is_defined(world, name, where):
    (world.root / ".gitattributes").write_text(f"app.py filter={name}\nAGENTS.md filter={name}\n")
    world.git("add", ".gitattributes")
    world.git("commit", "-q", "-m", "Attributes")
    define_filter(world, name, where)
    world.stat_dirty("app.py", "AGENTS.md")
    assert world.armed("status", "--porcelain"), "plain git runs the repository's filter"

    seen = world.both()

    assert world.markers() == []
    assert all(part.startswith("Git status (") and "`app.py`" not in part for part in seen), seen  # not even modified


def promisor(world: World, url: str, **config: str) -> None:
    """Make the repository a partial clone missing HEAD's tree: git would fetch it from ``url``."""
    tree = world.git("rev-parse", "HEAD^{tree}").strip()
    (world.dotgit / "objects" / tree[:2] / tree[2:]).unlink()
    world.git("config", "core.repositoryformatversion", "1")
    world.git("config", "extensions.partialClone", "origin")
    world.git("config", "remote.origin.promisor", "true")
    world.git("config", "remote.origin.url", url)
    for key, value in config.items():
        world.git("config", key.replace("__", "."), value)


TRANSPORTS = {
    "ext": lambda w: promisor(
        w, "ext::sh -c " + w.touch_marker("ext").replace(" ", "% "), protocol__ext__allow="always"
    ),
    "ssh-command": lambda w: promisor(w, "ssh://example.invalid/repo.git", core__sshCommand=w.touch_marker("ssh")),
    "remote-helper": lambda w: promisor(
        w, "nia-test::somewhere", protocol__allow="always", **{"protocol__nia-test__allow": "always"}
    ),
    "upload-pack": lambda w: promisor(
        w, str(w.private), remote__origin__uploadpack=w.touch_marker("upload-pack"), protocol__file__allow="always"
    ),
}


@pytest.mark.parametrize("transport", sorted(TRANSPORTS))
def test_no_transport_starts_so_no_transport_program_runs(world, transport):
    """A lazy fetch from a promisor remote would run the remote's transport: ext, ssh, a helper, upload-pack."""
    helper_folder = world.base / "helpers"
    world.script(helper_folder / "git-remote-nia-test", "helper")
    path = {"PATH": f"{helper_folder}{os.pathsep}{world.env['PATH']}"}
    TRANSPORTS[transport](world)
    assert world.armed("status", "--porcelain", env=path), "plain git fetches the missing tree"

    seen = world.both(env=path)

    assert world.markers() == []
    assert all(part.startswith(UNAVAILABLE) for part in seen), seen  # the tree is missing: git cannot tell


def test_no_signature_program_runs(world):
    world.script(world.base / "bin" / "gpg", "gpg", "exit 1")
    signed = world.git("cat-file", "commit", "HEAD").replace(
        "\n\n", "\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n -----END PGP SIGNATURE-----\n\n", 1
    )
    oid = subprocess.run(
        [GIT, "hash-object", "-t", "commit", "-w", "--stdin"],
        input=signed,
        capture_output=True,
        text=True,
        cwd=world.root,
        env=world.env,
        check=True,
    ).stdout.strip()
    world.git("update-ref", "refs/heads/main", oid)
    world.git("config", "log.showSignature", "true")
    world.git("config", "gpg.program", str(world.base / "bin" / "gpg"))
    assert world.armed("log", "-1", "--format=%s"), "plain git log checks the signature"

    seen = world.both()

    assert world.markers() == []
    assert all("Initial commit" in part for part in seen), seen


@pytest.mark.parametrize("where", ["worktree", "include"])
def test_no_fsmonitor_nor_hook_runs_from_per_worktree_or_included_config(world, where):
    text = f"[core]\n\tfsmonitor = {world.script(world.base / 'bin' / 'fsmonitor', 'fsmonitor')}\n"
    text += f"\thooksPath = {world.base / 'hooks'}\n"
    world.script(world.base / "hooks" / "post-index-change", "hook")
    if where == "worktree":
        world.git("config", "extensions.worktreeConfig", "true")
        (world.dotgit / "config.worktree").write_text(text)
    else:
        (world.root / "tools.cfg").write_text(text)
        world.git("config", "include.path", "../tools.cfg")
    assert world.armed("status", "--porcelain"), "plain git asks the fsmonitor"

    seen = world.both()

    assert world.markers() == []
    assert all(part.startswith("Git status (") for part in seen), seen


LEFT_ALONE = {
    "diff.external": "diff",
    "diff.evil.textconv": "textconv",
    "diff.evil.command": "diff-driver",
    "merge.evil.driver": "merge-driver",
    "core.editor": "editor",
    "core.askPass": "askpass",
    "credential.helper": "credential",
    "credential.https://example.invalid.helper": "credential-url",
    "alias.status": "alias",
    "submodule.x.update": "submodule",
    "pager.status": "pager",
}
"""Keys whose program git's ``status``, ``log`` and ``config`` never run: nia leaves them, and nothing runs."""


def test_programs_only_other_git_commands_run_are_left_alone_and_never_run(world):
    (world.root / ".gitattributes").write_text("*.py diff=evil merge=evil\n")
    world.git("add", ".gitattributes")
    world.git("commit", "-q", "-m", "Attributes")
    for key, tag in LEFT_ALONE.items():
        world.git("config", key, ("!" if key.startswith(("alias.", "submodule.")) else "") + world.touch_marker(tag))
    (world.root / "app.py").write_text("print('edited')\n")

    seen = world.both()

    assert world.markers() == []
    assert all("- Working tree: 1 changed path (1 modified):\n  - `app.py` (modified)" in part for part in seen), seen


def wrapped_git(world: World, body: str) -> dict[str, str]:
    """A PATH whose first ``git`` (outside the project) runs ``body`` before the real one."""
    folder = world.base / "wrapped"
    folder.mkdir()
    (folder / "git").write_text(f'#!/bin/sh\n{body}\nexec {GIT} "$@"\n')
    (folder / "git").chmod(0o755)
    return {"PATH": f"{folder}{os.pathsep}{world.env['PATH']}"}


def armed_filter(world: World) -> None:
    (world.root / ".gitattributes").write_text("app.py filter=evil\n")
    world.git("add", ".gitattributes")
    world.git("commit", "-q", "-m", "Attributes")
    define_filter(world, "evil", "local")
    world.stat_dirty("app.py")


def test_a_configuration_git_cannot_list_refuses_the_repository_instead_of_running_it_unguarded(world):
    armed_filter(world)
    env = wrapped_git(world, 'case " $* " in *" config --list "*) exit 128 ;; esac')

    seen = world.both(env=env)

    assert world.markers() == []
    assert seen == [f"{UNAVAILABLE}git cannot read this repository's configuration)."] * 2


def test_a_git_that_ignores_configuration_from_the_environment_is_not_run(world):
    """A git older than 2.31 ignores ``GIT_CONFIG_COUNT``: its overrides would not hold."""
    armed_filter(world)
    env = wrapped_git(world, "unset GIT_CONFIG_COUNT")

    seen = world.both(env=env)

    assert world.markers() == []
    reason = "the `git` found is too old to be run safely here (nia needs git 2.31 or later)"
    assert seen == [f"{UNAVAILABLE}{reason})."] * 2


UNKNOWN_PROGRAMS = ["hook.pre-commit.command", "lfs.extension.x.clean", "acme.tool.program", "x.y.z.helper"]
"""Keys naming a program that nia does not know git's use of (a newer git's hooks, git-lfs extensions, any)."""


@pytest.mark.parametrize("key", UNKNOWN_PROGRAMS)
def test_a_program_nia_cannot_switch_off_is_refused_in_one_sentence(world, key):
    world.git("config", key, world.touch_marker("unknown"))

    seen = world.both()

    assert world.markers() == []
    sentence = f"{UNAVAILABLE}its git configuration names a program in `{key}`, which nia cannot switch off)."
    assert seen == [sentence, sentence]


# -- 2. git comes from a PATH without the project ----------------------------------------------------


def planted_git_worlds(world: World, shape: str) -> str:
    """A ``git`` inside the project reachable from PATH; the PATH to use."""
    tools = world.root / "tools"
    world.script(tools / "git", "git", f'exec {GIT} "$@"')
    if shape == "project-folder":
        return f"{tools}{os.pathsep}{world.env['PATH']}"
    if shape == "link-to-project-folder":
        (world.base / "linked").symlink_to(tools, target_is_directory=True)
        return f"{world.base / 'linked'}{os.pathsep}{world.env['PATH']}"
    if shape == "link-to-project-git":
        (world.base / "bin").mkdir()
        (world.base / "bin" / "git").symlink_to(tools / "git")
        return f"{world.base / 'bin'}{os.pathsep}{world.env['PATH']}"
    return f"tools{os.pathsep}{world.env['PATH']}"  # relative


@pytest.mark.parametrize("shape", ["project-folder", "link-to-project-folder", "link-to-project-git", "relative"])
def test_a_git_inside_the_project_is_never_run(world, shape):
    path = planted_git_worlds(world, shape)

    seen = world.both(env={"PATH": path})

    assert world.markers() == []
    assert all(part.startswith("Git status (") for part in seen), seen


def test_a_git_in_the_project_outside_the_work_tree_is_never_run(world):
    """The project holds the repository in a subfolder: ``tools/git`` is in the project, not in the work tree."""
    app = world.root / "app"
    app.mkdir()
    world.git("init", "-q", "-b", "main", cwd=app)
    (app / "main.py").write_text("print(1)\n")
    world.script(world.root / "tools" / "git", "git", f'exec {GIT} "$@"')
    env = env_for_mode({**world.env, "PATH": f"{world.root / 'tools'}{os.pathsep}{world.env['PATH']}"})
    hook = {"hook_event_name": "UserPromptSubmit", "session_id": "s2", "cwd": str(app), "prompt": "hi"}

    stdin = json.dumps(hook).encode()
    done = subprocess.run([*NIA, "hook", "claude-code"], input=stdin, capture_output=True, cwd=app, env=env, check=True)

    assert world.markers() == []
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "- Working tree: 1 changed path (1 untracked):\n  - `app/main.py` (untracked)" in context


def test_programs_git_looks_up_come_from_a_path_without_the_project(world):
    """The user's own filter (global config) names a program; the project's copy of it on PATH never runs."""
    world.script(world.root / "bin" / "nia-test-filter", "project-copy", "cat")
    (world.home / ".gitconfig").write_text(
        (world.home / ".gitconfig").read_text() + '[filter "mine"]\n\tclean = nia-test-filter\n'
    )
    (world.root / ".gitattributes").write_text("app.py filter=mine\n")
    path = {"PATH": f"{world.root / 'bin'}{os.pathsep}{world.env['PATH']}"}
    world.stat_dirty("app.py")
    assert world.armed("status", "--porcelain", env=path), "plain git finds the project's copy on PATH"

    world.both(env=path)

    assert world.markers() == []


def test_debug_says_which_git_runs(world):
    planted = planted_git_worlds(world, "project-folder")

    result = world.nia("--debug", "context", "show", env={"PATH": planted})

    real = next(
        os.path.join(folder, "git")
        for folder in planted.split(os.pathsep)
        if os.path.isabs(folder) and os.access(os.path.join(folder, "git"), os.X_OK) and "proj" not in folder
    )
    assert f"nia/git: runs {real}" in result.stderr


# -- 3. no object store outside the project -----------------------------------------------------------


def head_at_outside_commit(world: World) -> None:
    (world.dotgit / "refs" / "heads" / "main").write_text(world.outside_commit + "\n")


def relink(path: Path, target: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
    path.symlink_to(target, target_is_directory=target.is_dir())


def loose(root: Path, oid: str) -> Path:
    return root / ".git" / "objects" / oid[:2] / oid[2:]


def _alternates(world: World, line: str) -> None:
    (world.dotgit / "objects" / "info" / "alternates").write_text(line + "\n")
    head_at_outside_commit(world)


def _chained(world: World) -> None:
    store = world.root / "store" / "objects"
    (store / "info").mkdir(parents=True)
    (store / "info" / "alternates").write_text(f"{world.private / '.git' / 'objects'}\n")
    _alternates(world, str(store))


def _packed(world: World, what: str) -> None:
    world.git("gc", "-q", cwd=world.private)
    pack = world.private / ".git" / "objects" / "pack"
    if what == "folder":
        relink(world.dotgit / "objects" / "pack", pack)
    else:
        for name in os.listdir(pack):
            if name.endswith((".pack", ".idx")):
                (world.dotgit / "objects" / "pack" / name).symlink_to(pack / name)
    head_at_outside_commit(world)


def _loose(world: World, what: str) -> None:
    commit = world.outside_commit
    tree = world.git("rev-parse", "HEAD^{tree}", cwd=world.private).strip()
    for oid in (commit, tree):
        mine = loose(world.root, oid)
        if what == "folder" and not mine.parent.exists():
            mine.parent.symlink_to(loose(world.private, oid).parent, target_is_directory=True)
        elif what == "folder" and mine.parent.is_symlink():
            pass  # the commit and the tree share their fan-out folder, already linked
        else:  # "files"; or the project's own objects hold that fan-out folder already (a 1-in-256 chance per id)
            mine.parent.mkdir(exist_ok=True)
            mine.symlink_to(loose(world.private, oid))
    head_at_outside_commit(world)


def _objects_folder(world: World) -> None:
    relink(world.dotgit / "objects", world.private / ".git" / "objects")
    head_at_outside_commit(world)


def _dotgit(world: World) -> None:
    relink(world.dotgit, world.private / ".git")


def _index(world: World) -> None:
    blob = world.private / f"{SECRET}-file.txt"
    world.git("hash-object", "-w", str(blob))  # the blob is here too: only the index names the outside file
    relink(world.dotgit / "index", world.private / ".git" / "index")


OUTSIDE_STORES = {
    "alternates-absolute": lambda w: _alternates(w, str(w.private / ".git" / "objects")),
    "alternates-relative": lambda w: _alternates(w, "../../../outside/private/.git/objects"),
    "alternates-quoted": lambda w: _alternates(w, '"../../../outside/private/.git/objects"'),
    "alternates-chained-through-the-project": _chained,
    "pack-folder-link": lambda w: _packed(w, "folder"),
    "pack-file-links": lambda w: _packed(w, "files"),
    "loose-folder-links": lambda w: _loose(w, "folder"),
    "loose-object-links": lambda w: _loose(w, "files"),
    "objects-folder-link": _objects_folder,
    "dotgit-folder-link": _dotgit,
    "index-link": _index,
}


@pytest.mark.parametrize("shape", sorted(OUTSIDE_STORES))
def test_no_commit_tree_or_index_from_outside_reaches_the_prompt(world, shape):
    OUTSIDE_STORES[shape](world)
    assert SECRET in world.git("log", "-1", "--format=%s", check=False) + world.git(
        "status", "--porcelain", check=False
    ), "plain git reads the outside repository"

    seen = world.both()  # SECRET in any output fails inside

    assert all(part.startswith(UNAVAILABLE) and "outside" in part for part in seen), seen


def test_git_variables_naming_outside_objects_are_not_followed(world):
    head_at_outside_commit(world)
    objects = str(world.private / ".git" / "objects")
    env = {"GIT_ALTERNATE_OBJECT_DIRECTORIES": objects, "GIT_OBJECT_DIRECTORY": objects}
    assert SECRET in world.git("log", "-1", "--format=%s", env=env)

    seen = world.both(env=env)

    assert all(SECRET not in part for part in seen)  # checked in every output; here the commit is simply missing
