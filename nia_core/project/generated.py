"""What nia generates inside a project's ``.nia/`` is kept out of version control by a ``.nia/.gitignore``.

Written the first time nia writes there, never rewritten: once it exists it is
the user's file (they may have committed their own). It lists itself too, so
the file nia adds does not show in ``git status`` either.
"""

from __future__ import annotations

import os
from pathlib import Path

from nia_core.files import open_folder_inside

GENERATED = ("logs/", "hook-output/")
"""The folders under ``.nia/`` that nia writes: transaction logs, and hook output too long for a host."""

GENERATED_NAMES = (".gitignore", *(folder.rstrip("/") for folder in GENERATED))
"""Every name under ``.nia/`` that nia generates, this ignore file included: never a change of the project's."""

GITIGNORE = "# Written by nia the first time it wrote here: what it generates is not part of the project.\n" + "".join(
    f"/{name}/\n" if f"{name}/" in GENERATED else f"/{name}\n" for name in GENERATED_NAMES
)


def ignore_generated(root: Path) -> bool:
    """Create ``ROOT/.nia/.gitignore`` unless it exists; whether it was written.

    Only inside the project: a ``.nia`` that resolves outside ``root`` (a
    symlink in a hostile repository) gets nothing, and the file itself is
    created exclusively without following a link.
    """
    try:
        folder = open_folder_inside(root, (".nia",), create=False)  # refuses a .nia that leads outside
    except OSError:  # no .nia, or it leads outside the project: nothing to do
        return False
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        handle = os.open(".gitignore", flags, 0o644, dir_fd=folder)
    except OSError:  # it exists (the user's, or ours), or .nia is not writable: nothing to do
        return False
    finally:
        os.close(folder)
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        out.write(GITIGNORE)
    return True
