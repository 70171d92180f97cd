"""What plugins and config files do wrong never reaches the model as a change, and is said once.

#11.9 (BaseException in loaders, hooks, renderers), #11.18 (per-source size
limit), #11.19 (dropped sources are visible; a first boundary blocks on them),
#15.3 (a broken project.toml is unavailable context), #15.4 (hook-named
functions without @hookimpl), #15.6 (one problem, one line), #11.21.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from nia_core.cli import cli


def nia(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), env=env)


def make_project(tmp_path: Path, plugins: dict[str, str], toml: str | None = None) -> Path:
    root = tmp_path / "project"
    (root / ".nia" / "plugins").mkdir(parents=True)
    (root / "AGENTS.md").write_text("Be brief.\n")
    for name, source in plugins.items():
        (root / ".nia" / "plugins" / f"{name}.py").write_text(textwrap.dedent(source))
    if toml is not None:
        (root / ".nia" / "project.toml").write_text(toml)
    return root


GOOD = """
from nia_core import ContextSource, hookimpl

@hookimpl
def nia_context_sources(location):
    return [ContextSource("good/a", lambda: "fine", lambda v: "Good plugin says " + v)]
"""

# -- #11.9: BaseException from loaders, hooks and renderers ---------------------------------

BASE_EXCEPTIONS = {
    "loader_interrupt": """
        from nia_core import ContextSource, hookimpl
        def load():
            raise KeyboardInterrupt
        @hookimpl
        def nia_context_sources(location):
            return [ContextSource("loader-interrupt/a", load, str)]
    """,
    "loader_exit": """
        import sys
        from nia_core import ContextSource, hookimpl
        @hookimpl
        def nia_context_sources(location):
            return [ContextSource("loader-exit/a", lambda: sys.exit(4), str)]
    """,
    "hook_exit": """
        import sys
        from nia_core import hookimpl
        @hookimpl
        def nia_context_sources(location):
            sys.exit("bye")
    """,
    "render_interrupt": """
        from nia_core import ContextSource, hookimpl
        def render(value):
            raise KeyboardInterrupt("from a renderer")
        @hookimpl
        def nia_context_sources(location):
            return [ContextSource("render-interrupt/a", lambda: 1, render)]
    """,
    "opened_exit": """
        import sys
        from nia_core import hookimpl
        @hookimpl
        def nia_location_opened(location, context):
            raise SystemExit(9)
    """,
}


def test_base_exceptions_from_plugin_code_are_named_and_isolated(tmp_path):
    root = make_project(tmp_path, {**BASE_EXCEPTIONS, "good": GOOD})
    result = nia("context", "show", "--location", str(root))
    assert result.exit_code == 0, result.output
    assert "Good plugin says fine" in result.stdout and "Be brief." in result.stdout
    err = result.stderr
    assert "Traceback" not in err and "Aborted" not in err and "timed out" not in err
    assert "plugin 'loader_interrupt': context source 'loader-interrupt/a': loader raised KeyboardInterrupt" in err
    assert "plugin 'loader_exit': context source 'loader-exit/a': loader raised SystemExit: 4" in err
    assert "plugin 'hook_exit': raised SystemExit: bye" in err
    assert "plugin 'render_interrupt': context source 'render-interrupt/a': baseline renderer raised" in err
    assert "plugin 'opened_exit': nia_location_opened raised SystemExit(9)" in err


# -- #11.18: per-source size limit ----------------------------------------------------------

HUGE = """
from nia_core import ContextSource, hookimpl

@hookimpl
def nia_context_sources(location):
    return [
        ContextSource("huge/text", lambda: "x" * (3 * 1024 * 1024), lambda v: v),
        ContextSource("huge/list", lambda: ["y" * 1000] * 2000, lambda v: str(len(v))),
    ]
"""


def test_a_value_over_the_size_limit_is_an_error_for_that_source_only(tmp_path):
    root = make_project(tmp_path, {"huge": HUGE, "good": GOOD})
    result = nia("context", "show", "--json", "--location", str(root))
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    status = {s["key"]: (s["status"], s["reason"]) for s in payload["sources"]}
    assert status["huge/text"] == (
        "error",
        "value is 3.0 MiB of JSON, over the per-source limit of 1 MiB (NIA_MAX_SOURCE_BYTES)",
    )
    assert status["huge/list"][0] == "error" and "over the per-source limit" in status["huge/list"][1]
    assert status["good/a"] == ("ok", None) and "Good plugin says fine" in payload["baseline"]
    assert "xxxx" not in payload["baseline"]
    assert result.stderr.count("huge/text") == 1


def test_the_size_limit_is_configurable(tmp_path):
    root = make_project(tmp_path, {"good": GOOD})
    result = nia("context", "show", "--json", "--location", str(root), env={"NIA_MAX_SOURCE_BYTES": "5"})
    status = {s["key"]: s["status"] for s in json.loads(result.stdout)["sources"]}
    assert status["good/a"] == "error" and status["nia/instructions"] == "error"
    bad = nia("context", "show", "--location", str(root), env={"NIA_MAX_SOURCE_BYTES": "lots"})
    assert "NIA_MAX_SOURCE_BYTES='lots' is not a positive number of bytes; using 1048576" in bad.stderr
    assert "Good plugin says fine" in bad.stdout


def test_plugins_list_reports_an_oversized_value(tmp_path):
    root = make_project(tmp_path, {"huge": HUGE})
    result = nia("plugins", "list", "--location", str(root))
    assert "over the per-source limit of 1 MiB" in result.stdout


# -- #11.19 and #15.6: dropped sources are visible, once; the first boundary blocks -----------

SLOW = """
import time
from nia_core import ContextSource, hookimpl

