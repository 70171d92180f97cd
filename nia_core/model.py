"""What one model call is: the durable messages, the request, the reply, and the provider that answers.

The store persists these messages, the boundary appends them, the providers
lower them to a wire format. They live here, below ``sessions`` and
``providers``, so that neither of those packages has to import the other.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from nia_core.errors import NiaError, UsageError

MessageKind = Literal["user", "assistant", "tool_result", "system_update", "summary"]
MESSAGE_KINDS: tuple[MessageKind, ...] = ("user", "assistant", "tool_result", "system_update", "summary")


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Message:
    """One entry of the durable history.

    - ``user``: user input (``text``).
    - ``assistant``: the model's reply; ``tool_calls`` when it asked for tools.
    - ``tool_result``: the settled result of one tool call (``tool_call_id``).
    - ``system_update``: a mid-conversation system message (the combined text).
    - ``summary``: a compaction summary that stands for earlier history.
    """

    kind: MessageKind
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    is_error: bool = False
    seq: int | None = None
    """Position in the session's durable history (assigned by the store)."""
    epoch: int | None = None
    """The context epoch it was appended in (assigned by the store)."""
    refused: bool = False
    """An ``assistant`` reply the provider marked as a refusal that resets the turn: the projection
    leaves it, and the user input it answered, out of every later request."""


def tool_calls_json(calls: tuple[ToolCall, ...]) -> list[dict[str, Any]]:
    return [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in calls]


def message_content(message: Message) -> dict[str, Any]:
    """A message's content as JSON-ready data, the one way: what the store keeps and ``--json`` shows.

    ``text`` always; ``tool_calls``, ``tool_call_id`` and ``is_error`` only when set.
    """
    content: dict[str, Any] = {"text": message.text}
    if message.tool_calls:
        content["tool_calls"] = tool_calls_json(message.tool_calls)
    if message.tool_call_id is not None:
        content["tool_call_id"] = message.tool_call_id
    if message.is_error:
        content["is_error"] = True
    return content


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
