"""Which model a new session gets: --model, NIA_MODEL, [session] model, echo/echo; aliases; a missing key said early."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from nia_core.cli import cli
from tests.project.helpers import project
from tests.project.helpers import run as run_in


def nia(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture(autouse=True)
def no_keys(monkeypatch: pytest.MonkeyPatch, cli_env: dict[str, str]) -> None:
    for variable in ("NIA_MODEL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(variable, raising=False)


def new(root: Path, *extra: str) -> tuple[dict[str, object], str]:
    result = nia("session", "new", "--location", str(root), "--json", *extra)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout), result.stderr


def test_without_any_setting_a_session_uses_the_offline_echo_model(tmp_path: Path) -> None:
    record, warnings = new(project(tmp_path / "p"))

    assert record["model"] == "echo/echo" and warnings == ""
    assert set(record) >= {"id", "location", "model", "created", "epoch"}


def test_the_project_sets_the_default_and_nia_model_and_model_override_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path / "p", project_toml='[session]\nmodel = "openai/gpt-4.1"\n')
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")

    assert new(root)[0]["model"] == "openai-chat/gpt-4.1"  # the alias is stored under its full name
    monkeypatch.setenv("NIA_MODEL", "echo/from-env")
    assert new(root)[0]["model"] == "echo/from-env"
    assert new(root, "--model", "echo/from-flag")[0]["model"] == "echo/from-flag"


def test_a_missing_api_key_is_a_warning_before_the_first_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path / "p")
    monkeypatch.setenv("NIA_MODEL", "anthropic/claude-sonnet-4-5")

    record, warnings = new(root)

    assert record["model"] == "anthropic-messages/claude-sonnet-4-5"
    assert warnings == (
        "Warning: ANTHROPIC_API_KEY is not set: requests to anthropic-messages will be sent without an API key\n"
    )
    switched = nia("session", "switch-model", str(record["id"]), "openai/gpt-4.1")
    assert switched.exit_code == 0, switched.output
    assert "Warning: OPENAI_API_KEY is not set" in switched.stderr
    assert "now uses openai-chat/gpt-4.1" in switched.stdout


@pytest.mark.parametrize(
    ("setting", "problem"),
    [
        ('model = "gpt-4.1"', "must be PROVIDER/MODEL, not 'gpt-4.1'"),
        ("model = 4", "must be a string"),
        ('modle = "echo/echo"', "is not a known key"),
    ],
)
def test_a_bad_session_table_is_an_error_naming_file_and_key(tmp_path: Path, setting: str, problem: str) -> None:
    root = project(tmp_path / "p", project_toml=f"[session]\n{setting}\n")

    result = nia("session", "new", "--location", str(root))

    assert result.exit_code == 2
    assert "project.toml" in result.stderr and problem in result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_an_unknown_provider_alias_is_refused(tmp_path: Path) -> None:
    result = nia("session", "new", "--location", str(project(tmp_path / "p")), "--model", "gemini/pro")

    assert result.exit_code == 2 and "unknown provider 'gemini'" in result.stderr


def test_a_workflow_session_takes_the_default_model_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    commands = '[[workflows]]\ntarget = "code"\n\n[[workflows.operations]]\nname = "create"\n'
    root = project(tmp_path / "p", commands_toml=commands, project_toml='[session]\nmodel = "echo/project"\n')

    result = run_in(root, "code", "create")

    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("[echo/project] baseline ")
