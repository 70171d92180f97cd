"""Provider calls over nia's HTTP client (:mod:`nia_core.http`): retries, errors, event streams.

Retries follow the official SDKs: ``x-should-retry: true/false`` (compared
exactly, as they do) decides when the server sends it; otherwise 408, 409, 429
and every 5xx (Anthropic's 52x included), timeouts, refused or dropped
connections and bodies cut short are retried with exponential backoff. A wait
the server asks for (``retry-after-ms``, else ``Retry-After``) is kept by each
provider's SDK rule (:class:`RetryPolicy`): Anthropic's waits as long as it is
asked, OpenAI's waits up to 120 seconds and gives up on a longer request.
Every call has an overall deadline (retries and waits included) besides the
per-read timeout. A stream is retried only before its first event, never
after, so no text is shown twice; a stream that ends before its protocol says
it is complete is a cut, never a reply. Every failure is one
:class:`HttpError` line naming the status, the URL (credentials redacted) and
what the server said.
"""

from __future__ import annotations

import email.utils
import json
import logging
import math
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from nia_core.http import (
    CREDENTIAL_HEADERS,
    Body,
    Deadline,
    HttpFailure,
    Limits,
    Response,
    header_items,
    redact_url,
    request,
)
from nia_core.model import ProviderError

log = logging.getLogger("nia.http")

T = TypeVar("T")
USER_AGENT = "nia"
OPENAI_MAX_SERVER_WAIT = 120.0
"""The OpenAI SDK's ``MAX_RETRY_AFTER_DELAY``: a longer server-requested wait means no retry at all."""
ANTHROPIC_MAX_SLEEP = 4_294_967.0
"""The Anthropic SDK waits what the server asks, at most this (the platform limit of ``time.sleep``)."""


class HttpError(ProviderError):
    """A provider request that failed; ``status`` is the HTTP status, or ``None`` for network errors."""

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable


