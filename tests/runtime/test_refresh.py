"""``ContextSource(refresh=N)``: a slow source observed on its own schedule, through the public runtime.

The loader below blocks while a ``hold`` file exists and counts its calls in a file, so each
test can tell whether a boundary called it, waited for it, or used the last observation.
"""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import pytest

from nia_core import ContextSource
from nia_core.runtime import Runtime
from nia_core.sessions import open_store

PLUGIN = """
import time
from nia_core import ContextSource, hookimpl

@hookimpl
def nia_context_sources(location):
    root = location.root
    def load():
        (root / "started").write_text(str(int((root / "started").read_text() or 0) + 1))
        while (root / "hold").exists():
            time.sleep(0.01)
        (root / "calls").write_text(str(int((root / "calls").read_text() or 0) + 1))
        return (root / "tickets.txt").read_text().strip()
    return [ContextSource(
        key="acme/tickets",
        load=load,
        baseline=lambda v: f"TICKETS: {v}",
        update=lambda old, new: f"TICKETS now {new} (was {old})",
        timeout=60,
        refresh=REFRESH,
    )]
"""


def project(tmp_path: Path, refresh: float) -> Path:
    root = tmp_path / "shop"
    (root / ".nia" / "plugins").mkdir(parents=True)
    (root / ".nia" / "plugins" / "tickets.py").write_text(PLUGIN.replace("REFRESH", repr(refresh)))
    (root / "tickets.txt").write_text("1 open\n")
    (root / "calls").write_text("0")
    (root / "started").write_text("0")
    return root


def calls(root: Path) -> int:
    return int((root / "calls").read_text())


def in_thread(work, seconds: float = 30.0):
    """Run ``work`` on a thread; its result, or ``None`` when it did not end within ``seconds`` (it waited)."""
    result: list = []
    thread = threading.Thread(target=lambda: result.append(work()), daemon=True)
    thread.start()
    thread.join(seconds)
    return result[0] if result else None


def wait_until(condition, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_a_current_observation_is_used_without_calling_or_waiting_for_the_loader(tmp_path):
    root = project(tmp_path, refresh=3600)
    runtime = Runtime()
    with open_store(f"sqlite:///{tmp_path / 'nia.db'}") as store:
        session = runtime.create_session(store, root).id
        first = runtime.boundary(store, session)
        assert "TICKETS: 1 open" in first.text and calls(root) == 1
        (root / "tickets.txt").write_text("2 open\n")
        (root / "hold").touch()  # a load now would block until the test ends
        second = in_thread(lambda: runtime.boundary(store, session))
        assert second is not None, "the boundary waited for the loader"
        assert second.text is None and second.warnings == () and calls(root) == 1
    runtime.close()


def test_an_expired_observation_is_reloaded_in_the_background_and_the_boundary_takes_the_load_in_flight(tmp_path):
    # The next background load begins `refresh` minus the last load's time after that load began: here about
    # 4 - 0.8 s after the second, so the assertions below have 2.4 s before a third one begins (with 2 s, 0.4 s:
    # too little on a loaded machine).
    root = project(tmp_path, refresh=4)
    runtime = Runtime()
    with open_store(f"sqlite:///{tmp_path / 'nia.db'}") as store:
        session = runtime.create_session(store, root).id
        runtime.boundary(store, session)
        (root / "tickets.txt").write_text("2 open\n")
        (root / "hold").touch()
        wait_until(lambda: (root / "started").read_text() == "2")  # no boundary asked: the background load began
        time.sleep(0.3)  # ... four seconds after the first one began: that one expired
        threading.Timer(0.5, (root / "hold").unlink).start()
        third = runtime.boundary(store, session)  # waits for the load in flight, starts none of its own
        assert third.text == "TICKETS now 2 open (was 1 open)"
        assert (root / "started").read_text() == "2" and calls(root) == 2
    runtime.close()


def test_without_an_earlier_observation_every_boundary_loads_as_in_a_new_process(tmp_path):
    root = project(tmp_path, refresh=3600)
    with open_store(f"sqlite:///{tmp_path / 'nia.db'}") as store:
        first = Runtime()
        session = first.create_session(store, root).id
        first.boundary(store, session)
        first.close()
        (root / "tickets.txt").write_text("2 open\n")
        second = Runtime()  # what a hook answered in its own process has: no view, no observation
        assert second.boundary(store, session).text == "TICKETS now 2 open (was 1 open)"
        assert calls(root) == 2
        second.close()


def test_closing_the_runtime_stops_the_background_loads(tmp_path):
    root = project(tmp_path, refresh=0.3)
    runtime = Runtime()
    with open_store(f"sqlite:///{tmp_path / 'nia.db'}") as store:
        runtime.boundary(store, runtime.create_session(store, root).id)
    runtime.close()
    count = calls(root)
    time.sleep(1.2)
    assert calls(root) == count


@pytest.mark.parametrize("refresh", [0, -1, "60", True, float("nan")])
def test_refresh_must_be_seconds_above_zero(refresh):
    with pytest.raises(ValueError, match=r"acme/x.*refresh"):
        ContextSource("acme/x", load=lambda: 1, baseline=str, refresh=refresh)


def test_the_slow_source_example_in_docs_plugins_md_loads_once_then_answers_from_its_last_load(tmp_path):
    doc = (Path(__file__).resolve().parents[2] / "docs" / "plugins.md").read_text()
    code = next(block for block in re.findall(r"```python\n(.*?)```", doc, re.S) if "refresh=60" in block)
    root = tmp_path / "shop"
    (root / ".nia" / "plugins").mkdir(parents=True)
    (root / ".nia" / "plugins" / "oncall.py").write_text(code)
    runtime = Runtime()
    with open_store(f"sqlite:///{tmp_path / 'nia.db'}") as store:
        session = runtime.create_session(store, root).id
        started = time.monotonic()
        assert "Ada is on call." in runtime.boundary(store, session).text
        assert time.monotonic() - started >= 1.0  # the first boundary waited for the lookup
        started = time.monotonic()
        assert runtime.boundary(store, session).text is None
        assert time.monotonic() - started < 1.0  # the next one used it: a loader sleeping 1 s was not called
    runtime.close()
