"""Naming a session by a prefix of its id reads a range of an index of the ids (#28 goal 4), on both stores.

The range is ``prefix <= id < after_prefix(prefix)`` in code point order, which
is UTF-8 byte order: the ids a prefix names, whatever characters they hold, and
no other.
"""

from __future__ import annotations

import pytest

from nia_core.sessions import Store, UnknownSession

IDS = [
    "ab",
    "ab0",
    "abz",
    "ab\U0010ffff",
    "ab\U0010ffffz",
    "ab\ud7ffx",
    "ab\ue000x",
    "ac",
    "b\U0010ffff\U0010ffff",
    "é1",
    "éé",
    "0f3a99c1d2e4",
]


@pytest.fixture
def named(store: Store) -> Store:
    for session_id in IDS:
        store.create_session("/p", "echo/echo", session_id=session_id)
    return store


@pytest.mark.parametrize(
    ("prefix", "found"),
    [
        ("ab", "ab"),  # an id that is a prefix of others is named by itself
        ("abz", "abz"),
        ("ab\U0010ffff", "ab\U0010ffff"),
        ("ab\U0010ffffz", "ab\U0010ffffz"),
        ("ab\ud7ff", "ab\ud7ffx"),
        ("ab\ue001", None),
        ("ab\ue000", "ab\ue000x"),
        ("ac", "ac"),
        ("b", "b\U0010ffff\U0010ffff"),
        ("b\U0010ffff\U0010ffff", "b\U0010ffff\U0010ffff"),
        ("é1", "é1"),
        ("0f3a", "0f3a99c1d2e4"),
        ("0f3a99c1d2e4", "0f3a99c1d2e4"),
    ],
)
def test_a_prefix_names_the_one_session_whose_id_starts_with_it(named: Store, prefix: str, found: str | None) -> None:
    if found is None:
        with pytest.raises(UnknownSession, match="no session"):
            named.resolve(prefix)
    else:
        assert named.resolve(prefix) == found


@pytest.mark.parametrize(
    ("prefix", "listed"),
    [("é", "é1, éé"), ("a", "ab, ab0, abz, ab\ud7ffx, ab\ue000x, ab\U0010ffff"), ("ab\U0010fffe", None)],
)
def test_a_prefix_of_several_ids_names_them_in_the_error(named: Store, prefix: str, listed: str | None) -> None:
    with pytest.raises(UnknownSession) as caught:
        named.resolve(prefix)
    if listed is None:
        assert "no session" in str(caught.value)
    else:
        assert f"is ambiguous: it starts {listed}" in str(caught.value)


def test_many_sessions_still_name_theirs(store: Store) -> None:
    ids = [f"{n:05x}{'ab' if n % 2 else 'cd'}" for n in range(0, 3000, 7)]
    for session_id in ids:
        store.create_session("/p", "echo/echo", session_id=session_id)
    for session_id in ids[::25]:
        assert store.resolve(session_id[:5]) == session_id
    with pytest.raises(UnknownSession, match="no session 'fffff'"):
        store.resolve("fffff")
