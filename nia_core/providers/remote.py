"""What the HTTP providers share: settings, the client, and the send loop (plain or streamed)."""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from nia_core.http import redact_url
from nia_core.model import ModelRequest, Reply, StreamCallback, split_model
from nia_core.providers.lowering import CapabilityTable, ModelCapabilities, encode_body, encode_parts
from nia_core.providers.settings import HttpDefaults, HttpSettings, http_settings
from nia_core.providers.transport import Endpoint, HttpClient, HttpError, ServerSentEvent, Sleep


class StreamAssembler(ABC):
    """Builds a :class:`Reply` from a provider's stream events, passing text on as it comes."""

    def __init__(self, endpoint: Endpoint, stream: StreamCallback) -> None:
        self.endpoint = endpoint
        self.stream = stream

    @abstractmethod
    def feed(self, event: ServerSentEvent) -> None: ...

    @abstractmethod
    def reply(self) -> Reply: ...

    def incomplete(self) -> str | None:
        """Once the body has ended: why the stream is not a whole reply by its protocol, ``None`` when it is.

        A stream cut short before anything was delivered is retried; after, it is an error, never a reply.
        """
        return None

    def whole(self) -> bool:
        """Whether the reply is complete already, so nothing after this event is read (``False``: read to the end)."""
        return False


class RemoteProvider(ABC):
    """A provider behind an HTTP API. Subclasses say how to lower, where to send, how to read."""

    name: str
    defaults: HttpDefaults
    builtin_models: CapabilityTable

    def __init__(
        self,
        settings: HttpSettings | None = None,
        *,
        environ: Mapping[str, str] | None = None,
        sleep: Sleep | None = None,
    ) -> None:
        self.settings = settings or http_settings(self.name, {}, self.defaults, environ=environ)
        self.models = self.builtin_models.extended(self.settings.models)
        client_options: dict[str, Any] = {
            "timeout": self.settings.timeout,
            "deadline": self.settings.deadline,
            "retry": self.settings.retry,
        }
        if sleep is not None:
            client_options["sleep"] = sleep
        self.client = HttpClient(**client_options)

    @classmethod
    def from_config(
        cls,
        table: Mapping[str, Any] | None,
        *,
        environ: Mapping[str, str] | None = None,
        where: str = "config",
        sleep: Sleep | None = None,
    ) -> RemoteProvider:
        """The provider configured by its ``[providers.NAME]`` table (may be empty)."""
        settings = http_settings(cls.name, table, cls.defaults, environ=environ, where=where)
        return cls(settings, environ=environ, sleep=sleep)

    def capabilities(self, model: str) -> ModelCapabilities:
        """The capabilities of ``model`` (the part after ``PROVIDER/``)."""
        return self.models.lookup(model)

    def model_name(self, request: ModelRequest) -> str:
        return split_model(request.model)[1]

    @abstractmethod
    def lower(self, request: ModelRequest) -> dict[str, Any]: ...

    @abstractmethod
    def endpoint(self) -> Endpoint: ...

    @abstractmethod
    def streaming_body(self, body: dict[str, Any]) -> dict[str, Any]:
        """The lowered body, asking for a stream."""

    @abstractmethod
    def parse_reply(self, endpoint: Endpoint, obj: dict[str, Any]) -> Reply: ...

    @abstractmethod
    def assembler(self, endpoint: Endpoint, stream: StreamCallback) -> StreamAssembler: ...

    def encode(self, request: ModelRequest) -> bytes:
        """The exact request bytes (without streaming options)."""
        return encode_body(self.lower(request))

    def declared_tools(self, body: dict[str, Any]) -> frozenset[str]:
        """The names of the tools ``body`` declares (``tools``: OpenAI's ``function.name``, Anthropic's ``name``)."""
        names: set[str] = set()
        for tool in body.get("tools") or ():
            if not isinstance(tool, dict):
                continue
            function = tool.get("function")
            name = function.get("name") if isinstance(function, dict) else tool.get("name")
            if isinstance(name, str):
                names.add(name)
        return frozenset(names)

    def send(self, request: ModelRequest, *, stream: StreamCallback | None = None) -> Reply:
        body = self.lower(request)
        endpoint = self.endpoint()
        if stream is None:
            obj = self.client.post_json(endpoint, encode_parts(body))
            reply = _shaped(endpoint, lambda: self.parse_reply(endpoint, obj))
        else:
            assembler = self.assembler(endpoint, stream)

            def feed(event: ServerSentEvent) -> None:
                _shaped(endpoint, lambda: assembler.feed(event))

            self.client.post_stream(
                endpoint, encode_parts(self.streaming_body(body)), feed, assembler.incomplete, assembler.whole
            )
            reply = _shaped(endpoint, assembler.reply)
        declared = self.declared_tools(body)
        undeclared = tuple(call.id for call in reply.tool_calls if call.name not in declared)
        return dataclasses.replace(reply, undeclared_calls=undeclared) if undeclared else reply

    def __repr__(self) -> str:
        return f"{type(self).__name__}({redact_url(self.settings.base_url)!r})"


T = TypeVar("T")


def _shaped(endpoint: Endpoint, read: Callable[[], T]) -> T:
    """Run a reader of the server's JSON; a value of the wrong type anywhere is one clear error, not a crash."""
    try:
        return read()
    except (TypeError, ValueError, AttributeError, KeyError, IndexError, RecursionError) as exc:
        raise HttpError(
            f"{endpoint.label}: invalid response from {endpoint.shown}: a value of an unexpected type "
            f"({type(exc).__name__})"
        ) from None
