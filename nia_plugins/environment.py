"""``nia/environment``: where the agent is working."""

from __future__ import annotations

import os
import sys
from typing import Any

from nia_core import Constant, ContextSource, Location, escape_name, hookimpl

NIA_NAMESPACE = "nia"


def _render(value: dict[str, Any]) -> str:
    return (
        "Environment:\n"
        f"- Working directory: {escape_name(value['cwd'])}\n"  # a folder name must not forge a heading
        f"- Project root: {escape_name(value['root'])}\n"
        f"- Git repository: {'yes' if value['git'] else 'no'}\n"
        f"- Platform: {value['platform']}"
    )


def _platform() -> str:
    """``linux (x86_64)``: the kernel's own name and machine (``os.uname``; :mod:`platform` only where there is none).

    :mod:`platform` answers the same from ``os.uname`` on POSIX, after importing and compiling what it
    needs for every other system (~3 ms of every hook that answers in-process).
    """
    if hasattr(os, "uname"):
        name, machine = os.uname().sysname, os.uname().machine
    else:  # Windows
        import platform

        name, machine = platform.system(), platform.machine()
    return f"{(name or sys.platform).lower()} ({machine})"


def environment_source(location: Location) -> ContextSource:
    value = {
        "cwd": str(location.path),
        "root": str(location.root),
        "git": location.is_git,
        "platform": _platform(),
    }
    return ContextSource(
        key="nia/environment",
        load=Constant(value),  # known fast: answered inline, no worker thread
        baseline=_render,
        update=lambda _old, new: "The environment changed. " + _render(new),
        removal=lambda _old: "Environment details given earlier are no longer maintained and may be out of date.",
    )


@hookimpl
def nia_context_sources(location: Location) -> list[ContextSource]:
    return [environment_source(location)]
