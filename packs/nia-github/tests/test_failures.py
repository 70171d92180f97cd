"""When GitHub cannot be asked: a sentence as the value, or the last status kept; never a blocked prompt.

Also what happens to the token: it goes to the API's origin and nowhere else,
and it is never printed.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from nia_core import UNAVAILABLE

import nia_github as plugin
from fakegithub import FakeGitHub, check_run
from helpers import NAME, SHA, source_at


def sentence(value) -> str:
    return value["problem"] if isinstance(value, dict) and value.get("state") == "problem" else repr(value)


def test_a_refused_token_is_a_sentence_naming_where_it_came_from(shop, github):
    github.state["token"] = "ghp_anotherOne"

    value = source_at(shop.location).load()

    assert sentence(value) == (
        "GitHub refused the token from GH_TOKEN (HTTP 401: Bad credentials); check it, or run `gh auth status`"
    )


def test_no_token_at_all(shop, github, monkeypatch, tmp_path):
    monkeypatch.delenv("GH_TOKEN")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))

    source = source_at(shop.location)

    assert source.baseline(source.load()) == (
        "GitHub: the pull request of branch `feature` (`acme/shop`) is not known: no GitHub token: set GH_TOKEN "
        "or GITHUB_TOKEN, or log in with `gh auth login`."
    )
    assert github.requests == []


def test_the_repository_is_not_there(shop, github):
    github.state["repos"] = {}

    assert sentence(source_at(shop.location).load()) == (
        "GitHub says the repository does not exist, or the token cannot see it"
    )


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("error", "GitHub had a problem answering (HTTP 502)"),
        ("garbage", "GitHub answered with something that is not JSON"),
        ("secondary-limit", "GitHub asked nia to slow down (a secondary rate limit)"),
    ],
)
def test_a_passing_problem_before_any_status_is_a_sentence_after_one_keeps_it(shop, github, mode, said):
    source = source_at(shop.location)
    good = source.load()
    github.state["mode"] = mode

    assert source.load() is UNAVAILABLE  # the model keeps the status it was told

    fresh = source_at(shop.location)  # the hook hands back the same source, and its loader remembers
    assert fresh.load() is UNAVAILABLE and good["state"] == "pr"
    assert sentence(plugin.source.PullRequestStatus(*_args(source)).__call__()) == said


def _args(source):
    loader = source.load
    return loader.checkout, loader.root, loader.settings, loader.api


def test_a_rate_limit_says_until_when_and_nothing_is_asked_before_then(shop, github):
    github.state["mode"] = "rate-limited"
    source = source_at(shop.location)

    first = source.load()
    asked = len(github.requests)
    github.state["mode"] = "ok"
    second = source.load()

    until = time.strftime("%H:%M UTC", time.gmtime(int(time.time()) + 600))
    assert sentence(first) == f"GitHub's API rate limit for this token is used up until {until}"
    assert second == first and len(github.requests) == asked  # not asked again before the reset


def test_a_server_that_hangs_ends_in_the_timeout(shop, github):
    github.state["mode"] = "hang"
    source = source_at(shop.location, {"timeout": 1.0})

    started = time.monotonic()
    value = source.load()
    took = time.monotonic() - started

    assert sentence(value) == "GitHub did not answer within 1 s"
    assert took < 3 and source.timeout > 1.0  # nia's own timeout for the loader is longer: the sentence wins


def test_no_network(shop, github, monkeypatch):
    with FakeGitHub() as gone:
        url = gone.url
    monkeypatch.setenv("NIA_GITHUB_API", url)

    assert sentence(source_at(shop.location).load()) == "GitHub could not be reached (connection refused)"


def test_pagination_of_check_runs_and_review_threads(shop, github):
    from fakegithub import review_thread

    github.state["per_page_max"] = 60
    repo = github.repo()
    repo["check_runs"][SHA] = [check_run(f"job {n:03d}", run_id=n) for n in range(250)]
    repo["threads"]["12"] = [review_thread("a.py", n + 1, "eve", f"c{n}") for n in range(230)]

    value = source_at(shop.location).load()

    assert value["checks"]["total"] == 250 and value["checks"]["complete"]
    assert value["comments"]["unresolved"] == 230 and value["comments"]["complete"]
    pages = [r["path"] for r in github.requests if "check-runs" in r["path"]]
    assert len(pages) == 5 and pages[-1].endswith("page=5")
    assert len([r for r in github.requests if r["path"] == "/graphql"]) == 3


def test_past_five_pages_of_checks_the_text_says_there_are_more(shop, github):
    github.repo()["check_runs"][SHA] = [check_run(f"job {n:03d}", run_id=n) for n in range(600)]
    source = source_at(shop.location)

    text = source.baseline(source.load())

    assert "- Checks on `a1b2c3d`: 500 passed (GitHub lists more than nia read)." in text.splitlines()


def test_a_next_page_on_another_origin_is_not_followed_and_gets_no_token(shop, github):
    github.state["per_page_max"] = 1
    with FakeGitHub() as elsewhere:
        github.state["link_origin"] = elsewhere.url

        value = source_at(shop.location).load()

        assert elsewhere.requests == []
    assert sentence(value) == "GitHub's answer pointed to another server, which nia does not call with your token"


def test_a_redirect_to_another_origin_is_refused_and_gets_no_token(shop, github):
    with FakeGitHub() as elsewhere:
        github.state.update(mode="redirect", redirect_to=elsewhere.url)

        value = source_at(shop.location).load()

        assert elsewhere.requests == []
    assert sentence(value).startswith("GitHub could not be reached (")


# -- the token from gh ------------------------------------------------------------------------


def fake_gh(folder: Path, script: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    gh = folder / "gh"
    gh.write_text("#!/bin/sh\n" + script)
    gh.chmod(0o755)
    return gh


def test_the_token_from_gh_auth_token_run_outside_the_project(shop, github, monkeypatch, tmp_path):
    monkeypatch.delenv("GH_TOKEN")
    log = tmp_path / "gh.log"
    fake_gh(tmp_path / "bin", f'echo "$PWD $*" > {log}\necho {github.state["token"]}\n')
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin")

    value = source_at(shop.location).load()

    assert value["state"] == "pr"
    cwd, args = log.read_text().strip().split(" ", 1)
    assert args == "auth token --hostname github.com" and not cwd.startswith(str(shop.root))


def test_a_gh_inside_the_project_is_never_run(shop, github, monkeypatch, tmp_path):
    monkeypatch.delenv("GH_TOKEN")
    planted = fake_gh(shop.root / "tools", f"touch {tmp_path / 'RAN'}\necho {github.state['token']}\n")
    monkeypatch.setenv("PATH", f"{planted.parent}{os.pathsep}tools{os.pathsep}/usr/bin{os.pathsep}/bin")
    monkeypatch.chdir(shop.root)

    value = source_at(shop.location).load()

    assert sentence(value).startswith("no GitHub token")
    assert not (tmp_path / "RAN").exists()


def test_a_gh_that_hangs_is_killed_at_its_deadline(shop, github, monkeypatch, tmp_path):
    monkeypatch.delenv("GH_TOKEN")
    fake_gh(tmp_path / "bin", f"sleep 30 &\necho $! > {tmp_path / 'child'}\nsleep 30\n")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin")

    started = time.monotonic()
    value = source_at(shop.location).load()

    assert time.monotonic() - started < 6
    assert sentence(value).startswith("no GitHub token")
    child = int((tmp_path / "child").read_text())
    assert ends(child), "gh's own child outlived it: the group was not killed"


def ends(pid: int, seconds: float = 10.0) -> bool:
    """Whether ``pid`` ends within ``seconds`` (a zombie, killed and waiting to be reaped, has ended).

    Woken by the kernel when it ends (a pidfd becomes readable), not by polling.
    """
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        return bool(select.select([fd], [], [], seconds)[0])
    finally:
        os.close(fd)


# -- the token is never printed -------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["ok", "bad-token", "hang"])
def test_the_token_is_never_printed(shop, github, mode):
    token = github.state["token"]
    if mode == "bad-token":
        github.state["token"] = "ghp_other"
    elif mode == "hang":
        github.state["mode"] = "hang"
        shop.configure(NAME, timeout=1.0)
    nia = Path(sys.executable).parent / "nia"
    env = {**os.environ, "GH_TOKEN": token, "NIA_RESIDENT": "0"}

    shown = [
        subprocess.run([nia, *args], cwd=shop.root, env=env, capture_output=True, text=True, timeout=60)
        for args in (["context", "show"], ["--debug", "context", "show"], ["plugins", "list", "--json"])
    ]

    assert all(token not in done.stdout + done.stderr for done in shown)
    assert "GitHub" in shown[0].stdout
    assert repr(plugin.source.tokens.get("github.com", str(shop.root), enterprise=False)) == "Token(source='GH_TOKEN')"
