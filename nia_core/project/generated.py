"""What nia generates inside a project's ``.nia/`` is kept out of version control by a ``.nia/.gitignore``.

Written the first time nia writes there, never rewritten: once it exists it is
the user's file (they may have committed their own).
"""

from __future__ import annotations

import os
from pathlib import Path

GENERATED = ("logs/", "hook-output/")
"""The folders under ``.nia/`` that nia writes: transaction logs, and hook output too long for a host."""

GITIGNORE = "# Written by nia the first time it wrote here: what it generates is not part of the project.\n" + "".join(
    f"/{folder}\n" for folder in GENERATED
)


def ignore_generated(root: Path) -> bool:
    """Create ``ROOT/.nia/.gitignore`` unless it exists; whether it was written.

    Only inside the project: a ``.nia`` that resolves outside ``root`` (a
    symlink in a hostile repository) gets nothing, and the file itself is
    created exclusively without following a link.
    """
    nia_dir = root / ".nia"
    try:
        real_root, real_dir = os.path.realpath(root), os.path.realpath(nia_dir)
        if os.path.commonpath([real_root, real_dir]) != real_root or not os.path.isdir(real_dir):
            return False
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        handle = os.open(os.path.join(real_dir, ".gitignore"), flags, 0o644)
    except OSError:  # it exists (the user's, or ours), or .nia is not writable: nothing to do
        return False
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        out.write(GITIGNORE)
    return True
