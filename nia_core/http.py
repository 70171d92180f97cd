"""The one HTTP client nia uses for every outgoing request (providers today, anything later).

Why one module: the rules that keep a user's credentials and time safe must
hold for every request, so they live in one place.

- **Origins.** Credentials go only to the origin (scheme, host, port) of the
  URL the caller asked for. A redirect to another origin is refused (one line
  naming both origins); a same-origin redirect is followed only when it keeps
  the method and the body (307, 308), since 301/302/303 turn a POST into a GET
  and drop the body. A caller that wants cross-origin redirects (a plain
  download) asks for them and loses every credential header on the way.
- **Bounds.** Every read has a size bound (a whole body, one line of a
  stream) and a per-read timeout, and the whole request has a deadline, so a
  lying ``Content-Length``, a line of gigabytes or a keep-alive forever ends
  in a clear :class:`HttpFailure` that says whether retrying can help. The
  deadline holds inside every read ``http.client`` makes on its own (a status
  line, a header, a chunk size trickled a byte a second): when it passes, a
  watchdog shuts the connection's socket, so no read or write outlives it.
  Opening the connection (name resolution included) is waited for at most
  the time left (:func:`connect_within`).
- **Integrity.** A body cut short (chunked framing that stops before its last
  chunk, fewer bytes than ``Content-Length``) is an :class:`HttpFailure`
  marked retryable, never a clean end of the body.
- **Proxies.** ``https_proxy``/``http_proxy``/``no_proxy`` are honoured as
  urllib honours them; an https request goes through a CONNECT tunnel, so the
  proxy sees its host and port, never its headers or body.
- **Redaction.** URLs in messages never show a userinfo password or query
  values; header values are never printed.

Public (provisional, docs/plugins.md "What is public"): a plugin that calls a
web service uses :func:`request` with a :class:`Deadline`, catches
:class:`HttpFailure` and reads the :class:`Response`, so it inherits these
rules instead of writing its own client.
"""

from __future__ import annotations

import base64
import http.client
import logging
import re
import socket
import ssl
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import SplitResult, unquote, urljoin, urlsplit, urlunsplit

from nia_core.errors import NiaError
from nia_core.process import abandon

__all__ = ["CREDENTIAL_HEADERS", "Deadline", "HttpFailure", "Response", "origin", "redact_url", "request"]

log = logging.getLogger("nia.http")

CREDENTIAL_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "api-key", "x-goog-api-key", "cookie"}
)
"""Headers that carry a credential (case-insensitive); a caller may name more."""
REDIRECT_STATUS = frozenset({301, 302, 303, 307, 308})
KEEPS_METHOD = frozenset({307, 308})
MAX_REDIRECTS = 5
CHUNK = 64 * 1024

Body = bytes | tuple[bytes, ...]
"""A request body: bytes, or bytes in parts (sent one after the other, with a ``Content-Length`` of their sum,
so a body of megabytes is never copied into one object)."""


@dataclass(frozen=True)
class Limits:
    """Size bounds for what a server may send, in bytes."""

    body: int = 64 * 1024 * 1024
    """A whole (non-streamed) body."""
    line: int = 4 * 1024 * 1024
    """One line of a streamed body (an event-stream field)."""
    event: int = 16 * 1024 * 1024
    """The data of one server-sent event (many lines)."""
    error_body: int = 64 * 1024
    """What is kept of an error reply, for its message."""


class HttpFailure(NiaError):
    """A request that failed; ``retryable`` says whether trying again may help."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = False,
        headers: Mapping[str, str] | None = None,
        body: bytes = b"",
        reason: str = "",
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.headers = dict(headers or {})
        self.body = body
        self.reason = reason


class Deadline:
    """The time a whole call may take, retries and waits included."""

    def __init__(self, seconds: float, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = seconds
        self.clock = clock
        self.ends = clock() + seconds

    def remaining(self) -> float:
        return self.ends - self.clock()

    def expired(self) -> bool:
        return self.remaining() <= 0


# -- URLs -----------------------------------------------------------------------------


def redact_url(url: str) -> str:
    """``url`` fit for a message: no userinfo password, no query values, no fragment."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            userinfo, _, hostport = netloc.rpartition("@")
            user = userinfo.partition(":")[0]
            netloc = f"{user}:***@{hostport}" if ":" in userinfo else f"***@{hostport}"
        query = "&".join(
            (pair.partition("=")[0] + "=***") if "=" in pair else "***" for pair in parts.query.split("&") if pair
        )
        shown = urlunsplit((parts.scheme, netloc, parts.path, query, ""))
    except ValueError:
        shown = "<unparsable URL>"
    return _printable(shown)


