"""``nia hook claude-code|codex`` with each host's stdin JSON: what the host is told, turn by turn.

The real agents are driven in tests/real_agents; these tests feed the documented
(and binary-verified) hook input directly, for every host, to cover the
behaviours an agent run cannot trigger on demand.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from nia_core.cli import cli
from tests.agents.transcripts import hook_record, line
from tests.resident_helpers import one_hook

HOSTS = ["claude-code", "codex"]

PLUGIN = """
from nia_core import UNAVAILABLE, ContextSource, hookimpl
from pathlib import Path

@hookimpl
def nia_context_sources(location):
    path = location.root / "rule.txt"
    def load():
        return path.read_text().strip() if path.exists() else UNAVAILABLE
    return [ContextSource(
        key="acme/rule",
        load=load,
        baseline=lambda v: f"ACME-RULE: {v}",
        update=lambda old, new: f"ACME-RULE changed: {new} (was {old})",
        removal=lambda old: "ACME-RULE-REMOVED",
    )]
"""


@pytest.fixture(autouse=True)
def generous_deadline(monkeypatch):
    monkeypatch.setenv("NIA_HOOK_DEADLINE", "600")  # in-process runs: the watchdog must never end pytest


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "shop"
    (root / ".git").mkdir(parents=True)
    (root / "AGENTS.md").write_text("AGENTS-SAYS: use tabs.\n")
    (root / "rule.txt").write_text("one\n")
    plugins = root / ".nia" / "plugins"
    plugins.mkdir(parents=True)
    (plugins / "acme.py").write_text(PLUGIN)
    return root


class Host:
    """Plays one host conversation: each call is one hook process with the host's stdin JSON."""

    def __init__(self, name: str, cwd: Path, session: str = "host-session-1") -> None:
        self.name, self.cwd, self.session = name, cwd, session
        self.transcript: Path | None = None

    def hook(self, event: str, source: str | None = None, record: bool = True, **extra: str) -> tuple[str | None, str]:
        payload: dict[str, object] = {"session_id": self.session, "cwd": str(self.cwd), "hook_event_name": event}
        if source:
            payload["source"] = source
        if event == "UserPromptSubmit":
            payload["prompt"] = "hello"
        if self.transcript is not None:
            payload["transcript_path"] = str(self.transcript)
        payload.update(extra)
        with one_hook():
            result = CliRunner().invoke(cli, ["hook", self.name], input=json.dumps(payload))
        assert result.exit_code == 0, result.output
        out = result.stdout.strip()
        if not out:
            return None, result.stderr
        data = json.loads(out)
        assert data["hookSpecificOutput"]["hookEventName"] == event
        text = data["hookSpecificOutput"]["additionalContext"]
        if self.transcript is not None and record:  # the host records what reached its model
            with open(self.transcript, "a") as handle:
                handle.write(line(hook_record(self.name, text, event)))
        return text, result.stderr


def log(*args: str) -> list[dict]:
    result = CliRunner().invoke(cli, ["hook", "log", "--json", *args])
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.output.splitlines()]


@pytest.mark.parametrize("name", HOSTS)
def test_a_conversation_turn_by_turn(name, project):
    host = Host(name, project)
    baseline, _ = host.hook("SessionStart", "startup")
    assert baseline is not None
    assert "Environment:" in baseline and "ACME-RULE: one" in baseline
    assert "AGENTS-SAYS" not in baseline  # the host loads AGENTS.md itself

    assert host.hook("UserPromptSubmit") == (None, "")  # nothing changed: nothing at all

    (project / "rule.txt").write_text("two\n")
    update, _ = host.hook("UserPromptSubmit")
    assert update == "ACME-RULE changed: two (was one)"
    assert host.hook("UserPromptSubmit")[0] is None

    (project / "rule.txt").write_text("three\n")
    assert host.hook("SessionStart", "resume")[0] == "ACME-RULE changed: three (was two)"  # the delta only

    (project / ".nia" / "plugins" / "acme.py").unlink()
    assert host.hook("UserPromptSubmit")[0] == "ACME-RULE-REMOVED"

    entries = log()
    assert [e["outcome"] for e in entries] == ["initialized", "unchanged", "updated", "unchanged", "updated", "updated"]
    assert entries[0]["session"].startswith(f"{name}-") and entries[0]["host_session"] == "host-session-1"
    assert entries[2]["changed"] == ["~acme/rule"] and entries[-1]["changed"] == ["-acme/rule"]
    assert entries[2]["printed"] == len(update.encode())


