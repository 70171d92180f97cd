"""Opening the store a URL names: the one place that knows which backends exist.

``NIA_DB`` holds a plain path or ``sqlite:///path`` (query options:
``timeout`` in seconds, ``synchronous``). Without it, nia uses ``nia.db`` in the user's data
folder. A backend registers an opener for its URL scheme in :data:`OPENERS`.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from nia_core.sessions.sqlite import LOCK_WAIT, SQLiteStore
from nia_core.sessions.store import Store
from nia_core.sessions.store_errors import UnsupportedDatabase

Opener = Callable[..., Store]


def default_db_path() -> Path:
    """``$XDG_DATA_HOME/nia/nia.db``, by default ``~/.local/share/nia/nia.db``."""
    data_home = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(data_home) / "nia" / "nia.db"


def db_url(environ: Mapping[str, str] | None = None) -> str:
    """The database URL in effect: ``NIA_DB`` or the default file."""
    env = os.environ if environ is None else environ
    return env.get("NIA_DB") or str(default_db_path())


def shown(url: str) -> str:
    """``url`` fit for a message: a path as it is, a URL without its password or query values."""
    if "://" in url and url[:7].lower() != "sqlite:":
        from nia_core.http import redact_url  # on use: opening a store must not load HTTP code (agent hooks)

        return redact_url(url)
    return re.sub(r"(?i)(pass(?:word|file)?\s*=\s*)('[^']*'|\S+)", r"\1***", url)  # a libpq key=value string


def _malformed(url: str, why: str) -> UnsupportedDatabase:
    return UnsupportedDatabase(f"NIA_DB {shown(url)!r} is not a database URL nia can open: {why}")


# Patterns compiled on first use (re caches them): opening the default file needs neither.
_LIBPQ_KEYWORDS = (
    r"(?i)\s*(host|hostaddr|port|dbname|user|password|passfile|sslmode|service|options|application_name"
    r"|connect_timeout|target_session_attrs)\s*="
)
_SCHEME = r"(?s)([A-Za-z][A-Za-z0-9+.-]*)://.*"


def scheme_of(url: str) -> str:
    """The URL's scheme in lowercase (``sqlite`` for ``sqlite:path`` too), or ``""`` for a plain file path.

    Raises :class:`UnsupportedDatabase` for what is neither: a blank value, control
    characters, ``://`` after no valid scheme, a libpq ``key=value`` string.
    """
    if not url.strip():
        raise _malformed(url, "it is blank (unset NIA_DB to use the default file)")
    if any(not ch.isprintable() for ch in url):
        raise _malformed(url, "it contains a control character")
    if url[:7].lower() == "sqlite:":
        return "sqlite"
    if "://" in url:
        match = re.fullmatch(_SCHEME, url)
        if match is None:
            raise _malformed(url, "expected SCHEME://..., e.g. sqlite:///path/to/nia.db or postgresql://user@host/db")
        try:
            urlsplit(url)
        except ValueError as exc:
            raise _malformed(url, str(exc)) from None
        return match.group(1).lower()
    if "=" in url and re.match(_LIBPQ_KEYWORDS, url):
        raise _malformed(url, "a key=value connection string; write it as postgresql://user@host:port/dbname")
    return ""


def _options(url: str, query: str, known: tuple[str, ...]) -> dict[str, str]:
    try:
        options = dict(parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query)))
    except ValueError:
        raise _malformed(url, f"its query {query!r} is not name=value pairs joined by &") from None
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise _malformed(url, f"unknown option {unknown[0]!r} (known: {', '.join(known)})")
    return options


def sqlite_parts(url: str) -> tuple[str, str]:
    """``(path, query)`` of a SQLite ``NIA_DB``: the one parser, for opening it and for ``nia db``."""
    path, query = url, ""
    if url[:7].lower() == "sqlite:":
        rest = url[len("sqlite:") :]
        if rest.startswith("//"):
            rest = rest[2:]
        path, _, query = rest.partition("?")
        if path.startswith("/"):  # sqlite:///abs/path and SQLAlchemy's sqlite:////abs/path alike
            path = "/" + path.lstrip("/")
        if not path.strip("/"):
            raise _malformed(url, "it names no file (expected sqlite:///path/to/nia.db)")
        if path.endswith("/"):
            raise _malformed(url, "it names a folder, not a file (expected sqlite:///path/to/nia.db)")
    return path, query


def open_sqlite(url: str, *, create: bool = True) -> Store:
    """``sqlite:///abs/path`` (or ``sqlite:////abs/path``), ``sqlite://relative/path`` or a plain path.

    Query options: ``timeout=SECONDS`` to wait for another process's write lock (default 5),
    ``synchronous=full|normal`` (default ``full``: every commit reaches the disk).
    With ``create=False`` a missing file is read as an empty database and not created.
    """
    path, query = sqlite_parts(url)
    options = _options(url, query, ("timeout", "synchronous"))
    timeout = LOCK_WAIT
    if "timeout" in options:
        try:
            timeout = float(options["timeout"])
        except ValueError:
            timeout = -1.0
        if not math.isfinite(timeout) or timeout < 0:
            raise _malformed(url, "timeout must be a number of seconds, 0 or more")
    synchronous = options.get("synchronous", "full")
    if synchronous not in ("full", "normal"):
        raise _malformed(url, "synchronous must be full or normal")
    return SQLiteStore(path, timeout=timeout, synchronous=synchronous, create=create)


def open_postgres(url: str, *, create: bool = True) -> Store:
    """``postgresql://…`` (see :func:`nia_core.sessions.postgres.open_postgres`); psycopg loads only here.

    With ``create=False`` nia's tables are not created in a schema that has none
    (an existing older schema is still migrated: that creates no database).
    """
    from nia_core.sessions.postgres import open_postgres as open_pg

    check_postgres_url(url)
    if create:
        return open_pg(url)
    store = open_pg(url, migrate=False)
    version = store.schema_version
    if version is not None and version < store.SCHEMA_VERSION:
        store.migrate()
    return store


def check_postgres_url(url: str) -> None:
    """What libpq would only report as an unreachable host, reported as the malformed URL it is."""
    try:
        _ = urlsplit(url).port  # raises for a port that is not a number in range
    except ValueError:
        raise _malformed(url, "its port is not a whole number from 0 to 65535") from None


OPENERS: dict[str, Opener] = {"sqlite": open_sqlite, "postgresql": open_postgres, "postgres": open_postgres}
"""URL scheme -> opener (called with the URL and ``create``); a plain path opens with ``sqlite``."""


def open_store(url: str | None = None, *, create: bool = True) -> Store:
    """The store ``url`` names (default: :func:`db_url`).

    ``create=False`` is for commands that only read (``session list``/``show``,
    ``db check``): they never create a database file, its folder, or nia's tables.
    """
    url = url or db_url()
    scheme = scheme_of(url)
    if not scheme or len(scheme) == 1:  # a plain path (or a Windows drive letter)
        return open_sqlite(url, create=create)
    opener = OPENERS.get(scheme)
    if opener is None:
        raise UnsupportedDatabase(
            f"cannot open database URL {shown(url)!r}: unsupported scheme {scheme!r} "
            f"(supported: a file path, {', '.join(f'{s}://' for s in sorted(OPENERS))})"
        )
    return opener(url, create=create)
