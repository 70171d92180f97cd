"""The first hour, round two (issue 27): what a new user and a new plugin author trip over, through the CLI."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nia_core.agents import ADAPTERS
from tests.security.test_first_round_leftovers import Lines

_SCRIPT = Path(sys.executable).with_name("nia")
NIA = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-c", "from nia_core.cli import main; main()"]


def nia(root: Path, *args: str, stdin: str = "", env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*NIA, "-p", "no:nia-date", *args],
        cwd=root, input=stdin, capture_output=True, text=True, timeout=120,
        env={**os.environ, "NIA_DB": str(root.parent / "nia.db"), **(env or {})},
    )  # fmt: skip


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    (root / ".nia").mkdir(parents=True)
    (root / "AGENTS.md").write_text("Run the tests.\n")
    return root


# -- 27.4: a configuration error is one line with file, line and key, whatever its kind ----------------

P = r"\.nia/project\.toml"
BROKEN = {
    "a syntax error": ('[project]\ndescription = "x"\n[commit\n', P + r":3:\d+: TOML syntax error"),
    "an unknown key": ('[project]\ndescription = "x"\nbogus = 1\n', P + r":3: \[project\]\.bogus is not"),
    "a bad value": ('[project]\n\nprompt_format = "html"\n', P + r':3: \[project\]\.prompt_format must be "md"'),
    "a wrong type": ("[logs]\nkeep_transactions = 'ten'\n", P + r":2: \[logs\]\.keep_transactions must be"),
    "a bad switch list": ("[plugins]\n\ndisabled = 'nia-git'\n", P + r":3: \[plugins\]\.disabled must be"),
    "a service without a path": ('[[services]]\nname = "api"\n', P + r":1: \[\[services\]\]\[0\] needs a 'path'"),
}
FAILING = {"context show": ("context", "show"), "context show --json": ("context", "show", "--json"),
           "plugins list": ("plugins", "list"), "plugins list --json": ("plugins", "list", "--json"),
           "session new": ("session", "new")}  # fmt: skip


@pytest.mark.parametrize("kind", BROKEN)
@pytest.mark.parametrize("command", FAILING)
def test_a_configuration_error_fails_every_command_that_reads_it_alike(project: Path, kind: str, command: str) -> None:
    text, expected = BROKEN[kind]
    (project / ".nia" / "project.toml").write_text(text)
    done = nia(project, *FAILING[command])
    assert done.returncode == 2, done.stderr
    assert re.fullmatch(f"Error: {expected}[^\n]*\n", done.stderr), done.stderr
    assert "plugin 'nia-project'" not in done.stderr and "raised ConfigError" not in done.stderr


@pytest.mark.parametrize("kind", BROKEN)
def test_help_lists_the_commands_and_says_the_configuration_error_once(project: Path, kind: str) -> None:
    text, expected = BROKEN[kind]
    (project / ".nia" / "project.toml").write_text(text)
    done = nia(project, "--help")
    assert done.returncode == 0 and "context" in done.stdout
    assert re.fullmatch(f"Warning: {expected}[^\n]*\n", done.stderr), done.stderr


@pytest.mark.parametrize("kind", BROKEN)
def test_a_running_session_and_the_hook_keep_the_context_and_say_the_error_alike(project: Path, kind: str) -> None:
    session = nia(project, "session", "new").stdout.strip()
    assert nia(project, "session", "send", session, "one").returncode == 0
    text, expected = BROKEN[kind]
    (project / ".nia" / "project.toml").write_text(text)
    sent = nia(project, "session", "send", session, "two")
    assert sent.returncode == 0, sent.stderr
    assert re.search(f"^Warning: {expected}.*; the context stays as it was until the file is fixed$", sent.stderr, re.M)
    hook = {"hook_event_name": "UserPromptSubmit", "session_id": "h", "cwd": str(project), "prompt": "x"}
    answered = subprocess.run(
        [*NIA, "hook", "claude-code"], cwd=project, input=json.dumps(hook), capture_output=True, text=True,
        timeout=120, env={**os.environ, "NIA_DB": str(project.parent / "nia.db")},
    )  # fmt: skip
    assert answered.returncode == 0
    said = [line for line in answered.stderr.splitlines() if "project.toml:" in line]
    assert len(said) == 1 and re.match(f"nia: {expected}", said[0]), answered.stderr


# -- 27.7: nia hook install says which folder it took as the project root, and why -----------------------


@pytest.mark.parametrize("host", sorted(ADAPTERS))
@pytest.mark.parametrize("kind", ["plain folder", "git repository", "nia project", "subfolder of a nia project"])
def test_hook_install_says_which_folder_is_the_project_and_why(tmp_path: Path, host: str, kind: str) -> None:
    root = tmp_path / "work"
    cwd = root
    if kind == "git repository":
        (root / ".git").mkdir(parents=True)
    elif kind.endswith("nia project"):
        (root / ".nia").mkdir(parents=True)
        if kind.startswith("subfolder"):
            cwd = root / "src" / "deep"
    cwd.mkdir(parents=True, exist_ok=True)
    why = {
        "plain folder": "no .nia/ or .git here or above, so the current folder is taken as the project",
        "git repository": "the nearest folder holding .git; no .nia/ above",
        "nia project": "the nearest folder holding .nia/",
        "subfolder of a nia project": "the nearest folder holding .nia/",
    }[kind]
    for command in ("install", "uninstall"):
        done = subprocess.run(
            [*NIA, "hook", command, host], cwd=cwd, capture_output=True, text=True, timeout=120, check=False
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith(f"Project root: {root} ({why}"), done.stdout


def test_hook_install_for_the_user_names_no_project(tmp_path: Path) -> None:
    done = subprocess.run(
        [*NIA, "hook", "install", "codex", "--user"], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "Project root" not in done.stdout and "in this project" not in done.stdout
    assert "start `codex` and approve nia's hooks" in done.stdout


# -- 27.9: tidy-ups seen on the way ------------------------------------------------------------------------


def test_session_list_has_a_header_and_aligned_columns(project: Path) -> None:
    ids = [nia(project, "session", "new").stdout.strip() for _ in range(2)]
    assert nia(project, "session", "send", ids[0], "hello").returncode == 0
    lines = nia(project, "session", "list").stdout.splitlines()
    assert lines[0].split() == ["ID", "LAST", "ACTIVITY", "MESSAGES", "MODEL", "EPOCH", "LOCATION"]
    assert [line.split()[0] for line in lines[1:]] == ids
    assert len({line.index(str(project)) for line in lines[1:]} | {lines[0].index("LOCATION")}) == 1
    empty = nia(project, "session", "list", env={"NIA_DB": str(project.parent / "other.db")})
    assert empty.returncode == 0 and empty.stdout == ""  # nothing stored: nothing printed, not even the header


HOSTS = Path(__file__).resolve().parents[2] / "docs" / "hosts.md"
RELEASE = """\
from nia_core import ContextSource, hookimpl