@hookimpl
def nia_context_sources(location):
    def load():
        time.sleep(1)
        return "late"
    return [ContextSource("slow/a", load, str, timeout=0.2)]
"""

SLOW_HOOK = """
import time
from nia_core import ContextSource, hookimpl

NIA_NAMESPACE = "slowhook"

@hookimpl
def nia_context_sources(location):
    time.sleep(3)
    return [ContextSource("slowhook/a", lambda: 1, str)]
"""

BAD_RENDER = """
from nia_core import ContextSource, hookimpl

@hookimpl
def nia_context_sources(location):
    def render(value):
        raise ValueError("nope")
    return [ContextSource("rend/x", lambda: 1, render)]
"""


def test_each_failed_source_is_one_warning_line(tmp_path):
    root = make_project(tmp_path, {"slow": SLOW, "rend": BAD_RENDER})
    result = nia("context", "show", "--location", str(root))
    lines = result.stderr.splitlines()
    assert [line for line in lines if "slow/a" in line and "blocked" not in line] == [
        "Warning: plugin 'slow': context source 'slow/a': loader timed out after 0.2s; counted unavailable"
    ]
    at = f"({root / '.nia' / 'plugins' / 'rend.py'}:7)"  # the renderer's raise, named from the working directory
    assert [line for line in lines if "rend/x" in line and "blocked" not in line] == [
        f"Warning: plugin 'rend': context source 'rend/x': baseline renderer raised ValueError: nope {at} "
        "(left out until it renders)"
    ]
    listed = nia("plugins", "list", "--json", "--location", str(root))
    errors = {p["name"]: p["error"] for p in json.loads(listed.stdout)}
    assert errors["rend"] == f"context source 'rend/x': baseline renderer raised ValueError: nope {at}"


@pytest.fixture
def sessions(tmp_path, monkeypatch):
    monkeypatch.setenv("NIA_DB", str(tmp_path / "sessions.db"))
    monkeypatch.setenv("NIA_TIMEZONE", "UTC")


def new_session(root: Path) -> str:
    created = nia("session", "new", "--location", str(root), "--model", "echo/echo")
    assert created.exit_code == 0, created.output
    return created.stdout.strip()


def test_a_first_boundary_blocks_on_a_timed_out_loader_or_hook(tmp_path, sessions):
    for plugins in ({"slow": SLOW}, {"slowhook": SLOW_HOOK}):
        root = make_project(tmp_path / next(iter(plugins)), plugins)
        session_id = new_session(root)
        sent = nia("session", "send", session_id, "hello")
        assert sent.exit_code == 3, sent.output
        assert "blocked on" in sent.stderr and "the input is kept pending" in sent.stderr
        assert "Warning: plugin" in sent.stderr  # the dropped source is named, not silent


# -- #15.3: a broken project.toml is unavailable context -------------------------------------

VALID = '[project]\ndescription = "The demo project"\n'


def model_view(session_id: str) -> str:
    shown = nia("session", "show", session_id, "--model-view")
    assert shown.exit_code == 0, shown.output
    return shown.stdout


@pytest.mark.parametrize(
    "broken",
    [VALID + 'descripton = "x"\n', '[project]\ndescripton = "x"\n', "[plugins]\ndisabled = 3\n"],
    ids=["validation", "validation-only", "plugins-table"],
)
def test_a_broken_project_toml_between_sends_changes_nothing_for_the_model(tmp_path, sessions, broken):
    root = make_project(tmp_path, {"good": GOOD}, toml=VALID)
    config = root / ".nia" / "project.toml"
    session_id = new_session(root)
    first = nia("session", "send", session_id, "one")
    assert first.exit_code == 0, first.output
    before = model_view(session_id)
    assert "The demo project" in before and "Good plugin says fine" in before

    config.write_text(broken)
    second = nia("session", "send", session_id, "two")
    assert second.exit_code == 0, second.output
    assert "Traceback" not in second.output
    assert "project.toml" in second.stderr
    after = model_view(session_id)
    assert after.replace(before, "").count("=== ") == 2  # the user's message and the reply, no system message
    assert "no longer applies" not in after and "removed" not in after.lower()

    config.write_text('[project]\ndescription = "The renamed project"\n')
    third = nia("session", "send", session_id, "three")
    assert third.exit_code == 0, third.output
    assert "The renamed project" in model_view(session_id).replace(after, "")


def _boundary(root: Path, snapshot):
    """One boundary as a fresh ``nia`` process computes it: a new host, the one observation path."""
    from nia_core.context import EMPTY_SNAPSHOT, initialize, reconcile
    from nia_core.plugin_host import load_host
    from nia_core.project import locate

    location = locate(root)
    host = load_host(location, entry_points=False)
    context = host.assemble(host.open(location)).context
    if snapshot is EMPTY_SNAPSHOT:
        return initialize(context)
    return reconcile(context, snapshot)


def test_a_toml_syntax_error_keeps_the_admitted_context_in_a_fresh_process(tmp_path, caplog):
    from nia_core.context import EMPTY_SNAPSHOT, Unchanged, Updated
    from nia_core.errors import InitializationBlocked

    root = make_project(tmp_path, {"good": GOOD, "other": GOOD.replace("good/a", "other/a")})
    config = root / ".nia" / "project.toml"
    config.write_text(VALID + '[plugins]\ndisabled = ["other"]\n')
    generation = _boundary(root, EMPTY_SNAPSHOT)
    assert "The demo project" in generation.baseline and "other/a" not in generation.snapshot

    config.write_text(VALID + '[plugins]\ndisabled = ["other"\n')
    # Neither "other" switched on (added), nor anything removed: nothing changed for the model.
    assert isinstance(_boundary(root, generation.snapshot), Unchanged)
    [warning] = [r.getMessage() for r in caplog.records if "project.toml" in r.getMessage()]
    assert "TOML syntax error" in warning and warning.endswith("the context stays as it was until the file is fixed")
    with pytest.raises(InitializationBlocked):  # a first boundary never starts from a broken config
        _boundary(root, EMPTY_SNAPSHOT)

    config.write_text('[project]\ndescription = "The renamed project"\n[plugins]\ndisabled = ["other"]\n')
    updated = _boundary(root, generation.snapshot)
    assert isinstance(updated, Updated) and "The renamed project" in updated.text


def test_a_broken_project_toml_is_one_error_line_for_context_show_and_workflows(tmp_path):
    root = make_project(tmp_path, {}, toml=VALID + "[[\n")
    (root / ".nia" / "commands.toml").write_text(
        '[[workflows]]\ntarget = "issue"\n[[workflows.operations]]\nname = "draft"\nuser_input = true\n'
    )
    shown = nia("context", "show", "--location", str(root))
    assert shown.exit_code == 2
    assert [line for line in shown.stderr.splitlines() if line] == [shown.stderr.strip()]
    assert shown.stderr.startswith("Error: ") and "project.toml" in shown.stderr
    import os

    cwd = os.getcwd()
    os.chdir(root)
    try:
        drafted = nia("issue", "draft", "--print-prompt", "slow login")
    finally:
        os.chdir(cwd)
    assert drafted.exit_code == 2
    assert "Warning" not in drafted.stderr and drafted.stderr.count("project.toml") == 1


# -- #15.4: hook-named functions without @hookimpl -------------------------------------------

UNMARKED = """
from nia_core import ContextSource

