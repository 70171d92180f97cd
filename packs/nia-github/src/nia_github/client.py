"""GitHub's REST and GraphQL APIs through nia's one HTTP client, every failure one sentence.

nia's client (``nia_core.http``) holds the rules for every request nia
makes: the token (an ``Authorization`` header) goes only to the origin it was
meant for and never follows a redirect to another one, every read has a size
bound, and the whole call a deadline that holds inside every read. This
module adds GitHub's own: pagination by ``Link`` header (a ``next`` page on
another origin is not followed, so the token never leaves with it),
conditional requests (``ETag``: an unchanged answer costs no rate limit), and
the meaning of GitHub's error answers (401, 403/429 rate limits with their
reset time, 404).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from nia_core.http import Deadline, HttpFailure, origin, request

from nia_github.text import plain
from nia_github.token import Token

log = logging.getLogger("nia.github")

BODY_LIMIT = 8 * 1024 * 1024
USER_AGENT = "nia-github/0.1 (+https://github.com)"
_LINK = re.compile(r'<([^>]*)>\s*;\s*rel="?([^";]+)"?')


class ApiError(Exception):
    """A failure the model can be told in one sentence.

    ``lasting``: trying again in a minute will not help (a refused token, a
    repository that is not there). ``until``: the ``time.time()`` before which
    GitHub asked not to be called again (a rate limit).
    """

    def __init__(self, sentence: str, *, lasting: bool = False, until: float | None = None) -> None:
        super().__init__(sentence)
        self.sentence = sentence
        self.lasting = lasting
        self.until = until


class Etags:
    """The last answer of each URL, per token, to ask with ``If-None-Match`` (a 304 costs no rate limit)."""

    def __init__(self, size: int = 256) -> None:
        self._lock = threading.Lock()
        self._answers: OrderedDict[tuple[str, str], tuple[str, Any, dict[str, str]]] = OrderedDict()
        self.size = size

    def get(self, key: tuple[str, str]) -> tuple[str, Any, dict[str, str]] | None:
        with self._lock:
            found = self._answers.get(key)
            if found is not None:
                self._answers.move_to_end(key)
            return found

    def put(self, key: tuple[str, str], etag: str, data: Any, headers: dict[str, str]) -> None:
        with self._lock:
            self._answers[key] = (etag, data, headers)
            self._answers.move_to_end(key)
            while len(self._answers) > self.size:
                self._answers.popitem(last=False)


def graphql_url(api: str) -> str:
    """GitHub's GraphQL endpoint beside a REST base: ``/graphql``, or ``/api/graphql`` for ``/api/v3``."""
    base = api.rstrip("/")
    return base[: -len("/v3")] + "/graphql" if base.endswith("/api/v3") else base + "/graphql"


def next_page(link: str | None) -> str | None:
    if not link:
        return None
    for url, rel in _LINK.findall(link):
        if "next" in rel.split():
            return str(url)
    return None