@pytest.mark.parametrize("name", HOSTS)
@pytest.mark.parametrize("source", ["compact", "clear"])
def test_compact_and_clear_start_a_new_epoch(project, source, name):
    host = Host(name, project)
    assert host.hook("SessionStart", "startup")[0] is not None
    (project / "rule.txt").write_text("two\n")
    fresh, _ = host.hook("SessionStart", source)
    assert fresh is not None and "ACME-RULE: two" in fresh and "Environment:" in fresh
    assert [e["epoch"] for e in log()] == [1, 2]
    assert host.hook("UserPromptSubmit")[0] is None


def test_unavailable_context_prints_nothing_then_the_baseline_at_the_next_prompt(project):
    (project / "rule.txt").unlink()
    host = Host("codex", project)
    text, err = host.hook("SessionStart", "startup")
    assert text is None
    warning = [line for line in err.splitlines() if "unavailable" in line]
    assert len(warning) == 1 and "acme/rule" in warning[0] and warning[0].startswith("nia: ")
    assert host.hook("UserPromptSubmit")[0] is None  # still unavailable: still nothing, the turn goes on
    (project / "rule.txt").write_text("back\n")
    baseline, _ = host.hook("UserPromptSubmit")
    assert baseline is not None and "ACME-RULE: back" in baseline and "Environment:" in baseline
    assert [e["outcome"] for e in log()] == ["blocked", "blocked", "initialized"]


def test_a_failing_plugin_never_fails_the_hook(project):
    plugins = project / ".nia" / "plugins"
    (plugins / "broken.py").write_text("raise RuntimeError('exploded on import')\n")
    (plugins / "noisy.py").write_text(
        "import os\nprint('NOISE ON STDOUT')\nos.write(1, b'RAW NOISE ON FD 1')\n"
        "from nia_core import ContextSource, hookimpl\n"
        "@hookimpl\ndef nia_context_sources(location):\n"
        "    return [ContextSource(key='noisy/ok', load=lambda: 1, baseline=lambda v: 'NOISY-OK')]\n"
    )
    host = Host("claude-code", project)
    baseline, err = host.hook("SessionStart", "startup")  # stdout holds only the host's JSON
    assert baseline is not None and "ACME-RULE: one" in baseline and "NOISY-OK" in baseline
    assert "exploded on import" in err
    assert any("exploded on import" in w for w in log()[0]["warnings"])

    (plugins / "bad.py").write_text(
        "from nia_core import ContextSource, hookimpl\n"
        "@hookimpl\ndef nia_context_sources(location):\n"
        "    return [ContextSource(key='bad/render', load=lambda: 1, baseline=lambda v: 1 / 0)]\n"
    )
    (project / "rule.txt").write_text("two\n")
    update, err = host.hook("UserPromptSubmit")
    assert update == "ACME-RULE changed: two (was one)"  # what could be rendered arrives
    assert "bad/render" in err and "ZeroDivisionError" in err


def test_a_renderer_failing_at_the_start_blocks_the_baseline_until_it_renders(project):
    plugins = project / ".nia" / "plugins"
    (plugins / "bad.py").write_text(
        "from nia_core import ContextSource, hookimpl\n"
        "@hookimpl\ndef nia_context_sources(location):\n"
        "    return [ContextSource(key='bad/render', load=lambda: 1, baseline=lambda v: 1 / 0)]\n"
    )
    host = Host("codex", project)
    text, err = host.hook("SessionStart", "startup")  # never an incomplete baseline
    assert text is None and "bad/render" in err
    (plugins / "bad.py").unlink()
    baseline, _ = host.hook("UserPromptSubmit")
    assert baseline is not None and "ACME-RULE: one" in baseline


@pytest.mark.parametrize("garbage", ["", "not json", "[1, 2]", '{"hook_event_name": "SessionStart"}'])
def test_bad_hook_input_exits_0_with_one_line(project, garbage):
    result = CliRunner().invoke(cli, ["hook", "codex"], input=garbage)
    assert result.exit_code == 0
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("nia: Codex hook input")


def test_other_events_get_no_output(project):
    assert Host("claude-code", project).hook("PreToolUse") == (None, "")