def should_retry(status: int, headers: Mapping[str, str]) -> bool:
    """The SDKs' rule: the server's ``x-should-retry`` first (exactly ``true``/``false``), then 408, 409, 429, 5xx."""
    flag = headers.get("x-should-retry", "").strip()
    if flag == "true":
        return True
    if flag == "false":
        return False
    return status in (408, 409, 429) or status >= 500


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 2
    """Attempts after the first."""
    backoff: float = 0.5
    """Seconds before the first retry; doubled for each next one."""
    max_backoff: float = 8.0
    """The computed backoff never exceeds this."""
    max_server_wait: float | None = OPENAI_MAX_SERVER_WAIT
    """The longest server-requested wait kept; a longer one means no retry (the OpenAI SDK's rule).
    ``None``: every positive wait is kept, however long (the Anthropic SDK's rule)."""

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based)."""
        if retry_after is not None and math.isfinite(retry_after) and retry_after > 0:
            if self.max_server_wait is None:
                return min(retry_after, ANTHROPIC_MAX_SLEEP)
            if retry_after <= self.max_server_wait:
                return retry_after
        elif retry_after == math.inf and self.max_server_wait is None:
            return ANTHROPIC_MAX_SLEEP
        return min(self.backoff * (2.0 ** (attempt - 1)), self.max_backoff)

    def refuses(self, retry_after: float | None) -> bool:
        """Whether the server asked for a wait longer than this policy keeps: then there is no retry."""
        return (
            self.max_server_wait is not None
            and retry_after is not None
            and math.isfinite(retry_after)
            and retry_after > self.max_server_wait
        )


@dataclass(frozen=True)
class ServerSentEvent:
    event: str
    data: str
    terminated: bool = True
    """Closed by a blank line; ``False`` for an event the body ended inside."""


@dataclass(frozen=True)
class Endpoint:
    """Where and how to send: the URL, the headers, and how to explain failures."""

    url: str
    headers: Mapping[str, str]
    label: str
    """Who is calling, for messages: ``openai-chat``."""
    auth_hint: str = ""
    """Appended to a 401/403 message: which setting holds the key."""
    credential_headers: frozenset[str] = field(default_factory=frozenset)
    """Extra header names that carry a credential (beyond the usual ones)."""

    @property
    def shown(self) -> str:
        """The URL for messages, credentials redacted."""
        return redact_url(self.url)


Sleep = Callable[[float], None]


class HttpClient:
    def __init__(
        self,
        *,
        timeout: float = 600.0,
        deadline: float = 1800.0,
        retry: RetryPolicy | None = None,
        sleep: Sleep = time.sleep,
        limits: Limits | None = None,
    ) -> None:
        self.timeout = timeout
        self.deadline = deadline
        self.retry = retry or RetryPolicy()
        self.sleep = sleep
        self.limits = limits or Limits()

    def post_json(self, endpoint: Endpoint, body: Body) -> dict[str, Any]:
        """POST ``body`` and return the decoded JSON object of the reply."""

        def read(response: Response, deadline: Deadline) -> dict[str, Any]:
            return decode_object(endpoint, self._read(endpoint, response, self.limits.body))

        return self._with_retries(endpoint, body, read, streaming=False)

    def post_stream(
        self,
        endpoint: Endpoint,
        body: Body,
        on_event: Callable[[ServerSentEvent], None],
        incomplete: Callable[[], str | None] = lambda: None,
        whole: Callable[[], bool] = lambda: False,
    ) -> None:
        """POST ``body`` and feed each server-sent event to ``on_event`` as it arrives.

        ``incomplete`` says, once the body has ended, why the stream is not a
        whole reply by its protocol (``None`` when it is); ``whole`` says the
        reply is complete already, and reading stops there (as the SDKs stop at
        ``[DONE]``: a trickle after it cannot hold the call). A stream cut short,
        at the transport or by its protocol, is retried only when no event has
        been delivered yet; after that it is an error, never a reply.
        """

        def consume(response: Response, deadline: Deadline) -> None:
            content_type = response.headers.get("Content-Type", "")
            if "text/event-stream" not in content_type:
                # Some servers answer a streaming request with one JSON error or object.
                obj = decode_object(endpoint, self._read(endpoint, response, self.limits.body))
                raise HttpError(
                    f"{endpoint.label}: expected an event stream from {endpoint.shown}, "
                    f"got {content_type or 'no type'}: {_summary(obj)}"
                )
            delivered = False
            try:
                for event in iter_events(response.lines(self.limits.line), self.limits.event, endpoint):
                    on_event(event)
                    delivered = True
                    if whole():
                        break
            except HttpFailure as exc:
                failure = HttpError(f"{endpoint.label}: {exc}", status=exc.status, retryable=exc.retryable)
                if exc.retryable and not delivered:
                    raise _Retry(failure, None) from None
                raise HttpError(f"{endpoint.label}: {exc}{_NOT_STORED}", status=exc.status) from None
            except StreamCut as inside:
                if not delivered:
                    raise _Retry(inside, None) from None
                raise HttpError(f"{inside}{_NOT_STORED}") from None
            why = incomplete()
            if why is not None:
                cut = StreamCut(f"{endpoint.label}: invalid response from {endpoint.shown}: {why}")
                if not delivered:
                    raise _Retry(cut, None)
                raise HttpError(f"{cut}{_NOT_STORED}")

        self._with_retries(endpoint, body, consume, streaming=True)

    def _read(self, endpoint: Endpoint, response: Response, limit: int) -> bytes:
        try:
            return response.read(limit)
        except HttpFailure as exc:
            error = HttpError(f"{endpoint.label}: {exc}", status=exc.status, retryable=exc.retryable)
            if exc.retryable:
                raise _Retry(error, None) from None
            raise error from None

    def _with_retries(
        self, endpoint: Endpoint, body: Body, handle: Callable[[Response, Deadline], T], *, streaming: bool
    ) -> T:
        deadline = Deadline(self.deadline)
        attempt = 0
        while True:
            try:
                return self._once(endpoint, body, handle, deadline, streaming=streaming)
            except _Retry as retry:
                attempt += 1
                tries = f" (after {attempt} attempts)" if attempt > 1 else ""
                if attempt > self.retry.max_retries:
                    raise HttpError(f"{retry.error}{tries}", status=retry.error.status) from None
                if self.retry.refuses(retry.retry_after):
                    raise HttpError(
                        f"{retry.error}{tries}; no retry: the server asked to wait {retry.retry_after:,.0f}s, longer "
                        f"than the {self.retry.max_server_wait:g}s the provider's SDK waits",
                        status=retry.error.status,
                    ) from None
                wait = self.retry.delay(attempt, retry.retry_after)
                if wait >= deadline.remaining():
                    raise HttpError(
                        f"{retry.error}{tries}; no retry: the call's {self.deadline:g}s deadline would pass first",
                        status=retry.error.status,
                    ) from None
                log.debug("%s: attempt %d failed (%s); retrying in %.2f s", endpoint.label, attempt, retry.error, wait)
                self.sleep(wait)

    def _once(
        self,
        endpoint: Endpoint,
        body: Body,
        handle: Callable[[Response, Deadline], T],
        deadline: Deadline,
        *,
        streaming: bool,
    ) -> T:
        headers = {"Content-Type": "application/json", "User-Agent": USER_AGENT, **endpoint.headers}
        if streaming:
            headers["Accept"] = "text/event-stream"
        try:
            response = request(
                "POST",
                endpoint.url,
                headers=headers,
                body=body,
                timeout=self.timeout,
                deadline=deadline,
                credential_headers=CREDENTIAL_HEADERS | endpoint.credential_headers,
            )
        except HttpFailure as exc:
            error = HttpError(f"{endpoint.label}: {exc}", status=exc.status, retryable=exc.retryable)
            if exc.retryable:
                raise _Retry(error, None) from None
            raise error from None
        with response:
            if response.status >= 300:
                try:
                    data = response.read(self.limits.error_body)
                except HttpFailure:
                    data = b""
                headers_seen = header_items(response.headers)
                error = status_error(endpoint, response.status, response.reason, data, headers_seen)
                if error.retryable:
                    raise _Retry(error, retry_after(headers_seen)) from None
                raise error
            return handle(response, deadline)


class StreamCut(HttpError):
    """An event stream that ended before its protocol says the reply is whole (mid-event, before its last event)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retryable=True)


