"""#23.17: every call into plugin code runs under a deadline; the process always ends and names the plugin.

Real ``nia`` processes against projects whose local plugin loops forever in one place: a renderer, a
codec, an exception's ``__str__``, ``nia_location_opened``, ``nia_register_commands``, ``nia_providers``,
an ``atexit`` handler, a change listener. The good plugin beside it keeps working, and ``nia dev``
reloads the fixed version of a plugin that looped.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import types

import pytest

from nia_core import hookimpl
from nia_core.plugin_host import PluginHost, PluginInfo
from tests.dev.helpers import DevProcess, about, changes, plugin_source, write
from tests.hardening.helpers import GOOD, LIMIT, NIA, nia, project

SPIN = "while True:\n        pass"

SOURCE = """
from nia_core import ContextSource, hookimpl

def spin(*args):
    while True:
        pass

@hookimpl
def nia_context_sources(location):
    return [ContextSource("loop/a", {load}, {baseline}, removal={removal}{codec})]
"""

LOOPS_IN_CONTEXT = {
    "baseline renderer": SOURCE.format(load="lambda: 1", baseline="spin", removal="str", codec=""),
    "removal renderer": SOURCE.format(load="lambda: 1", baseline="str", removal="spin", codec=""),
    "codec": SOURCE.format(
        load="lambda: 1",
        baseline="str",
        removal="str",
        codec=", codec=type('C', (), {'encode': spin, 'decode': spin})()",
    ),
    "value's own encoding": SOURCE.format(
        load="lambda: type('D', (dict,), {'items': spin, 'keys': spin, '__iter__': spin})(a=1)",
        baseline="str",
        removal="str",
        codec="",
    ),
    "loader's exception message": SOURCE.format(
        load="lambda: (_ for _ in ()).throw(type('E', (Exception,), {'__str__': spin})())",
        baseline="str",
        removal="str",
        codec="",
    ),
    "nia_location_opened": f"""
from nia_core import hookimpl

@hookimpl
def nia_location_opened(location, context):
    {SPIN}
""",
    "change listener": f"""
from nia_core import hookimpl

def spin():
    {SPIN}

@hookimpl
def nia_location_opened(location, context):
    context.on_change(spin)
    context.register("loop-extra", lambda location: [])
""",
}


def _elapsed(started: float) -> float:
    return time.monotonic() - started


@pytest.mark.parametrize("where", list(LOOPS_IN_CONTEXT))
def test_a_plugin_looping_while_the_context_is_shown_is_named_and_the_command_ends(tmp_path, where):
    root = project(tmp_path, {"loop": LOOPS_IN_CONTEXT[where], "good": GOOD})
    started = time.monotonic()
    shown = nia(root, "context", "show")
    assert shown.returncode == 0, shown.stderr
    assert "Good plugin says fine" in shown.stdout and "Be brief." in shown.stdout
    assert "did not finish in 2 s" in shown.stderr or "timed out after 2s" in shown.stderr, shown.stderr
    assert "'loop'" in shown.stderr or "loop." in shown.stderr, shown.stderr  # the plugin (or its code) is named
    assert "Traceback" not in shown.stderr
    assert _elapsed(started) < LIMIT / 2


def test_a_plugin_looping_in_command_registration_leaves_help_working(tmp_path):
    looping = f"from nia_core import hookimpl\n\n@hookimpl\ndef nia_register_commands(cli):\n    {SPIN}\n"
    root = project(tmp_path, {"loop": looping})
    helped = nia(root, "--help")
    assert helped.returncode == 0 and "context" in helped.stdout
    assert "plugin 'loop': nia_register_commands did not finish in 2 s" in helped.stderr
    listed = nia(root, "plugins", "list")
    assert "nia_register_commands did not finish in 2 s" in listed.stdout


def test_an_exception_whose_message_loops_is_given_up_on_like_a_loop(tmp_path):
    raising = (
        "from nia_core import hookimpl\n\nclass Boom(Exception):\n    def __str__(self):\n"
        f"        {SPIN.replace(chr(10), chr(10) + '    ')}\n\n"
        "@hookimpl\ndef nia_register_commands(cli):\n    raise Boom()\n"
    )
    root = project(tmp_path, {"loop": raising})
    helped = nia(root, "--help")
    assert helped.returncode == 0 and "context" in helped.stdout
    assert "plugin 'loop': nia_register_commands did not finish in 2 s" in helped.stderr


def test_a_plugin_looping_in_nia_providers_is_broken_and_sessions_go_on(tmp_path):
    looping = f"from nia_core import hookimpl\n\n@hookimpl\ndef nia_providers(location):\n    {SPIN}\n"
    root = project(tmp_path, {"loop": looping})
    listed = nia(root, "plugins", "list")
    assert listed.returncode == 0
    assert "nia_providers did not finish in 2 s" in listed.stdout
    env = {"NIA_DB": str(tmp_path / "sessions.db")}
    created = nia(root, "session", "new", "--location", str(root), "--model", "echo/echo", env=env)
    assert created.returncode == 0, created.stderr
    assert "plugin 'loop': nia_providers did not finish in 2 s" in created.stderr


def test_a_provider_object_whose_attributes_loop_is_given_up_on(tmp_path):
    looping = (
        "from nia_core import hookimpl\n\nclass Odd:\n    def __getattr__(self, name):\n"
        "        while True:\n            pass\n\n"
        "@hookimpl\ndef nia_providers(location):\n    return [Odd()]\n"
    )
    root = project(tmp_path, {"loop": looping})
    listed = nia(root, "plugins", "list")
    assert listed.returncode == 0
    assert "loop" in listed.stdout and "could not be checked: they did not finish in 2 s" in listed.stdout


ATEXIT = f"""
import atexit
from nia_core import hookimpl

