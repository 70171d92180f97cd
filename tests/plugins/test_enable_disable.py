"""``nia plugins disable/enable`` edit ``[plugins] disabled`` and nothing else, byte for byte."""

from __future__ import annotations

import json

from nia_core.project.paths import shown_path

from .conftest import run

COMMENTED = """\
# Project settings for nia.   (two spaces after the dot, kept)
name = "demo"  # trailing comment

[plugins]
# Plugins we do not want here:
disabled = [
    "nia-environment",  # too chatty
]
max = 3

[plugins.nia-instructions]
max_bytes = 4096   # keep instructions short
"""


def disabled(project):
    result = run("plugins", "list", "--json", "--all", "--location", str(project))
    return sorted(p["name"] for p in json.loads(result.stdout) if p["status"] == "disabled")


def changed_lines(before: str, after: str) -> tuple[list[str], list[str]]:
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    return [line for line in old if line not in new], [line for line in new if line not in old]


def test_disable_adds_one_line_and_keeps_comments_and_layout(project):
    config = project / ".nia" / "project.toml"
    config.write_text(COMMENTED)

    result = run("plugins", "disable", "nia-date", "--location", str(project))

    assert result.exit_code == 0 and result.stdout == f"Disabled nia-date in {shown_path(config)}\n"
    assert changed_lines(COMMENTED, config.read_text()) == ([], ['    "nia-date",\n'])
    assert config.read_text() == COMMENTED.replace("  # too chatty\n", '  # too chatty\n    "nia-date",\n')
    assert disabled(project) == ["nia-date", "nia-environment"]
    assert "Today's date" not in run("context", "show", "--location", str(project)).stdout


def test_enable_removes_only_that_entry(project):
    config = project / ".nia" / "project.toml"
    config.write_text(COMMENTED)

    result = run("plugins", "enable", "nia-environment", "--location", str(project))

    assert result.exit_code == 0 and result.stdout == f"Enabled nia-environment in {shown_path(config)}\n"
    assert changed_lines(COMMENTED, config.read_text()) == (['    "nia-environment",  # too chatty\n'], [])
    assert disabled(project) == []


def test_a_single_line_array_stays_on_its_line(project):
    config = project / ".nia" / "project.toml"
    text = '# top\n[plugins]\ndisabled = ["nia-environment"]  # off\n\n[other]\nx = 1\n'
    config.write_text(text)

    run("plugins", "disable", "nia-date", "--location", str(project))

    assert config.read_text() == text.replace('["nia-environment"]', '["nia-environment", "nia-date"]')


def test_disable_creates_the_table_or_the_file(project, tmp_path):
    config = project / ".nia" / "project.toml"
    config.write_text("# only a comment\n[workflows]\nx = 1\n")
    run("plugins", "disable", "nia-date", "--location", str(project))
    assert config.read_text() == '# only a comment\n[workflows]\nx = 1\n\n[plugins]\ndisabled = ["nia-date"]\n'

    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / ".git").mkdir()
    result = run("plugins", "disable", "nia-date", "--location", str(bare))
    assert result.exit_code == 0
    assert (bare / ".nia" / "project.toml").read_text() == '[plugins]\ndisabled = ["nia-date"]\n'


def test_crlf_line_ends_survive(project):
    config = project / ".nia" / "project.toml"
    config.write_bytes(b"# windows\r\n[plugins]\r\ndisabled = []\r\n")

    run("plugins", "disable", "nia-date", "--location", str(project))

    assert config.read_bytes() == b'# windows\r\n[plugins]\r\ndisabled = ["nia-date"]\r\n'


def test_repeating_is_harmless(project):
    config = project / ".nia" / "project.toml"
    run("plugins", "disable", "nia-date", "--location", str(project))
    text = config.read_text()

    again = run("plugins", "disable", "nia-date", "--location", str(project))
    assert again.exit_code == 0 and again.stdout == f"nia-date is already disabled in {shown_path(config)}\n"
    assert config.read_text() == text
    assert run("plugins", "enable", "nia-date", "--location", str(project)).exit_code == 0
    twice = run("plugins", "enable", "nia-date", "--location", str(project))
    assert twice.exit_code == 0 and twice.stdout == f"nia-date is not disabled in {shown_path(config)}\n"


def test_an_unknown_plugin_is_a_usage_error(project):
    result = run("plugins", "disable", "nia-dat", "--location", str(project))

    assert result.exit_code == 2
    assert result.stderr == "Error: no plugin named 'nia-dat' here; 'nia plugins list --all' shows the names\n"
    assert not (project / ".nia" / "project.toml").exists()


def test_a_broken_config_file_is_reported_with_file_and_line(project):
    config = project / ".nia" / "project.toml"
    config.write_text("[plugins]\ndisabled = [\n")

    result = run("plugins", "disable", "nia-date", "--location", str(project))

    assert result.exit_code == 2 and result.stderr.startswith(f"Error: {config}:")
    assert config.read_text() == "[plugins]\ndisabled = [\n"


def test_disabled_that_is_not_a_list_is_reported(project):
    config = project / ".nia" / "project.toml"
    config.write_text('[plugins]\ndisabled = "nia-date"\n')

    result = run("plugins", "enable", "nia-date", "--location", str(project))

    assert result.exit_code == 2
    assert result.stderr == f"Error: {config}: plugins.disabled must be a list of plugin names\n"


def test_enable_says_when_another_switch_still_holds_it_off(project, monkeypatch):
    monkeypatch.setenv("NIA_DISABLE_PLUGINS", "nia-date")
    run("plugins", "disable", "nia-date", "--location", str(project))

    result = run("plugins", "enable", "nia-date", "--location", str(project))

    assert result.exit_code == 0
    assert result.stderr == "Note: nia-date is still switched off by NIA_DISABLE_PLUGINS\n"
