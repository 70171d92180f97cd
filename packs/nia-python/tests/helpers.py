"""Helpers shared by the pack's tests: pytest's cache files written the way pytest writes them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def write_lastfailed(folder: Path, ids: list[str], cache: str = ".pytest_cache") -> Path:
    """``lastfailed`` as pytest writes it (``json.dumps(..., indent=2, sort_keys=True)``)."""
    path = folder / cache / "v" / "cache" / "lastfailed"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(dict.fromkeys(ids, True), indent=2, sort_keys=True), encoding="utf-8")
    return path


def touch_tests(folder: Path, *files: str) -> None:
    """The test files the ids name (nia leaves out entries whose file is gone)."""
    for name in files:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).touch()


def run_pytest(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """A real pytest run in ``folder``, as the user (or the agent) would run it: pytest writes its own cache.

    The cache is pytest's own (its built-in cacheprovider); the plugins
    installed beside it are not loaded: they write nothing there, and one
    (hypothesis's) takes seconds to import.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "NIA_"))}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", *args],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def host_of(plugin: object, name: str, *, strict: bool = True):
    """A host holding only ``plugin``, registered under its entry-point name (its config table's name)."""
    from nia_core.testing import add_plugin, make_host

    host = make_host(strict=strict)
    add_plugin(host, plugin, name=name)
    return host


def sources_at(plugin: object, name: str, location) -> dict:
    """Each source's key and loaded value at ``location``, as one observation would load them."""
    host = host_of(plugin, name)
    return {source.key: source.load() for source in host.assemble(host.open(location)).context.sources}
