"""A mistyped command gets a suggestion at every level, lazily loaded built-ins and plugin commands included."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from nia_core.cli import cli


@pytest.mark.parametrize(
    ("words", "suggestion"),
    [
        (["contxt"], "Did you mean 'context'?"),
        (["sesion"], "Did you mean 'session'?"),
        (["plugin", "nwe"], "Did you mean 'new'?"),
        (["session", "lst"], "Did you mean 'list'?"),
    ],
)
def test_a_typo_is_answered_with_the_closest_command(words, suggestion):
    result = CliRunner().invoke(cli, words)

    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == f"Error: No such command {words[-1]!r}. {suggestion}"


def test_nothing_close_gets_no_suggestion():
    result = CliRunner().invoke(cli, ["zzzzzz"])

    assert result.exit_code == 2
    assert result.stderr.splitlines()[-1] == "Error: No such command 'zzzzzz'."


def test_shell_completion_offers_commands_and_the_projects_workflow_targets(tmp_path, monkeypatch):
    """docs/cli.md's completion line works: click's completion sees lazily loaded built-ins and workflows."""
    import os
    import subprocess
    import sys

    (tmp_path / ".nia").mkdir()
    (tmp_path / ".nia" / "commands.toml").write_text(
        '[[workflows]]\ntarget = "issue"\n[[workflows.operations]]\nname = "draft"\n'
    )

    def complete(words: str) -> list[str]:
        env = {**os.environ, "_NIA_COMPLETE": "bash_complete", "COMP_WORDS": words, "COMP_CWORD": "1"}
        if words.count(" ") > 1:
            env["COMP_CWORD"] = str(words.count(" "))
        done = subprocess.run(
            [sys.executable, "-c", "from nia_core.cli import main; main()"],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
        return [line.partition(",")[2] for line in done.stdout.splitlines()]

    assert complete("nia is") == ["issue"]
    assert complete("nia con") == ["context"]
    assert complete("nia issue ") == ["draft"]
    assert "prune" in complete("nia session ")
