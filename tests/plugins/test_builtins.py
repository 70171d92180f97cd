"""nia's built-in plugins, tested with the same kit plugin authors use (``nia_core.testing``)."""

from __future__ import annotations

import datetime as dt
import logging
import os
from zoneinfo import ZoneInfo

import pytest

import nia_core.files
import nia_plugins.date
import nia_plugins.environment
import nia_plugins.instructions
from nia_core.plugin_host import PluginError
from nia_core.testing import BoundaryDriver
from nia_plugins.date import date_source

# -- nia-instructions ---------------------------------------------------------------------


@pytest.fixture
def global_agents(isolated_environment):
    """The user-global AGENTS.md (under the isolated XDG_CONFIG_HOME)."""
    path = isolated_environment / ".config" / "nia" / "AGENTS.md"
    path.parent.mkdir(parents=True)
    return path


def headings(text: str) -> list[str]:
    return [line[3:] for line in text.splitlines() if line.startswith("## ")]


def test_instructions_are_global_first_then_nearest_first(nia_project, global_agents):
    global_agents.write_text("Global rule.")
    root = nia_project.write("AGENTS.md", "Root rule.")
    sub = nia_project.write("sub/AGENTS.md", "Sub rule.")
    driver = BoundaryDriver(nia_project.location_at("sub/deeper"))

    texts = driver.drive(nia_plugins.instructions)

    assert headings(texts.baseline) == [str(global_agents), str(sub), str(root)]
    assert texts.baseline.startswith("Instructions from AGENTS.md files (global first, then nearest first):\n\n")
    assert texts.baseline.index("Global rule.") < texts.baseline.index("Sub rule.") < texts.baseline.index("Root rule.")


def test_a_file_reached_twice_through_a_symlink_appears_once(nia_project):
    root = nia_project.write("AGENTS.md", "Root rule.")
    (nia_project.path("sub")).mkdir()
    os.symlink(root, nia_project.path("sub/AGENTS.md"))

    texts = BoundaryDriver(nia_project.location_at("sub")).drive(nia_plugins.instructions)

    assert headings(texts.baseline) == [str(nia_project.path("sub/AGENTS.md"))]  # the first place it was found
    assert texts.baseline.count("Root rule.") == 1


def test_symlinks_are_followed_to_files_elsewhere_in_the_project(nia_project):
    shared = nia_project.write("docs/shared-rules.md", "Shared rule.")
    os.symlink(shared, nia_project.path("AGENTS.md"))

    texts = BoundaryDriver(nia_project.location).drive(nia_plugins.instructions, lambda: shared.write_text("Changed."))

    assert "Shared rule." in texts.baseline
    assert texts.updates == [
        "The AGENTS.md instructions changed. This complete set replaces all instructions loaded earlier:\n\n"
        f"## {nia_project.path('AGENTS.md')}\n\nChanged."
    ]


def test_a_file_over_the_budget_is_cut_at_a_utf8_boundary_with_a_visible_marker(nia_project, caplog):
    text = "Ünïcödé rüles: " + "é" * 40  # two bytes per accented letter
    data = text.encode()
    path = nia_project.write("AGENTS.md", text)
    nia_project.configure("nia-instructions", max_bytes=10)  # byte 10 is the second byte of the first "é"

    with caplog.at_level(logging.WARNING, logger="nia"):
        texts = BoundaryDriver(nia_project.location).drive(nia_plugins.instructions)

    body = texts.baseline.split("\n\n", 2)[2]
    kept, marker = body.split("\n\n", 1)
    assert kept == "Ünïcöd" and len(kept.encode()) == 9 and "\ufffd" not in kept
    assert marker == f"[... truncated by nia: {path} is {len(data)} bytes, over the 10-byte budget ...]"
    assert f"nia/instructions: {path} is {len(data)} bytes, cut to the 10-byte budget" in caplog.text


def test_a_file_within_the_budget_is_whole(nia_project):
    nia_project.write("AGENTS.md", "é" * 6)
    nia_project.configure("nia-instructions", max_bytes=12)

    texts = BoundaryDriver(nia_project.location).drive(nia_plugins.instructions)

    assert texts.baseline.endswith("\n\n" + "é" * 6)


@pytest.mark.parametrize("budget", [0, -5, True, "32k"])
def test_an_unusable_budget_is_an_error_naming_the_setting(nia_project, budget):
    nia_project.write("AGENTS.md", "Rule one.")
    nia_project.configure("nia-instructions", max_bytes=budget)

    with pytest.raises(PluginError) as raised:
        BoundaryDriver(nia_project.location).drive(nia_plugins.instructions)

    assert str(raised.value) == (
        "plugin 'nia-instructions': raised ValueError: [plugins.nia-instructions] max_bytes "
        f"must be a positive number of bytes, not {budget!r}"
    )


