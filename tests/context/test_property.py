"""Property: what the model has seen always describes exactly the admitted state."""

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from nia_core.context import (
    UNAVAILABLE,
    ContextSource,
    ReplacementBlocked,
    ReplacementReady,
    Snapshot,
    SystemContext,
    Unchanged,
    Updated,
    reconcile,
    replace,
)

KEYS = [f"acme/k{i}" for i in range(5)]
REMOVABLE = {key: key != "acme/k4" for key in KEYS}

VALUES = st.one_of(st.integers(0, 3), st.dictionaries(st.sampled_from("ab"), st.integers(0, 2)))
state = st.fixed_dictionaries(
    {
        key: st.one_of(
            st.just(("absent", None)),
            st.just(("unavailable", None)),
            st.tuples(
                st.just("value"),
                st.one_of(st.integers(0, 3), st.dictionaries(st.sampled_from("ab"), st.integers(0, 2))),
            ),
        )
        for key in KEYS
    }
)


def source(key, world):
    def load():
        kind, value = world[key]
        return UNAVAILABLE if kind == "unavailable" else value

    def render(value):
        return f"SET {key} {json.dumps(value, sort_keys=True)}"

    return ContextSource(
        key=key,
        load=load,
        baseline=render,
        update=lambda _old, new: render(new),
        removal=(lambda _old: f"DEL {key}") if REMOVABLE[key] else None,
    )


def context(world):
    return SystemContext([source(key, world) for key in KEYS if world[key][0] != "absent"])


def replay(texts):
    seen = {}
    for text in texts:
        for statement in text.split("\n\n"):
            verb, key, *rest = statement.split(" ", 2)
            if verb == "SET":
                seen[key] = json.loads(rest[0])
            else:
                assert verb == "DEL"
                del seen[key]
    return seen


def admitted(snapshot: Snapshot):
    return {key: json.loads(entry.value) for key, entry in snapshot.items()}


@settings(max_examples=150, deadline=None)
@given(st.lists(state, min_size=2, max_size=10))
def test_seen_text_describes_the_admitted_state(worlds):
    world = dict(worlds[0])
    first = replace(context(world), Snapshot())
    assert isinstance(first, ReplacementReady)
    seen = [first.generation.baseline] if first.generation.baseline else []
    snapshot = first.generation.snapshot
    for step in worlds[1:]:
        world.clear()
        world.update(step)
        ctx = context(world)
        result = reconcile(ctx, snapshot)
        if isinstance(result, Updated):
            seen.append(result.text)
            snapshot = result.snapshot
        elif isinstance(result, ReplacementReady):
            seen = [result.generation.baseline] if result.generation.baseline else []
            snapshot = result.generation.snapshot
        assert replay(seen) == admitted(snapshot)
        again = reconcile(ctx, snapshot)
        if isinstance(result, ReplacementBlocked):
            assert isinstance(again, ReplacementBlocked)
            continue
        assert isinstance(again, Unchanged)
        present = {key for key in KEYS if world[key][0] != "absent"}
        assert set(snapshot) <= present
        for key in present:
            kind, value = world[key]
            if kind == "value":
                assert admitted(snapshot)[key] == json.loads(json.dumps(value))
