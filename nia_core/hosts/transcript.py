"""Reading a host's transcript (JSON lines): did a text reach it, and which host version wrote it.

Only what the hook needs: a substring test on the JSON-escaped text (the hosts
write JSON with raw UTF-8, as Python does with ``ensure_ascii=False``), and
the version field of the first lines. A transcript that cannot be read says
nothing, and nothing is concluded from it.
"""

from __future__ import annotations

import json
import re

HEAD_BYTES = 64 * 1024
"""How much of a transcript's start is read to find the host's version."""


def escaped(text: str) -> str:
    """``text`` as it appears inside a JSON string written by the host."""
    return json.dumps(text.strip(), ensure_ascii=False)[1:-1]


def read(path: str | None) -> str | None:
    """The transcript's text, or ``None`` when there is none to read (yet)."""
    if not path:
        return None
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", errors="replace")
    except OSError:
        return None


def contains(transcript: str, text: str) -> bool:
    """Whether ``text`` (stripped, as the hosts record hook output) appears in ``transcript``."""
    return bool(text.strip()) and escaped(text) in transcript


def version_field(path: str | None, field: str) -> tuple[int, ...] | None:
    """The first ``"FIELD":"1.2.3"`` in the transcript's first lines, as a version tuple."""
    if not path:
        return None
    try:
        with open(path, "rb") as handle:
            head = handle.read(HEAD_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return None
    match = re.search(r'"' + re.escape(field) + r'"\s*:\s*"(\d+(?:\.\d+)+)"', head)
    if match is None:
        return None
    return tuple(int(p) for p in match.group(1).split("."))
