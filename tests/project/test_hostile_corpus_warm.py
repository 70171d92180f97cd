"""The hostile-file corpus against warm caches: a file read and cached, then swapped for a hostile thing.

The project caches (each file's outcome by stat signature, checked bytes,
the directory walk's stats standing in for the loader's) live as long as the
process: ``nia dev``, ``nia mcp`` and a session's turns reuse them. Each case
reads a good file twice in one process, swaps the hostile thing in at its
path, and reads again: neither the stale value nor an outside byte may appear.
"""

from __future__ import annotations

import pytest

from tests.project.test_hostile_corpus import CASES, assert_no_leak, run, world  # noqa: F401 - fixture

STALE = "STALE-WARM-9d1e"

WORKFLOW = '[[workflows]]\ntarget = "code"\n{context}[[workflows.operations]]\nname = "create"\n'
DIRECTORY = '[[{table}.context]]\ntype = "directory"\npath = "docs/"\n'
FILE = '[[{table}.context]]\ntype = "file"\npath = "docs/ok.md"\n'
PROMPT = ("code", "create", "--print-prompt")

READERS = {
    # name: (path read, project.toml, workflow context, command)
    "agents-md": ("AGENTS.md", "", "", ("context", "show")),
    "project-toml": (".nia/project.toml", None, "", ("context", "show")),
    "project-context-dir": ("docs/ok.md", DIRECTORY.format(table="project"), "", ("context", "show")),
    "project-context-file": ("docs/ok.md", FILE.format(table="project"), "", ("context", "show")),
    "context-file-flag": ("docs/ok.md", "", "", (*PROMPT, "--context-file", "docs/ok.md")),
    "context-dir-flag": ("docs/ok.md", "", "", (*PROMPT, "--context-dir", "docs")),
    "workflow-dir": ("docs/ok.md", "", DIRECTORY.format(table="workflows"), PROMPT),
    "workflow-file": ("docs/ok.md", "", FILE.format(table="workflows"), PROMPT),
}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
@pytest.mark.parametrize("reader", READERS, ids=list(READERS))
def test_a_cached_file_swapped_for_a_hostile_thing_gives_neither_its_old_value_nor_an_outside_byte(
    world,  # noqa: F811
    reader,
    case,
):
    relative, project_toml, workflow_context, args = READERS[reader]
    path = world.repo / relative
    (world.repo / ".nia" / "commands.toml").write_text(WORKFLOW.format(context=workflow_context))
    if project_toml is None:  # the file read is project.toml itself
        path.write_text(f'[project]\ndescription = "{STALE}"\n')
    else:
        (world.repo / ".nia" / "project.toml").write_text(project_toml)
        path.write_text(f"{STALE}\n")
    if reader != "agents-md":
        (world.repo / "AGENTS.md").write_text("The root rule.\n")
    for _ in range(2):  # cold, then warm
        result = run(world.repo, *args)
        assert STALE in result.stdout, result.output
    path.unlink()
    case.plant(world, path)
    for _ in range(2):
        result = run(world.repo, *args)
        assert_no_leak(result)
        assert STALE not in result.stdout