def test_the_native_file_switch_delivers_agents_md_again(project):
    (project / ".nia" / "project.toml").write_text("[hooks]\ndeliver_native_files = true\n")
    baseline, _ = Host("claude-code", project).hook("SessionStart", "startup")
    assert baseline is not None and "AGENTS-SAYS: use tabs." in baseline
    (project / ".nia" / "project.toml").write_text(
        "[hooks]\ndeliver_native_files = true\n[hooks.codex]\ndeliver_native_files = false\n"
    )
    baseline, _ = Host("codex", project, "other").hook("SessionStart", "startup")
    assert baseline is not None and "AGENTS-SAYS" not in baseline


def test_over_the_limit_the_host_gets_what_fits_and_where_the_rest_is(project):
    long_rule = "\n".join(f"line {i}: " + "x" * 90 for i in range(300))  # ~30,000 characters
    (project / "rule.txt").write_text(long_rule + "\n")
    text, _ = Host("claude-code", project).hook("SessionStart", "startup")
    assert text is not None and len(text) <= 10_000
    saved = sorted((project / ".nia" / "hook-output").glob("*.md"))
    assert len(saved) == 1 and str(saved[0]) in text
    full = saved[0].read_text()
    assert long_rule in full and full.startswith("Environment:")
    assert text.split("\n\n[nia: ")[0] in full  # what was shown is the head of the whole text
    assert log()[0]["full_text"] == str(saved[0])


