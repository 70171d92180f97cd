"""nia's OpenCode plugin module itself, run by node as OpenCode runs it: a nia that fails or hangs adds nothing.

OpenCode awaits the plugin's ``chat.message`` before it sends the prompt, so
the plugin must give up on a nia that hangs (10 s past nia's own deadline,
``NIA_HOOK_DEADLINE``), ignore one that fails or prints something else, and
never buffer without bound. ``tests/real_agents/test_opencode.py`` runs the
same module inside the real OpenCode.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nia_core.agents.opencode import render
from tests.agents.test_hook_answer import generous_deadline, project  # noqa: F401 - fixtures

DRIVER = """
const mod = await import(process.argv[2])
const exported = Object.keys(mod)
const plugin = await mod[exported[0]]({ directory: process.argv[3] })
const prompt = { id: "prt_0001", sessionID: "ses_1", messageID: "msg_1", type: "text", text: "hi" }
const output = { message: {}, parts: [prompt] }
const started = Date.now()
await plugin["chat.message"]({ sessionID: "ses_1", agent: "build" }, output)
console.log(JSON.stringify({ exported, parts: output.parts, ms: Date.now() - started }))
"""


def node() -> str:
    found = shutil.which("node")
    if found:
        return found
    if os.environ.get("NIA_REQUIRE_AGENTS") == "1":
        pytest.fail("node is not installed (bash .ci/agents.sh installs it)")
    pytest.skip("node is not installed (bash .ci/agents.sh installs it)")


def run_plugin(tmp_path: Path, program: str, cwd: Path, deadline: str = "1") -> dict:
    plugin = tmp_path / "nia.mjs"
    plugin.write_text(render(program))
    driver = tmp_path / "driver.mjs"
    driver.write_text(DRIVER)
    env = {**os.environ, "NIA_HOOK_DEADLINE": deadline}
    done = subprocess.run(
        [node(), str(driver), plugin.as_uri(), str(cwd)], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def script(tmp_path: Path, body: str) -> str:
    path = tmp_path / "fake-nia"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return str(path)


def test_nias_text_becomes_a_marked_part_after_the_prompt(tmp_path, project):  # noqa: F811
    nia = str(Path(sys.executable).parent / "nia")
    result = run_plugin(tmp_path, nia, project, deadline="60")
    assert result["exported"] == ["NiaContext"]  # OpenCode calls every export as a plugin
    _prompt, added = result["parts"]
    assert added["id"] == "prt_0001nia" and added["messageID"] == "msg_1" and added["sessionID"] == "ses_1"
    assert added["synthetic"] is True and added["metadata"] == {"nia": True}
    assert added["text"].startswith("Environment:") and "ACME-RULE: one" in added["text"]


@pytest.mark.parametrize(
    "body",
    [
        "exit 1",  # nia failed
        "echo 'not json'",
        "echo '{\"additionalContext\": 42}'",
        'echo \'{"additionalContext": "x"}\'; exit 3',
        "head -c 20000000 /dev/zero | tr '\\0' x",  # more than the plugin reads
    ],
)
def test_a_nia_that_fails_adds_nothing(body, tmp_path, project):  # noqa: F811
    result = run_plugin(tmp_path, script(tmp_path, body), project)
    assert [p["id"] for p in result["parts"]] == ["prt_0001"]


def test_a_missing_nia_adds_nothing(tmp_path, project):  # noqa: F811
    result = run_plugin(tmp_path, str(tmp_path / "no-such-nia"), project)
    assert [p["id"] for p in result["parts"]] == ["prt_0001"]


def leftovers(marker: str) -> list[str]:
    found = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout.splitlines()
    return [line for line in found if marker in line]


@pytest.mark.parametrize("body", ["exec sleep {seconds}", "trap '' TERM; sleep {seconds} & wait"])
def test_a_nia_that_hangs_never_holds_the_prompt_past_its_deadline(body, tmp_path, project):  # noqa: F811
    marker = f"sleep {900_000 + os.getpid()}"  # this process's own: another test run may be hanging one meanwhile
    started = time.monotonic()
    result = run_plugin(tmp_path, script(tmp_path, body.format(seconds=marker.split()[1])), project, deadline="1")
    assert [p["id"] for p in result["parts"]] == ["prt_0001"]
    assert 10_000 <= result["ms"] < 30_000 and time.monotonic() - started < 60  # 1 s deadline + 10 s
    assert leftovers(marker) == []  # nia's whole process group is ended


def test_what_nia_leaves_running_with_its_stdout_is_ended(tmp_path, project):  # noqa: F811
    result = run_plugin(tmp_path, script(tmp_path, "sleep 9138 & echo '{}'"), project, deadline="60")
    assert [p["id"] for p in result["parts"]] == ["prt_0001"]
    assert result["ms"] < 10_000  # a second after nia exits, not at the deadline
    assert leftovers("sleep 9138") == []
