"""#11.13: ``nia dev`` whose folder is deleted, or whose ``.nia`` is renamed, while it runs."""

from __future__ import annotations

import os
import shutil

from tests.dev.helpers import DevProcess, plugin_source, write


def _project(tmp_path):
    root = tmp_path / "project"
    write(root / ".nia" / "plugins" / "alpha.py", plugin_source({"alpha/a": "x"}))
    return root


def _reloads_until(dev, predicate):
    return dev.until(lambda e: e["event"] in ("reload", "problem") and predicate(e))


def test_renaming_nia_away_and_back_removes_then_restores_its_plugins(tmp_path):
    root = _project(tmp_path)
    dev = DevProcess(root, tmp_path / "home")
    try:
        baseline, _ = dev.started()
        assert "alpha/a" in baseline["sources"]
        os.rename(root / ".nia", root / ".nia-off")
        gone = _reloads_until(dev, lambda e: "alpha" in e.get("unloaded", []))
        assert [(c["kind"], c["key"]) for c in gone["result"]["changes"]] == [("removed", "alpha/a")]
        os.rename(root / ".nia-off", root / ".nia")
        back = _reloads_until(dev, lambda e: "alpha" in e.get("loaded", []))
        assert [(c["kind"], c["key"]) for c in back["result"]["changes"]] == [("added", "alpha/a")]
        assert dev.interrupt() == 0
        assert "Traceback" not in dev.stderr and "unexpected" not in dev.stderr
    finally:
        dev.close()


def test_deleting_the_folder_nia_dev_runs_in_is_reported_and_it_keeps_running(tmp_path):
    root = _project(tmp_path)
    dev = DevProcess(root, tmp_path / "home")
    try:
        dev.started()
        shutil.rmtree(root)
        problem = dev.until(lambda e: e["event"] == "problem")
        assert str(root) in problem["message"] and "no longer exists" in problem["message"]
        assert dev.proc.poll() is None  # still running, waiting for the folder to come back
        write(root / ".nia" / "plugins" / "alpha.py", plugin_source({"alpha/a": "y"}))
        dev.until(lambda e: e["event"] == "reload" and e.get("result") is not None)
        assert dev.interrupt() == 0
        assert "Traceback" not in dev.stderr and "unexpected" not in dev.stderr
    finally:
        dev.close()
