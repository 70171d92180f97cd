"""One observation of a branch's pull request: the requests, and the value they make.

Per observation: one REST request for the branch's pull request, one (or a
few pages) for its head commit's check runs, and one GraphQL query (or a few
pages) for the review decision and the review threads, which REST does not
expose (``isResolved`` exists only in GraphQL). All share one deadline.

The value holds only what the model is told, already bounded: a check's name
and verdict, a thread's path, line, author and the first line of its first
comment.
"""

from __future__ import annotations

from typing import Any

from nia_github.client import ApiError, Client
from nia_github.repository import Target
from nia_github.text import shorten

MAX_RUNS = 200
"""Check runs a value holds (sorted by name); more are counted."""
MAX_RUN_PAGES = 5
MAX_THREAD_PAGES = 10
MAX_THREADS_KEPT = 20
EXCERPT = 160

THREADS = """
query($owner: String!, $name: String!, $number: Int!, $first: Int!, $cursor: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewDecision
      reviewThreads(first: $first, after: $cursor) {
        totalCount
        pageInfo { hasNextPage endCursor }
        nodes {
          isResolved
          isOutdated
          path
          line
          comments(first: 1) { nodes { author { login } body } }
        }
      }
    }
  }
}
"""

ATTENTION = {"failing": 0, "cancelled": 1, "running": 2, "queued": 3}
FAILING = {"failure", "timed_out", "startup_failure", "action_required"}


def verdict(run: dict[str, Any]) -> str:
    """``failing``, ``cancelled``, ``running``, ``queued``, ``passed``, ``skipped``, ``neutral``, ``stale``."""
    status, conclusion = run.get("status"), run.get("conclusion")
    if status == "completed":
        if conclusion in FAILING:
            return "failing"
        if conclusion == "success":
            return "passed"
        if conclusion in ("cancelled", "skipped", "neutral", "stale"):
            return str(conclusion)
        return "completed"
    return "running" if status == "in_progress" else "queued"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def choose(pulls: list[Any]) -> dict[str, Any] | None:
    """The open pull request of the branch, else the one updated last (GitHub lists them newest first)."""
    found = [p for p in pulls if isinstance(p, dict) and isinstance(p.get("number"), int)]
    return next((p for p in found if p.get("state") == "open"), found[0] if found else None)


def pr_state(pull: dict[str, Any]) -> str:
    if pull.get("merged_at"):
        return "merged"
    if pull.get("state") == "closed":
        return "closed"
    return "draft" if pull.get("draft") else "open"


def excerpt(body: str) -> str:
    """The first non-empty line of a comment (``>`` quotes of others left out), cut to :data:`EXCERPT`."""
    for line in body.splitlines():
        line = line.strip()
        if line and not line.startswith(">"):
            return line if len(line) <= EXCERPT else line[: EXCERPT - 1] + "…"
    return ""


def observe(client: Client, target: Target) -> dict[str, Any]:
    """The value for ``target``; raises :class:`ApiError` when GitHub cannot be asked or answers with an error."""
    base = target.base
    value: dict[str, Any] = {"repo": base.full_name, "branch": target.local_branch}
    pulls, _ = client.pages(
        f"/repos/{base.owner}/{base.repo}/pulls",
        {
            "head": f"{target.head_owner}:{target.head_branch}",
            "state": "all",
            "sort": "updated",
            "direction": "desc",
            "per_page": 10,
        },
        key=None,
        max_pages=1,
    )
    pull = choose(pulls)
    if pull is None:
        return {**value, "state": "no-pr"}
    number = pull["number"]
    head = pull.get("head")
    sha = _text(head.get("sha")) if isinstance(head, dict) else ""
    pr = {"number": number, "title": shorten(_text(pull.get("title")), 300), "state": pr_state(pull)}

    runs: list[list[str]] = []
    total, complete = 0, True
    if sha and all(ch in "0123456789abcdef" for ch in sha):
        found, complete = client.pages(
            f"/repos/{base.owner}/{base.repo}/commits/{sha}/check-runs",
            {"per_page": 100},
            key="check_runs",
            max_pages=MAX_RUN_PAGES,
        )
        runs = sorted([shorten(_text(r.get("name")), 200), verdict(r)] for r in found if isinstance(r, dict))
        total = len(runs)
    counts: dict[str, int] = {}
    for _name, kind in runs:
        counts[kind] = counts.get(kind, 0) + 1
    # The runs named first (failing, running, ...) are kept before the ones only counted.
    kept = sorted(sorted(runs, key=lambda run: ATTENTION.get(run[1], len(ATTENTION)))[:MAX_RUNS])
    checks = {"sha": sha[:7], "runs": kept, "counts": counts, "total": total, "complete": complete}

    review, threads = _threads(client, target, number)
    pr["review"] = review
    return {**value, "state": "pr", "pr": pr, "checks": checks, "comments": threads}


def _threads(client: Client, target: Target, number: int) -> tuple[str | None, dict[str, Any]]:
    unresolved = 0
    first: list[list[Any]] = []
    cursor: str | None = None
    review: str | None = None
    complete = False
    for _ in range(MAX_THREAD_PAGES):
        data = client.graphql(
            THREADS,
            {"owner": target.base.owner, "name": target.base.repo, "number": number, "first": 100, "cursor": cursor},
        )
        try:
            pull = data["repository"]["pullRequest"]
            threads = pull["reviewThreads"]
            nodes = threads["nodes"]
            page = threads["pageInfo"]
        except (KeyError, TypeError):
            raise ApiError("GitHub answered with something nia could not read") from None
        decision = pull.get("reviewDecision")
        review = decision if isinstance(decision, str) else None
        for node in nodes if isinstance(nodes, list) else []:
            if not isinstance(node, dict) or node.get("isResolved") is not False:
                continue
            unresolved += 1
            if len(first) < MAX_THREADS_KEPT:
                comments = (node.get("comments") or {}).get("nodes") or [{}]
                comment = comments[0] if isinstance(comments[0], dict) else {}
                author = (comment.get("author") or {}).get("login")
                line = node.get("line")
                first.append(
                    [
                        shorten(_text(node.get("path")), 300),
                        line if isinstance(line, int) and not isinstance(line, bool) else None,
                        shorten(_text(author), 100),
                        excerpt(_text(comment.get("body"))),
                    ]
                )
        cursor = page.get("endCursor") if isinstance(page, dict) else None
        if not (isinstance(page, dict) and page.get("hasNextPage") is True and isinstance(cursor, str)):
            complete = True
            break
    return review, {"unresolved": unresolved, "complete": complete, "first": first}