_NOT_STORED = "; nothing of this reply is stored"


class _Retry(Exception):
    def __init__(self, error: HttpError, retry_after: float | None) -> None:
        self.error = error
        self.retry_after = retry_after


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asks to wait: ``retry-after-ms``, else ``Retry-After`` (seconds or an HTTP date).

    As the SDKs read them: a number that overflows a float is a wait too long
    to keep (a huge finite value); the literal ``inf`` stays infinite.
    """
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if not value:
            continue
        try:
            seconds = float(value)
        except ValueError:
            continue
        if seconds == math.inf and value.strip().lower() not in ("inf", "+inf", "infinity", "+infinity"):
            return sys.float_info.max
        return max(0.0, seconds / divisor) if not math.isnan(seconds) else seconds
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, OverflowError):
        return None
    try:
        return max(0.0, when.timestamp() - time.time())
    except (OverflowError, OSError, ValueError):
        return None


def server_message(data: bytes) -> str:
    """What the provider said in its error body (``error.message`` in both formats), else the raw start."""
    text = data.decode("utf-8", errors="replace").strip()
    try:
        obj = json.loads(text)
    except ValueError:
        return clip(text)
    if isinstance(obj, dict):
        error = obj.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            kind = error.get("type") if isinstance(error.get("type"), str) else ""
            prefix = f"{kind}: " if kind and obj.get("type") == "error" else ""
            return clip(prefix + error["message"])
        if isinstance(error, str):
            return clip(error)
        if isinstance(obj.get("message"), str):
            return clip(obj["message"])
    return clip(text)


def status_error(
    endpoint: Endpoint, status: int, reason: str, data: bytes, headers: Mapping[str, str] | None = None
) -> HttpError:
    said = server_message(data)
    said_part = f": {said}" if said else ""
    where = f"{endpoint.label}: HTTP {status} {reason} from {endpoint.shown}"
    if status in (401, 403):
        hint = f" ({endpoint.auth_hint})" if endpoint.auth_hint else ""
        return HttpError(f"{where}: authentication failed{hint}{said_part}", status=status)
    if status == 404:
        return HttpError(f"{where}: not found; check the base URL and the model name{said_part}", status=status)
    return HttpError(f"{where}{said_part}", status=status, retryable=should_retry(status, headers or {}))


def clip(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def decode_object(endpoint: Endpoint, data: bytes) -> dict[str, Any]:
    try:
        obj = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        shown = clip(data.decode("utf-8", errors="replace")) or "an empty body"
        raise HttpError(f"{endpoint.label}: invalid response from {endpoint.shown}: not JSON: {shown}") from None
    if not isinstance(obj, dict):
        raise HttpError(
            f"{endpoint.label}: invalid response from {endpoint.shown}: "
            f"expected a JSON object, got {type(obj).__name__}"
        )
    return obj


def _summary(obj: dict[str, Any]) -> str:
    return server_message(json.dumps(obj).encode())


def iter_events(lines: Iterable[bytes], max_event: int, endpoint: Endpoint) -> Iterator[ServerSentEvent]:
    """Parse ``text/event-stream`` lines (endings already split off): ``event:``/``data:`` fields, one event per
    blank line.

    An event still open when the body ends is passed on marked
    ``terminated=False`` (the SDKs' own fixtures end that way, with no blank
    line after ``message_stop``); one whose data then does not parse was cut.
    Lines must be UTF-8: an event that is not is an error (the APIs always
    send UTF-8, so it is a broken proxy or server, and guessing would put
    altered text into the session).
    """
    event = ""
    data: list[str] = []
    size = 0
    for number, raw in enumerate(lines, 1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise HttpError(
                f"{endpoint.label}: the stream from {endpoint.shown} sent bytes that are not UTF-8 "
                f"(line {number}, byte {exc.start}){_NOT_STORED}"
            ) from None
        if not line:
            if data:
                yield ServerSentEvent(event or "message", "\n".join(data))
            event, data, size = "", [], 0
            continue
        if line.startswith(":"):
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            event = value
        elif name == "data":
            size += len(value)
            if size > max_event:
                raise HttpError(
                    f"{endpoint.label}: the stream from {endpoint.shown} sent an event larger than the "
                    f"{max_event:,}-byte limit"
                )
            data.append(value)
    if data:
        yield ServerSentEvent(event or "message", "\n".join(data), terminated=False)


def decode_event(endpoint: Endpoint, event: ServerSentEvent) -> dict[str, Any]:
    """The JSON object carried by one event; an unterminated event that does not parse is a cut stream."""
    try:
        obj = json.loads(event.data)
    except (ValueError, RecursionError):
        if not event.terminated:
            raise StreamCut(
                f"{endpoint.label}: invalid response from {endpoint.shown}: the stream was cut off inside an event"
            ) from None
        raise HttpError(
            f"{endpoint.label}: invalid event in the stream from {endpoint.shown}: not JSON: {clip(event.data)}"
        ) from None
    if not isinstance(obj, dict):
        raise HttpError(f"{endpoint.label}: invalid event in the stream from {endpoint.shown}: not a JSON object")
    return obj
