"""A compaction drops nia's earlier text from what the model sees: nia notices and starts a new epoch.

The hook input and the transcript records are the ones the real binaries
wrote (tests/real_agents drives them): Codex 0.169.0 writes a ``"type":"compacted"``
rollout line before it runs SessionStart ``resume`` then ``compact``; Claude
Code 2.1.328 runs SessionStart ``compact`` first and writes its
``compact_boundary`` line after. These tests cover the orders and the losses
an agent run cannot produce on demand (a compaction whose SessionStart never
ran because the process was killed in between).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.agents.test_hook_answer import Host, generous_deadline, log, project  # noqa: F401 - fixtures
from tests.agents.transcripts import hook_record, line

RECORDS = {
    "codex": {
        "timestamp": "2026-11-30T13:14:15.950Z",
        "ordinal": 22,
        "type": "compacted",
        "payload": {"message": "SUMMARY", "replacement_history": []},
    },
    "claude-code": {
        "parentUuid": None,
        "isSidechain": False,
        "type": "system",
        "subtype": "compact_boundary",
        "content": "Conversation compacted",
        "compactMetadata": {"trigger": "auto", "preTokens": 190000},
    },
}
"""One compaction record of each host's transcript, as the binaries wrote it (trimmed)."""


def compact(transcript: Path, name: str) -> None:
    with open(transcript, "a") as handle:
        handle.write(json.dumps(RECORDS[name], separators=(",", ":")) + "\n")


@pytest.mark.parametrize("name", ["claude-code", "codex"])
def test_a_compaction_whose_session_start_never_ran_still_starts_a_new_epoch(name, project, tmp_path):  # noqa: F811
    host = Host(name, project)
    host.transcript = tmp_path / "transcript.jsonl"
    assert host.hook("SessionStart", "startup")[0] is not None
    (project / "rule.txt").write_text("two\n")
    assert host.hook("UserPromptSubmit")[0] == "ACME-RULE changed: two (was one)"
    compact(host.transcript, name)  # ... and the agent was killed before its SessionStart(compact) hook

    text, err = host.hook("UserPromptSubmit")
    assert text is not None and text.startswith("Environment:") and "ACME-RULE: two" in text
    assert "changed" not in text  # the model has none of the old epoch: no update against it
    assert "a new epoch starts" in err
    assert host.hook("UserPromptSubmit")[0] is None  # the new baseline is in the transcript after the record
    assert [(e["outcome"], e["epoch"]) for e in log()] == [
        ("initialized", 1),
        ("updated", 1),
        ("initialized", 2),
        ("unchanged", 2),
    ]


def test_codex_resume_then_compact_after_a_compaction_say_the_baseline_once(project, tmp_path):  # noqa: F811
    host = Host("codex", project)
    host.transcript = tmp_path / "rollout.jsonl"
    assert host.hook("SessionStart", "startup")[0] is not None
    (project / "rule.txt").write_text("two\n")
    compact(host.transcript, "codex")  # Codex compacts before the resumed turn, then runs both hooks
    fresh, _ = host.hook("SessionStart", "resume")
    assert fresh is not None and "ACME-RULE: two" in fresh and "changed" not in fresh
    assert host.hook("SessionStart", "compact")[0] is None  # that compaction is answered already
    assert host.hook("UserPromptSubmit")[0] is None
    assert [(e["source"], e["outcome"], e["epoch"]) for e in log()] == [
        ("startup", "initialized", 1),
        ("resume", "initialized", 2),
        ("compact", "unchanged", 2),
        ("", "unchanged", 2),
    ]

    compact(host.transcript, "codex")  # the next compaction (mid-turn: SessionStart compact only)
    again, _ = host.hook("SessionStart", "compact")
    assert again is not None and "ACME-RULE: two" in again
    assert log()[-1]["epoch"] == 3


def test_claude_code_compact_hook_runs_before_its_record_is_written(project, tmp_path):  # noqa: F811
    host = Host("claude-code", project)
    host.transcript = tmp_path / "transcript.jsonl"
    assert host.hook("SessionStart", "startup")[0] is not None
    fresh, _ = host.hook("SessionStart", "compact")  # the old baseline is still after the last record
    assert fresh is not None and "ACME-RULE: one" in fresh
    compact(host.transcript, "claude-code")  # written after the hook; the hook's output after it
    with open(host.transcript, "a") as handle:
        handle.write(line(hook_record("claude-code", fresh, "SessionStart")))
    assert host.hook("SessionStart", "resume")[0] is None
    assert host.hook("UserPromptSubmit")[0] is None
    assert [e["epoch"] for e in log()] == [1, 2, 2, 2]


def test_a_compaction_far_back_in_a_long_transcript_is_found(project, tmp_path, monkeypatch):  # noqa: F811
    from nia_core.agents import transcript

    monkeypatch.setattr(transcript, "TAIL_BYTES", 4096)
    host = Host("codex", project)
    host.transcript = tmp_path / "rollout.jsonl"
    assert host.hook("SessionStart", "startup")[0] is not None
    assert host.hook("UserPromptSubmit")[0] is None
    compact(host.transcript, "codex")
    with open(host.transcript, "a") as handle:  # a long conversation since the compaction
        for i in range(100):
            handle.write(json.dumps({"type": "response_item", "text": f"turn {i} " + "x" * 500}) + "\n")
    text, _ = host.hook("UserPromptSubmit")
    assert text is not None and "ACME-RULE: one" in text
    assert log()[-1]["epoch"] == 2
    assert host.hook("UserPromptSubmit")[0] is None