@hookimpl
def nia_context_sources(location):
    path = location.root / "RELEASE"
    return [ContextSource(key="shop/release", load=lambda: path.read_text().strip(),
                          baseline=lambda v: f"The next release is {v}.")]
"""


def test_the_transcript_in_hosts_md_is_what_the_hook_prints_for_its_project(tmp_path: Path) -> None:
    """docs/hosts.md's git repository with its release plugin: every line of the real baseline, nia/git's too."""
    shop = tmp_path / "shop"
    (shop / ".nia" / "plugins").mkdir(parents=True)
    (shop / ".nia" / "plugins" / "release.py").write_text(RELEASE)
    (shop / "AGENTS.md").write_text("# Shop\n")
    git = {**os.environ, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a"}
    git["GIT_COMMITTER_EMAIL"] = "a@b"
    for command in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "Initial shop"]):
        subprocess.run(["git", *command], cwd=shop, env=git, check=True, capture_output=True, timeout=60)
    (shop / "RELEASE").write_text("2.4\n")
    start = {"hook_event_name": "SessionStart", "source": "startup", "session_id": "s1", "cwd": str(shop)}
    done = subprocess.run(
        [*NIA, "hook", "claude-code"], cwd=shop, input=json.dumps(start), capture_output=True, text=True,
        timeout=120, env={**os.environ, "NIA_DB": str(tmp_path / "nia.db")}, check=True,
    )  # fmt: skip
    baseline = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=shop, capture_output=True, text=True).stdout
    text = HOSTS.read_text()
    for line in baseline.replace(str(shop), "/tmp/shop").replace(head.strip(), "3e7dbc3").splitlines():
        if line.strip() and not line.startswith("Today's date"):
            assert f"            {line}\n" in text or f"SessionStart hook additional context: {line}\n" in text, line
    assert "Git status (nia keeps this current" in baseline


# -- 27.8: nia models and nia init --------------------------------------------------------------------------


def test_models_lists_every_provider_with_capabilities_and_prices(project: Path) -> None:
    done = nia(project, "models", "--json", env={"OPENAI_API_KEY": "sk-test-not-printed", "ANTHROPIC_API_KEY": ""})
    assert done.returncode == 0, done.stderr
    assert "sk-test-not-printed" not in done.stdout
    providers = {p["name"]: p for p in json.loads(done.stdout)["providers"]}
    assert {"echo", "openai-chat", "anthropic-messages"} <= set(providers)
    openai = providers["openai-chat"]
    assert openai["origin"] == "built-in" and openai["url"] == "https://api.openai.com/v1"
    assert openai["key"] == {"env": "OPENAI_API_KEY", "set": True}
    assert providers["anthropic-messages"]["key"] == {"env": "ANTHROPIC_API_KEY", "set": False}
    gpt5 = {m["model"]: m for m in openai["models"]}["gpt-5*"]
    assert (gpt5["baseline_role"], gpt5["update_role"], gpt5["native_updates"]) == ("developer", "developer", True)
    assert gpt5["price"]["input"] == 1.25 and gpt5["price"]["unit"] == "USD per million tokens"
    sonnet = {m["model"]: m for m in providers["anthropic-messages"]["models"]}["claude-sonnet-4-5*"]
    assert sonnet["update_role"] == "wrapped" and sonnet["price"]["output"] == 15.0


def test_models_shows_what_a_project_configures_first(project: Path) -> None:
    (project / ".nia" / "project.toml").write_text(
        '[providers.openai-chat]\nbase_url = "https://llm.example/v1"\napi_key_env = "ACME_KEY"\n'
        '[providers.openai-chat.models."acme-7b*"]\nbaseline_role = "system"\nupdate_role = "system"\n'
        '[providers.openai-chat.prices."acme-7b*"]\ninput = 0.1\ncache_read = 0.01\ncache_write = 0.1\noutput = 0.2\n'
    )
    done = nia(project, "models")
    assert done.returncode == 0, done.stderr
    (line,) = [line for line in done.stdout.splitlines() if "openai-chat/acme-7b*" in line]
    assert "baseline system, updates native system turn" in line and "$0.1 in" in line and "$0.2 out" in line
    assert "openai-chat (built-in)  https://llm.example/v1  key $ACME_KEY: not set" in done.stdout


def test_models_lists_a_plugins_provider(project: Path) -> None:
    (project / ".nia" / "plugins").mkdir()
    (project / ".nia" / "plugins" / "shout.py").write_text(
        "from nia_core import Reply, hookimpl\n\nclass Shout:\n    name = 'shout'\n"
        "    def lower(self, request):\n        return {}\n"
        "    def send(self, request, *, stream=None):\n        return Reply(text='HI')\n\n"
        "@hookimpl\ndef nia_providers(location):\n    return [Shout()]\n"
    )
    providers = {p["name"]: p for p in json.loads(nia(project, "models", "--json").stdout)["providers"]}
    assert providers["shout"]["origin"] == "plugin shout" and providers["shout"]["models"] == []


def test_init_writes_commented_starter_files_that_nia_reads_as_they_are(tmp_path: Path) -> None:
    folder = tmp_path / "acme-shop"
    folder.mkdir()
    (folder / "README.md").write_text("# Acme shop\n\nSells anvils.\n")
    done = nia(folder, "init")
    assert done.returncode == 0, done.stderr
    assert f"{folder / '.nia' / 'project.toml'}: written" in done.stdout
    project_toml = (folder / ".nia" / "project.toml").read_text()
    assert 'name = "acme-shop"' in project_toml and 'path = "README.md"' in project_toml
    assert "# [plugins]" in project_toml and "# [session]" in project_toml
    assert "# [[workflows]]" in (folder / ".nia" / "commands.toml").read_text()
    shown = nia(folder, "context", "show")
    assert shown.returncode == 0 and shown.stderr == "", shown.stderr
    assert "Sells anvils." in shown.stdout
    assert nia(folder, "workflows", "list").returncode == 0
    uncommented = "\n".join(
        line[2:] if line.startswith("# ") and not line.startswith("# Workflows") else line
        for line in (folder / ".nia" / "commands.toml").read_text().splitlines()
        if not line.startswith(("# and the", "# this one", "# Workflows"))
    )
    (folder / ".nia" / "commands.toml").write_text(uncommented.replace("#\n", "\n"))
    listed = nia(folder, "workflows", "list")
    assert listed.returncode == 0 and "issue: Work with issues" in listed.stdout, listed.stderr


def test_init_keeps_existing_files_and_refuses_a_nia_folder_leading_outside(tmp_path: Path) -> None:
    folder = tmp_path / "shop"
    (folder / ".nia").mkdir(parents=True)
    (folder / ".nia" / "project.toml").write_text('[project]\nname = "mine"\n')
    done = nia(folder, "init")
    assert done.returncode == 0 and "project.toml: exists, left as it is" in done.stdout
    assert (folder / ".nia" / "project.toml").read_text() == '[project]\nname = "mine"\n'
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / ".nia").symlink_to(elsewhere)
    refused = nia(linked, "init")
    assert refused.returncode == 2 and "nothing written" in refused.stderr and list(elsewhere.iterdir()) == []


# -- 27.3: nia dev sees the data files its sources read, and re-observes the rest ----------------------------

READS_NOTES = """\
from pathlib import Path
from nia_core import ContextSource, StatCache, hookimpl

