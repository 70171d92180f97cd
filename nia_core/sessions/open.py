"""Opening the store a URL names: the one place that knows which backends exist.

``NIA_DB`` holds a plain path or ``sqlite:///path`` (query options:
``timeout`` in seconds, ``synchronous``). Without it, nia uses ``nia.db`` in the user's data
folder. A backend registers an opener for its URL scheme in :data:`OPENERS`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from nia_core.sessions.errors import UnsupportedDatabase
from nia_core.sessions.sqlite import DEFAULT_TIMEOUT, SQLiteStore
from nia_core.sessions.store import Store

Opener = Callable[[str], Store]


def default_db_path() -> Path:
    """``$XDG_DATA_HOME/nia/nia.db``, by default ``~/.local/share/nia/nia.db``."""
    data_home = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(data_home) / "nia" / "nia.db"


def db_url(environ: Mapping[str, str] | None = None) -> str:
    """The database URL in effect: ``NIA_DB`` or the default file."""
    env = os.environ if environ is None else environ
    return env.get("NIA_DB") or str(default_db_path())


def _options(url: str, query: str, known: tuple[str, ...]) -> dict[str, str]:
    options = dict(parse_qsl(query, keep_blank_values=True))
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise UnsupportedDatabase(f"database URL {url!r}: unknown option {unknown[0]!r} (known: {', '.join(known)})")
    return options


def open_sqlite(url: str) -> Store:
    """``sqlite:///abs/path`` (or ``sqlite:////abs/path``), ``sqlite://relative/path`` or a plain path.

    Query options: ``timeout=SECONDS`` to wait for another process's write lock (default 5),
    ``synchronous=full|normal`` (default ``full``: every commit reaches the disk).
    """
    path, query = url, ""
    if url.startswith("sqlite:"):
        rest = url[len("sqlite:") :]
        if rest.startswith("//"):
            rest = rest[2:]
        path, _, query = rest.partition("?")
        if path.startswith("/"):  # sqlite:///abs/path and SQLAlchemy's sqlite:////abs/path alike
            path = "/" + path.lstrip("/")
        if not path.strip("/"):
            raise UnsupportedDatabase(f"database URL {url!r} names no file (expected sqlite:///path/to/nia.db)")
    options = _options(url, query, ("timeout", "synchronous"))
    timeout = DEFAULT_TIMEOUT
    if "timeout" in options:
        try:
            timeout = float(options["timeout"])
        except ValueError:
            raise UnsupportedDatabase(f"database URL {url!r}: timeout must be a number of seconds") from None
    synchronous = options.get("synchronous", "full")
    if synchronous not in ("full", "normal"):
        raise UnsupportedDatabase(f"database URL {url!r}: synchronous must be full or normal")
    return SQLiteStore(path, timeout=timeout, synchronous=synchronous)


def open_postgres(url: str) -> Store:
    """``postgresql://…`` (see :func:`nia_core.sessions.postgres.open_postgres`); psycopg loads only here."""
    from nia_core.sessions.postgres import open_postgres as open_pg

    return open_pg(url)


OPENERS: dict[str, Opener] = {"sqlite": open_sqlite, "postgresql": open_postgres, "postgres": open_postgres}
"""URL scheme -> opener; a plain path (no scheme) opens with ``sqlite``."""


def open_store(url: str | None = None) -> Store:
    """The store ``url`` names (default: :func:`db_url`)."""
    url = url or db_url()
    scheme = urlsplit(url).scheme if "://" in url or url.startswith("sqlite:") else ""
    if not scheme or len(scheme) == 1:  # a plain path (or a Windows drive letter)
        return open_sqlite(url)
    opener = OPENERS.get(scheme)
    if opener is None:
        raise UnsupportedDatabase(
            f"cannot open database URL {url!r}: unsupported scheme {scheme!r} "
            f"(supported: a file path, {', '.join(f'{s}://' for s in sorted(OPENERS))})"
        )
    return opener(url)
