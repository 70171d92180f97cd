"""What one model call is: the request, the reply, and the provider that answers.

A session's turn builds the request from its durable messages
(:mod:`nia_core.message`), the providers lower it to a wire format. These live
here, below ``sessions`` and ``providers``, so that neither of those packages
has to import the other; a door without a model call (the agent hooks) never
imports this module.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from nia_core.errors import NiaError, UsageError
from nia_core.message import MESSAGE_KINDS as MESSAGE_KINDS
from nia_core.message import Message as Message
from nia_core.message import MessageKind as MessageKind
from nia_core.message import ToolCall as ToolCall
from nia_core.message import message_content as message_content
from nia_core.message import tool_calls_json as tool_calls_json


@dataclass(frozen=True)
class ModelRequest:
    """Everything a provider needs for one call: the epoch's baseline and projected history."""

    session_id: str
    model: str
    """``PROVIDER/MODEL``, e.g. ``anthropic-messages/claude-sonnet-4-5``."""
    baseline: str
    messages: tuple[Message, ...]


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0


@dataclass(frozen=True)
class Reply:
    """What a provider answered."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage | None = None
    """Token usage as the provider reported it; ``None`` when it reported none (the reply is then unpriced)."""
    raw: dict[str, Any] | None = None
    stop_reason: str | None = None
    """Why the model stopped, as the provider says it (``end_turn``, ``stop``, ``refusal``, ...)."""
    refusal: bool = False
    """The model declined to answer (OpenAI's ``refusal``, Anthropic's ``stop_reason: "refusal"``)."""
    resets_turn: bool = False
    """The provider requires the refused input to be left out of later requests (Anthropic)."""
    undeclared_calls: tuple[str, ...] = ()
    """Ids of tool calls naming a tool the request did not declare: nothing can run them, so the
    session answers each as not run (a provider that declares no tools lists every call here)."""
    cut_calls: tuple[str, ...] = ()
    """Ids of tool calls the output token limit cut off before their input was whole: their
    ``arguments`` hold what arrived, and the session answers each as not run."""


DEFAULT_MODEL = "echo/echo"

# -- the built-in providers --------------------------------------------------------
# One table: every place that needs a built-in provider by name (the lookup, the
# configurable ``[providers.NAME]`` tables, aliases, the session's owed answers,
# ``nia models``) reads it, so a new built-in is one row here plus its module.
# Classes are named as ``module:Class``: reading the table imports no provider.


@dataclass(frozen=True)
class BuiltinProvider:
    """One built-in provider, as nia knows it by name."""

    name: str
    """``NAME`` of ``NAME/MODEL``; taken, so no plugin's provider can use it."""
    implementation: str
    """``module:Class``, imported when a session first uses the provider."""
    alias: str | None = None
    """A short name people type (``openai/gpt-4o``); a session stores the full one."""
    declares_tools: bool = True
    """Whether nia's requests to it declare tools: when not, every tool call in its replies is undeclared."""

    def load(self) -> type[Provider]:
        module, _, attribute = self.implementation.partition(":")
        cls: type[Provider] = getattr(importlib.import_module(module), attribute)
        return cls


BUILTIN_PROVIDERS = (
    BuiltinProvider("echo", "nia_core.providers.echo:EchoProvider"),
    BuiltinProvider(
        "openai-chat", "nia_core.providers.openai_chat:OpenAIChatProvider", alias="openai", declares_tools=False
    ),
    BuiltinProvider(
        "anthropic-messages",
        "nia_core.providers.anthropic_messages:AnthropicMessagesProvider",
        alias="anthropic",
        declares_tools=False,
    ),
)
"""Every built-in provider (``nia models`` lists them with the plugins' ones)."""

TOOLLESS_PROVIDERS = frozenset(p.name for p in BUILTIN_PROVIDERS if not p.declares_tools)
"""Built-in providers whose requests declare no tool (nia sends no ``tools``): every call in their replies
is undeclared, whatever the stored record says."""

StreamCallback = Callable[[str], None]


class ProviderError(NiaError):
    """A provider call failed (network, auth, bad response); the message says which and why."""


@runtime_checkable
class Provider(Protocol):
    name: str

    def lower(self, request: ModelRequest) -> dict[str, Any]:
        """The request body, deterministic for the same request."""
        ...

    def send(self, request: ModelRequest, *, stream: StreamCallback | None = None) -> Reply:
        """Call the model; raise :class:`ProviderError` on failure."""
        ...


def split_model(model: str) -> tuple[str, str]:
    """``("anthropic-messages", "claude-sonnet-4-5")`` from ``anthropic-messages/claude-sonnet-4-5``."""
    provider, sep, name = model.partition("/")
    if not sep or not provider or not name:
        raise UsageError(f"model must be PROVIDER/MODEL (for example {DEFAULT_MODEL}), got {model!r}")
    return provider, name