cache = StatCache()

@hookimpl
def nia_context_sources(location):
    path = Path({where!r})
    return [ContextSource(key="notes/notes", load=lambda: cache.read_text(path).strip(),
                          baseline=lambda v: "NOTES: " + v, update=lambda old, new: "NOTES NOW: " + new)]
"""
READS_WITHOUT_A_CACHE = """\
from pathlib import Path
from nia_core import ContextSource, hookimpl

@hookimpl
def nia_context_sources(location):
    path = Path({where!r})
    return [ContextSource(key="plain/state", load=lambda: path.read_text().strip(),
                          baseline=lambda v: "STATE: " + v, update=lambda old, new: "STATE NOW: " + new)]
"""


def _dev(cwd: Path, plugins: Path, *extra: str) -> tuple[subprocess.Popen[bytes], Lines]:
    process = subprocess.Popen(
        [*NIA, "-p", "no:nia-date", "dev", "--plugins-dir", str(plugins), *extra],
        cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    return process, Lines(process.stdout)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_nia_dev_shows_an_edit_of_the_generated_plugins_notes(tmp_path: Path) -> None:
    """The template's NOTES.md says "edit it while nia dev runs": a plain folder, nothing watched recursively."""
    made = nia(tmp_path, "plugin", "new", "nia-notes", "--dir", "nia-notes")
    assert made.returncode == 0, made.stderr
    plugin = tmp_path / "nia-notes"
    notes = plugin / "NOTES.md"
    process, out = _dev(plugin, plugin / "src")
    try:
        out.wait_for(process, "for changes")
        assert "Project notes (NOTES.md):" in out.text_so_far()
        notes.write_text("Ship on Fridays.\n")
        out.wait_for(process, "Ship on Fridays.")  # one line at a time
        notes.unlink()
        out.wait_for(process, "given earlier no longer apply")
        time.sleep(1.5)  # a few ticks more: each edit is said once
        assert out.text_so_far().count("Ship on Fridays") == 1
    finally:
        _stop(process)
    assert process.returncode == 0


