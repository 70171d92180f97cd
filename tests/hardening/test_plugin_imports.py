"""#11.4, #11.5, #11.9: a plugin's import has a deadline, its threads do not keep nia alive,
and whatever it raises is reported by name, while a real Ctrl-C still stops nia."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest

from tests.hardening.helpers import GOOD, LIMIT, NIA, nia, project
from tests.resident_helpers import check_answered, env_for_mode, warm

SPIN = "print('spinning up')\nwhile True:\n    pass\n"
SLEEP = "import time\ntime.sleep(10**6)\n"
FAST = {"NIA_IMPORT_TIMEOUT": "1"}


@pytest.mark.parametrize("body", [SPIN, SLEEP], ids=["busy-loop", "sleep"])
def test_a_plugin_stuck_at_import_is_broken_and_everything_else_goes_on(tmp_path, body):
    root = project(tmp_path, {"stuck": body, "good": GOOD})
    shown = nia(root, "context", "show", env=FAST)
    assert shown.returncode == 0, shown.stderr
    assert "Good plugin says fine" in shown.stdout and "Be brief." in shown.stdout
    assert "Warning: plugin 'stuck': import did not finish in 1 s" in shown.stderr
    assert shown.stderr.count("stuck") == 1 or "spinning up" in shown.stderr  # said once
    assert "spinning up" not in shown.stdout

    strict = nia(root, "--strict", "context", "show", env=FAST)
    assert strict.returncode == 1
    assert strict.stderr.strip().splitlines()[-1] == "Error: plugin 'stuck': import did not finish in 1 s"

    helped = nia(root, "--help", env=FAST)
    assert helped.returncode == 0 and "context" in helped.stdout

    listed = nia(root, "plugins", "list", env=FAST)
    assert "import did not finish in 1 s" in listed.stdout


def test_the_import_deadline_applies_to_plugins_dir_and_defaults_to_five_seconds(tmp_path):
    root = project(tmp_path, {})
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "stuck.py").write_text(SLEEP)
    shown = nia(root, "--plugins-dir", str(extra), "context", "show")
    assert shown.returncode == 0
    assert "Warning: plugin 'stuck': import did not finish in 5 s" in shown.stderr


def test_a_bad_deadline_setting_is_one_warning_and_the_default(tmp_path):
    root = project(tmp_path, {"good": GOOD})
    shown = nia(root, "context", "show", env={"NIA_IMPORT_TIMEOUT": "soon"})
    assert shown.returncode == 0 and "Good plugin says fine" in shown.stdout
    assert "NIA_IMPORT_TIMEOUT='soon' is not a positive number of seconds; using 5" in shown.stderr


FOREVER_THREAD = """
import threading, time
from nia_core import ContextSource, hookimpl

def forever():
    while True:
        time.sleep(0.05)

threading.Thread(target=forever, name="plugin-at-import").start()

@hookimpl
def nia_context_sources(location):
    threading.Thread(target=forever, name="plugin-in-hook").start()

    def load():
        threading.Thread(target=forever, name="plugin-in-loader").start()
        return "here"

    return [ContextSource("lingering/a", load, lambda v: "Lingering is " + v)]
