"""A small HTTP client for provider APIs, on the standard library.

Timeouts on every socket operation; retries with exponential backoff on 429,
408/409 and 5xx (honouring ``Retry-After``), on timeouts and on refused or
dropped connections; one clear :class:`HttpError` otherwise, naming the
status, the URL and what the server said. Streaming replies (server-sent
events) are parsed line by line and handed to a callback as they arrive; a
stream is retried only before its first event, never after, so no text is
shown twice.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, BinaryIO, TypeVar

from nia_core.providers.base import ProviderError

RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
USER_AGENT = "nia"
T = TypeVar("T")


class HttpError(ProviderError):
    """A provider request that failed; ``status`` is the HTTP status, or ``None`` for network errors."""

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 2
    """Attempts after the first."""
    backoff: float = 0.5
    """Seconds before the first retry; doubled for each next one."""
    max_backoff: float = 20.0
    """No wait is longer than this, whatever ``Retry-After`` says."""

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based)."""
        wait = self.backoff * (2.0 ** (attempt - 1))
        if retry_after is not None:
            wait = max(wait, retry_after)
        return min(wait, self.max_backoff)


@dataclass(frozen=True)
class ServerSentEvent:
    event: str
    data: str


@dataclass(frozen=True)
class Endpoint:
    """Where and how to send: the URL, the headers, and how to explain failures."""

    url: str
    headers: Mapping[str, str]
    label: str
    """Who is calling, for messages: ``openai-chat``."""
    auth_hint: str = ""
    """Appended to a 401/403 message: which setting holds the key."""


Sleep = Callable[[float], None]


class HttpClient:
    def __init__(self, *, timeout: float = 600.0, retry: RetryPolicy | None = None, sleep: Sleep = time.sleep) -> None:
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self.sleep = sleep

    def post_json(self, endpoint: Endpoint, body: bytes) -> dict[str, Any]:
        """POST ``body`` and return the decoded JSON object of the reply."""

        def read(response: BinaryIO) -> dict[str, Any]:
            try:
                data = response.read()
            except (TimeoutError, OSError, http.client.HTTPException) as exc:
                raise _Retry(_network_error(endpoint, exc, self.timeout), None) from None
            return _decode_object(endpoint, data)

        return self._with_retries(endpoint, body, read, streaming=False)

    def post_stream(self, endpoint: Endpoint, body: bytes, on_event: Callable[[ServerSentEvent], None]) -> None:
        """POST ``body`` and feed each server-sent event to ``on_event`` as it arrives."""

        def consume(response: BinaryIO) -> None:
            content_type = getattr(response, "headers", {}).get("Content-Type", "")
            if "text/event-stream" not in content_type:
                # Some servers answer a streaming request with one JSON error or object.
                data = response.read()
                obj = _decode_object(endpoint, data)
                raise HttpError(
                    f"{endpoint.label}: expected an event stream from {endpoint.url}, got {content_type or 'no type'}: "
                    f"{_summary(obj)}"
                )
            try:
                for event in iter_events(response):
                    on_event(event)
            except (TimeoutError, OSError, http.client.HTTPException) as exc:
                why = _describe_network(exc, self.timeout)
                raise HttpError(f"{endpoint.label}: the stream from {endpoint.url} broke off: {why}") from None

        self._with_retries(endpoint, body, consume, streaming=True)

    def _with_retries(self, endpoint: Endpoint, body: bytes, handle: Callable[[BinaryIO], T], *, streaming: bool) -> T:
        attempt = 0
        while True:
            try:
                return self._once(endpoint, body, handle, streaming=streaming)
            except _Retry as retry:
                attempt += 1
                if attempt > self.retry.max_retries:
                    tries = f" (after {attempt} attempts)" if attempt > 1 else ""
                    raise HttpError(f"{retry.error}{tries}", status=retry.error.status) from None
                self.sleep(self.retry.delay(attempt, retry.retry_after))

    def _once(self, endpoint: Endpoint, body: bytes, handle: Callable[[BinaryIO], T], *, streaming: bool) -> T:
        headers = {"Content-Type": "application/json", "User-Agent": USER_AGENT, **endpoint.headers}
        if streaming:
            headers["Accept"] = "text/event-stream"
        try:
            request = urllib.request.Request(endpoint.url, data=body, headers=headers, method="POST")
            response = urllib.request.urlopen(request, timeout=self.timeout)
        except ValueError as exc:
            raise HttpError(f"{endpoint.label}: invalid URL {endpoint.url!r}: {exc}") from None
        except urllib.error.HTTPError as exc:
            with exc:
                data = _read_quietly(exc)
            error = _status_error(endpoint, exc.code, exc.reason, data)
            if error.retryable:
                raise _Retry(error, _retry_after(exc.headers)) from None
            raise error from None
        except (urllib.error.URLError, TimeoutError, OSError, http.client.HTTPException) as exc:
            reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
            if isinstance(reason, str):
                raise HttpError(f"{endpoint.label}: cannot reach {endpoint.url}: {reason}") from None
            raise _Retry(_network_error(endpoint, reason, self.timeout), None) from None
        with response:
            return handle(response)