def test_nia_dev_shows_an_edit_of_a_file_outside_the_project_a_source_read(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    notes = tmp_path / "shared" / "notes.md"
    notes.parent.mkdir()
    notes.write_text("one\n")
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "notes.py").write_text(READS_NOTES.format(where=str(notes)))
    process, out = _dev(folder, plugins)
    try:
        out.wait_for(process, "for changes")
        assert "NOTES: one" in out.text_so_far()
        notes.write_text("two\n")
        out.wait_for(process, "NOTES NOW: two")
    finally:
        _stop(process)
    assert process.returncode == 0


def test_nia_dev_re_observes_other_sources_on_its_interval_and_is_quiet_when_nothing_changed(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    state = tmp_path / "elsewhere" / "state"
    state.parent.mkdir()
    state.write_text("idle\n")
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "plain.py").write_text(READS_WITHOUT_A_CACHE.format(where=str(state)))
    process, out = _dev(folder, plugins, "--interval", "1")
    try:
        out.wait_for(process, "for changes")
        time.sleep(3)  # three re-observations with nothing new: nothing printed
        quiet = out.text_so_far()
        assert quiet.rstrip().endswith("(Ctrl-C to stop)"), quiet
        state.write_text("busy\n")
        out.wait_for(process, "STATE NOW: busy")
    finally:
        _stop(process)


