"""The MCP server: nia's sources as resources, its workflows as prompts, its boundary as a tool.

Built on the official SDK's :class:`MCPServer`. Change events go out two ways:
on ``subscriptions/listen`` streams (protocol 2026-07-28, through the SDK's
subscription bus) and, for clients that negotiated an older revision, as
``notifications/resources/updated`` for the URIs a client subscribed to
with ``resources/subscribe`` and ``notifications/{resources,prompts}/list_changed``
to every connected client. Either way one change is one event per URI.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import weakref
from collections.abc import Iterable
from typing import Annotated, Any

import anyio
import mcp_types as types
import pydantic_core
from mcp.server.connection import Connection
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import PromptsListChanged, ResourcesListChanged, ResourceUpdated
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, Field

from nia_core.about import __version__
from nia_core.errors import NiaError
from nia_core.mcp.cursors import Changes, CursorError, Cursors
from nia_core.mcp.limits import ERROR_CHARS, clipped, quoted
from nia_core.mcp.live import Change, LiveContext
from nia_core.mcp.prompts import Prompts
from nia_core.mcp.view import CONTEXT_URI, SOURCE_PREFIX, ContextView

log = logging.getLogger("nia.mcp")

MIME = "text/markdown"
SOURCE_TEMPLATE = SOURCE_PREFIX + "{+key}"
CHANGES_DESCRIPTION = (
    "What changed in nia's system context since `cursor`: the combined update text exactly as a nia "
    "session admits it at a turn boundary (updated sources, new sources, removals), and a new cursor to "
    "pass next time. Without a cursor: the full baseline and a cursor to start from. Cursors survive restarts."
)


class NiaServer(MCPServer):
    """One Location's context served over MCP."""

    def __init__(self, live: LiveContext, cursors: Cursors, prompts: Prompts) -> None:
        super().__init__(
            name="nia",
            title="nia context",
            version=__version__,
            instructions=(
                "nia://context is the system context nia assembles for this project; each nia://source/KEY is "
                "one of its sources. Call context_changes with the cursor it last returned to learn what changed."
            ),
            log_level="WARNING",
            warn_on_duplicate_tools=False,
        )
        self.live = live
        self.cursors = cursors
        self.prompts = prompts
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: Change | None = None
        self._announcing = False
        self._pending_lock = threading.Lock()
        # Per connection (a ServerSession lives for one request): who hears old-style notifications.
        self._legacy: weakref.WeakSet[Connection] = weakref.WeakSet()
        self._subscribed: weakref.WeakKeyDictionary[Connection, set[str]] = weakref.WeakKeyDictionary()
        low = self._lowlevel_server
        low.add_request_handler("resources/subscribe", types.SubscribeRequestParams, self._subscribe)
        low.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, self._unsubscribe)
        low.middleware.append(self._short_errors)
        low.middleware.append(self._track_sessions)
        announce = NotificationOptions(prompts_changed=True, resources_changed=True)
        plain = low.create_initialization_options

        def with_change_notifications(
            notification_options: NotificationOptions | None = None,
            experimental_capabilities: dict[str, dict[str, Any]] | None = None,
            extensions: dict[str, dict[str, Any]] | None = None,
        ) -> Any:
            return plain(notification_options or announce, experimental_capabilities, extensions)

        low.create_initialization_options = with_change_notifications  # type: ignore[method-assign]
        self.add_tool(
            self.context_changes,
            name="context_changes",
            title="What changed in the context",
            description=CHANGES_DESCRIPTION,
            annotations=types.ToolAnnotations(
                read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
            ),
            structured_output=True,
        )
        live.subscribe(self._on_change)

    # -- serving -------------------------------------------------------------------------

    def bind_loop(self) -> None:
        """Remember the event loop change events are delivered on (call from inside it)."""
        self._loop = asyncio.get_running_loop()

    def _on_change(self, change: Change) -> None:
        """Called on the follower thread after each change; hands it to the event loop.

        Changes that arrive while an announcement is still being written (a
        client that does not read its notifications) are merged into one
        pending change, so a slow client costs one change, not one per save.
        """
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        with self._pending_lock:
            self._pending = change if self._pending is None else self._pending.merged(change)
            if self._announcing:
                return
            self._announcing = True
        try:
            asyncio.run_coroutine_threadsafe(self._announce_pending(), loop)
        except RuntimeError:  # the loop is shutting down
            pass

    async def _announce_pending(self) -> None:
        while True:
            with self._pending_lock:
                change, self._pending = self._pending, None
                if change is None:
                    self._announcing = False
                    return
            try:
                await self.announce(change)
            except Exception:  # one failed announcement must not silence the later ones
                log.exception("announcing a change failed")

    async def announce(self, change: Change) -> None:
        """Publish one change: each URI once, then the list changes."""
        bus = self._subscriptions
        for uri in change.uris:
            await bus.publish(ResourceUpdated(uri=uri))
        if change.resources_listed:
            await bus.publish(ResourcesListChanged())
        if change.prompts_listed:
            await bus.publish(PromptsListChanged())
        for connection in list(self._legacy):
            try:
                wanted = self._subscribed.get(connection, set())
                for uri in change.uris:
                    if uri in wanted:
                        await connection.send_resource_updated(uri)
                if change.resources_listed:
                    await connection.send_resource_list_changed()
                if change.prompts_listed:
                    await connection.send_prompt_list_changed()
            except Exception as exc:  # noqa: BLE001 - a client that went away stops hearing, nothing else
                log.debug("dropping a legacy client: %s: %s", type(exc).__name__, exc)
                self._legacy.discard(connection)

    async def _short_errors(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """Every error the client gets is short, whoever raised it: the SDK's own quote the request whole
        (``Unknown tool: NAME``, ``Method not found`` with the method as data)."""
        try:
            result = await call_next(ctx)
        except MCPError as exc:
            error = exc.error
            data = error.data
            if data is not None and len(pydantic_core.to_json(data)) > ERROR_CHARS:
                data = None
            if len(error.message) <= ERROR_CHARS and data is error.data:
                raise
            raise MCPError(error.code, clipped(error.message), data) from None
        if isinstance(result, dict) and result.get("isError") is True and isinstance(result.get("content"), list):
            for item in result["content"]:  # the result in its wire form
                if isinstance(item, dict) and isinstance(item.get("text"), str):
                    item["text"] = clipped(item["text"])
        return result

    async def _track_sessions(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            self._legacy.add(_connection(ctx))
        return await call_next(ctx)

    async def _subscribe(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        uri = str(params.uri)
        self._known(uri)
        connection = _connection(ctx)
        self._legacy.add(connection)
        self._subscribed.setdefault(connection, set()).add(uri)
        return types.EmptyResult()

    async def _unsubscribe(
        self, ctx: ServerRequestContext[Any, Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        self._subscribed.get(_connection(ctx), set()).discard(str(params.uri))
        return types.EmptyResult()

    # -- resources -------------------------------------------------------------------------

    @property
    def view(self) -> ContextView:
        return self.live.view

    def _known(self, uri: str) -> None:
        if uri == CONTEXT_URI:
            return
        if not uri.startswith(SOURCE_PREFIX):
            raise MCPError(
                types.INVALID_PARAMS, f"unknown resource {quoted(uri)}: nia serves {CONTEXT_URI} and {SOURCE_TEMPLATE}"
            )

    async def list_resources(self) -> list[types.Resource]:
        view = self.view
        resources = [
            types.Resource(
                uri=CONTEXT_URI,
                name="context",
                title="nia system context",
                description="The baseline system context as `nia context show` renders it, every source in order.",
                mime_type=MIME,
                size=len(view.baseline.encode()),
            )
        ]
        for state in view.sources.values():
            resources.append(
                types.Resource(
                    uri=state.uri,
                    name=state.key,
                    title=state.key,
                    description=state.description or f"Context source {state.key}",
                    mime_type=MIME,
                    size=len(state.text.encode()) if state.text is not None else None,
                    _meta=_meta(state.plugin, state.status, state.reason),
                )
            )
        return resources

    async def list_resource_templates(self) -> list[types.ResourceTemplate]:
        return [
            types.ResourceTemplate(
                uri_template=SOURCE_TEMPLATE,
                name="source",
                title="nia context source",
                description="One context source by key (see resources/list for the keys).",
                mime_type=MIME,
            )
        ]

    async def read_resource(self, uri: Any, context: Any = None) -> Iterable[ReadResourceContents]:
        uri = str(uri)
        view = self.view
        if uri == CONTEXT_URI:
            unavailable = [key for key, state in view.sources.items() if not state.available]
            meta: dict[str, Any] = {"sources": [key for key in view.sources if view.sources[key].available]}
            if unavailable:
                meta["unavailable"] = unavailable
            return [ReadResourceContents(content=view.baseline, mime_type=MIME, meta=meta)]
        self._known(uri)
        key = uri[len(SOURCE_PREFIX) :]
        state = view.sources.get(key)
        if state is None:
            raise MCPError(
                types.INVALID_PARAMS,
                f"no source {quoted(key)} in this project (it may have been removed)",
            )
        if state.text is None:
            raise MCPError(
                types.INTERNAL_ERROR, state.why(), {"uri": uri, **_meta(state.plugin, state.status, state.reason)}
            )
        return [ReadResourceContents(content=state.text, mime_type=MIME, meta=_meta(state.plugin, state.status, ""))]

    # -- prompts ---------------------------------------------------------------------------

    async def list_prompts(self) -> list[types.Prompt]:
        try:
            workflows = await anyio.to_thread.run_sync(self.prompts.workflows)
        except NiaError as exc:
            raise MCPError(types.INTERNAL_ERROR, str(exc)) from None
        return [
            types.Prompt(
                name=workflow.name,
                title=f"nia {workflow.name}",
                description=workflow.description,
                arguments=[types.PromptArgument(name="input", description=workflow.input_help, required=True)]
                if workflow.takes_input
                else None,
            )
            for workflow in workflows
        ]

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None, context: Any = None
    ) -> types.GetPromptResult:
        try:
            text, description = await anyio.to_thread.run_sync(self.prompts.render, name, arguments or {})
        except NiaError as exc:
            raise MCPError(types.INVALID_PARAMS, str(exc)) from None
        return types.GetPromptResult(
            description=description,
            messages=[types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))],
        )

    # -- the cursor tool -------------------------------------------------------------------

    async def context_changes(
        self,
        cursor: str | None = Field(
            default=None, description="The cursor the last call returned; omit it to start from the baseline."
        ),
    ) -> Annotated[types.CallToolResult, ChangesOutput]:
        """What changed since ``cursor``, as a nia session would have admitted it."""
        try:
            changes: Changes = await anyio.to_thread.run_sync(self.cursors.changes, cursor or None)
        except CursorError as exc:  # a bad cursor, a blocked context: the model reads why
            return types.CallToolResult(content=[types.TextContent(type="text", text=str(exc))], is_error=True)
        except NiaError as exc:  # the store's own errors name its file, outside the project: only the log says
            log.warning("context_changes: %s", exc)
            text = "nia's session store could not answer; the server's log says why"
            return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)
        output = ChangesOutput(
            cursor=changes.cursor, kind=changes.kind, text=changes.text, blocked_on=list(changes.blocked_on)
        )
        if changes.text:
            shown = changes.text
        elif changes.kind == "blocked":
            shown = f"(nothing admitted: a replacement waits for {', '.join(changes.blocked_on)})"
        else:
            shown = "(nothing changed since the cursor)"
        return types.CallToolResult(
            content=[
                types.TextContent(type="text", text=shown),
                types.TextContent(type="text", text=f"cursor: {changes.cursor}"),
            ],
            structured_content=output.model_dump(mode="json"),
        )


class ChangesOutput(BaseModel):
    """The structured result of ``context_changes``."""

    cursor: str = Field(description="Pass it to the next call.")
    kind: str = Field(description="baseline, update, unchanged or blocked")
    text: str = Field(description="The baseline (kind baseline) or the combined update text (kind update).")
    blocked_on: list[str] = Field(default_factory=list, description="Sources a pending replacement waits for.")


def _connection(ctx: ServerRequestContext[Any, Any]) -> Connection:
    """The client's connection: the SDK hands handlers a per-request session around it."""
    return ctx.session._connection  # no public accessor in mcp 2.3


def _meta(plugin: str | None, status: str, reason: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"plugin": plugin, "status": status}
    if reason:
        meta["reason"] = reason
    return meta