"""


def test_a_plugin_thread_that_never_ends_does_not_keep_a_finished_command_running(tmp_path):
    root = project(tmp_path, {"lingering": FOREVER_THREAD})
    shown = nia(root, "context", "show")
    assert shown.returncode == 0 and "Lingering is here" in shown.stdout
    assert nia(root, "context", "show", "--json").returncode == 0
    assert nia(root, "plugins", "list").returncode == 0
    failing = nia(root, "context", "show", "--location", str(root / "missing"))
    assert failing.returncode == 2  # a failed command keeps its exit code too


def test_a_session_send_with_a_lingering_plugin_thread_exits(tmp_path):
    root = project(tmp_path, {"lingering": FOREVER_THREAD})
    env = {"NIA_DB": str(tmp_path / "sessions.db")}
    created = nia(root, "session", "new", "--location", str(root), "--model", "echo/echo", env=env)
    assert created.returncode == 0, created.stderr
    session_id = created.stdout.strip()
    sent = nia(root, "session", "send", session_id, "hello", env=env)
    assert sent.returncode == 0, sent.stderr
    shown = nia(root, "session", "show", session_id, "--json", env=env)
    assert shown.returncode == 0 and session_id in shown.stdout


RAISING_AT_IMPORT = {
    "custom": "class Boom(BaseException):\n    pass\nraise Boom('custom base exception')\n",
    "interrupt": "raise KeyboardInterrupt\n",
    "exits": "import sys\nsys.exit(3)\n",
}


def test_base_exceptions_at_import_are_named_like_any_failure(tmp_path):
    root = project(tmp_path, {**RAISING_AT_IMPORT, "good": GOOD})
    shown = nia(root, "context", "show")
    assert shown.returncode == 0, shown.stderr
    assert "Good plugin says fine" in shown.stdout
    assert "Traceback" not in shown.stderr and "Aborted" not in shown.stderr
    assert "Warning: plugin 'custom': failed to import: Boom: custom base exception (" in shown.stderr
    assert "Warning: plugin 'interrupt': failed to import: KeyboardInterrupt (" in shown.stderr
    assert "Warning: plugin 'exits': failed to import: SystemExit(3) (" in shown.stderr


def test_a_real_ctrl_c_still_stops_nia_while_a_plugin_imports(tmp_path):
    root = project(tmp_path, {"slow": "import time\nprint('importing', flush=True)\ntime.sleep(10**6)\n"})
    process = subprocess.Popen(
        [*NIA, "context", "show"],
        cwd=root,
        env={**__import__("os").environ, "NIA_IMPORT_TIMEOUT": "600"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        assert process.stderr.readline().strip() == "importing"  # nia is waiting for the import now
        time.sleep(0.2)
        process.send_signal(signal.SIGINT)
        code = process.wait(LIMIT)
    finally:
        if process.poll() is None:
            process.kill()
    assert code != 0
    assert "Aborted!" in process.stderr.read()


HOSTILE_WORDING = {
    "str-hangs": (
        "class Slow(Exception):\n    def __str__(self):\n        while True:\n            pass\nraise Slow()\n"
    ),
    "base-repr-hangs": (
        "class Slow(BaseException):\n    def __str__(self):\n        while True:\n            pass\nraise Slow()\n"
    ),
    "exit-code-repr-hangs": (
        "import sys\nclass Code:\n    def __repr__(self):\n        while True:\n            pass\nsys.exit(Code())\n"
    ),
    "str-raises-itself": "class Loop(Exception):\n    def __str__(self):\n        raise Loop()\nraise Loop()\n",
    "base-str-raises": (
        "class Odd(BaseException):\n    def __str__(self):\n        raise ValueError('x')\nraise Odd()\n"
    ),
    "hook-str-raises": (
        "from nia_core import hookimpl\n"
        "class Loop(Exception):\n    def __str__(self):\n        raise Loop()\n"
        "@hookimpl\ndef nia_context_sources(location):\n    raise Loop()\n"
    ),
}


def test_an_exception_whose_message_hangs_or_raises_is_still_one_named_line(tmp_path):
    """The message of what a plugin raised is the plugin's own code: it is worded under the import deadline."""
    root = project(tmp_path, {**HOSTILE_WORDING, "good": GOOD})
    shown = nia(root, "context", "show", env=FAST)
    assert shown.returncode == 0, shown.stderr
    assert "Good plugin says fine" in shown.stdout
    assert "Traceback" not in shown.stderr
    for name in ("str-hangs", "base-repr-hangs", "exit-code-repr-hangs"):
        assert f"Warning: plugin '{name}': import did not finish in 1 s" in shown.stderr
    assert "plugin 'str-raises-itself': failed to import: Loop (its message raised Loop) (" in shown.stderr
    assert "plugin 'base-str-raises': failed to import: Odd (its message raised ValueError) (" in shown.stderr
    assert "plugin 'hook-str-raises'" in shown.stderr and "Loop (its message raised Loop)" in shown.stderr


LAZY_MODULE = """\
from nia_core import ContextSource, hookimpl

def __getattr__(name):  # a lazy module: an unknown attribute loads something slow (here: forever)
    while True:
        pass

@hookimpl
def nia_context_sources(location):
    return [ContextSource("lazy/a", lambda: "Lazy plugin says fine", str)]
"""


def test_a_lazy_module_getattr_is_never_run_by_nia(tmp_path):
    """After its import, nia reads a plugin module's attributes statically, as pluggy does: no deadline is needed."""
    root = project(tmp_path, {"lazy": LAZY_MODULE, "good": GOOD})
    shown = nia(root, "context", "show", env=FAST, timeout=30)
    assert shown.returncode == 0, shown.stderr
    assert "Lazy plugin says fine" in shown.stdout and "Good plugin says fine" in shown.stdout