class Client:
    """One observation's requests: one token, one deadline shared by all of them."""

    def __init__(self, api: str, token: Token, deadline: Deadline, etags: Etags, *, read_timeout: float) -> None:
        self.api = api.rstrip("/")
        self.origin = origin(self.api)
        self.token = token
        self.deadline = deadline
        self.etags = etags
        self.read_timeout = read_timeout
        self._who = hashlib.sha256(token.value.encode()).hexdigest()[:16]
        self.requests = 0

    def _headers(self) -> dict[str, str]:
        return {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": USER_AGENT,
            "Authorization": f"Bearer {self.token.value}",
        }

    def _send(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes | None
    ) -> tuple[int, dict[str, str], bytes]:
        if origin(url) != self.origin:  # checked again here: nothing with the token leaves for another origin
            raise ApiError("GitHub's answer pointed to another server, which nia does not call with your token")
        self.requests += 1
        try:
            with request(
                method, url, headers=headers, body=body, timeout=self.read_timeout, deadline=self.deadline
            ) as response:
                status = response.status
                answer_headers = {str(k).lower(): str(v) for k, v in response.headers.items()}
                data = b"" if status == 304 else response.read(BODY_LIMIT)
        except HttpFailure as exc:
            log.debug("nia-github: %s", exc)
            if self.deadline.expired():
                raise ApiError(f"GitHub did not answer within {self.deadline.seconds:g} s") from None
            raise ApiError("GitHub could not be reached (" + _reason(str(exc)) + ")") from None
        if status >= 400:
            raise _error(status, answer_headers, data, self.token)
        return status, answer_headers, data

    def get(self, path_or_url: str, params: Mapping[str, Any] | None = None) -> tuple[Any, dict[str, str]]:
        """The JSON of one GET, and the answer's headers; a 304 hands back the remembered answer."""
        url = path_or_url if "://" in path_or_url else self.api + path_or_url
        if params:
            url += ("&" if "?" in url else "?") + urlencode(params)
        headers = self._headers()
        key = (url, self._who)
        known = self.etags.get(key)
        if known is not None:
            headers["If-None-Match"] = known[0]
        status, answer_headers, data = self._send("GET", url, headers, None)
        if status == 304 and known is not None:
            return known[1], {**known[2], **answer_headers}
        value = _json(data)
        etag = answer_headers.get("etag")
        if etag:
            self.etags.put(key, etag, value, {"link": answer_headers.get("link", "")})
        return value, answer_headers

    def pages(self, path: str, params: Mapping[str, Any], *, key: str | None, max_pages: int) -> tuple[list[Any], bool]:
        """Every item of a paginated list (``key``: the list inside an object), and whether all were read."""
        items: list[Any] = []
        url: str | None = path
        first = True
        for _ in range(max_pages):
            assert url is not None
            data, headers = self.get(url, params if first else None)
            first = False
            found = data.get(key) if key is not None and isinstance(data, dict) else data
            if not isinstance(found, list):
                raise ApiError("GitHub answered with something nia could not read")
            items.extend(found)
            url = next_page(headers.get("link"))
            if url is None:
                return items, True
        return items, False

    def graphql(self, query: str, variables: Mapping[str, Any]) -> Any:
        body = json.dumps({"query": query, "variables": dict(variables)}).encode()
        headers = {**self._headers(), "Content-Type": "application/json"}
        _status, _headers, data = self._send("POST", graphql_url(self.api), headers, body)
        answer = _json(data)
        if not isinstance(answer, dict):
            raise ApiError("GitHub answered with something nia could not read")
        errors = answer.get("errors")
        if errors and not answer.get("data"):
            first = errors[0] if isinstance(errors, list) and errors and isinstance(errors[0], dict) else {}
            if first.get("type") == "NOT_FOUND":
                raise ApiError("GitHub says the repository does not exist, or the token cannot see it", lasting=True)
            raise ApiError(f"GitHub's GraphQL API refused the query ({plain(str(first.get('message', '')), 120)})")
        return answer.get("data")


def _reason(message: str) -> str:
    """The reason at the end of nia's one-line network message (after the URL)."""
    return message.rsplit(": ", 1)[-1] if ": " in message else message


def _json(data: bytes) -> Any:
    try:
        return json.loads(data)
    except (ValueError, RecursionError):
        raise ApiError("GitHub answered with something that is not JSON") from None


def _message(data: bytes) -> str:
    try:
        found = json.loads(data[:65536])
    except (ValueError, RecursionError):
        return ""
    text = found.get("message") if isinstance(found, dict) else None
    return plain(text, 120) if isinstance(text, str) else ""


def _error(status: int, headers: dict[str, str], data: bytes, token: Token) -> ApiError:
    message = _message(data)
    said = f": {message}" if message else ""
    if status == 401:
        return ApiError(
            f"GitHub refused the token from {token.source} (HTTP 401{said}); check it, or run `gh auth status`",
            lasting=True,
        )
    if status in (403, 429):
        now = time.time()
        if headers.get("x-ratelimit-remaining") == "0":
            try:
                until = float(headers.get("x-ratelimit-reset", ""))
            except ValueError:
                until = now + 60
            when = time.strftime("%H:%M UTC", time.gmtime(until))
            return ApiError(f"GitHub's API rate limit for this token is used up until {when}", until=until)
        retry = headers.get("retry-after")
        if retry is not None or status == 429 or "secondary rate limit" in message.lower():
            try:
                wait = max(1.0, float(retry)) if retry is not None else 60.0
            except ValueError:
                wait = 60.0
            return ApiError("GitHub asked nia to slow down (a secondary rate limit)", until=now + wait)
        return ApiError(f"GitHub refused access (HTTP 403{said})", lasting=True)
    if status == 404:
        return ApiError("GitHub says the repository does not exist, or the token cannot see it", lasting=True)
    if status >= 500:
        return ApiError(f"GitHub had a problem answering (HTTP {status})")
    return ApiError(f"GitHub refused the request (HTTP {status}{said})", lasting=True)
