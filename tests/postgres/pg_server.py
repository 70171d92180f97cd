"""A PostgreSQL server for the tests: ``NIA_TEST_POSTGRES_URL``, or a throwaway cluster.

Without ``NIA_TEST_POSTGRES_URL``, when PostgreSQL's server binaries are on the
machine a cluster is initialized in a temp dir and started on a free
127.0.0.1 port for the test session (as the ``postgres`` user when running as
root, since the server refuses to run as root). Otherwise the tests that need
it are skipped with a one-line reason, unless ``NIA_REQUIRE_POSTGRES=1`` (CI),
where they fail instead.

Each test gets its own schema (``search_path`` in the URL), so tests share one
server without seeing each other's tables.
"""

from __future__ import annotations

import atexit
import contextlib
import glob
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

TEST_URL_VARIABLE = "NIA_TEST_POSTGRES_URL"
REQUIRE_VARIABLE = "NIA_REQUIRE_POSTGRES"


def require_or_skip(reason: str) -> None:
    """Skip with ``reason``, or fail when CI demands PostgreSQL."""
    if os.environ.get(REQUIRE_VARIABLE) == "1":
        pytest.fail(f"{REQUIRE_VARIABLE}=1 but {reason}", pytrace=False)
    pytest.skip(reason)


def server_bin_dir() -> Path | None:
    """The directory holding initdb and pg_ctl, newest version first."""
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version_key, reverse=True)
    candidates += [str(Path(p).parent) for p in (shutil.which("initdb"), shutil.which("pg_ctl")) if p]
    for directory in candidates:
        if (Path(directory) / "initdb").exists() and (Path(directory) / "pg_ctl").exists():
            return Path(directory)
    return None


def _version_key(path: str) -> float:
    try:
        return float(Path(path).parent.name)
    except ValueError:
        return 0.0


WATCHDOG = """
import os, shutil, subprocess, sys, time
parent, root, command = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
while os.path.isdir(root):
    try:
        os.kill(parent, 0)
    except ProcessLookupError:
        subprocess.run(command, capture_output=True)
        shutil.rmtree(root, ignore_errors=True)
        break
    time.sleep(1)
"""


