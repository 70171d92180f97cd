"""Recording wrappers around the real store and provider, to see the order of the boundary's steps."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nia_core.providers.echo import EchoProvider
from nia_core.providers.names import ProviderError
from nia_core.sessions import ModelRequest, Reply, Store, ToolCall

WRITES = {"enqueue", "promote", "start_epoch", "admit_update", "append", "move", "set_model", "request_compaction"}


class RecordingStore:
    """Delegates to a real store; logs each write and can run ``before[name]`` just before it (once)."""

    def __init__(self, store: Store, log: list[Any]) -> None:
        self._store = store
        self._log = log
        self.before: dict[str, Callable[[], None]] = {}

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._store, name)
        if name not in WRITES:
            return attr

        def write(*args: Any, **kwargs: Any) -> Any:
            action = self.before.pop(name, None)
            if action is not None:
                action()
            self._log.append(("store", name))
            return attr(*args, **kwargs)

        return write


class RecordingProvider(EchoProvider):
    """The echo provider, logging each request; ``fail`` makes the next sends fail; ``calls`` asks for tools."""

    def __init__(self, log: list[Any]) -> None:
        self.log = log
        self.requests: list[ModelRequest] = []
        self.fail = 0
        self.calls: tuple[ToolCall, ...] = ()

    def send(self, request: ModelRequest, *, stream: Any = None) -> Reply:
        self.log.append(("provider", "send"))
        self.requests.append(request)
        if self.fail:
            self.fail -= 1
            raise ProviderError("connection reset by peer")
        reply = super().send(request, stream=stream)
        if self.calls:
            reply = Reply(reply.text, self.calls, reply.usage)
            self.calls = ()
        return reply