def _printable(text: str) -> str:
    """Control characters escaped, so a URL cannot break a message over lines."""
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


def origin(url: str) -> str:
    """``scheme://host:port`` of ``url`` (the default port made explicit), for comparing and for messages."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    port = parts.port or (443 if scheme == "https" else 80)
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}:{port}"


def check_url(url: str) -> SplitResult:
    """``url`` parsed, or :class:`ValueError` with a one-line reason (no secret in it)."""
    if any(not ch.isprintable() or ch.isspace() for ch in url):
        raise ValueError("it contains a space or a control character")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        reason = str(exc)
        raise ValueError("invalid port" if "port" in reason.lower() else reason) from None
    if parts.scheme.lower() not in ("http", "https"):
        raise ValueError("another scheme")
    if not parts.hostname:
        raise ValueError("it has no host")
    if port == 0:
        raise ValueError("invalid port 0")
    if parts.fragment:
        raise ValueError("it has a #fragment")
    return parts


# -- headers --------------------------------------------------------------------------


def check_headers(headers: Mapping[str, str]) -> None:
    """Refuse a header value with a line break or control character, naming the header only."""
    for name, value in headers.items():
        if not name or any(not ch.isprintable() or ch in " :" for ch in name):
            raise HttpFailure(f"invalid header name {_printable(name)!r}")
        if any(ch in "\r\n\0" or (not ch.isprintable() and ch != "\t") for ch in value):
            what = "a credential" if name.lower() in CREDENTIAL_HEADERS else "a value"
            raise HttpFailure(
                f"the {name} header holds {what} with a line break or control character (value not shown); "
                "check the key or setting it comes from"
            )
        try:
            value.encode("latin-1")
        except UnicodeEncodeError:
            raise HttpFailure(
                f"the {name} header holds characters that HTTP headers cannot carry (value not shown)"
            ) from None


# -- requests -------------------------------------------------------------------------


class Response:
    """A response whose every read is bounded in size and time."""

    def __init__(
        self,
        raw: http.client.HTTPResponse,
        sock: socket.socket | None,
        url: str,
        timeout: float,
        deadline: Deadline,
        watchdog: Watchdog | None = None,
    ) -> None:
        self.raw = raw
        self.sock = sock
        self.url = url
        self.status = raw.status
        self.reason = raw.reason
        self.headers = raw.headers
        self.timeout = timeout
        self.deadline = deadline
        self.watchdog = watchdog

    def __enter__(self) -> Response:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.watchdog is not None:
            self.watchdog.cancel()
        try:
            self.raw.close()
        except (OSError, http.client.HTTPException):
            pass

    def _arm(self) -> None:
        """The next socket operation waits at most the per-read timeout, and never past the deadline."""
        remaining = self.deadline.remaining()
        if remaining <= 0:
            raise deadline_failure(self.url, self.deadline)
        if self.sock is not None:
            try:
                self.sock.settimeout(min(self.timeout, remaining))
            except OSError:
                pass

    def _guard(self, exc: BaseException) -> HttpFailure:
        if self.deadline.expired():
            return deadline_failure(self.url, self.deadline)
        return network_failure(self.url, exc, self.timeout, reading=True)

    def _cut(self, received: int) -> HttpFailure:
        """The body stopped before its framing said it ends: retryable, never a clean end."""
        if self.deadline.expired():  # the watchdog shut the socket
            return deadline_failure(self.url, self.deadline)
        if self.raw.chunked:
            how = "before its last chunk (chunked framing)"
        else:
            expected = received + (self.raw.length or 0)
            how = f"of {expected:,} (Content-Length)"
        return HttpFailure(
            f"the reply from {redact_url(self.url)} was cut off after {received:,} bytes {how}",
            status=self.status,
            retryable=True,
        )

    def read(self, limit: int) -> bytes:
        """The whole body, at most ``limit`` bytes; more (declared or sent) is an error."""
        declared = self.raw.length
        if declared is not None and declared > limit:
            raise HttpFailure(
                f"the reply from {redact_url(self.url)} declares {declared:,} bytes, more than the "
                f"{limit:,}-byte limit",
                status=self.status,
            )
        chunks: list[bytes] = []
        total = 0
        while True:
            self._arm()
            try:
                piece = self.raw.read(min(CHUNK, limit + 1 - total))
            except http.client.IncompleteRead as exc:
                if self.deadline.expired():
                    raise deadline_failure(self.url, self.deadline) from None
                expected = f" of {declared:,}" if declared is not None else ""
                raise HttpFailure(
                    f"the reply from {redact_url(self.url)} ended after {total + len(exc.partial):,}{expected} bytes",
                    status=self.status,
                    retryable=True,
                ) from None
            except (OSError, http.client.HTTPException, ValueError) as exc:
                raise self._guard(exc) from None
            if not piece:
                if self.deadline.expired():
                    raise deadline_failure(self.url, self.deadline)
                if declared is not None and total < declared:
                    raise HttpFailure(
                        f"the reply from {redact_url(self.url)} ended after {total:,} of {declared:,} bytes",
                        status=self.status,
                        retryable=True,
                    )
                break
            chunks.append(piece)
            total += len(piece)
            if total > limit:
                raise HttpFailure(
                    f"the reply from {redact_url(self.url)} is larger than the {limit:,}-byte limit",
                    status=self.status,
                )
        return b"".join(chunks)

    def lines(self, limit: int) -> Iterator[bytes]:
        """The body line by line, without line endings, each at most ``limit`` bytes.

        A line ends at ``\\r\\n``, ``\\n`` or ``\\r`` (the event-stream rule, which
        both official SDKs follow). A last line with no ending is yielded too.
        Reads go through ``read1``, which reports a cut chunked body
        (``readline`` would take it for the end), and a body shorter than its
        ``Content-Length`` is reported as cut as well.
        """
        pending = bytearray()
        skip_lf = False
        received = 0
        while True:
            self._arm()
            try:
                piece = self.raw.read1(CHUNK)
            except http.client.IncompleteRead:
                raise self._cut(received) from None
            except (OSError, http.client.HTTPException, ValueError) as exc:
                raise self._guard(exc) from None
            if not piece:
                if self.deadline.expired():
                    raise deadline_failure(self.url, self.deadline)
                if not self.raw.chunked and self.raw.length:
                    raise self._cut(received)
                if pending:
                    yield bytes(pending)
                return
            received += len(piece)
            start = 0
            for match in _LINE_END.finditer(piece):
                end = match.start()
                if skip_lf and end == start and piece[end] == 10:  # the LF of a CRLF split across reads
                    skip_lf = False
                    start = end + 1
                    continue
                pending += piece[start:end]
                self._check_line(len(pending), limit)
                yield bytes(pending)
                pending.clear()
                skip_lf = piece[end] == 13
                start = end + 1
            if start < len(piece):
                skip_lf = False
                pending += piece[start:]
                self._check_line(len(pending), limit)

    def _check_line(self, size: int, limit: int) -> None:
        if size > limit:
            raise HttpFailure(
                f"the stream from {redact_url(self.url)} sent a line longer than the {limit:,}-byte limit",
                status=self.status,
            )


_LINE_END = re.compile(rb"[\r\n]")


class Watchdog:
    """Shuts a connection's socket when the call's deadline passes.

    ``http.client`` reads a status line, headers and chunk sizes with loops of
    its own; a server that trickles a byte a second keeps each socket read
    short, so a per-read timeout never fires there. Shutting the socket (not
    closing it: another thread may be inside a read) makes every pending and
    later read or write on it fail at once, and the caller sees the deadline.
    """

    def __init__(self, connection: http.client.HTTPConnection, deadline: Deadline) -> None:
        self.connection = connection
        self.timer = threading.Timer(max(deadline.remaining(), 0.0), self._fire)
        self.timer.daemon = True
        self.timer.start()

    def _fire(self) -> None:
        sock = self.connection.sock
        if sock is None:
            return
        try:
            # The plain socket's shutdown, also for a TLS socket: it ends the TCP stream under any read.
            socket.socket.shutdown(sock, socket.SHUT_RDWR)
        except OSError:
            pass

    def cancel(self) -> None:
        self.timer.cancel()


def request(
    method: str,
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    body: Body | None = None,
    timeout: float = 60.0,
    deadline: Deadline | None = None,
    credential_headers: frozenset[str] = CREDENTIAL_HEADERS,
    cross_origin_redirects: bool = False,
) -> Response:
    """Send one request and return the response (any status but a followed redirect).

    Redirects: see the module docstring. ``HttpFailure`` for everything else
    that goes wrong before a response, with ``retryable`` set for network
    failures a retry may fix.
    """
    deadline = deadline or Deadline(timeout * 4)
    sent = dict(headers or {})
    check_headers(sent)
    credentials = {name.lower() for name in credential_headers}
    first = url
    for _hop in range(MAX_REDIRECTS + 1):
        response = _once(method, url, sent, body, timeout, deadline)
        if response.status not in REDIRECT_STATUS:
            return response
        location = response.headers.get("Location")
        response.close()
        if not location:
            return response
        try:
            target = urljoin(url, location)
        except ValueError:
            target = "invalid:"
        status = response.status
        if _safe_origin(target) != origin(first):
            if not cross_origin_redirects:
                raise HttpFailure(
                    f"refused a redirect (HTTP {status}) from {origin(first)} to {_safe_origin(target)}: "
                    "credentials are sent only to the configured origin; set the URL to where the service "
                    "really is",
                    status=status,
                )
            sent = {k: v for k, v in sent.items() if k.lower() not in credentials}
        if status not in KEEPS_METHOD and method.upper() not in ("GET", "HEAD"):
            raise HttpFailure(
                f"refused a redirect (HTTP {status}) from {redact_url(url)} to {redact_url(target)}: "
                f"it would turn the {method.upper()} into a GET without its body; only 307 and 308 are followed",
                status=status,
            )
        url = target
    raise HttpFailure(f"more than {MAX_REDIRECTS} redirects from {redact_url(first)}")


def _safe_origin(url: str) -> str:
    try:
        return origin(url)
    except ValueError:
        return "an invalid URL"


def _once(
    method: str, url: str, headers: Mapping[str, str], body: Body | None, timeout: float, deadline: Deadline
) -> Response:
    try:
        parts = check_url(url)
    except ValueError as exc:
        raise HttpFailure(f"invalid URL {redact_url(url)}: {exc}") from None
    remaining = deadline.remaining()
    if remaining <= 0:
        raise deadline_failure(url, deadline)
    connect_timeout = min(timeout, remaining)
    host = parts.hostname or ""
    https = parts.scheme.lower() == "https"
    target = urlunsplit(("", "", parts.path or "/", parts.query, ""))
    wire_headers = dict(headers)
    size = 0 if body is None else len(body) if isinstance(body, bytes) else sum(map(len, body))
    if isinstance(body, tuple):  # http.client sends the parts in turn; told the length, it does not chunk them
        wire_headers["Content-Length"] = str(size)
    proxy = _proxy_for(parts)
    connection: http.client.HTTPConnection
    if proxy is None:
        if https:
            connection = http.client.HTTPSConnection(
                host, parts.port, timeout=connect_timeout, context=ssl.create_default_context()
            )
        else:
            connection = http.client.HTTPConnection(host, parts.port, timeout=connect_timeout)
    else:
        proxy_host, proxy_port, proxy_auth = proxy
        if https:
            # A CONNECT tunnel: the proxy sees only the host and port; headers and body travel inside TLS.
            connection = http.client.HTTPSConnection(
                proxy_host, proxy_port, timeout=connect_timeout, context=ssl.create_default_context()
            )
            connection.set_tunnel(host, parts.port or 443, headers=proxy_auth)
        else:
            connection = http.client.HTTPConnection(proxy_host, proxy_port, timeout=connect_timeout)
            target = urlunsplit(("http", parts.netloc.rpartition("@")[2], parts.path or "/", parts.query, ""))
            wire_headers.update(proxy_auth)
    started = time.monotonic()
    watchdog = Watchdog(connection, deadline)
    try:
        connect_within(connection, deadline, url)
        connection.request(method, target, body=body, headers=wire_headers)
        sock = connection.sock
        if sock is not None:
            sock.settimeout(min(timeout, max(deadline.remaining(), 0.001)))
        raw = connection.getresponse()
    except HttpFailure:  # the deadline passed while connecting
        watchdog.cancel()
        log.debug("%s %s: no connection within the deadline (%.0f ms)", method, redact_url(url), _ms(started))
        raise
    except (OSError, http.client.HTTPException, ValueError) as exc:
        watchdog.cancel()
        connection.close()
        log.debug("%s %s: %s after %.0f ms", method, redact_url(url), type(exc).__name__, _ms(started))
        if deadline.expired():
            raise deadline_failure(url, deadline) from None
        if isinstance(exc, ValueError):
            raise HttpFailure(f"cannot send to {redact_url(url)}: invalid request") from None
        raise network_failure(url, exc, timeout, reading=False) from None
    log.debug(
        "%s %s%s: HTTP %s in %.0f ms (%s bytes sent)",
        method,
        redact_url(url),
        " via proxy" if proxy is not None else "",
        raw.status,
        _ms(started),
        size,
    )
    return Response(raw, sock, url, timeout, deadline, watchdog)


def connect_within(connection: http.client.HTTPConnection, deadline: Deadline, url: str) -> None:
    """Open ``connection`` (name resolution, TCP, a proxy's tunnel, TLS) within what is left of ``deadline``.

    Resolving a host name blocks in the C library (``getaddrinfo``) where no
    socket timeout and no watchdog reaches: an unreachable DNS server in
    ``/etc/resolv.conf`` holds it for as long as the resolver retries. So the
    connection is opened on a daemon thread the caller waits for at most the
    time left; past it the call ends with the deadline's error, the thread is
    left to finish on its own (:func:`nia_core.process.abandon`) and closes the
    connection it may still open. ``connection.request`` then sends on the
    open socket and never connects again.
    """
    done = threading.Event()
    late = threading.Event()
    failed: list[BaseException] = []

    def connect() -> None:
        try:
            connection.connect()
        except BaseException as exc:  # noqa: BLE001 - raised again on the caller's thread
            failed.append(exc)
        done.set()
        if late.is_set():
            connection.close()

    worker = threading.Thread(target=connect, daemon=True, name="nia-http-connect")
    worker.start()
    if not done.wait(max(deadline.remaining(), 0.0)):
        late.set()
        abandon(worker)
        connection.close()
        raise deadline_failure(url, deadline)
    if failed:
        raise failed[0]


def _ms(since: float) -> float:
    return (time.monotonic() - since) * 1000


def _proxy_for(parts: SplitResult) -> tuple[str, int, dict[str, str]] | None:
    """The proxy for this URL from ``https_proxy``/``http_proxy`` and ``no_proxy``, as urllib reads them."""
    scheme = parts.scheme.lower()
    proxy = urllib.request.getproxies().get(scheme)
    if not proxy or urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    if "://" not in proxy:
        proxy = f"http://{proxy}"
    try:
        proxy_parts = urlsplit(proxy)
        port = proxy_parts.port or (443 if proxy_parts.scheme == "https" else 80)
    except ValueError:
        raise HttpFailure(f"the {scheme}_proxy setting is not a usable URL: {redact_url(proxy)}") from None
    if not proxy_parts.hostname:
        raise HttpFailure(f"the {scheme}_proxy setting has no host: {redact_url(proxy)}")
    auth: dict[str, str] = {}
    if proxy_parts.username is not None:
        pair = f"{unquote(proxy_parts.username)}:{unquote(proxy_parts.password or '')}"
        auth["Proxy-Authorization"] = "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")
    return proxy_parts.hostname, port, auth


def deadline_failure(url: str, deadline: Deadline) -> HttpFailure:
    return HttpFailure(
        f"the call to {redact_url(url)} did not finish within its {deadline.seconds:g}s deadline",
        retryable=False,
    )


def network_failure(url: str, exc: BaseException, timeout: float, *, reading: bool) -> HttpFailure:
    """A network error as one line; retryable unless it is about the URL itself (an unknown host)."""
    why = describe_network(exc, timeout)
    retryable = not isinstance(exc, socket.gaierror | ssl.SSLCertVerificationError)
    verb = "the reply from {} broke off" if reading else "cannot reach {}"
    return HttpFailure(f"{verb.format(redact_url(url))}: {why}", retryable=retryable)


def describe_network(exc: BaseException, timeout: float) -> str:
    if isinstance(exc, TimeoutError | socket.timeout):
        return f"timed out after {timeout:g}s"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, http.client.RemoteDisconnected | ConnectionResetError | BrokenPipeError):
        return "the server closed the connection"
    if isinstance(exc, http.client.IncompleteRead):
        return "the body ended early"
    if isinstance(exc, socket.gaierror):
        return f"unknown host ({exc.strerror or 'name resolution failed'})"
    if isinstance(exc, ssl.SSLError):
        return f"TLS error ({exc.reason or type(exc).__name__})"
    if isinstance(exc, http.client.HTTPException):
        return f"invalid HTTP ({type(exc).__name__})"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return type(exc).__name__


def header_items(headers: Any) -> dict[str, str]:
    """Response headers as a plain dict with lowercase names."""
    return {str(k).lower(): str(v) for k, v in headers.items()} if headers is not None else {}