def _fast_temp_dir() -> str | None:
    """Memory-backed /dev/shm when there is one (creating tables there is ~10x faster), else the default."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Cluster:
    """A throwaway PostgreSQL cluster in a temp dir; ``url`` reaches its ``nia_test`` database."""

    def __init__(self, bin_dir: Path, *, max_connections: int = 200) -> None:
        self.bin_dir = bin_dir
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="nia-pg-", dir=_fast_temp_dir()))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self.max_connections = max_connections
        self.user: str | None = None
        if os.geteuid() == 0:
            try:
                pwd.getpwnam("postgres")
            except KeyError:
                raise RuntimeError("running as root and there is no 'postgres' user to run the server") from None
            self.user = "postgres"
            shutil.chown(self.root, "postgres")
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/nia_test"

    def _run(self, *argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        command = [str(self.bin_dir / argv[0]), *argv[1:]]
        if self.user:
            command = ["runuser", "-u", self.user, "--", *command]
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)

    def _check(self, result: subprocess.CompletedProcess[str], what: str) -> None:
        if result.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise RuntimeError(f"{what} failed: {result.stderr.strip() or result.stdout.strip()}\n{log}")

    def start(self) -> Cluster:
        result = self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8")
        self._check(result, "initdb")
        self._pg_ctl_start()
        self._watchdog = self._start_watchdog()
        try:
            admin_execute(f"postgresql://postgres@127.0.0.1:{self.port}/postgres", "CREATE DATABASE nia_test")
        except Exception as exc:
            raise RuntimeError(f"CREATE DATABASE failed: {exc}") from exc
        return self

    def _pg_ctl_start(self) -> None:
        options = (
            f"-c listen_addresses=127.0.0.1 -p {self.port} -c unix_socket_directories='{self.root}'"
            f" -c max_connections={self.max_connections} -c fsync=off -c full_page_writes=off"
        )
        result = self._run(
            "pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60", "-o", options, "start"
        )
        self._check(result, "pg_ctl start")

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def restart(self, mode: str = "fast") -> None:
        self.stop(mode)
        self._pg_ctl_start()

    def _start_watchdog(self) -> subprocess.Popen[bytes]:
        """A process that removes the cluster if this one dies without doing it (a SIGTERM skips atexit)."""
        command = [str(self.bin_dir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop"]
        if self.user:
            command = ["runuser", "-u", self.user, "--", *command]
        return subprocess.Popen(
            [sys.executable, "-c", WATCHDOG, str(os.getpid()), str(self.root), *command],
            start_new_session=True,  # outlives a signal sent to the test run's process group
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def destroy(self) -> None:
        with contextlib.suppress(Exception):
            self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)
        watchdog = getattr(self, "_watchdog", None)
        if watchdog is not None:
            watchdog.kill()
            watchdog.wait()


def start_cluster(**options: int) -> Cluster:
    """A started throwaway cluster, or a skip (a failure under ``NIA_REQUIRE_POSTGRES=1``)."""
    bin_dir = server_bin_dir()
    if bin_dir is None:
        require_or_skip(f"no PostgreSQL server: set {TEST_URL_VARIABLE} or install PostgreSQL (initdb, pg_ctl)")
    assert bin_dir is not None
    try:
        cluster = Cluster(bin_dir, **options)
    except RuntimeError as exc:
        require_or_skip(f"cannot start a PostgreSQL cluster: {exc}")
        raise
    try:
        return cluster.start()
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        cluster.destroy()
        require_or_skip(f"cannot start a PostgreSQL cluster: {str(exc).splitlines()[0]}")
        raise


_shared: dict[str, object] = {}


def shared_url() -> str:
    """The test server's URL, started once per test process and stopped when it exits.

    ``NIA_TEST_POSTGRES_URL`` when set; otherwise a throwaway cluster. Without
    either, every caller is skipped (failed under ``NIA_REQUIRE_POSTGRES=1``)
    with the same one-line reason, and the cluster is not tried again.
    """
    url = os.environ.get(TEST_URL_VARIABLE)
    if url:
        return url
    if "url" in _shared:
        return str(_shared["url"])
    if "reason" in _shared:
        require_or_skip(str(_shared["reason"]))
    try:
        cluster = start_cluster()
    except BaseException as exc:
        _shared["reason"] = str(exc).splitlines()[0] if str(exc) else "no PostgreSQL server"
        raise
    atexit.register(cluster.destroy)
    _shared["url"] = cluster.url
    return cluster.url


def with_setting(url: str, name: str, value: str | int) -> str:
    """``url`` with the server setting ``name = value`` for every session (merged into libpq ``options``)."""
    parts = urllib.parse.urlsplit(url)
    query = urllib.parse.parse_qsl(parts.query)
    options = " ".join([value for key, value in query if key == "options"] + [f"-c {name}={value}"])
    query = [(key, value) for key, value in query if key != "options"] + [("options", options)]
    return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query, quote_via=urllib.parse.quote)))


def with_search_path(url: str, schema: str) -> str:
    return with_setting(url, "search_path", schema)


def admin_execute(url: str, *statements: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)  # type: ignore[arg-type]


@contextlib.contextmanager
def fresh_schema(url: str) -> Iterator[str]:
    """A URL whose tables live in a new, empty schema; the schema is dropped afterwards."""
    schema = f"nia_t_{secrets.token_hex(6)}"
    admin_execute(url, f"CREATE SCHEMA {schema}")
    try:
        yield with_search_path(url, schema)
    finally:
        for attempt in range(50):
            try:
                admin_execute(url, f"DROP SCHEMA {schema} CASCADE")
                break
            except Exception:
                if attempt == 49:
                    raise
                time.sleep(0.1)
