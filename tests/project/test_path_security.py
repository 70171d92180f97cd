"""Path security: a corpus of hostile context paths, each refused with an error naming its entry.

Layout for every case: ``tmp/repo`` is the repository (with ``docs/ok.md``),
``tmp/outside`` a folder beside it holding ``secret.md`` and ``dir/x.md``.
Each case is checked twice: strictly (the first load, which must raise a
usage error naming the entry) and leniently (a later boundary, which must
leave the path out with a warning and keep everything else).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from nia_core.project import locate
from nia_core.project.config import ContextEntry
from nia_core.project.merge import merge
from nia_core.project.paths import ContextPathError
from nia_core.project.sections import project_context
from tests.project.helpers import project, run

Setup = Callable[[Path, Path], None]
OUTSIDE = "outside the repository"
LOOP = "symlink loop"
NOT_FOUND = "not found"


def nothing(repo: Path, outside: Path) -> None:
    pass


def link(name: str, target: str | Callable[[Path, Path], str]) -> Setup:
    def setup(repo: Path, outside: Path) -> None:
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target(repo, outside) if callable(target) else target, path)

    return setup


def both(*setups: Setup) -> Setup:
    def setup(repo: Path, outside: Path) -> None:
        for one in setups:
            one(repo, outside)

    return setup


def fifo(repo: Path, outside: Path) -> None:
    os.mkfifo(repo / "docs" / "pipe")


@dataclass(frozen=True)
class Case:
    id: str
    path: str | Callable[[Path, Path], str]
    expect: str
    kind: str = "file"
    setup: Setup = nothing

    def raw(self, repo: Path, outside: Path) -> str:
        return self.path(repo, outside) if callable(self.path) else self.path


CASES = [
    # plain traversal
    Case("dotdot", "../outside/secret.md", OUTSIDE),
    Case("dotdot-deep", "../" * 12 + "etc/passwd", OUTSIDE),
    Case("dotdot-after-descent", "docs/../../outside/secret.md", OUTSIDE),
    Case("dotdot-through-a-file", "docs/ok.md/../../../outside/secret.md", OUTSIDE),
    Case("dotdot-missing-target", "../outside/nothing.md", OUTSIDE),
    Case("dotdot-via-nia-folder", ".nia/../../outside/secret.md", OUTSIDE),
    Case("parent-folder", "..", OUTSIDE, kind="directory"),
    Case("parent-folder-slash", "../", OUTSIDE, kind="directory"),
    Case("outside-folder", "../outside/dir", OUTSIDE, kind="directory"),
    # absolute paths elsewhere
    Case("absolute-elsewhere", lambda repo, out: str(out / "secret.md"), OUTSIDE),
    Case("absolute-etc-passwd", "/etc/passwd", OUTSIDE),
    Case("absolute-double-slash", "//etc/passwd", OUTSIDE),
    Case("absolute-filesystem-root", "/", OUTSIDE, kind="directory"),
    Case("absolute-reenter-then-escape", lambda repo, out: f"{repo}/docs/../../outside/secret.md", OUTSIDE),
    Case("absolute-dev-zero", "/dev/zero", OUTSIDE),
    Case("absolute-proc-self-root", "/proc/self/root/etc/passwd", OUTSIDE),
    # symlinks pointing out
    Case(
        "symlink-absolute-target",
        "docs/evil.md",
        OUTSIDE,
        setup=link("docs/evil.md", lambda r, o: str(o / "secret.md")),
    ),
    Case("symlink-relative-target", "docs/evil.md", OUTSIDE, setup=link("docs/evil.md", "../../outside/secret.md")),
    Case("symlink-folder-then-file", "docs/ext/x.md", OUTSIDE, setup=link("docs/ext", lambda r, o: str(o / "dir"))),
    Case(
        "symlink-folder-as-directory",
        "docs/ext",
        OUTSIDE,
        kind="directory",
        setup=link("docs/ext", lambda r, o: str(o / "dir")),
    ),
    Case(
        "symlink-chain",
        "docs/l1",
        OUTSIDE,
        setup=both(link("docs/l1", "l2"), link("docs/l2", "../../outside/secret.md")),
    ),
    Case("symlink-dangling-outside", "docs/gone", OUTSIDE, setup=link("docs/gone", "../../outside/missing.md")),
    Case("symlink-to-filesystem-root", "docs/root/etc/passwd", OUTSIDE, setup=link("docs/root", "/")),
    Case("symlink-to-dev-zero", "docs/zero", OUTSIDE, setup=link("docs/zero", "/dev/zero")),
    Case("symlink-to-parent-of-root", "docs/up/outside/secret.md", OUTSIDE, setup=link("docs/up", "../..")),
    # symlink loops
    Case("symlink-loop-pair", "docs/a", LOOP, setup=both(link("docs/a", "b"), link("docs/b", "a"))),
    Case("symlink-self-loop", "docs/self", LOOP, setup=link("docs/self", "self")),
    Case("symlink-loop-mid-path", "docs/loop/x.md", LOOP, setup=link("docs/loop", "loop")),
    Case("symlink-loop-as-directory", "docs/loop", LOOP, kind="directory", setup=link("docs/loop", "loop")),
    # hostile symlinks met while expanding a folder
    Case(
        "folder-holding-symlink-out",
        "docs",
        OUTSIDE,
        kind="directory",
        setup=link("docs/evil.md", lambda r, o: str(o / "secret.md")),
    ),
    Case(
        "folder-holding-symlinked-folder-out",
        "docs",
        OUTSIDE,
        kind="directory",
        setup=link("docs/ext", lambda r, o: str(o / "dir")),
    ),
    Case(
        "folder-holding-symlink-loop",
        "docs",
        LOOP,
        kind="directory",
        setup=both(link("docs/a", "b"), link("docs/b", "a")),
    ),
    Case(
        "folder-holding-dangling-symlink-out",
        "docs",
        OUTSIDE,
        kind="directory",
        setup=link("docs/gone", "../../outside/nothing"),
    ),
    # things that are not what they claim
    Case("fifo-as-file", "docs/pipe", "not a regular file", setup=fifo),
    Case("file-as-directory", "docs/ok.md/", "Context path is not a directory", kind="directory"),
    Case("root-as-file", ".", "is a directory, not a file"),
    Case("nul-byte", "docs/ok.md\x00../../etc/passwd", "NUL byte"),
    Case("empty", "", "empty"),
    Case("blank", "   ", "empty"),
    Case("name-too-long", "a" * 5000, "cannot be read"),
    # no expansion of any kind: these are plain (missing) names inside the repository
    Case("tilde", "~/.ssh/id_rsa", NOT_FOUND),
    Case("environment-variable", "$HOME/.bashrc", NOT_FOUND),
    Case("backslash-traversal", "..\\..\\outside\\secret.md", NOT_FOUND),
    Case("file-url", "file:///etc/passwd", NOT_FOUND),
    Case("fullwidth-slash", "..\uff0f..\uff0fetc\uff0fpasswd", NOT_FOUND),
]


@pytest.fixture
def layout(tmp_path):
    repo = project(tmp_path / "repo", files={"docs/ok.md": "fine\n"})
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "secret.md").write_text("SECRET\n")
    (outside / "dir" / "x.md").write_text("SECRET X\n")
    return repo, outside


def test_the_corpus_is_large_enough():
    assert len(CASES) >= 30
    assert len({case.id for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_path_is_refused_naming_its_entry(layout, case):
    repo, outside = layout
    case.setup(repo, outside)
    origin = "commands.toml [[workflows]][0].context[3]"
    entry = ContextEntry(case.kind, case.raw(repo, outside), "", origin)  # type: ignore[arg-type]
    with pytest.raises(ContextPathError) as caught:
        merge(repo, [entry], strict=True)
    message = str(caught.value)
    assert case.expect in message
    assert message.endswith(f"\n  Source: {origin}")
    assert caught.value.exit_code == 2
    assert "SECRET" not in message


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_path_is_left_out_with_a_warning_at_later_boundaries(layout, case):
    repo, outside = layout
    case.setup(repo, outside)
    good = ContextEntry("file", "docs/ok.md", "", "--context-file")
    bad = ContextEntry(case.kind, case.raw(repo, outside), "", "--context-dir")  # type: ignore[arg-type]
    merged = merge(repo, [good, bad], strict=False)
    assert [f.path for f in merged.files] == ["docs/ok.md"]
    assert any(case.expect in warning for warning in merged.warnings)
    assert all(os.path.commonpath([f.canonical, str(repo)]) == str(repo) for f in merged.files)


FLAG_CASES = [
    c
    for c in CASES
    if c.setup is nothing and "\x00" not in c.raw(Path("/r"), Path("/o")) and c.raw(Path("/r"), Path("/o")).strip()
]


@pytest.mark.parametrize("case", FLAG_CASES[:12], ids=[c.id for c in FLAG_CASES[:12]])
def test_hostile_flag_is_refused_by_the_cli_with_exit_2(layout, case):
    repo, outside = layout
    (repo / ".nia/commands.toml").write_text(
        '[[workflows]]\ntarget = "code"\n[[workflows.operations]]\nname = "create"\n'
    )
    flag = "--context-file" if case.kind == "file" else "--context-dir"
    # Flags resolve from the working directory, which is the root here.
    result = run(repo, "code", "create", flag, case.raw(repo, outside), "--print-prompt")
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    assert lines[0].startswith("Error: ") and case.expect in lines[0]
    assert lines[1] == f"  Source: {flag}"
    assert "SECRET" not in result.output


def test_hostile_entry_in_project_toml_names_its_entry_in_the_cli(layout):
    repo, _ = layout
    (repo / ".nia/project.toml").write_text(
        '[[project.context]]\ntype = "file"\npath = "docs/ok.md"\n\n'
        '[[project.context]]\ntype = "file"\npath = "../outside/secret.md"\n'
    )
    (repo / ".nia/commands.toml").write_text(
        '[[workflows]]\ntarget = "code"\n[[workflows.operations]]\nname = "create"\n'
    )
    result = run(repo, "code", "create", "--print-prompt")
    assert result.exit_code == 2
    assert result.stderr == (
        "Error: Context path is outside the repository: ../outside/secret.md (resolves outside the project)\n"
        "  Source: project.toml [[project.context]][1]\n"
    )


def test_nul_byte_from_toml_names_the_toml_entry(layout):
    repo, _ = layout
    (repo / ".nia/commands.toml").write_text(
        '[[workflows]]\ntarget = "code"\n[[workflows.operations]]\nname = "create"\n'
        '[[workflows.operations.context]]\ntype = "file"\npath = "docs/ok.md\\u0000../../etc/passwd"\n'
    )
    result = run(repo, "code", "create", "--print-prompt")
    assert result.exit_code == 2
    assert "NUL byte" in result.stderr
    assert result.stderr.endswith("  Source: commands.toml [[workflows]][0].operations[0].context[0]\n")


def test_service_path_outside_is_refused_strictly_and_skipped_leniently(layout):
    repo, _ = layout
    (repo / ".nia/project.toml").write_text('[[services]]\nname = "evil"\npath = "../outside"\nconfig = "x"\n')
    location = locate(repo)
    with pytest.raises(ContextPathError) as caught:
        project_context(location, strict=True)
    assert "outside the repository" in str(caught.value)
    assert str(caught.value).endswith("Source: project.toml [[services]][0]")
    lenient = project_context(location, strict=False)
    assert lenient.service is None and OUTSIDE in lenient.warnings[0]


def test_symlinks_inside_the_repository_are_followed_and_deduplicated(layout):
    repo, _ = layout
    os.symlink("ok.md", repo / "docs" / "alias.md")
    os.symlink("docs", repo / "docs-link")
    entries = [
        ContextEntry("file", "docs/alias.md", "", "a"),
        ContextEntry("file", "docs/ok.md", "", "b"),
        ContextEntry("file", "docs-link/ok.md", "", "c"),
        ContextEntry("file", f"{repo}/../repo/docs/ok.md", "", "d"),
    ]
    merged = merge(repo, entries)
    assert [(f.path, f.original_path, f.origin) for f in merged.files] == [("docs/ok.md", "docs/alias.md", "a")]
    assert [s.reason for s in merged.skipped] == ["duplicate of a"] * 3


def test_a_symlink_back_up_the_tree_does_not_loop_the_walk(layout):
    repo, _ = layout
    os.symlink("..", repo / "docs" / "up")  # docs/up -> the repository root
    (repo / "notes.md").write_text("notes\n")
    merged = merge(repo, [ContextEntry("directory", "docs", "", "x")])
    assert sorted(f.path for f in merged.files) == ["docs/ok.md", "notes.md"]


def test_the_reference_deduplication_example(tmp_path):
    root = project(tmp_path / "project", files={"docs/readme.md": "read me\n"})
    paths = ["./docs/readme.md", "docs/readme.md", "../project/docs/readme.md"]
    merged = merge(root, [ContextEntry("file", p, "", f"entry {i}") for i, p in enumerate(paths)])
    assert [f.canonical for f in merged.files] == [str(root / "docs/readme.md")]
    assert [f.original_path for f in merged.files] == ["./docs/readme.md"]
