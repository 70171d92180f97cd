"""Finding the pinned agents: the tests look where ``.ci/agents.sh`` installs them, and say how to install them."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_agents_are_looked_for_under_home_as_the_install_script_puts_them(tmp_path: Path) -> None:
    """``$HOME`` as the tests start, not the passwd entry's home (a CI container sets HOME elsewhere)."""
    code = (
        "import pytest\n"
        "from tests.real_agents import harness\n"
        "print(harness.agents_dir())\n"
        "try:\n"
        "    harness.agent_binary('claude')\n"
        "except BaseException as exc:\n"
        "    print(exc)\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("NIA_AGENTS_DIR", "NIA_REQUIRE_AGENTS")}
    env["HOME"] = str(tmp_path / "ci-home")
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, check=True
    )
    folder, reason = done.stdout.splitlines()[:2]
    assert folder == str(tmp_path / "ci-home" / ".cache" / "nia-agents")
    assert reason == (
        f"claude is not installed in {folder} ($HOME/.cache/nia-agents; "
        'install the agents with: eval "$(bash .ci/agents.sh)")'
    )


def test_the_install_script_run_without_eval_says_how_to_run_it(tmp_path: Path) -> None:
    """Printed to a terminal, its export line sets nothing: it says so (here with no npm, so it stops there)."""
    master, slave = pty.openpty()
    env = {"PATH": "/nonexistent", "HOME": str(tmp_path), "NIA_AGENTS_DIR": str(tmp_path / "agents")}
    process = subprocess.Popen(
        ["/bin/bash", str(ROOT / ".ci" / "agents.sh")], stdout=slave, stderr=subprocess.PIPE, env=env, text=True
    )
    os.close(slave)
    try:
        _, err = process.communicate(timeout=60)
    finally:
        while select.select([master], [], [], 0)[0]:
            try:
                if not os.read(master, 65536):
                    break
            except OSError:
                break
        os.close(master)
    assert 'agents.sh: run it as: eval "$(bash .ci/agents.sh)"' in err.splitlines()[0], err
