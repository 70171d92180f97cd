"""#11.4 for installed plugins: an entry point whose import never finishes is broken, the rest goes on."""

from __future__ import annotations

import os
import subprocess
import sys

GOOD = """
from nia_core import ContextSource, hookimpl

@hookimpl
def nia_context_sources(location):
    return [ContextSource("installed/a", lambda: 1, lambda v: "Installed plugin works")]
"""


def test_an_entry_point_stuck_at_import_is_reported_and_the_others_load(site, tmp_path):
    site.plugin("stuck-ep", "import time\ntime.sleep(10**6)\n")
    site.plugin("good-ep", GOOD)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NIA_")}
    env.update(NIA_IMPORT_TIMEOUT="1", NIA_NO_CACHE="1")
    for args in (["context", "show"], ["--strict", "context", "show"], ["--help"]):
        result = subprocess.run(
            [sys.executable, "-c", "from nia_core.cli import main; main()", *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        if args[0] == "--strict":
            assert result.returncode == 1
            assert result.stderr.strip() == "Error: plugin 'stuck-ep': import did not finish in 1 s"
        elif args[0] == "--help":
            assert result.returncode == 0 and "context" in result.stdout
        else:
            assert result.returncode == 0, result.stderr
            assert "Installed plugin works" in result.stdout
            assert "Warning: plugin 'stuck-ep': import did not finish in 1 s" in result.stderr


def test_the_plugins_after_a_stuck_one_still_load(site, tmp_path):
    """The worker that was left with the stuck import is abandoned with it; the next import gets a new one."""
    site.plugin("a-stuck", "import time\ntime.sleep(10**6)\n")
    site.plugin("b-good", GOOD)
    site.plugin("c-good", GOOD.replace("installed/a", "installed/c").replace("works", "works too"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("NIA_")}
    env.update(NIA_IMPORT_TIMEOUT="1", NIA_NO_CACHE="1")
    result = subprocess.run(
        [sys.executable, "-c", "from nia_core.cli import main; main()", "context", "show"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert "Installed plugin works\n" in result.stdout and "Installed plugin works too" in result.stdout
    assert "Warning: plugin 'a-stuck': import did not finish in 1 s" in result.stderr


def test_plugins_are_imported_off_the_main_thread_by_one_reused_worker(tmp_path):
    import threading

    from nia_core.plugin_host import load_host
    from nia_core.project import locate

    folder = tmp_path / ".nia" / "plugins"
    folder.mkdir(parents=True)
    for name in ("one", "two", "three"):
        (folder / f"{name}.py").write_text(
            "import threading\nNAME = threading.current_thread().name\nIDENT = threading.get_ident()\n"
        )
    host = load_host(locate(tmp_path), entry_points=False)
    imported = [sys.modules[info.module] for info in host.infos() if info.origin == "local file"]
    assert len(imported) == 3
    assert {m.IDENT for m in imported} != {threading.get_ident()}
    assert len({m.IDENT for m in imported}) == 1
    assert {m.NAME for m in imported} == {"nia-plugin-import"}


def test_each_import_has_its_own_deadline_though_they_run_ahead_in_turn(tmp_path, monkeypatch):
    """Three imports of 0.4 s under a 1 s deadline all load: the deadline is per import, from its own start."""
    from nia_core.plugin_host import load_host
    from nia_core.project import locate

    folder = tmp_path / ".nia" / "plugins"
    folder.mkdir(parents=True)
    for name in ("one", "two", "three"):
        (folder / f"{name}.py").write_text("import time\ntime.sleep(0.4)\n")
    (folder / "four.py").write_text("import time\ntime.sleep(30)\n")
    (folder / "zz_last.py").write_text("LOADED = True\n")
    monkeypatch.setenv("NIA_IMPORT_TIMEOUT", "1")
    host = load_host(locate(tmp_path), entry_points=False)
    errors = {info.name: info.error for info in host.infos() if info.origin == "local file"}
    assert errors == {
        "four": "import did not finish in 1 s",
        "one": None,
        "three": None,
        "two": None,
        "zz_last": None,
    }
