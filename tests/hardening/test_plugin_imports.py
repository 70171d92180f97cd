"""#11.4, #11.5, #11.9: a plugin's import has a deadline, its threads do not keep nia alive,
and whatever it raises is reported by name, while a real Ctrl-C still stops nia."""

from __future__ import annotations

import signal
import subprocess
import time

import pytest

from tests.hardening.helpers import GOOD, LIMIT, NIA, nia, project

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
