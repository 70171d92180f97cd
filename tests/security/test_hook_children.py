"""A process a plugin starts during a hook holds none of the agent's pipes.

An agent reads a hook's stdout and stderr until every copy of those pipes is
closed; a helper a plugin starts without redirecting its output, and leaves
running, would keep the agent waiting for it (docs/hosts.md). The hook in its
own process, as an agent runs it, through a real pipe.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from tests.security.test_attack_corpus import NIA
from tests.security.test_hook_log_files import _world

PLUGIN = """
import subprocess
from pathlib import Path
from nia_core import ContextSource, hookimpl

def start_helper():
    helper = subprocess.Popen(["sleep", "30"])  # its stdout and stderr: whatever the hook's are
    (Path(__file__).parent.parent / "helper.pid").write_text(str(helper.pid))
    return "on"

@hookimpl
def nia_context_sources(location):
    return [ContextSource(key="acme/helper", load=start_helper, baseline=lambda v: "HELPER: " + v)]
"""


def test_a_helper_a_plugin_leaves_running_does_not_keep_the_agent_waiting(tmp_path: Path) -> None:
    root, env, _ = _world(tmp_path)  # the hook in its own process (NIA_RESIDENT=0)
    (root / ".nia" / "plugins").mkdir()
    (root / ".nia" / "plugins" / "acme.py").write_text(PLUGIN)
    payload = {"session_id": "s1", "cwd": str(root), "hook_event_name": "SessionStart", "source": "startup"}
    started = time.monotonic()
    try:
        done = subprocess.run(  # reads both pipes to their end, as an agent does
            [*NIA, "hook", "claude-code"],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        took = time.monotonic() - started
    finally:
        pid = root / ".nia" / "helper.pid"
        if pid.exists():
            try:
                os.kill(int(pid.read_text()), signal.SIGKILL)
            except ProcessLookupError:
                pass
    assert "HELPER: on" in done.stdout
    assert took < 20, f"the agent waited {took:.1f}s for the plugin's helper"