def _unreadable(monkeypatch, path):
    """Opening ``path`` fails with EACCES (tests run as root, where chmod 000 does not stop a read)."""
    real_open = nia_core.files.os.open

    def fake_open(name, *args, **kwargs):
        if os.path.realpath(name) == os.path.realpath(path):
            raise PermissionError(13, "Permission denied", name)
        return real_open(name, *args, **kwargs)

    monkeypatch.setattr(nia_core.files.os, "open", fake_open)


def test_an_unreadable_file_makes_the_source_unavailable(nia_project, monkeypatch):
    path = nia_project.write("AGENTS.md", "Rule one.")
    driver = BoundaryDriver(nia_project.location)
    conversation = driver.conversation(nia_plugins.instructions)
    assert "Rule one." in conversation.baseline

    path.write_text("Rule one, edited.")
    with monkeypatch.context() as patch:
        _unreadable(patch, path)  # still there, but reading it fails
        assert conversation.boundary().kind == "unchanged"  # stale-while-revalidate: the model keeps what it had

    path.write_text("Rule two.")
    assert conversation.boundary().changed == {"nia/instructions": "updated"}
    assert "Rule two." in conversation.messages[-1]


def test_an_unreadable_file_blocks_a_new_baseline(nia_project, monkeypatch):
    _unreadable(monkeypatch, nia_project.write("AGENTS.md", "Rule."))

    conversation = BoundaryDriver(nia_project.location).conversation(nia_plugins.instructions)

    assert conversation.history[-1].kind == "blocked"
    assert conversation.history[-1].blocked_on == ("nia/instructions",)


def test_instructions_leave_with_their_removal_text(nia_project):
    path = nia_project.write("AGENTS.md", "Rule.")

    texts = BoundaryDriver(nia_project.location).drive(nia_plugins.instructions, path.unlink)

    assert texts.updates == [
        "The AGENTS.md instructions loaded earlier no longer apply: no AGENTS.md files are in effect now."
    ]
    assert texts.removal is None


# -- nia-date -----------------------------------------------------------------------------


class Clock:
    def __init__(self, now: dt.datetime) -> None:
        self.now = now

    def __call__(self) -> dt.datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += dt.timedelta(**delta)


def test_the_date_rolls_over_at_midnight(nia_boundaries):
    clock = Clock(dt.datetime(2025, 1, 1, 23, 59, 59, tzinfo=ZoneInfo("Europe/Paris")))

    texts = nia_boundaries.drive(
        date_source(clock), lambda: clock.advance(seconds=0.5), lambda: clock.advance(seconds=1), builtin=True
    )

    assert texts.baseline == "Today's date is Wednesday, 2025-01-01."
    assert texts.added == texts.baseline
    assert texts.updates == [None, "The date is now Thursday, 2025-01-02."]
    assert texts.removal == "Today's date is no longer provided; the date given earlier may be out of date."


def test_the_date_follows_the_configured_time_zone(nia_project):
    nia_project.configure("nia-date", timezone="Pacific/Kiritimati")  # UTC+14
    today = {dt.datetime.now(ZoneInfo("Pacific/Kiritimati")).date()}

    baseline = BoundaryDriver(nia_project.location).drive(nia_plugins.date).baseline

    today.add(dt.datetime.now(ZoneInfo("Pacific/Kiritimati")).date())  # in case midnight passed meanwhile
    assert baseline in {f"Today's date is {d.strftime('%A')}, {d.isoformat()}." for d in today}


def test_only_built_ins_may_use_the_nia_namespace(nia_location):
    driver = BoundaryDriver(nia_location, strict=False)

    texts = driver.drive(date_source(Clock(dt.datetime(2025, 1, 1, tzinfo=dt.UTC))), builtin=False)

    assert texts.baseline == "" and texts.added is None


# -- nia-environment ----------------------------------------------------------------------


def test_the_environment_names_the_folders_and_git(nia_project):
    (nia_project.root / ".git").mkdir()
    location = nia_project.location_at("src")

    texts = BoundaryDriver(location).drive(nia_plugins.environment, lambda: None)

    assert texts.baseline.startswith(
        f"Environment:\n- Working directory: {nia_project.root / 'src'}\n- Project root: {nia_project.root}\n"
        "- Git repository: yes\n- Platform: "
    )
    assert texts.updates == [None]
    assert texts.removal == "Environment details given earlier are no longer maintained and may be out of date."


def test_the_environment_outside_git(nia_location):
    texts = BoundaryDriver(nia_location).drive(nia_plugins.environment)

    assert "- Git repository: no\n" in texts.baseline


def test_the_built_ins_compose_in_declaration_order(nia_project):
    nia_project.write("AGENTS.md", "Rule.")
    driver = BoundaryDriver(nia_project.location)

    conversation = driver.conversation(nia_plugins.environment, nia_plugins.date, nia_plugins.instructions)

    parts = conversation.baseline.split("\n\n")
    assert parts[0].startswith("Environment:") and parts[1].startswith("Today's date") and "Rule." in parts[-1]
