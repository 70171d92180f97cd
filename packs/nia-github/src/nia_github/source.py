"""The ``github/pull-request`` source: its loader, which never raises and never blocks a session.

What the loader returns, by what happened:

- GitHub answered: the value (no pull request is a value too).
- A *lasting* problem (no token, a refused token, no such repository): a
  value that says so in one sentence, so a session's first prompt is not
  blocked waiting for something that will not come.
- A *passing* problem (no network, GitHub slow or down, a rate limit): the
  model keeps what it was last told (``UNAVAILABLE``) if this process told it
  something; otherwise the sentence, as above. After a rate limit, GitHub is
  not asked again before the time it named.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from nia_core import UNAVAILABLE
from nia_core.http import Deadline

from nia_github.client import ApiError, Client, Etags
from nia_github.observe import observe
from nia_github.render import problem_sentence
from nia_github.repository import Checkout, current_branch, read_config, target
from nia_github.settings import Api, Settings
from nia_github.token import Tokens

NO_TOKEN = "no GitHub token: set GH_TOKEN or GITHUB_TOKEN, or log in with `gh auth login`"

tokens = Tokens()
etags = Etags()


class PullRequestStatus:
    """The loader of one checkout: reads the branch from ``.git``, then asks GitHub about its pull request."""

    def __init__(self, checkout: Checkout, root: str, settings: Settings, api: Api) -> None:
        self.checkout, self.root, self.settings, self.api = checkout, root, settings, api
        self._lock = threading.Lock()
        self.told: dict[str, Any] | None = None
        """The last value GitHub's answers made (what the model was most likely told)."""
        self.quiet_until = 0.0
        self.quiet_reason = ""
        self.requests = 0

    def __call__(self) -> Any:
        with self._lock:  # nia runs one load of a source at a time; a caller of its own may not
            return self._observe()

    def _observe(self) -> Any:
        branch = current_branch(self.checkout)
        if branch is None:
            return {"state": "detached"}
        where = target(read_config(self.checkout), branch, self.api.host)
        if where is None:
            return {"state": "untracked", "branch": branch, "host": self.api.host}
        repo = where.base.full_name
        if time.time() < self.quiet_until:
            return self._problem(branch, repo, self.quiet_reason, lasting=False)
        token = tokens.get(self.api.host, self.root, enterprise=self.api.enterprise)
        if token is None:
            return self._problem(branch, repo, NO_TOKEN, lasting=True)
        deadline = Deadline(self.settings.timeout)
        client = Client(self.api.url, token, deadline, etags, read_timeout=self.settings.timeout)
        try:
            value = observe(client, where)
        except ApiError as exc:
            if "refused the token" in exc.sentence:
                tokens.refused(self.api.host)
            if exc.until is not None:
                self.quiet_until, self.quiet_reason = exc.until, exc.sentence
            return self._problem(branch, repo, exc.sentence, lasting=exc.lasting)
        finally:
            self.requests += client.requests
        self.told = value
        return value

    def _problem(self, branch: str, repo: str, sentence: str, *, lasting: bool) -> Any:
        if (
            not lasting
            and self.told is not None
            and self.told.get("branch") == branch
            and self.told.get("repo") == repo
        ):
            return UNAVAILABLE  # the model keeps the status it has; the next observation tries again
        return {"state": "problem", "branch": branch, "repo": repo, "problem": problem_sentence(sentence)}
