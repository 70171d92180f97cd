"""Fixtures: a fake GitHub API on 127.0.0.1, and a project that is a checkout of acme/shop (``.git`` by hand)."""

from __future__ import annotations

import pytest

import nia_github.source
from fakegithub import FakeGitHub, check_run, pull_request, review_thread
from helpers import SHA, write_checkout
from nia_github.client import Etags
from nia_github.token import Tokens


@pytest.fixture
def github(monkeypatch):
    """The fake API, with nia pointed at it and a token it accepts; the user's own GitHub settings cleared."""
    for name in (
        "GH_TOKEN",
        "GITHUB_TOKEN",
        "GH_ENTERPRISE_TOKEN",
        "GITHUB_ENTERPRISE_TOKEN",
        "NIA_GITHUB_HOST",
        "NIA_GITHUB_REFRESH",
        "https_proxy",
        "http_proxy",
        "HTTPS_PROXY",
        "HTTP_PROXY",
    ):
        monkeypatch.delenv(name, raising=False)
    # Each test starts as a new process would: no token from gh remembered, no answers to revalidate.
    monkeypatch.setattr(nia_github.source, "tokens", Tokens())
    monkeypatch.setattr(nia_github.source, "etags", Etags())
    with FakeGitHub() as server:
        monkeypatch.setenv("NIA_GITHUB_API", server.url)
        monkeypatch.setenv("GH_TOKEN", server.state["token"])
        monkeypatch.setenv("NIA_GITHUB_REFRESH", "0.05")  # in a conversation, nia asks again every 0.05 s
        yield server


@pytest.fixture
def shop(nia_project, github):
    """A checkout of acme/shop on branch ``feature`` whose pull request #12 is open, with checks and threads."""
    write_checkout(nia_project.root)
    repo = github.repo()
    repo["pulls"].append(pull_request(12, "Fix the login page", sha=SHA))
    repo["check_runs"][SHA] = [
        check_run("lint", run_id=1),
        check_run("tests (3.12)", "in_progress", None, run_id=2),
        check_run("docs", run_id=3),
    ]
    repo["decisions"]["12"] = "REVIEW_REQUIRED"
    repo["threads"]["12"] = [
        review_thread("src/app.py", 14, "alice", "This leaks the session cookie.\n\nSee the RFC."),
        review_thread("src/db.py", None, "bob", "> quoted\nWhy not a transaction here?", outdated=True),
        review_thread("README.md", 3, "carol", "Typo.", resolved=True),
    ]
    return nia_project


@pytest.fixture
def settled(github):
    """``settled(change)``: the change on GitHub, then until nia holds an answer that saw it.

    In a conversation nia asks GitHub in the background every ``refresh``
    seconds and a prompt uses the last answer. An observation whose first
    request came after the change saw it; it is stored by the time the next
    one begins (nia runs one at a time): so the test waits for two requests
    of the fake server, not for a while.
    """

    def wrap(change):
        def run():
            change()
            github.wait_for_observations(github.observations() + 2)

        return run

    return wrap