class _Retry(Exception):
    def __init__(self, error: HttpError, retry_after: float | None) -> None:
        self.error = error
        self.retry_after = retry_after


def _read_quietly(response: Any) -> bytes:
    try:
        return bytes(response.read())
    except (OSError, http.client.HTTPException):
        return b""


def _network_error(endpoint: Endpoint, exc: BaseException, timeout: float) -> HttpError:
    return HttpError(
        f"{endpoint.label}: cannot reach {endpoint.url}: {_describe_network(exc, timeout)}",
        retryable=True,
    )


def _describe_network(exc: BaseException, timeout: float) -> str:
    if isinstance(exc, TimeoutError | socket.timeout):
        return f"timed out after {timeout:g}s"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, http.client.RemoteDisconnected | ConnectionResetError):
        return "the server closed the connection"
    if isinstance(exc, socket.gaierror):
        return f"unknown host ({exc.strerror or exc})"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return f"{type(exc).__name__}: {exc}"


def _retry_after(headers: Any) -> float | None:
    """``Retry-After`` in seconds (a number or an HTTP date), if the server sent one."""
    value = headers.get("Retry-After") if headers is not None else None
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _server_message(data: bytes) -> str:
    """What the provider said in its error body (``error.message`` in both formats), else the raw start."""
    text = data.decode("utf-8", errors="replace").strip()
    try:
        obj = json.loads(text)
    except ValueError:
        return _clip(text)
    if isinstance(obj, dict):
        error = obj.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return _clip(error["message"])
        if isinstance(error, str):
            return _clip(error)
        if isinstance(obj.get("message"), str):
            return _clip(obj["message"])
    return _clip(text)


def _status_error(endpoint: Endpoint, status: int, reason: str, data: bytes) -> HttpError:
    said = _server_message(data)
    said_part = f": {said}" if said else ""
    where = f"{endpoint.label}: HTTP {status} {reason} from {endpoint.url}"
    if status in (401, 403):
        hint = f" ({endpoint.auth_hint})" if endpoint.auth_hint else ""
        return HttpError(f"{where}: authentication failed{hint}{said_part}", status=status)
    if status == 404:
        return HttpError(f"{where}: not found; check the base URL and the model name{said_part}", status=status)
    return HttpError(f"{where}{said_part}", status=status, retryable=status in RETRYABLE_STATUS)


def _clip(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _decode_object(endpoint: Endpoint, data: bytes) -> dict[str, Any]:
    try:
        obj = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        shown = _clip(data.decode("utf-8", errors="replace")) or "an empty body"
        raise HttpError(f"{endpoint.label}: invalid response from {endpoint.url}: not JSON: {shown}") from None
    if not isinstance(obj, dict):
        raise HttpError(
            f"{endpoint.label}: invalid response from {endpoint.url}: expected a JSON object, got {type(obj).__name__}"
        )
    return obj


def _summary(obj: dict[str, Any]) -> str:
    return _server_message(json.dumps(obj).encode())


def iter_events(stream: BinaryIO) -> Iterator[ServerSentEvent]:
    """Parse ``text/event-stream``: ``event:``/``data:`` fields, one event per blank line."""
    event = ""
    data: list[str] = []
    while True:
        raw = stream.readline()
        if not raw:
            break
        line = raw.decode("utf-8").rstrip("\r\n")
        if not line:
            if data:
                yield ServerSentEvent(event or "message", "\n".join(data))
            event, data = "", []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "event":
            event = value
        elif field == "data":
            data.append(value)
    if data:
        yield ServerSentEvent(event or "message", "\n".join(data))


def decode_event(endpoint: Endpoint, event: ServerSentEvent) -> dict[str, Any]:
    """The JSON object carried by one event."""
    try:
        obj = json.loads(event.data)
    except ValueError:
        raise HttpError(
            f"{endpoint.label}: invalid event in the stream from {endpoint.url}: not JSON: {_clip(event.data)}"
        ) from None
    if not isinstance(obj, dict):
        raise HttpError(f"{endpoint.label}: invalid event in the stream from {endpoint.url}: not a JSON object")
    return obj