def spin():
    {SPIN}

atexit.register(spin)
"""


@pytest.mark.parametrize("args", [("context", "show"), ("context", "show", "--json"), ("plugins", "list")])
def test_an_atexit_handler_that_loops_is_named_and_the_process_ends_with_its_exit_code(tmp_path, args):
    root = project(tmp_path, {"lingers": ATEXIT, "good": GOOD})
    started = time.monotonic()
    done = nia(root, *args)
    assert done.returncode == 0, done.stderr
    assert "good" in done.stdout.lower()
    assert "nia: plugin 'lingers': an atexit handler did not finish in 5 s" in done.stderr
    assert ".nia/plugins/lingers.py:" in done.stderr and "Traceback" not in done.stderr
    assert _elapsed(started) < LIMIT / 2


def test_a_failing_command_keeps_its_exit_code_past_a_looping_atexit_handler(tmp_path):
    root = project(tmp_path, {"a_lingers": ATEXIT, "z_broken": "raise RuntimeError('broken')\n"})
    done = nia(root, "--strict", "context", "show")
    assert done.returncode == 1
    assert "Error: plugin 'z_broken': failed to import: RuntimeError: broken" in done.stderr
    assert "nia: plugin 'a_lingers': an atexit handler did not finish in 5 s" in done.stderr


def test_atexit_handlers_that_return_still_run(tmp_path):
    marker = tmp_path / "ran"
    polite = f"import atexit, pathlib\natexit.register(lambda: pathlib.Path({str(marker)!r}).write_text('yes'))\n"
    root = project(tmp_path, {"polite": polite})
    done = nia(root, "context", "show")
    assert done.returncode == 0 and marker.read_text() == "yes"
    assert "atexit" not in done.stderr


def _hook(root, payload: dict) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("NIA_")}
    environment["NIA_DB"] = str(root.parent / "sessions.db")
    return subprocess.run(
        [*NIA, "hook", "claude-code"],
        input=json.dumps({"cwd": str(root), **payload}),
        cwd=root,
        env=environment,
        capture_output=True,
        text=True,
        timeout=LIMIT,
    )


def test_the_agent_hook_answers_and_exits_0_past_a_looping_atexit_handler(tmp_path):
    root = project(tmp_path, {"lingers": ATEXIT, "good": GOOD})
    started = time.monotonic()
    done = _hook(root, {"session_id": "s1", "hook_event_name": "SessionStart", "source": "startup"})
    assert done.returncode == 0, done.stderr
    assert "Good plugin says fine" in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "nia: plugin 'lingers': an atexit handler did not finish in 5 s" in done.stderr
    assert _elapsed(started) < LIMIT / 2


def test_the_agent_hook_sets_a_looping_renderer_aside_and_answers(tmp_path):
    root = project(tmp_path, {"loop": LOOPS_IN_CONTEXT["baseline renderer"], "good": GOOD})
    done = _hook(root, {"session_id": "s2", "hook_event_name": "SessionStart", "source": "startup"})
    assert done.returncode == 0, done.stderr
    assert "gave up" not in done.stderr
    assert "baseline renderer did not finish in 2 s" in done.stderr


def test_a_summarizer_that_loops_is_broken_and_the_default_summary_answers():
    module = types.ModuleType("slow")

    def summarize(messages):
        while True:
            pass

    module.nia_summarize = hookimpl(summarize)
    host = PluginHost(hook_timeouts={"nia_summarize": 0.5})
    host.register(module, PluginInfo("slow", "local file"))
    started = time.monotonic()
    assert host.summarize([]) is None
    assert host.plugins["slow"].error == "nia_summarize did not finish in 0.5 s"
    assert _elapsed(started) < 5


@pytest.mark.parametrize(
    "where",
    [
        "import",
        "nia_context_sources",
        "renderer",
        "nia_location_opened",
    ],
)
def test_nia_dev_survives_a_looping_save_and_reloads_the_fixed_version(tmp_path, where):
    root = tmp_path / "project"
    (root / ".nia" / "plugins").mkdir(parents=True)
    path = root / ".nia" / "plugins" / "acme.py"
    write(path, plugin_source({"acme/a": "one"}))
    dev = DevProcess(root, tmp_path / "home", env=None)
    try:
        dev.started()
        good = plugin_source({"acme/a": "two"})
        forever = "[0 for _ in iter(int, 1)]"
        looping = {
            "import": "while True:\n    pass\n" + good,
            "nia_context_sources": good.replace("    return [", "    while True:\n        pass\n    return [", 1),
            "renderer": good.replace("baseline=lambda v: 'acme/a' + ': ' + v", f"baseline=lambda v: {forever}").replace(
                "update=lambda old, new: 'acme/a' + ' is now ' + new", f"update=lambda old, new: {forever}"
            ),
            "nia_location_opened": good
            + "\n@hookimpl\ndef nia_location_opened(location, context):\n    while True:\n        pass\n",
        }[where]
        write(path, looping)
        event = dev.until(about(path), timeout=30)
        [error] = event["errors"]
        assert error["plugin"] == "acme" and error["kept_previous"] is True, event
        assert "did not finish" in error["message"] or "timed out" in error["message"], error
        write(path, plugin_source({"acme/a": "three"}))
        fixed = dev.until(about(path), timeout=30)
        assert fixed["errors"] == [] and fixed["reloaded"] == ["acme"], fixed
        assert changes(fixed) == [("updated", "acme/a", "acme/a is now three")]
    finally:
        assert dev.interrupt() == 0
