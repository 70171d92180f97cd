"""Conformance with the reference System Context: snapshot decoding, key matching,
value equality and strict registry errors (issue #14, items 1-4)."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from nia_core import ContextSource, Location
from nia_core.context import (
    CorruptSnapshot,
    Snapshot,
    SnapshotEntry,
    SystemContext,
    SystemContextRegistry,
    Unchanged,
    Updated,
    initialize,
    reconcile,
    validate_key,
)
from nia_core.context.registry import ContributionError, DuplicateKey
from nia_core.errors import DuplicateSourceKey, InvalidSourceKey

HERE = Location(Path("/project"), Path("/project"))


# -- 14.1: snapshot decoding validates keys and removal texts ------------------------------


@pytest.mark.parametrize(
    "key", ["Core/Date", "core/date\n", "nokey", "core/", "core//date", "/date", " core/date", "", "core/date\r"]
)
def test_a_stored_snapshot_with_an_invalid_key_does_not_decode(key: str) -> None:
    with pytest.raises(CorruptSnapshot, match="not a valid source key"):
        Snapshot.from_dict({key: {"value": '"x"', "removal": "gone"}})
    with pytest.raises(CorruptSnapshot, match="not a valid source key"):
        Snapshot.from_json(json.dumps({key: {"value": "1", "removal": None}}))


@pytest.mark.parametrize("removal", ["", "   ", "\n\t"])
def test_a_stored_snapshot_with_an_empty_removal_text_does_not_decode(removal: str) -> None:
    with pytest.raises(CorruptSnapshot, match="empty removal text"):
        Snapshot.from_dict({"acme/a": {"value": '"x"', "removal": removal}})


@pytest.mark.parametrize(
    "entry", [{"value": 3}, {"value": "{not json"}, {"value": '"x"', "removal": 7}, "just text", {"removal": "r"}]
)
def test_other_malformed_entries_do_not_decode(entry: Any) -> None:
    with pytest.raises(CorruptSnapshot, match="acme/a"):
        Snapshot.from_dict({"acme/a": entry})


def test_a_valid_snapshot_round_trips() -> None:
    snapshot = Snapshot({"acme/a": SnapshotEntry('"x"', "a is gone"), "core/date": SnapshotEntry('"2026-01-01"')})
    assert Snapshot.from_json(snapshot.to_json()) == snapshot


def test_an_empty_removal_in_a_snapshot_built_in_code_replaces_rather_than_sending_an_empty_message() -> None:
    source = ContextSource("acme/b", lambda: 1, lambda v: f"b={v}")
    snapshot = Snapshot({"acme/a": SnapshotEntry("1", ""), "acme/b": SnapshotEntry("1")})
    result = reconcile(SystemContext([source]), snapshot)
    assert not isinstance(result, Updated)
    assert "no removal text" in getattr(result, "reason", "")


# -- 14.2: whole-string matches ------------------------------------------------------------


@pytest.mark.parametrize("key", ["core/date\n", "acme/jira\n", "acme/x\r\n", "acme/x\x00"])
def test_a_key_with_a_trailing_newline_is_refused(key: str) -> None:
    with pytest.raises(InvalidSourceKey):
        validate_key(key)
    with pytest.raises(InvalidSourceKey):
        ContextSource(key, lambda: 1, str)


def test_other_identifiers_use_whole_string_matches() -> None:
    from nia_core.plugin_template import NAME_PATTERN
    from nia_core.project.commands_config import NAME_PATTERN as TARGET_NAME
    from nia_core.providers.lookup import NAME as PROVIDER_NAME

    for pattern, good in ((NAME_PATTERN, "my-plugin"), (TARGET_NAME, "issue"), (PROVIDER_NAME, "openai")):
        assert pattern.fullmatch(good)
        assert not pattern.fullmatch(good + "\n")


def test_a_workflow_target_name_with_a_trailing_newline_is_refused(tmp_path: Path) -> None:
    from nia_core.project.commands_config import load_commands_config
    from nia_core.project.toml import ConfigError

    (tmp_path / ".nia").mkdir()
    (tmp_path / ".nia" / "commands.toml").write_text('[[workflows]]\ntarget = "issue\\n"\n')
    with pytest.raises(ConfigError):
        load_commands_config(tmp_path)


# -- 14.3: a stored value equal to the current one is no change ------------------------------


class Stamp:
    """A codec whose output format changed between releases: milliseconds or not."""

    def __init__(self, millis: bool) -> None:
        self.millis = millis

    def encode(self, value: datetime) -> str:
        return value.isoformat(timespec="milliseconds" if self.millis else "seconds")

    def decode(self, data: Any) -> datetime:
        return datetime.fromisoformat(data)


def stamp_source(codec: Stamp, value: datetime) -> ContextSource:
    return ContextSource("acme/stamp", lambda: value, lambda v: f"now {v}", update=lambda a, b: f"now {b}", codec=codec)


def test_a_codec_whose_format_changed_sends_no_update_for_an_equal_value() -> None:
    moment = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
    old = initialize(SystemContext([stamp_source(Stamp(millis=False), moment)]))
    assert isinstance(reconcile(SystemContext([stamp_source(Stamp(millis=True), moment)]), old.snapshot), Unchanged)
    later = moment.replace(second=1)
    changed = reconcile(SystemContext([stamp_source(Stamp(millis=True), later)]), old.snapshot)
    assert isinstance(changed, Updated) and changed.text == f"now {later}"


@dataclasses.dataclass(frozen=True)
class Flag:
    on: bool | int


def test_equal_json_values_with_another_spelling_are_unchanged_but_true_is_not_one() -> None:
    def ctx(value: Any) -> SystemContext:
        return SystemContext([ContextSource("acme/v", lambda: value, repr, update=lambda a, b: f"{a}->{b}")])

    snapshot = Snapshot({"acme/v": SnapshotEntry('{"n":1,"xs":[1,2]}')})
    assert isinstance(reconcile(ctx({"n": 1.0, "xs": (1.0, 2)}), snapshot), Unchanged)
    assert isinstance(reconcile(ctx({"n": True, "xs": [1, 2]}), snapshot), Updated)
    assert isinstance(reconcile(ctx({"n": 1, "xs": [1, 2, 3]}), snapshot), Updated)
    assert isinstance(reconcile(ctx(1), Snapshot({"acme/v": SnapshotEntry("true")})), Updated)


def test_a_value_whose_equality_raises_counts_as_changed() -> None:
    class Odd:
        def __eq__(self, other: object) -> bool:
            raise RuntimeError("no")

        __hash__ = object.__hash__

    class OddCodec:
        def encode(self, value: Any) -> Any:
            return "odd-now"

        def decode(self, data: Any) -> Any:
            return Odd()

    source = ContextSource("acme/o", Odd, lambda v: "odd", update=lambda a, b: "odd again", codec=OddCodec())
    result = reconcile(SystemContext([source]), Snapshot({"acme/o": SnapshotEntry('"odd-then"')}))
    assert isinstance(result, Updated) and result.text == "odd again"


# -- 14.4: strict mode raises the specific error ------------------------------------------------


def const(key: str, value: Any = 1) -> ContextSource:
    return ContextSource(key, lambda: value, lambda v: f"{key}={v}", removal=lambda v: f"{key} gone")


class Boom(Exception):
    pass


def test_strict_duplicate_keys_raise_the_duplicate_error_naming_both_contributors() -> None:
    registry = SystemContextRegistry()
    registry.scope("one").register("one", lambda loc: [const("acme/x")], contributor="plugin 'one'")
    registry.scope("two").register("two", lambda loc: [const("acme/x")], contributor="plugin 'two'")
    view = registry.open(HERE)
    with pytest.raises(DuplicateSourceKey) as caught:
        view.assemble(strict=True)
    assert isinstance(caught.value, DuplicateKey) and isinstance(caught.value, ContributionError)
    assert caught.value.key == "acme/x"
    assert (caught.value.first, caught.value.second) == ("plugin 'one'", "plugin 'two'")
    assert "plugin 'one'" in str(caught.value) and "plugin 'two'" in str(caught.value)
    loose = view.assemble()  # non-strict: the first keeps the key, the second is reported
    assert loose.context.keys == ("acme/x",)
    assert [(p.contribution, p.kind) for p in loose.problems] == [("two", "duplicate-key")]


def test_strict_producer_failure_raises_the_producers_own_error_naming_its_plugin() -> None:
    def failing(location: Location) -> list[ContextSource]:
        raise Boom("jira is down")

    registry = SystemContextRegistry()
    registry.scope("ok").register("ok", lambda loc: [const("acme/ok")])
    registry.scope("jira").register("jira", failing, contributor="plugin 'jira'")
    view = registry.open(HERE)
    with pytest.raises(Boom, match="jira is down") as caught:
        view.assemble(strict=True)
    assert any("plugin 'jira'" in note for note in caught.value.__notes__)
    loose = view.assemble()
    assert loose.context.keys == ("acme/ok",)
    assert [(p.contributor, p.kind) for p in loose.problems] == [("plugin 'jira'", "raised")]


def test_strict_other_problems_still_raise_a_contribution_error() -> None:
    registry = SystemContextRegistry()
    registry.scope("bad").register("bad", lambda loc: "not sources", contributor="plugin 'bad'")
    with pytest.raises(ContributionError, match="plugin 'bad'"):
        registry.open(HERE).assemble(strict=True)


def test_an_attached_host_name_with_a_trailing_newline_is_refused() -> None:
    from nia_core.errors import UsageError
    from nia_core.runtime.attached import attached_id

    assert attached_id("claude", "abc").startswith("claude-")
    with pytest.raises(UsageError, match="host name"):
        attached_id("claude\n", "abc")