def nia_context_sources(location):
    return [ContextSource("unmarked/a", lambda: 1, str)]

def nia_context_source(location):
    return []
"""


def test_a_hook_named_function_without_hookimpl_warns_and_strict_fails(tmp_path):
    root = make_project(tmp_path, {"unmarked": UNMARKED})
    shown = nia("context", "show", "--location", str(root))
    assert shown.exit_code == 0
    assert (
        "Warning: plugin 'unmarked': function nia_context_sources has no @hookimpl marker, so nia never calls it"
        in shown.stderr
    )
    assert "function nia_context_source has no @hookimpl marker and nia has no hook of that name" in shown.stderr
    strict = nia("--strict", "context", "show", "--location", str(root))
    assert strict.exit_code == 1
    assert "Error: plugin 'unmarked': function nia_context_sources has no @hookimpl marker" in strict.stderr
    listed = json.loads(nia("plugins", "list", "--json", "--location", str(root)).stdout)
    [info] = [p for p in listed if p["name"] == "unmarked"]
    assert len(info["warnings"]) == 2


# -- #11.21 ------------------------------------------------------------------------------------


@pytest.mark.parametrize("length", [300, 250])
def test_plugin_new_with_a_name_too_long_for_the_file_system(tmp_path, length):
    result = nia("plugin", "new", "a" * length, "--dir", str(tmp_path / ("b" * 10)))
    assert result.exit_code == 2
    assert "is too long for the file system" in result.stderr and "Traceback" not in result.output
    assert not (tmp_path / ("b" * 10)).exists()


def test_a_hook_returning_a_dict_is_reported_as_a_bad_return_not_as_raised(tmp_path):
    dicty = "from nia_core import hookimpl\n@hookimpl\ndef nia_context_sources(location):\n    return {'k': 1}\n"
    root = make_project(tmp_path, {"dicty": dicty, "good": GOOD})
    result = nia("context", "show", "--location", str(root))
    assert "Good plugin says fine" in result.stdout
    assert [line for line in result.stderr.splitlines() if "dicty" in line] == [
        "Warning: plugin 'dicty': returned dict, not a list of ContextSource"
    ]
