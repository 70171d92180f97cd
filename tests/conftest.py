"""Every test runs with its own config and data directories and no inherited plugin switches.

Resident hook processes are off unless a test switches them on (``NIA_RESIDENT=1``;
tests/agents runs every hook test both ways); each test has its own folder for their
sockets, and whatever resident a test started is stopped when it ends.
"""

import tempfile
from pathlib import Path

import pytest


def isolate(monkeypatch: pytest.MonkeyPatch, home: Path, base: Path) -> str:
    """Point HOME and the XDG folders at ``home``; drop nia's and the agents' switches (``base``: the temp root).

    Returns the resident processes' own socket folder (``XDG_RUNTIME_DIR``): pass it to :func:`stop_residents`
    when the test (or the module-scoped fixture) ends.
    """
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / ".local" / "share"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(home / ".local" / "state"))
    # A temporary folder is never inside a git work tree, even when the checkout holds the temp dir.
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(base))
    runtime = tempfile.mkdtemp(prefix="nia-run-")  # short: a socket path has at most 107 bytes
    monkeypatch.setenv("XDG_RUNTIME_DIR", runtime)
    monkeypatch.setenv("NIA_RESIDENT", "0")
    monkeypatch.setenv("NIA_RESIDENT_IDLE", "300")  # a resident a crashed run left behind ends by itself
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
    return runtime


@pytest.fixture(autouse=True)
def isolated_environment(tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("home")
    runtime = isolate(monkeypatch, home, tmp_path_factory.getbasetemp())
    yield home
    stop_residents(runtime)


@pytest.fixture(scope="session", autouse=True)
def no_resident_outlives_the_run(tmp_path_factory):
    """A resident process a test started with an environment built from scratch (``NIA_RESIDENT`` left on, the
    user's own socket folder) ends with the run: each is found by its temporary folders in ``/proc`` (Linux)."""
    yield
    import os
    import signal

    base = str(tmp_path_factory.getbasetemp()).encode()
    for entry in Path("/proc").iterdir() if Path("/proc/self").exists() else ():
        try:
            if not entry.name.isdigit() or entry.stat().st_uid != os.getuid():
                continue
            if b"nia_core.resident.server" not in (entry / "cmdline").read_bytes():
                continue
            if base in (entry / "environ").read_bytes() or base in os.readlink(entry / "cwd").encode():
                os.kill(int(entry.name), signal.SIGTERM)
        except OSError:
            continue


def stop_residents(runtime: str) -> None:
    """End the resident processes whose sockets are in ``runtime`` (a test's own folder), then remove it."""
    import os
    import shutil

    from nia_core.resident.residents import running, stop

    previous = os.environ.get("XDG_RUNTIME_DIR")
    os.environ["XDG_RUNTIME_DIR"] = runtime
    try:
        for resident in running()[0]:
            stop(resident)
    finally:
        if previous is None:
            os.environ.pop("XDG_RUNTIME_DIR", None)
        else:
            os.environ["XDG_RUNTIME_DIR"] = previous
    shutil.rmtree(runtime, ignore_errors=True)


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


@pytest.fixture(params=["in-process", "resident"])
def hook_mode(request, monkeypatch):
    """A test of agent hooks, twice: answered in the hook's own process, and by a resident process.

    See tests/resident_helpers.py (what a test does in the resident mode); tests/agents uses it for
    every test, the hostile-repository cases where they run a hook, tests/real_agents one test per agent.
    """
    from tests.resident_helpers import resident_mode

    with resident_mode(monkeypatch, request.param == "resident") as mode:
        yield mode