def test_a_symlinked_nia_folder_is_not_written_through(project, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (project / ".nia" / "hook-output").symlink_to(outside)
    (project / "rule.txt").write_text("y" * 20_000 + "\n")
    text, err = Host("codex", project).hook("SessionStart", "startup")
    assert text is not None and len(text.encode()) <= 10_000
    assert list(outside.iterdir()) == []
    assert "could not save the complete text" in err


def test_a_lost_message_is_sent_again(project, tmp_path):
    host = Host("claude-code", project)
    host.transcript = tmp_path / "transcript.jsonl"
    host.hook("SessionStart", "startup")
    (project / "rule.txt").write_text("two\n")
    host.hook("UserPromptSubmit")
    # The host crashed before recording that update: remove it from the transcript.
    lines = host.transcript.read_text().splitlines()
    host.transcript.write_text("\n".join(lines[:-1]) + "\n")
    (project / "rule.txt").write_text("three\n")
    text, err = host.hook("UserPromptSubmit")
    assert text == "ACME-RULE changed: two (was one)\n\nACME-RULE changed: three (was two)"
    assert "sent again" in err
    assert host.hook("UserPromptSubmit")[0] is None  # everything arrived now


def test_changing_folders_rebuilds_the_context_there(project):
    sub = project / "api"
    sub.mkdir()
    host = Host("codex", project)
    host.hook("SessionStart", "startup")
    host.cwd = sub
    text, _ = host.hook("UserPromptSubmit")
    assert text is not None and f"Working directory: {sub}" in text  # a fresh baseline at the new Location
    assert [e["epoch"] for e in log()] == [1, 2]


def test_a_hook_answers_for_the_project_it_found_even_when_a_nia_folder_appears_while_it_runs(project):
    """The hook finds its project once: a ``.nia/`` made in its folder meanwhile is the next hook's project.

    Here a loader makes it (as ``nia init`` run there at that moment would). The hook's report still says
    the broken plugin of the project it answered for; finding the project again after the boundary took
    the new folder for the project and said the plugins of a host loaded for it instead.
    """
    plugins = project / ".nia" / "plugins"
    (plugins / "broken.py").write_text("raise RuntimeError('exploded on import')\n")
    (plugins / "maker.py").write_text(
        "from pathlib import Path\n"
        "from nia_core import ContextSource, hookimpl\n"
        "@hookimpl\ndef nia_context_sources(location):\n"
        "    def load():\n"
        "        if (location.root / 'make-it').exists():\n"
        "            (location.path / '.nia').mkdir(exist_ok=True)\n"
        "        return 1\n"
        "    return [ContextSource(key='maker/x', load=load, baseline=lambda v: 'MAKER')]\n"
    )
    sub = project / "api"
    sub.mkdir()
    host = Host("claude-code", sub)
    assert host.hook("SessionStart", "startup")[0] is not None
    (project / "make-it").write_text("")
    assert host.hook("UserPromptSubmit")[0] is None  # nothing changed in the project it answered for
    assert (sub / ".nia").is_dir()
    assert any("exploded on import" in w for w in log()[-1]["warnings"]), log()[-1]
    text, _ = host.hook("UserPromptSubmit")  # the next hook's project is the new one: a fresh baseline there
    assert text is not None and "MAKER" not in text and [e["epoch"] for e in log()] == [1, 1, 2]


def test_a_hanging_plugin_is_given_up_on_and_the_hook_exits_0(project):
    (project / ".nia" / "plugins" / "hang.py").write_text("import time\ntime.sleep(60)\n")
    env = {**os.environ, "NIA_HOOK_DEADLINE": "2"}
    payload = json.dumps({"session_id": "s", "cwd": str(project), "hook_event_name": "UserPromptSubmit"})
    done = subprocess.run(
        [sys.executable, "-c", "from nia_core.cli import main; main()", "hook", "claude-code"],
        input=payload,
        capture_output=True,
        text=True,
        env=env,
        timeout=50,
        cwd=project,
    )
    assert done.returncode == 0
    assert done.stdout == ""
    assert "gave up after 2s" in done.stderr


@pytest.fixture
def postgres_db(monkeypatch) -> Iterator[str]:
    sys.path.insert(0, str(Path(__file__).parents[1] / "postgres"))
    import pg_server

    with pg_server.fresh_schema(pg_server.shared_url()) as url:
        monkeypatch.setenv("NIA_DB", url)
        yield url


def test_attached_sessions_work_unchanged_on_postgresql(postgres_db, project):
    host = Host("claude-code", project)
    assert host.hook("SessionStart", "startup")[0] is not None
    (project / "rule.txt").write_text("two\n")
    assert host.hook("UserPromptSubmit")[0] == "ACME-RULE changed: two (was one)"
    result = CliRunner().invoke(cli, ["session", "list", "--json"])
    assert result.exit_code == 0, result.output
    sessions = json.loads(result.output)
    assert [s["model"] for s in sessions] == ["claude-code/attached"] and sessions[0]["epoch"] == 1


def test_the_worked_example_in_docs_hosts_md_does_what_it_says(tmp_path):
    import re

    doc = (Path(__file__).resolve().parents[2] / "docs" / "hosts.md").read_text()
    plugin = next(b for b in re.findall(r"```python\n(.*?)```", doc, re.S) if "shop/release" in b)
    root = tmp_path / "shop"
    (root / ".git").mkdir(parents=True)
    (root / ".nia" / "plugins").mkdir(parents=True)
    (root / ".nia" / "plugins" / "release.py").write_text(plugin)
    (root / "RELEASE").write_text("2.4\n")
    host = Host("claude-code", root)
    baseline, _ = host.hook("SessionStart", "startup")
    assert baseline is not None and baseline.endswith("The next release is 2.4.")
    assert "The next release is 2.4." in doc
    assert host.hook("UserPromptSubmit")[0] is None
    (root / "RELEASE").write_text("2.5\n")
    update, _ = host.hook("SessionStart", "resume")
    assert update == "The next release is now 2.5 (was 2.4)."
    assert f"SessionStart hook additional context: {update}" in doc
    (root / "RELEASE").unlink()
    (root / ".nia" / "plugins" / "release.py").unlink()
    assert host.hook("UserPromptSubmit")[0] == "There is no planned release any more."


def test_a_long_transcript_is_searched_whole_when_its_end_does_not_answer(project, tmp_path):
    host = Host("codex", project)
    host.transcript = tmp_path / "rollout.jsonl"
    assert host.hook("SessionStart", "startup")[0] is not None
    with open(host.transcript, "a") as handle:  # a long conversation since: the baseline is far from the end
        for i in range(3000):
            handle.write(json.dumps({"type": "response_item", "text": f"turn {i} " + "x" * 500}) + "\n")
    text, err = host.hook("UserPromptSubmit")
    assert text is None and "sent again" not in err


def test_hook_log_for_people_and_for_one_session(project):
    first, second = Host("claude-code", project, "one"), Host("codex", project, "two")
    first.hook("SessionStart", "startup")
    second.hook("SessionStart", "startup")
    (project / "rule.txt").write_text("two\n")
    first.hook("UserPromptSubmit")
    result = CliRunner().invoke(cli, ["hook", "log"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    headers = [line for line in lines if line.startswith("== ")]
    assert len(headers) == 2 and any("claude-code one" in h for h in headers) and any("codex two" in h for h in headers)
    assert any("UserPromptSubmit" in line and "updated" in line and "~acme/rule" in line for line in lines)
    session = next(e["session"] for e in log() if e["host_session"] == "one")
    only = log("--session", session[:16])
    assert {e["host_session"] for e in only} == {"one"} and len(only) == 2
    assert CliRunner().invoke(cli, ["hook", "log", "--last", "1", "--json"]).output.count("\n") == 2


def test_hook_log_before_any_hook_ran():
    result = CliRunner().invoke(cli, ["hook", "log"])
    assert result.exit_code == 0 and "no hook runs logged yet" in result.output


def test_text_sent_inside_a_saved_long_message_is_not_sent_again(project, tmp_path):
    host = Host("claude-code", project)
    host.transcript = tmp_path / "transcript.jsonl"
    host.hook("SessionStart", "startup")
    (project / "rule.txt").write_text("two\n")
    host.hook("UserPromptSubmit")
    lines = host.transcript.read_text().splitlines()
    host.transcript.write_text("\n".join(lines[:-1]) + "\n")  # that update was lost
    (project / "rule.txt").write_text("z" * 15_000 + "\n")
    text, err = host.hook("UserPromptSubmit")  # the lost update and a long one, together over the limit
    assert text is not None and text.startswith("ACME-RULE changed: two (was one)") and ".nia/hook-output/" in text
    assert "sent again" in err
    assert host.hook("UserPromptSubmit") == (None, "")  # the model was pointed at the file: nothing is missing


@pytest.mark.parametrize("name", HOSTS)
def test_however_many_updates_were_lost_the_epoch_holds_while_its_baseline_is_there(name, project, tmp_path):
    host = Host(name, project)
    host.transcript = tmp_path / "transcript.jsonl"
    assert host.hook("SessionStart", "startup")[0] is not None
    lost = []
    transcript, host.transcript = host.transcript, None  # 26 updates admitted, none recorded by the host
    for n in range(2, 28):
        (project / "rule.txt").write_text(f"{n}\n")
        lost.append(host.hook("UserPromptSubmit")[0])
    host.transcript = transcript
    (project / "rule.txt").write_text("last\n")
    text, err = host.hook("UserPromptSubmit")
    assert text is not None and ".nia/hook-output/" not in text
    assert text == "\n\n".join([*lost, "ACME-RULE changed: last (was 27)"])  # every lost one, then the new one
    assert "26 earlier context message(s)" in err and "new epoch" not in err
    assert {e["epoch"] for e in log()} == {1}
    assert host.hook("UserPromptSubmit")[0] is None


@pytest.mark.parametrize("name", HOSTS)
def test_the_user_global_agents_md_reaches_the_model_and_the_projects_stays_the_hosts(
    name, project, isolated_environment
):
    global_agents = isolated_environment / ".config" / "nia" / "AGENTS.md"
    global_agents.parent.mkdir(parents=True)
    global_agents.write_text("GLOBAL-SAYS: answer in French.\n")
    host = Host(name, project)
    baseline, _ = host.hook("SessionStart", "startup")
    assert baseline is not None and "GLOBAL-SAYS: answer in French." in baseline
    assert "AGENTS-SAYS" not in baseline  # the host loads the project's own AGENTS.md itself
    assert "reach you separately" in baseline

    (project / "AGENTS.md").write_text("AGENTS-SAYS: use spaces.\n")
    assert host.hook("UserPromptSubmit")[0] is None  # the host sends the project's edit itself

    global_agents.write_text("GLOBAL-SAYS: answer in German.\n")
    update, _ = host.hook("UserPromptSubmit")
    assert update is not None and "GLOBAL-SAYS: answer in German." in update and "AGENTS-SAYS" not in update
    assert "not affected" in update  # it never tells the model the project's instructions went

    global_agents.unlink()
    removal, _ = host.hook("UserPromptSubmit")
    assert removal is not None and "user-global AGENTS.md instructions given earlier no longer apply" in removal


def test_without_a_user_global_agents_md_nothing_of_agents_md_is_said(project):
    baseline, _ = Host("claude-code", project).hook("SessionStart", "startup")
    assert baseline is not None and "AGENTS.md" not in baseline
