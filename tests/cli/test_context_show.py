import json

from click.testing import CliRunner

from nia_core import __version__
from nia_core.cli import cli


def run(*args, **kwargs):
    return CliRunner().invoke(cli, list(args), catch_exceptions=kwargs.pop("catch", True), **kwargs)


def test_version_and_help():
    assert run("--version").output.strip() == f"nia {__version__}"
    result = run("--help")
    assert result.exit_code == 0 and "context" in result.output


def test_context_show_prints_the_builtin_baseline(tmp_path):
    (tmp_path / "AGENTS.md").write_text("Use tabs.\n")
    result = run("context", "show", "--location", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert f"- Working directory: {tmp_path.resolve()}" in result.output
    assert "Today's date is " in result.output
    assert "Use tabs." in result.output
    assert result.output.index("Environment:") < result.output.index("Today's date") < result.output.index("Use tabs")


def test_context_show_json_lists_each_source(tmp_path):
    result = run("context", "show", "--json", "--location", str(tmp_path))
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    by_key = {s["key"]: s for s in data["sources"]}
    assert by_key["nia/date"]["plugin"] == "nia-date"
    assert by_key["nia/environment"]["status"] == "ok"
    assert by_key["nia/environment"]["size"] == len(
        next(part for part in data["baseline"].split("\n\n") if part.startswith("Environment")).encode()
    )
    assert data["blocked_on"] == []


def test_an_agents_md_that_is_not_a_file_is_left_out_with_a_warning_not_a_crash(tmp_path):
    (tmp_path / "AGENTS.md").mkdir()  # exists, but is no file to read: left out, nothing blocks
    result = run("context", "show", "--json", "--location", str(tmp_path))
    assert result.exit_code == 0, result.output
    data = json.loads(result.output[result.output.index("{") :])
    assert "nia/instructions" not in {s["key"] for s in data["sources"]}
    assert data["blocked_on"] == []
    assert "AGENTS.md is not a regular file: left out" in result.stderr


def test_missing_location_is_a_clear_error(tmp_path):
    result = run("context", "show", "--location", str(tmp_path / "nope"))
    assert result.exit_code == 2
    assert "Traceback" not in result.output


def test_malformed_project_toml_names_file_and_line(tmp_path):
    (tmp_path / ".nia").mkdir()
    (tmp_path / ".nia" / "project.toml").write_text("[plugins]\ndisabled = [\n")
    result = run("context", "show", "--location", str(tmp_path))
    assert result.exit_code == 2
    assert "project.toml:" in result.output and "TOML syntax error" in result.output
    assert "Traceback" not in result.output


def test_a_failing_renderer_leaves_its_source_out_naming_the_plugin(tmp_path):
    plugins = tmp_path / ".nia" / "plugins"
    plugins.mkdir(parents=True)
    (plugins / "bad_render.py").write_text(
        "from nia_core import ContextSource, hookimpl\n"
        "@hookimpl\n"
        "def nia_context_sources():\n"
        "    return [ContextSource(key='acme/r', load=lambda: 1, baseline=lambda v: '')]\n"
    )
    result = run("context", "show", "--location", str(tmp_path))
    assert result.exit_code == 0
    assert (
        "Warning: plugin 'bad_render': context source 'acme/r': baseline renderer returned empty text "
        "(left out until it renders)" in result.output
    )
    assert "Environment:" in result.output and "Traceback" not in result.output
    data = json.loads(run("context", "show", "--json", "--location", str(tmp_path)).stdout)
    [entry] = [s for s in data["sources"] if s["key"] == "acme/r"]
    assert entry["status"] == "error" and "returned empty text" in entry["reason"]
    strict = run("--strict", "context", "show", "--location", str(tmp_path))
    assert strict.exit_code == 1
    assert "Error: plugin 'bad_render': context source 'acme/r': baseline renderer returned empty text" in strict.output
    assert "Traceback" not in strict.output
    debug = run("--strict", "--debug", "context", "show", "--location", str(tmp_path))
    assert debug.exception is not None and type(debug.exception).__name__ == "PluginError"


def test_plugin_switched_off_with_p_no(tmp_path):
    result = run("-p", "no:nia-date", "context", "show", "--location", str(tmp_path))
    assert result.exit_code == 0
    assert "Today's date" not in result.output
    bad = run("-p", "nia-date", "context", "show")
    assert bad.exit_code == 2 and "no:NAME" in bad.output


def test_a_reader_that_closes_the_pipe_early_gets_no_error_message(tmp_path):
    """``nia context show | head -1``: the closed pipe ends nia quietly, as with any Unix tool."""
    import subprocess
    import sys

    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from nia_core.cli import main; main()",
            "context",
            "show",
            "--json",
            "--location",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    process.stdout.close()  # the reader is gone before nia writes a byte
    stderr = process.stderr.read().decode()
    process.stderr.close()
    assert process.wait(timeout=60) == 1
    assert stderr == ""
