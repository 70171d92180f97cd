"""What a resident process must share with a hook for its answer to be the one the hook would compute itself.

Everything that can change an answer, short of the files a boundary reads
anyway: nia's version and the protocol, the interpreter with its options and
``sys.path``, the installed distributions (each ``sys.path`` folder's
modification time moves when a distribution is installed, upgraded or
removed; a folder holding the working directory or inside it is not watched),
the working directory, the user and its groups, the umask (the mode of every
file a hook creates), the environment, and the command's plugin options.
Two hooks with the same scope share a resident process; any difference gets
another one. The client and the resident compute it with
the same function, and the resident compares the whole scope a client sends
with its own before answering, so the socket's name (a digest) never decides
anything by itself.

The exception is :data:`PER_HOOK`: variables an agent sets to a new value for
every process or session it starts (measured with the binaries). They are left
out of the scope and handed to each boundary as its hook has them.

Standard library only: the thin client imports this module.
"""

from __future__ import annotations

import json
import os
import sys
import zlib

from nia_core.about import __version__

TYPE_CHECKING = False  # not typing's: the thin client imports this module
if TYPE_CHECKING:
    from typing import Any

PROTOCOL = 2
"""Bumped whenever a request or a reply changes shape: an older resident is never asked."""

PER_HOOK = frozenset(
    {
        # Claude Code 2.1.328: a new value for every `claude` process (each `claude -p` turn) ...
        "CLAUDE_PID",
        "CLAUDE_CODE_MESSAGING_SOCKET",
        "CLAUDE_CODE_MESSAGING_TOKEN",
        # ... given to SessionStart hooks only ...
        "CLAUDE_ENV_FILE",
        # ... and one per conversation.
        "CLAUDE_CODE_SESSION_ID",
        "CLAUDE_CODE_CHILD_NOTES_DIR",
        # OpenCode 1.18.33: its process id, in the environment nia's plugin module hands nia, for every
        # `opencode` process; and npm's user agent after the start that installed @opencode-ai/plugin.
        "OPENCODE_PID",
        "npm_config_user_agent",
        # GitHub Copilot CLI 1.0.102: the folder of the hook file that names the hook (the project's
        # .github/hooks or ~/.copilot/hooks), so nia's user and project hooks differ only there.
        "COPILOT_HOOK_DIR",
        # Qwen Code 0.24.4: its launcher's process id for every `qwen` process, an id for every prompt, and
        # the conversation's (and a subagent's) id: without them in this list every prompt had a scope of its
        # own, so no resident ever answered a Qwen hook and each prompt started one more.
        "QWEN_CODE_LAUNCHER_PID",
        "QWEN_CODE_PROMPT_ID",
        "QWEN_CODE_SESSION_ID",
        "QWEN_CODE_AGENT_ID",
    }
)
"""Variables an agent changes from one hook to the next: set for each boundary as that hook had them."""


def scope(options: dict[str, Any] | None = None) -> dict[str, Any]:
    """This process's scope; ``options``: the command's plugin options (``-p``, ``--plugins-dir``, ``--strict``).

    Raises ``OSError`` when the working directory is gone.
    """
    cwd = os.getcwd()
    installed: list[int | None] = []
    for entry in sys.path:
        if not watched(entry, cwd):
            installed.append(None)
            continue
        try:
            installed.append(os.stat(entry).st_mtime_ns)
        except OSError:
            installed.append(None)
    return {
        "protocol": PROTOCOL,
        "nia": __version__,
        "python": sys.executable,
        "flags": [sys.flags.optimize, sys.flags.utf8_mode],
        "path": list(sys.path),
        "installed": installed,
        "cwd": cwd,
        "uid": os.getuid(),
        "groups": [os.getgid(), *sorted(os.getgroups())],
        "umask": umask(),
        "env": {name: value for name, value in os.environ.items() if name not in PER_HOOK},
        "options": options or {},
    }


def watched(entry: str, cwd: str) -> bool:
    """Whether a ``sys.path`` folder's modification time stands for its installed distributions.

    Not for the working directory (``python -c``'s ``""``, a ``PYTHONPATH`` naming the project) nor a folder
    holding it or inside it: every file an agent creates or deletes there moves it, and each move would be a new
    scope, so a new resident process at every such prompt. Modules imported from those folders are watched one by
    one instead (:mod:`nia_core.resident.freshness`).
    """
    if entry in ("", os.curdir):
        return False
    folder = os.path.join(os.path.abspath(entry), "")
    here = os.path.join(cwd, "")
    return not (here.startswith(folder) or folder.startswith(here))


def umask() -> int:
    """This process's umask (read by setting it: there is no other way; a hook's process has one thread)."""
    current = os.umask(0o077)
    os.umask(current)
    return current


def per_hook() -> dict[str, str]:
    """This process's values of the :data:`PER_HOOK` variables."""
    return {name: value for name, value in os.environ.items() if name in PER_HOOK}


def key(found: dict[str, Any]) -> str:
    """A file name for ``found``: 16 hex digits (CRC-32 and Adler-32 of its canonical JSON).

    Not a proof of anything: the resident compares the whole scope. A digest
    from :mod:`hashlib` would load OpenSSL into every hook for no gain.
    """
    data = canonical(found)
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}"


def canonical(found: dict[str, Any]) -> bytes:
    return json.dumps(found, sort_keys=True, separators=(",", ":")).encode("utf-8", "surrogateescape")
