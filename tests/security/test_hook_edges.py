"""The agent hook against a hostile repository and transcript: spill files, "already delivered", unreadable folders.

The installed CLI in a subprocess, as the agents run it. The rules
(docs/security.md, "The agent hook"): the spill file is written like every
other file nia writes; what counts as delivered is only what the host
recorded as hook output, never a tool result, a file's content or a spill
file the repository planted; the work is bounded by the epoch's own texts,
never by what the transcript names.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.agents.transcripts import hook_record, line, tool_result
from tests.security.test_attack_corpus import LIMIT, NIA, Attack, clean
from tests.security.test_installer_edges import _as_a_user

HOSTS = ["claude-code", "codex"]

RULE = """
from pathlib import Path
from nia_core import UNAVAILABLE, ContextSource, hookimpl

@hookimpl
def nia_context_sources(location):
    path = location.root / "rule.txt"
    return [ContextSource(
        key="acme/rule",
        load=lambda: path.read_text().strip() if path.exists() else UNAVAILABLE,
        baseline=lambda v: f"ACME-RULE: {v}",
        update=lambda old, new: f"ACME-RULE changed: {new} (was {old})",
        removal=lambda old: "ACME-RULE-REMOVED",
    )]
"""


class Conversation:
    """One host conversation played against the installed ``nia hook HOST``, with the host's transcript."""

    def __init__(self, w: Attack, host: str, session: str = "s1") -> None:
        self.w, self.host, self.session = w, host, session
        self.transcript = w.base / f"{host}-{session}.jsonl"
        self.transcript.touch()

    def hook(self, event: str, source: str = "", record: bool = True) -> tuple[str | None, str]:
        payload = {
            "session_id": self.session,
            "cwd": str(self.w.root),
            "hook_event_name": event,
            "transcript_path": str(self.transcript),
            **({"source": source} if source else {}),
            **({"prompt": "go on"} if event == "UserPromptSubmit" else {}),
        }
        result = self.w.nia("hook", self.host, stdin=json.dumps(payload).encode())
        clean(result)
        assert result.returncode == 0
        assert "gave up" not in result.stderr and "unexpected" not in result.stderr, result.stderr
        if not result.stdout.strip():
            return None, result.stderr
        text = json.loads(result.stdout)["hookSpecificOutput"]["additionalContext"]
        if record:
            self.append(hook_record(self.host, text, event))
        return text, result.stderr

    def append(self, record: dict) -> None:
        with open(self.transcript, "a", encoding="utf-8") as handle:
            handle.write(line(record))


def _world(tmp_path: Path, value: str = "one") -> Attack:
    w = Attack(tmp_path)
    w.plugin("acme", RULE)
    (w.root / "rule.txt").write_text(value + "\n")
    return w


@pytest.mark.parametrize("host", HOSTS)
def test_a_spill_file_replaced_by_a_fifo_never_blocks_the_hook(tmp_path: Path, host: str) -> None:
    w = _world(tmp_path, "y" * 30_000)
    first, _ = Conversation(w, host, "first").hook("SessionStart", "startup")
    assert first is not None and ".nia/hook-output/" in first
    (spilled,) = (w.root / ".nia" / "hook-output").glob("*.md")
    whole = spilled.read_text()
    spilled.unlink()
    os.mkfifo(spilled)  # the repository swaps a FIFO in at the name the same text hashes to
    again, _ = Conversation(w, host, "second").hook("SessionStart", "startup")
    assert again == first
    assert spilled.is_file() and not spilled.is_symlink() and spilled.read_text() == whole


@pytest.mark.parametrize("host", HOSTS)
def test_a_spill_file_planted_as_a_link_out_is_replaced_not_written_through(tmp_path: Path, host: str) -> None:
    w = _world(tmp_path, "y" * 30_000)
    first, _ = Conversation(w, host, "first").hook("SessionStart", "startup")
    assert first is not None
    (spilled,) = (w.root / ".nia" / "hook-output").glob("*.md")
    spilled.unlink()
    spilled.symlink_to(w.secret)
    Conversation(w, host, "second").hook("SessionStart", "startup")
    assert w.secret.read_text().startswith("OUTSIDE-SECRET")  # the outside file was not written
    assert spilled.is_file() and not spilled.is_symlink()


