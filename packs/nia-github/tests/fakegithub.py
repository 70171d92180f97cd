"""A fake GitHub API on 127.0.0.1, for offline tests.

The shapes are those GitHub's public REST and GraphQL documentation gives
(``GET /repos/{owner}/{repo}/pulls``, ``GET /repos/{owner}/{repo}/commits/{ref}/check-runs``,
``POST /graphql`` with ``repository.pullRequest.reviewDecision`` and ``reviewThreads``),
with the fields nia reads and enough of the rest to look like the real thing:
``Link`` pagination, ``ETag``/``If-None-Match`` (304), the ``x-ratelimit-*``
headers, error bodies (``{"message": "Bad credentials", ...}``). A test
changes ``state`` between prompts, or switches ``mode`` to make the server
refuse the token, run out of rate limit, fail, or hang.

Usable on its own, to try a real agent against it::

    python fakegithub.py STATE.json   # prints the port, serves until killed; re-reads STATE.json on change
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

DOCS = "https://docs.github.com/rest"


def pull_request(
    number: int,
    title: str,
    *,
    owner: str = "acme",
    repo: str = "shop",
    head_owner: str = "acme",
    branch: str = "feature",
    sha: str = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678",
    state: str = "open",
    draft: bool = False,
    merged: bool = False,
    updated: str = "2026-11-30T10:00:00Z",
) -> dict[str, Any]:
    """A pull request object as ``GET /repos/{owner}/{repo}/pulls`` lists it (a subset of its fields)."""
    api = f"https://api.github.com/repos/{owner}/{repo}"
    return {
        "url": f"{api}/pulls/{number}",
        "id": 1000 + number,
        "node_id": f"PR_kwDO{number:08d}",
        "html_url": f"https://github.com/{owner}/{repo}/pull/{number}",
        "number": number,
        "state": state,
        "locked": False,
        "title": title,
        "user": {"login": head_owner, "id": 1, "type": "User"},
        "body": "Please review.",
        "created_at": "2026-11-29T09:00:00Z",
        "updated_at": updated,
        "closed_at": None if state == "open" else updated,
        "merged_at": updated if merged else None,
        "merge_commit_sha": None,
        "draft": draft,
        "requested_reviewers": [],
        "labels": [],
        "head": {
            "label": f"{head_owner}:{branch}",
            "ref": branch,
            "sha": sha,
            "user": {"login": head_owner},
            "repo": {"full_name": f"{head_owner}/{repo}", "owner": {"login": head_owner}},
        },
        "base": {"label": f"{owner}:main", "ref": "main", "sha": "0" * 40, "repo": {"full_name": f"{owner}/{repo}"}},
        "author_association": "MEMBER",
        "auto_merge": None,
    }


def check_run(
    name: str,
    status: str = "completed",
    conclusion: str | None = "success",
    *,
    run_id: int = 1,
    sha: str = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678",
) -> dict[str, Any]:
    """A check run as ``GET .../commits/{ref}/check-runs`` lists it."""
    return {
        "id": run_id,
        "head_sha": sha,
        "node_id": f"CR_kwDO{run_id:08d}",
        "external_id": "",
        "url": f"https://api.github.com/repos/acme/shop/check-runs/{run_id}",
        "html_url": f"https://github.com/acme/shop/runs/{run_id}",
        "details_url": f"https://github.com/acme/shop/actions/runs/{run_id}",
        "status": status,
        "conclusion": conclusion,
        "started_at": "2026-11-30T10:00:00Z",
        "completed_at": "2026-11-30T10:05:00Z" if status == "completed" else None,
        "output": {"title": None, "summary": None, "text": None, "annotations_count": 0},
        "name": name,
        "check_suite": {"id": 5},
        "app": {"id": 15368, "slug": "github-actions", "name": "GitHub Actions"},
        "pull_requests": [],
    }


def review_thread(
    path: str, line: int | None, author: str, body: str, *, resolved: bool = False, outdated: bool = False
) -> dict[str, Any]:
    """A ``PullRequestReviewThread`` node with its first comment."""
    return {
        "isResolved": resolved,
        "isOutdated": outdated,
        "path": path,
        "line": line,
        "comments": {"nodes": [{"author": {"login": author}, "body": body}]},
    }


def default_state() -> dict[str, Any]:
    return {
        "token": "ghp_FAKEtoken0123456789abcdefABCDEF01",
        "mode": "ok",  # ok | hang | rate-limited | secondary-limit | error | garbage | redirect (to redirect_to)
        "per_page_max": 100,
        "repos": {"acme/shop": {"pulls": [], "check_runs": {}, "threads": {}, "decisions": {}}},
    }


def _first_pulls_page(request: dict[str, Any]) -> bool:
    url = urlsplit(request["path"])
    parts = url.path.strip("/").split("/")
    return (
        request["method"] == "GET"
        and len(parts) == 4
        and parts[3] == "pulls"
        and parse_qs(url.query).get("page", ["1"])[-1] == "1"
    )


class FakeGitHub:
    """The server: ``start()``, ``url``, ``state`` (change it freely), ``requests`` (what arrived), ``stop()``."""

    def __init__(self, state: dict[str, Any] | None = None, *, state_file: str | None = None) -> None:
        self.state = state or default_state()
        self.state_file = state_file
        self._file_sig: tuple[int, int] | None = None
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.arrived = threading.Condition(self.lock)
        """Notified at each request: a test waits for what nia asks, never for a while."""
        self.release = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                fake.answer(self, "GET", b"")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                fake.answer(self, "POST", self.rfile.read(length))

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        # stop() waits for serve_forever to notice, up to one poll interval (0.5 s by default): a test's teardown
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FakeGitHub:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> FakeGitHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def observations(self) -> int:
        """How many observations began: each asks for the branch's pull requests first (page 1)."""
        with self.lock:
            return sum(1 for request in self.requests if _first_pulls_page(request))

    def wait_for_observations(self, count: int, timeout: float = 60.0) -> None:
        """Until ``count`` observations began (woken by each request that arrives); fails after ``timeout``."""
        with self.arrived:
            done = self.arrived.wait_for(
                lambda: sum(1 for request in self.requests if _first_pulls_page(request)) >= count, timeout
            )
        if not done:
            raise AssertionError(f"nia asked GitHub {self.observations()} times in {timeout:g} s, not {count}")

    def repo(self, name: str = "acme/shop") -> dict[str, Any]:
        return self.state["repos"].setdefault(name, {"pulls": [], "check_runs": {}, "threads": {}, "decisions": {}})

    # -- answering --------------------------------------------------------------------------

    def _reload(self) -> None:
        if self.state_file is None:
            return
        try:
            info = os.stat(self.state_file)
        except OSError:
            return
        sig = (info.st_mtime_ns, info.st_size)
        if sig != self._file_sig:
            with open(self.state_file, encoding="utf-8") as handle:
                self.state = json.load(handle)
            self._file_sig = sig

    def answer(self, handler: BaseHTTPRequestHandler, method: str, body: bytes) -> None:
        with self.lock:
            self._reload()
            self.requests.append(
                {"method": method, "path": handler.path, "headers": dict(handler.headers.items()), "body": body}
            )
            self.arrived.notify_all()
            state = self.state
        mode = state.get("mode", "ok")
        if mode == "hang":
            self.release.wait(120)
            return
        if mode == "redirect":
            self._send(handler, 307, b"", {"Location": state["redirect_to"] + handler.path})
            return
        if mode == "garbage":
            self._send(handler, 200, b"<html>not json", {"Content-Type": "text/html"})
            return
        if mode == "error":
            self._json(handler, 502, {"message": "Server Error"})
            return
        if handler.headers.get("Authorization") != f"Bearer {state['token']}":
            self._json(handler, 401, {"message": "Bad credentials", "documentation_url": DOCS, "status": "401"})
            return
        reset = str(int(time.time()) + 600)
        if mode == "rate-limited":
            self._json(
                handler,
                403,
                {"message": "API rate limit exceeded for user ID 1.", "documentation_url": DOCS, "status": "403"},
                {"x-ratelimit-remaining": "0", "x-ratelimit-reset": reset},
            )
            return
        if mode == "secondary-limit":
            self._json(
                handler,
                429,
                {"message": "You have exceeded a secondary rate limit.", "documentation_url": DOCS},
                {"retry-after": "60"},
            )
            return
        url = urlsplit(handler.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        parts = url.path.strip("/").split("/")
        if method == "POST" and parts == ["graphql"]:
            self._graphql(handler, state, body)
        elif method == "GET" and len(parts) == 4 and parts[0] == "repos" and parts[3] == "pulls":
            self._pulls(handler, state, f"{parts[1]}/{parts[2]}", query)
        elif (
            method == "GET"
            and len(parts) == 6
            and parts[0] == "repos"
            and parts[3] == "commits"
            and parts[5] == "check-runs"
        ):
            self._check_runs(handler, state, f"{parts[1]}/{parts[2]}", parts[4], query)
        else:
            self._json(handler, 404, {"message": "Not Found", "documentation_url": DOCS, "status": "404"})

    def _page(
        self, handler: BaseHTTPRequestHandler, state: dict[str, Any], items: list[Any], query: dict[str, str]
    ) -> tuple[list[Any], dict[str, str]]:
        per_page = min(int(query.get("per_page", 30)), int(state.get("per_page_max", 100)))
        page = int(query.get("page", 1))
        chunk = items[(page - 1) * per_page : page * per_page]
        headers: dict[str, str] = {}
        last = max(1, -(-len(items) // per_page))
        if page < last:
            base = handler.path.split("?")[0]
            others = "&".join(f"{k}={v}" for k, v in sorted(query.items()) if k != "page")
            origin = state.get("link_origin", self.url)
            link = f"{origin}{base}?{others}&page="
            headers["Link"] = f'<{link}{page + 1}>; rel="next", <{link}{last}>; rel="last"'
        return chunk, headers

    def _pulls(self, handler: BaseHTTPRequestHandler, state: dict[str, Any], name: str, query: dict[str, str]) -> None:
        repo = state["repos"].get(name)
        if repo is None:
            self._json(handler, 404, {"message": "Not Found", "documentation_url": DOCS, "status": "404"})
            return
        pulls = list(repo["pulls"])
        if "head" in query:
            pulls = [p for p in pulls if p["head"]["label"] == query["head"]]
        wanted = query.get("state", "open")
        if wanted != "all":
            pulls = [p for p in pulls if p["state"] == wanted]
        if query.get("sort") == "updated":
            pulls.sort(key=lambda p: p["updated_at"], reverse=query.get("direction", "desc") == "desc")
        chunk, headers = self._page(handler, state, pulls, query)
        self._json(handler, 200, chunk, headers)

    def _check_runs(
        self, handler: BaseHTTPRequestHandler, state: dict[str, Any], name: str, sha: str, query: dict[str, str]
    ) -> None:
        repo = state["repos"].get(name)
        if repo is None:
            self._json(handler, 404, {"message": "Not Found", "documentation_url": DOCS, "status": "404"})
            return
        runs = repo["check_runs"].get(sha, [])
        chunk, headers = self._page(handler, state, runs, query)
        self._json(handler, 200, {"total_count": len(runs), "check_runs": chunk}, headers)

    def _graphql(self, handler: BaseHTTPRequestHandler, state: dict[str, Any], body: bytes) -> None:
        try:
            request = json.loads(body)
            variables = request["variables"]
            name = f"{variables['owner']}/{variables['name']}"
            number = str(variables["number"])
        except (ValueError, KeyError, TypeError):
            self._json(handler, 400, {"message": "Problems parsing JSON", "documentation_url": DOCS})
            return
        repo = state["repos"].get(name)
        if repo is None:
            self._json(
                handler,
                200,
                {
                    "data": {"repository": None},
                    "errors": [
                        {
                            "type": "NOT_FOUND",
                            "path": ["repository"],
                            "message": f"Could not resolve to a Repository with the name '{name}'.",
                        }
                    ],
                },
            )
            return
        threads = repo["threads"].get(number, [])
        size = min(int(variables.get("first", 100)), 100)
        start = int(variables.get("cursor") or 0)
        chunk = threads[start : start + size]
        more = start + size < len(threads)
        self._json(
            handler,
            200,
            {
                "data": {
                    "repository": {
                        "pullRequest": {
                            "reviewDecision": repo["decisions"].get(number),
                            "reviewThreads": {
                                "totalCount": len(threads),
                                "pageInfo": {"hasNextPage": more, "endCursor": str(start + size) if chunk else None},
                                "nodes": chunk,
                            },
                        }
                    }
                }
            },
        )

    def _json(
        self, handler: BaseHTTPRequestHandler, status: int, data: Any, headers: dict[str, str] | None = None
    ) -> None:
        payload = json.dumps(data).encode()
        extra = {"Content-Type": "application/json; charset=utf-8", **(headers or {})}
        if status == 200 and handler.command == "GET":
            etag = '"' + hashlib.sha256(payload).hexdigest()[:32] + '"'
            extra["ETag"] = etag
            if handler.headers.get("If-None-Match") == etag:
                self._send(handler, 304, b"", {"ETag": etag})
                return
        self._send(handler, status, payload, extra)

    def _send(self, handler: BaseHTTPRequestHandler, status: int, payload: bytes, headers: dict[str, str]) -> None:
        handler.send_response(status)
        headers.setdefault("x-ratelimit-limit", "5000")
        headers.setdefault("x-ratelimit-remaining", "4999")
        headers.setdefault("x-ratelimit-reset", str(int(time.time()) + 3600))
        headers.setdefault("x-ratelimit-resource", "core")
        for key, value in headers.items():
            handler.send_header(key, value)
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)


if __name__ == "__main__":
    server = FakeGitHub(state_file=sys.argv[1]).start()
    print(server.port, flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()
