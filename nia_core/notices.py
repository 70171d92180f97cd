"""Warnings said once per process: a plugin's producers and loaders run at every boundary.

A file left out, a setting ignored: the user needs to hear it once, not at
every prompt of a session that lasts hours (``nia dev``, ``nia mcp``, an
embedding runtime). A fresh process (each agent hook) says it again.
"""

from __future__ import annotations

import logging
import threading

log = logging.getLogger("nia")
_warned: set[str] = set()
_warned_lock = threading.Lock()


def warn_once(message: str, scope: object = None) -> None:
    """Log ``message`` as a warning the first time it occurs in this process for ``scope``.

    ``scope`` (a project root, say) keeps the same message about two projects
    apart: messages that name paths relative to their project would otherwise
    be said for the first project only. Write the message as nia's other
    warnings are: one line, naming the file or setting (:func:`nia_core.escape_name`
    for a file name) and what was done about it.
    """
    key = f"{scope}\0{message}"
    with _warned_lock:
        if key in _warned:
            return
        _warned.add(key)
    log.warning("%s", message)