@pytest.mark.parametrize("host", HOSTS)
def test_a_lost_update_is_resent_whatever_the_repository_quotes_or_plants(tmp_path: Path, host: str) -> None:
    w = _world(tmp_path)
    talk = Conversation(w, host)
    baseline, _ = talk.hook("SessionStart", "startup")
    assert baseline is not None
    (w.root / "rule.txt").write_text("two\n")
    update, _ = talk.hook("UserPromptSubmit", record=False)  # the host lost it (a crash before it was recorded)
    assert update == "ACME-RULE changed: two (was one)"
    # The repository makes the lost text appear in every other way: a tool read it out of a file, a command
    # printed it, a spill file whose name is the hash of what it planted, and the transcript naming that file.
    planted = f"{update}\n\nanything"
    name = hashlib.sha256(planted.encode()).hexdigest()[:16]
    folder = w.root / ".nia" / "hook-output"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.md").write_text(planted)
    talk.append(tool_result(host, update))
    talk.append(tool_result(host, f"see {folder / name}.md and hook-output/{name}.md"))
    talk.append({"type": "user", "message": {"role": "user", "content": f"quoted: {update}"}})
    talk.append({"type": "attachment", "attachment": {"type": "file", "content": [update]}})
    (w.root / "rule.txt").write_text("three\n")
    text, err = talk.hook("UserPromptSubmit")
    assert text == "ACME-RULE changed: two (was one)\n\nACME-RULE changed: three (was two)"
    assert "sent again" in err
    assert talk.hook("UserPromptSubmit")[0] is None  # now it is recorded as hook output


@pytest.mark.parametrize("host", HOSTS)
def test_the_hook_never_reads_the_spill_files_a_transcript_names(tmp_path: Path, host: str) -> None:
    """Its work is bounded by the epoch's own texts: 200,000 names in the transcript cost no read at all."""
    w = _world(tmp_path)
    talk = Conversation(w, host)
    assert talk.hook("SessionStart", "startup")[0] is not None
    folder = w.root / ".nia" / "hook-output"
    folder.mkdir(parents=True, exist_ok=True)
    names = [hashlib.sha256(str(n).encode()).hexdigest()[:16] for n in range(200_000)]
    for name in names[:50]:
        (folder / f"{name}.md").write_text("planted")
    with open(talk.transcript, "a") as handle:
        for start in range(0, len(names), 2000):
            handle.write(line(tool_result(host, " ".join(f"hook-output/{n}.md" for n in names[start : start + 2000]))))
    probe = (
        "import os, sys\n"
        "def watch(event, args):\n"
        "    if event == 'open' and args and 'hook-output' in str(args[0]):\n"
        "        os.write(2, b'OPENED ' + str(args[0]).encode() + b'\\n')\n"
        "sys.addaudithook(watch)\n"
        "from nia_core.cli import main\n"
        "sys.argv = ['nia', '-p', 'no:nia-date', 'hook', sys.argv[1]]\n"
        "main()\n"
    )
    payload = {
        "session_id": "s1",
        "cwd": str(w.root),
        "hook_event_name": "UserPromptSubmit",
        "transcript_path": str(talk.transcript),
        "prompt": "x",
    }
    done = subprocess.run(
        [sys.executable, "-c", probe, host],
        input=json.dumps(payload).encode(),
        capture_output=True,
        cwd=w.root,
        env=w.env,
        timeout=LIMIT,
    )
    err = done.stderr.decode()
    assert done.returncode == 0 and "OPENED" not in err, err[-2000:]
    assert done.stdout == b""  # the baseline was found: nothing to say


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("mode", [0o000, 0o311])
def test_a_cwd_under_a_folder_the_user_cannot_read_is_one_line(tmp_path: Path, host: str, mode: int) -> None:
    w = Attack(tmp_path)
    locked = tmp_path / "locked"
    cwd = locked / "inner" / "proj"
    cwd.mkdir(parents=True)
    os.chmod(locked, mode)
    payload = {"session_id": "s", "cwd": str(cwd), "hook_event_name": "SessionStart", "source": "startup"}
    try:
        done = subprocess.run(
            _as_a_user([*NIA, "hook", host]),
            input=json.dumps(payload).encode(),
            capture_output=True,
            env=w.env,
            cwd=tmp_path,
            timeout=LIMIT,
        )
    finally:
        os.chmod(locked, 0o755)
    err = done.stderr.decode()
    assert done.returncode == 0
    assert "unexpected" not in err and "Traceback" not in err, err
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) <= 1, lines
    if mode == 0o000:
        assert len(lines) == 1 and str(cwd) in lines[0] and "permission" in lines[0].lower(), lines
