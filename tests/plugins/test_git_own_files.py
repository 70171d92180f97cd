"""nia's own generated files never show in ``git status`` nor in the git status nia gives the model.

Through the installed CLI, as a user runs it: a workflow run writes its
transaction log (and ``.nia/.gitignore``), an agent hook whose context is too
long writes ``.nia/hook-output/``; then ``git status`` and ``nia context show``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from .gitrepo import Repo, git_env, needs_git

pytestmark = needs_git

_SCRIPT = Path(sys.executable).with_name("nia")
NIA = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-c", "from nia_core.cli import main; main()"]
COMMANDS = (
    '[[workflows]]\ntarget = "audit"\ndescription = "Audit"\n'
    '[[workflows.operations]]\nname = "run"\ndescription = "Run"\nuser_input = true\n'
)


def nia(root: Path, *args: str, stdin: str = "", home: Path) -> subprocess.CompletedProcess[str]:
    env = {**git_env(), "HOME": str(home), "XDG_CACHE_HOME": str(home / "cache"), "NIA_DB": str(home / "nia.db")}
    done = subprocess.run(
        [*NIA, "-p", "no:nia-date", *args], input=stdin, capture_output=True, text=True, cwd=root, env=env, timeout=60
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return done


def git_part(root: Path, home: Path) -> str:
    baseline = json.loads(nia(root, "context", "show", "--json", home=home).stdout)["baseline"]
    return baseline[baseline.index("Git status (") :]


def project_repository(root: Path, gitignore: str | None = None) -> Repo:
    repo = Repo.init(root)
    files = {"app.py": "print('app')\n", ".nia/commands.toml": COMMANDS}
    if gitignore is not None:
        files[".nia/.gitignore"] = gitignore
    repo.commit("Initial commit", **files)
    return repo


def test_a_workflow_run_leaves_git_status_and_the_models_status_clean(tmp_path):
    repo = project_repository(tmp_path / "project")

    nia(repo.root, "audit", "run", "go", "--print-prompt", home=tmp_path)

    assert (repo.root / ".nia" / "logs" / "transactions" / "latest.json").is_file()
    assert repo.git("status", "--porcelain", "--untracked-files=all") == ""
    assert "- Working tree: clean" in git_part(repo.root, tmp_path)


def test_where_the_users_own_gitignore_does_not_list_them_the_model_still_is_not_told(tmp_path):
    repo = project_repository(tmp_path / "project", gitignore="# my own rules\n")

    nia(repo.root, "audit", "run", "go", "--print-prompt", home=tmp_path)

    assert repo.git("status", "--porcelain") == "?? .nia/logs/\n"  # the user's ignore file, the user's choice
    assert (repo.root / ".nia" / ".gitignore").read_text() == "# my own rules\n"
    assert "- Working tree: clean" in git_part(repo.root, tmp_path)


def test_a_project_inside_a_larger_repository_leaves_out_its_own_generated_files(tmp_path):
    repo = Repo.init(tmp_path / "mono")
    repo.commit("Initial commit", **{"services/api/app.py": "x = 1\n", "services/api/.nia/commands.toml": COMMANDS})
    project = repo.root / "services" / "api"
    (project / ".nia" / ".gitignore").write_text("")  # the user's: lists nothing
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "An empty ignore file")

    nia(project, "audit", "run", "go", "--print-prompt", home=tmp_path)
    (project / "new.py").write_text("y = 2\n")

    assert "?? services/api/.nia/logs/" in repo.git("status", "--porcelain")
    part = git_part(project, tmp_path)
    assert "- Working tree: 1 changed path (1 untracked):\n  - `new.py` (untracked)" in part
    assert ".nia" not in part


def test_hook_output_too_long_for_the_host_is_saved_where_git_does_not_see_it(tmp_path):
    repo = Repo.init(tmp_path / "project")
    context = '[[project.context]]\ntype = "file"\npath = "notes.md"\n'
    repo.commit("Initial commit", **{"notes.md": "Note.\n" * 5000, ".nia/project.toml": context})
    prompt = {"hook_event_name": "UserPromptSubmit", "session_id": "s1", "cwd": str(repo.root), "prompt": "hi"}

    answer = nia(repo.root, "hook", "claude-code", stdin=json.dumps(prompt), home=tmp_path).stdout

    assert ".nia/hook-output/" in json.loads(answer)["hookSpecificOutput"]["additionalContext"]
    assert os.listdir(repo.root / ".nia" / "hook-output")
    assert repo.git("status", "--porcelain", "--untracked-files=all") == ""
    assert "- Working tree: clean" in git_part(repo.root, tmp_path)