# -- 27.2: nia plugins list reports every problem nia context show reports ----------------------------------

MISBEHAVING = {
    "unmarked": (
        "from nia_core import ContextSource\n\n"
        "def nia_context_sources(location):\n"
        "    return [ContextSource(key='unmarked/x', load=lambda: 1, baseline=lambda v: 'X')]\n",
        "function nia_context_sources has no @hookimpl marker, so nia never calls it"
        " (decorate it with @hookimpl, from nia_core import hookimpl)",
    ),
    "raising": (
        "from nia_core import hookimpl\n\n@hookimpl\n"
        "def nia_context_sources(location):\n    raise RuntimeError('boom')\n",
        "raised RuntimeError: boom (.nia/plugins/raising.py:5)",
    ),
    "loader": (
        "from nia_core import ContextSource, hookimpl\n\ndef load():\n    raise ValueError('loader broke')\n\n"
        "@hookimpl\ndef nia_context_sources(location):\n"
        "    return [ContextSource(key='loader/x', load=load, baseline=lambda v: 'X')]\n",
        "context source 'loader/x': loader raised ValueError: loader broke (.nia/plugins/loader.py:4)",
    ),
    "renderer": (
        "from nia_core import ContextSource, hookimpl\n\n@hookimpl\ndef nia_context_sources(location):\n"
        "    return [ContextSource(key='renderer/x', load=lambda: 1, baseline=lambda v: 1 / 0)]\n",
        "context source 'renderer/x': baseline renderer raised ZeroDivisionError: division by zero"
        " (.nia/plugins/renderer.py:5)",
    ),
    "stray": (
        "from nia_core import ContextSource, hookimpl\n\nNIA_NAMESPACE = 'stray'\n\n@hookimpl\n"
        "def nia_context_sources(location):\n"
        "    return [ContextSource(key='other/x', load=lambda: 1, baseline=lambda v: 'X')]\n",
        "source key 'other/x' is outside its declared namespace 'stray/'",
    ),
}


