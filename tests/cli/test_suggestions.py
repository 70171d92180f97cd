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
