"""Settings of an HTTP provider: ``[providers.NAME]`` in ``.nia/project.toml``, then the environment.

Example::

    [providers.openai-chat]
    base_url = "http://localhost:8000/v1"   # else $OPENAI_BASE_URL, else the public API
    api_key_env = "LOCAL_LLM_KEY"           # which variable holds the key (default OPENAI_API_KEY)
    timeout = 120                           # seconds per socket operation
    deadline = 900                          # seconds for the whole call, retries included
    max_retries = 3                         # on 429, 5xx, timeouts, dropped connections
    max_tokens = 4096

    [providers.openai-chat.models."llama-3*"]
    update_role = "system"                  # this model takes mid-conversation system messages

Keys belong in the environment, not in a file under version control, so
``api_key`` is accepted but ``api_key_env`` is what the docs recommend.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nia_core.http import check_url, redact_url
from nia_core.project.config import project_tables
from nia_core.project.toml import project_root_of, read_toml
from nia_core.providers.lowering import ModelCapabilities, ProviderConfigError, parse_capabilities
from nia_core.providers.transport import OPENAI_MAX_SERVER_WAIT, RetryPolicy

REQUEST_TIMEOUT = 600.0
"""Seconds per socket operation (the official SDKs' default)."""
DEFAULT_DEADLINE = 1800.0
"""Seconds per call: a long streamed reply fits; a server that only sends keep-alives does not hang nia."""

KNOWN_KEYS = frozenset(
    {
        "base_url",
        "api_key",
        "api_key_env",
        "timeout",
        "deadline",
        "max_retries",
        "backoff",
        "max_tokens",
        "models",
        "prices",
    }
)


@dataclass(frozen=True)
class HttpSettings:
    base_url: str
    api_key: str | None = field(repr=False)
    api_key_env: str
    """The variable the key came from (or should come from), for error messages."""
    timeout: float = REQUEST_TIMEOUT
    deadline: float = DEFAULT_DEADLINE
    """Seconds the whole call may take (every attempt and wait), however the server trickles."""
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    max_tokens: int | None = None
    models: tuple[tuple[str, ModelCapabilities], ...] = ()
    """Capability entries from config, in front of the provider's own table."""


@dataclass(frozen=True)
class HttpDefaults:
    """A provider's fallbacks: its environment variables and public endpoint."""

    base_url: str
    base_url_env: str
    api_key_env: str
    max_tokens: int | None = None
    max_server_wait: float | None = OPENAI_MAX_SERVER_WAIT
    """The longest server-requested retry wait the provider's SDK keeps (``None``: any; see :class:`RetryPolicy`)."""


def http_settings(
    name: str,
    table: Mapping[str, Any] | None,
    defaults: HttpDefaults,
    *,
    environ: Mapping[str, str] | None = None,
    where: str = ".nia/project.toml",
) -> HttpSettings:
    """Settings for provider ``name`` from its config ``table`` (may be empty) and ``environ``."""
    env = os.environ if environ is None else environ
    table = table or {}
    prefix = f"{where}: providers.{name}"
    unknown = sorted(set(table) - KNOWN_KEYS)
    if unknown:
        raise ProviderConfigError(f"{prefix}: unknown key {unknown[0]!r} (known: {', '.join(sorted(KNOWN_KEYS))})")

    base_url = _string(table, "base_url", prefix) or env.get(defaults.base_url_env) or defaults.base_url
    try:
        check_url(base_url)
    except ValueError as exc:
        source = f"{prefix}.base_url" if "base_url" in table else f"${defaults.base_url_env}"
        raise ProviderConfigError(
            f"{source} must be an http:// or https:// URL ({exc}), got {redact_url(base_url)!r}"
        ) from None
    key_env = _string(table, "api_key_env", prefix) or defaults.api_key_env
    api_key = _string(table, "api_key", prefix) or env.get(key_env) or None
    if api_key is not None and any(not ch.isprintable() for ch in api_key):
        source = f"{prefix}.api_key" if "api_key" in table else f"${key_env}"
        raise ProviderConfigError(
            f"{source} holds a key with a line break or control character (not shown); an HTTP header cannot carry it"
        )
    timeout = _number(table, "timeout", prefix, REQUEST_TIMEOUT, minimum=0.001)
    deadline = _number(table, "deadline", prefix, DEFAULT_DEADLINE, minimum=0.001)
    max_retries = int(_number(table, "max_retries", prefix, 2, minimum=0, integer=True))
    backoff = _number(table, "backoff", prefix, 0.5, minimum=0)
    max_tokens_default = float(defaults.max_tokens) if defaults.max_tokens is not None else None
    max_tokens = _optional_int(table, "max_tokens", prefix, max_tokens_default)
    models = tuple(parse_capabilities(f"{prefix}.models", table.get("models")))
    return HttpSettings(
        base_url=base_url.rstrip("/"),
        api_key=api_key,
        api_key_env=key_env,
        timeout=timeout,
        deadline=deadline,
        retry=RetryPolicy(max_retries=max_retries, backoff=backoff, max_server_wait=defaults.max_server_wait),
        max_tokens=max_tokens,
        models=models,
    )


def _string(table: Mapping[str, Any], key: str, prefix: str) -> str | None:
    value = table.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ProviderConfigError(f"{prefix}.{key} must be a non-empty string")
    return value


def _number(
    table: Mapping[str, Any], key: str, prefix: str, default: float, *, minimum: float, integer: bool = False
) -> float:
    value = table.get(key, default)
    kind = "an integer" if integer else "a number"
    if isinstance(value, bool) or not isinstance(value, int | float) or (integer and not isinstance(value, int)):
        raise ProviderConfigError(f"{prefix}.{key} must be {kind}, got {value!r}")
    if value < minimum:
        raise ProviderConfigError(f"{prefix}.{key} must be at least {minimum:g}, got {value!r}")
    return float(value)


def _optional_int(table: Mapping[str, Any], key: str, prefix: str, default: float | None) -> int | None:
    if key not in table:
        return int(default) if default is not None else None
    return int(_number(table, key, prefix, 0, minimum=1, integer=True))


def providers_table(project_toml: Path) -> dict[str, dict[str, Any]]:
    """The ``[providers]`` table of a project file: provider name -> its settings table."""
    root = project_root_of(project_toml)  # a project's file: the one cached read of project/config.py
    providers = (project_tables(root) if root is not None else read_toml(project_toml)).get("providers", {})
    if not isinstance(providers, dict):
        raise ProviderConfigError(f"{project_toml}: [providers] must be a table")
    for name, table in providers.items():
        if not isinstance(table, dict):
            raise ProviderConfigError(f"{project_toml}: providers.{name} must be a table")
    return providers