def test_plugins_list_reports_every_problem_context_show_reports_and_strict_fails_on_each(tmp_path: Path) -> None:
    root = tmp_path / "project"
    (root / ".nia" / "plugins").mkdir(parents=True)
    for name, (code, _) in MISBEHAVING.items():
        (root / ".nia" / "plugins" / f"{name}.py").write_text(code)
    shown = nia(root, "context", "show")
    listed = nia(root, "plugins", "list")
    as_json = {p["name"]: p for p in json.loads(nia(root, "plugins", "list", "--json").stdout)}
    strict = nia(root, "--strict", "plugins", "list")
    assert shown.returncode == 0 and listed.returncode == 0, shown.stderr + listed.stderr
    assert strict.returncode == 1, strict.stderr
    for name, (_, problem) in MISBEHAVING.items():
        assert f"Warning: plugin '{name}': " in shown.stderr and problem in shown.stderr, (name, shown.stderr)
        entry = re.search(rf"^{name} .*\n((?:  .*\n)*)", listed.stdout, re.MULTILINE)
        assert entry is not None and re.search(rf"^  (error|warning): {re.escape(problem)}$", entry[1], re.M), entry
        reported = [as_json[name]["error"] or "", *as_json[name]["warnings"]]
        assert any(problem in line for line in reported), (name, as_json[name])
        assert f"plugin '{name}': " in strict.stderr and problem in strict.stderr, (name, strict.stderr)


# -- 27.5: --debug shows plugin tracebacks; every plugin problem is said once, with file and line --------------

PLUGIN_FAILURES = {
    "imports": "import not_a_module_anywhere\n",
    "raises": (
        "from nia_core import hookimpl\n\n\n@hookimpl\ndef nia_context_sources(location):\n"
        "    raise RuntimeError('boom')\n"
    ),
    "aliased": (
        "from nia_core import ContextSource, hookimpl\n\n\n"
        "def _orig(location):\n"
        "    return [ContextSource(key='aliased/x', load=lambda: 1, baseline=lambda v: 'X')]\n\n\n"
        "nia_context_sources = hookimpl(_orig)\n"
    ),
}


@pytest.fixture
def failing_plugins(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / ".nia" / "plugins").mkdir(parents=True)
    for name, code in PLUGIN_FAILURES.items():
        (root / ".nia" / "plugins" / f"{name}.py").write_text(code)
    return root


def test_debug_shows_the_traceback_of_a_plugins_import_and_of_a_raising_hook(failing_plugins: Path) -> None:
    plain = nia(failing_plugins, "context", "show")
    debug = nia(failing_plugins, "--debug", "context", "show")
    assert plain.returncode == debug.returncode == 0, debug.stderr
    assert "Traceback" not in plain.stderr
    assert re.search(r'Traceback \(most recent call last\):\n(?:  .*\n)*  File ".*imports\.py", line 1', debug.stderr)
    assert re.search(r'Traceback \(most recent call last\):\n(?:  .*\n)*  File ".*raises\.py", line 6', debug.stderr)
    assert "Warning: plugin 'raises': raised RuntimeError: boom (.nia/plugins/raises.py:6)\n" in plain.stderr
    alias = "plugin 'aliased': implements _orig (.nia/plugins/aliased.py:4), which is not a nia hook"
    assert alias in plain.stderr and "use @hookimpl(specname='nia_context_sources')" in plain.stderr


def test_help_and_the_agent_hook_say_each_plugin_problem_once(failing_plugins: Path) -> None:
    helped = nia(failing_plugins, "--help")
    start = {"session_id": "s1", "cwd": str(failing_plugins), "hook_event_name": "SessionStart", "source": "startup"}
    payload = json.dumps(start)
    hooked = nia(failing_plugins, "hook", "claude-code", stdin=payload)
    assert helped.returncode == hooked.returncode == 0, helped.stderr + hooked.stderr
    for name in PLUGIN_FAILURES:  # --help loads the plugins and calls no hook: what loading finds
        said = helped.stderr.count(f"Warning: plugin '{name}': ")
        assert helped.stderr.count(f"plugin '{name}'") == said == (name != "raises"), helped.stderr
        assert hooked.stderr.count(f"plugin '{name}'") == 1, hooked.stderr
    assert "No module named 'not_a_module_anywhere'" in helped.stderr
    assert helped.stderr.count("not_a_module_anywhere") == 1