DIR_HANGS = """\
from nia_core import ContextSource, hookimpl

def __dir__():  # dir(module) runs it: pluggy's own register calls dir(plugin)
    while True:
        pass

@hookimpl
def nia_context_sources(location):
    return [ContextSource("dir-hangs/a", lambda: "Dir-hangs plugin says fine", str)]
"""

DIR_RAISES = """\
from nia_core import ContextSource, hookimpl

class Loop(Exception):
    def __str__(self):
        while True:
            pass

def __dir__():
    raise Loop()

@hookimpl
def nia_context_sources(location):
    return [ContextSource("dir-raises/a", lambda: "Dir-raises plugin says fine", str)]
"""

DIR_NONSENSE = """\
from nia_core import ContextSource, hookimpl

def __dir__():
    return [1, object(), None]

@hookimpl
def nia_context_sources(location):
    return [ContextSource("dir-nonsense/a", lambda: "Dir-nonsense plugin says fine", str)]
"""

DIR_PLUGINS = {"dir-hangs": DIR_HANGS, "dir-raises": DIR_RAISES, "dir-nonsense": DIR_NONSENSE, "good": GOOD}


def _registered_from_their_dict(text: str) -> None:
    for name in ("Dir-hangs", "Dir-raises", "Dir-nonsense", "Good"):
        assert f"{name} plugin says fine" in text, name


def test_a_module_dir_that_hangs_raises_or_lies_is_never_run_by_nia(tmp_path):
    """pluggy's register lists a plugin with ``dir()``; nia lists it from its ``__dict__``: its hooks, no hang."""
    root = project(tmp_path, DIR_PLUGINS)
    shown = nia(root, "context", "show", env=FAST)
    assert shown.returncode == 0, shown.stderr
    _registered_from_their_dict(shown.stdout)
    assert "Be brief." in shown.stdout
    assert "Traceback" not in shown.stderr and "Warning" not in shown.stderr

    listed = nia(root, "plugins", "list", env=FAST)
    assert listed.returncode == 0, listed.stderr
    for name in ("dir-hangs", "dir-raises", "dir-nonsense"):
        assert f"{name} (no version) [local file" in listed.stdout
    assert listed.stdout.count("hooks: nia_context_sources") == 4
    assert "Traceback" not in listed.stderr


def test_the_agent_hook_with_a_hostile_module_dir_exits_0_with_the_context(tmp_path, hook_mode):
    root = project(tmp_path, DIR_PLUGINS)
    payload = json.dumps(
        {"session_id": "s-dir", "cwd": str(root), "hook_event_name": "SessionStart", "source": "startup"}
    )
    environment = {k: v for k, v in os.environ.items() if not k.startswith("NIA_")}
    environment.update(FAST)
    environment = env_for_mode(environment)
    warm([*NIA, "hook", "claude-code"], environment, root)
    done = subprocess.run(
        [*NIA, "hook", "claude-code"], input=payload, cwd=root, env=environment,
        capture_output=True, text=True, timeout=LIMIT,
    )  # fmt: skip
    check_answered(environment, payload)
    assert done.returncode == 0, done.stderr
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    _registered_from_their_dict(context)
    assert f"Project root: {root}" in context
    assert "Traceback" not in done.stderr and "gave up" not in done.stderr


OBJECT_PLUGIN = """\
from nia_core import ContextSource, hookimpl

class Hostile:
    def __dir__(self):
        while True:
            pass

    def __eq__(self, other):
        while True:
            pass

    __hash__ = object.__hash__

    @hookimpl
    def nia_context_sources(self, location):
        return [ContextSource("obj/a", lambda: "Object plugin says fine", str)]

plugin = Hostile()
"""


def test_an_object_plugin_whose_dir_or_eq_hangs_registers_from_its_class(tmp_path):
    """An entry point may name an object: its class's ``__dir__`` and ``__eq__`` never run either."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "acme_obj.py").write_text(OBJECT_PLUGIN)
    info = site / "acme_obj-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-obj\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[nia]\nacme-obj = acme_obj:plugin\n")
    root = project(tmp_path, {"good": GOOD})
    env = {**FAST, "PYTHONPATH": str(site)}
    shown = nia(root, "context", "show", env=env)
    assert shown.returncode == 0, shown.stderr
    assert "Object plugin says fine" in shown.stdout and "Good plugin says fine" in shown.stdout
    assert "Traceback" not in shown.stderr
    listed = nia(root, "plugins", "list", env=env)
    assert listed.returncode == 0 and "acme-obj 1.0" in listed.stdout, listed.stdout + listed.stderr
