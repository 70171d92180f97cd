"""``[plugins.nia-github]`` and the environment: what may come from the project, and what only from you.

The project's ``.nia/project.toml`` comes with the repository, so it may only
choose how much is shown and how often GitHub is asked (never more often than
every 10 seconds: a cloned repository must not spend your rate limit). Where
the token goes (the API's URL) and which token it is come from your
environment only: a repository that could name the API would receive your
token.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

PLUGIN = "nia-github"
MIN_REFRESH = 10.0


@dataclass(frozen=True)
class Settings:
    refresh: float = 60.0
    """Seconds an answer stands before GitHub is asked again."""
    timeout: float = 5.0
    """Seconds all the requests of one observation may take together."""
    checks: int = 5
    """Check names listed per kind (failing, running, ...); the rest are counted."""
    comments: int = 3
    """Unresolved review comments quoted."""


def _number(config: dict[str, Any], name: str, default: float, least: float, most: float, integer: bool) -> Any:
    value = config.get(name, default)
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or not least <= value <= most:
        what = "a whole number" if integer else "a number of seconds"
        raise ValueError(f"[plugins.{PLUGIN}] {name} must be {what} from {least:g} to {most:g}, not {value!r}")
    return value


def settings_from(config: dict[str, Any]) -> Settings:
    unknown = sorted(set(config) - {"refresh", "timeout", "checks", "comments"})
    if unknown:
        hint = " (the API's URL comes from NIA_GITHUB_API only)" if unknown[0] in ("api", "url", "host") else ""
        raise ValueError(
            f"[plugins.{PLUGIN}] has no setting {unknown[0]!r}{hint} (known: checks, comments, refresh, timeout)"
        )
    refresh = float(_number(config, "refresh", 60.0, MIN_REFRESH, 86400.0, False))
    override = os.environ.get("NIA_GITHUB_REFRESH", "").strip()
    if override:
        try:
            seconds = float(override)
        except ValueError:
            seconds = 0.0
        if not 0 < seconds <= 86400:
            raise ValueError(f"NIA_GITHUB_REFRESH must be a number of seconds above 0, not {override!r}")
        refresh = seconds
    return Settings(
        refresh=refresh,
        timeout=float(_number(config, "timeout", 5.0, 0.5, 60.0, False)),
        checks=int(_number(config, "checks", 5, 0, 100, True)),
        comments=int(_number(config, "comments", 3, 0, 50, True)),
    )


@dataclass(frozen=True)
class Api:
    """Where GitHub is: the web host remotes name, and the REST API's base URL."""

    host: str
    url: str

    @property
    def enterprise(self) -> bool:
        return self.host != "github.com"


def api_from_environment() -> Api:
    """``NIA_GITHUB_HOST`` (default ``github.com``) and ``NIA_GITHUB_API`` (default its API); bad values raise."""
    host = os.environ.get("NIA_GITHUB_HOST", "").strip().lower() or "github.com"
    if not all(ch.isalnum() or ch in ".-:" for ch in host):
        raise ValueError(f"NIA_GITHUB_HOST must be a host name, not {host!r}")
    default = "https://api.github.com" if host == "github.com" else f"https://{host}/api/v3"
    url = os.environ.get("NIA_GITHUB_API", "").strip() or default
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise ValueError("NIA_GITHUB_API must be an http(s) URL with no query, such as https://api.github.com")
    if parts.username or parts.password:
        raise ValueError("NIA_GITHUB_API must not hold a user or password (the token comes from GH_TOKEN)")
    return Api(host, url.rstrip("/"))
