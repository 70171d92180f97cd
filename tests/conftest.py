"""Every test runs with its own config and data directories and no inherited plugin switches."""

from pathlib import Path

import pytest


def isolate(monkeypatch: pytest.MonkeyPatch, home: Path, base: Path) -> None:
    """Point HOME and the XDG folders at ``home``; drop nia's and the agents' switches (``base``: the temp root)."""
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    # A temporary folder is never inside a git work tree, even when the checkout holds the temp dir.
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(base))
    for name in (
        "NIA_DB",
        "NIA_DISABLE_PLUGINS",
        "NIA_LOAD_PLUGINS",
        "NIA_DEBUG",
        "NIA_TIMEZONE",
        "NIA_HOOK_LOG",
        "CODEX_HOME",
        "COPILOT_HOME",
        "COPILOT_CLI",
        "COPILOT_ALLOW_ALL",
        "OPENCODE_DB",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def isolated_environment(tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("home")
    isolate(monkeypatch, home, tmp_path_factory.getbasetemp())
    return home


@pytest.fixture(autouse=True)
def reset_nia_logging():
    """In-process CLI runs configure the 'nia' logger; give the next test a clean one."""
    import logging

    yield
    logger = logging.getLogger("nia")
    for handler in list(logger.handlers):
        if getattr(handler, "_nia", False):
            logger.removeHandler(handler)
    logger.propagate = True
    logger.setLevel(logging.NOTSET)
