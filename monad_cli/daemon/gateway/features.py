"""One gateway session's MCP handlers besides tools: resources, prompts, completion, logging.

Each answers for the agent's view (server filter, conditions) through the supervisor's
`Catalog` (gateway/catalog.py), which routes to the server and journals reads and gets:

- the listings in pages (gateway/paging.py), each item's server in `_meta["monad/server"]`;
  prompts as `<server>__<prompt>` (per-server mode: the server's own items and names);
- resources/read routed by URI, then by template (-32002 when no server offers it);
  completion/complete to the server owning the prompt or template;
- resources/subscribe (handshake era) and a 2026-07-28 `subscriptions/listen` naming
  resources: one shared upstream subscription per URI (gateway/subscriptions.py);
- logging/setLevel (handshake era): the connection gets each server's `notifications/message`
  at that level or above, `logger` naming the server; a 2026-07-28 request with `_meta`
  `io.modelcontextprotocol/logLevel`, those of the servers it reaches, on its own stream;
- a server's questions during resources/read and prompts/get go to the agent whose request
  it is (gateway/questions.py; at 2026-07-28 in input_required rounds).
"""

from __future__ import annotations

import contextlib
import logging
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import anyio.lowlevel
import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import PromptsListChanged, ResourcesListChanged, ResourceUpdated
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from monad_cli.daemon.gateway.catalog import LEVELS, Catalog, level_at_least, quiet_deprecated
from monad_cli.daemon.gateway.meta import agent_meta
from monad_cli.daemon.gateway.paging import page
from monad_cli.daemon.gateway.subscriptions import Subscriptions
from monad_cli.daemon.trust.inputs import Caller

if TYPE_CHECKING:
    from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler

log = logging.getLogger("monad.gateway")


def connection_of(ctx: Any) -> Any:
    """The per-client Connection of a handshake-era request (None on 2026-07-28): what its
    notifications outside any request go to, and whose end releases its subscriptions.

    The one private reach left on the gateway's side: the runner's `ServerRequestContext`
    has a per-request `session` and no public handle on the per-client `Connection` (the
    SDK's `Context.connection` is not built by the runner), and no public way, however slow,
    sends a notification outside a request or hears of the connection's end. The upstream
    ask: `ServerRequestContext.connection`."""
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return None
    return getattr(ctx.session, "_connection", None)


LOG_QUEUE = 1000  # messages one request's stream may be behind by; more are dropped (the log file has them)


class RequestLog:
    """One 2026-07-28 request that asked for log messages at `level` or above: what it asked
    about (`about`: the `AgentQuestions` of each upstream request it made, which know their
    server) and the queue its response stream is fed from."""

    def __init__(self, level: str) -> None:
        self.level = level
        self.about: list[Any] = []
        self.send, self.receive = anyio.create_memory_object_stream[dict[str, Any]](LOG_QUEUE)

    def servers(self) -> set[str]:
        return {a.server for a in self.about if a.server}


@dataclass
class AgentRequest:
    """One agent's request to an SDK handler (`ctx`: its request context). `meta`: its
    `_meta` (at 2026-07-28 the envelope: what the agent can answer); `request_state`/
    `input_responses` (wire shapes by key): a later input_required round; `log`: its
    `RequestLog` when it asked for log messages (2026-07-28)."""

    method: str
    protocol_version: str
    meta: dict[str, Any] | None = None
    request_state: str | None = None
    input_responses: dict[str, Any] | None = None
    ctx: Any = None
    log: RequestLog | None = None

    @classmethod
    def of(cls, ctx: Any, params: Any, log: RequestLog | None = None) -> AgentRequest:
        """The SDK handler's request (`params`: its typed params)."""
        meta = (ctx.params or {}).get("_meta")
        responses = {k: v.model_dump(by_alias=True, mode="json", exclude_none=True)
                     for k, v in (getattr(params, "input_responses", None) or {}).items()}
        return cls(ctx.method, ctx.protocol_version, meta if isinstance(meta, dict) else None,
                   getattr(params, "request_state", None), responses, ctx=ctx, log=log)

    @property
    def modern(self) -> bool:
        return self.protocol_version in MODERN_PROTOCOL_VERSIONS

    def capabilities(self) -> Any:
        """At 2026-07-28 the envelope's `clientCapabilities` (`{}`: none); before, None (the
        connection's, from `initialize`)."""
        if not self.modern:
            return None
        return (self.meta or {}).get(types.CLIENT_CAPABILITIES_META_KEY) or {}


class SessionFeatures:
    """Resources, prompts, completion and logging for one gateway session. `allowed(server)`:
    whether its view shows the server now; `single`: a per-server session's server (its own
    names, no `_meta` tag), or None; `bus`/`listen`: its 2026-07-28 event bus and
    `subscriptions/listen` handler; `connections`: its handshake-era connections."""

    def __init__(self, catalog: Catalog, subscriptions: Subscriptions, *, allowed: Callable[[str], bool],
                 single: str | None, bus: InMemorySubscriptionBus, listen: ListenHandler,
                 connections: weakref.WeakSet[Any], on_level: Callable[[], Any], questions: Callable[..., Any],
                 rounds: Callable[..., Awaitable[Any]]) -> None:
        self.catalog = catalog
        self.subscriptions = subscriptions
        self.allowed = allowed
        self.single = single
        self.bus = bus
        self._listen = listen
        self.connections = connections
        self.log_levels: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
        self._on_level = on_level
        self.questions = questions
        self.rounds = rounds  # a 2026-07-28 request's input_required rounds (GatewaySession.in_rounds)
        self._subscribed: weakref.WeakSet[Any] = weakref.WeakSet()  # connections holding subscriptions
        self._request_logs: set[RequestLog] = set()  # 2026-07-28 requests in flight that asked for logs

    def _allowed(self, name: str) -> bool:
        return (self.single is None or name == self.single) and self.allowed(name)

    # -- resources -------------------------------------------------------------------------
    # A listing leaves out a server that fails it (catalog.py `_gather`); a per-server entry's
    # one server failing it is an error (-32603, its one line), not a list that looks empty.
    async def list_resources(self, ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        self.remember(ctx)
        items = await self.catalog.resources(self._allowed, tag=self.single is None, strict=self.single is not None)
        items, next_cursor = page("resources/list", items, _cursor(params))
        return types.ListResourcesResult.model_validate({"resources": items, "nextCursor": next_cursor})

    async def list_templates(self, ctx: Any,
                             params: types.PaginatedRequestParams | None) -> types.ListResourceTemplatesResult:
        self.remember(ctx)
        items = await self.catalog.templates(self._allowed, tag=self.single is None, strict=self.single is not None)
        items, next_cursor = page("resources/templates/list", items, _cursor(params))
        return types.ListResourceTemplatesResult.model_validate({"resourceTemplates": items, "nextCursor": next_cursor})

    async def read_resource(self, ctx: Any, params: types.ReadResourceRequestParams) -> Any:
        """The SDK's resources/read handler: routed by the catalog (-32002 when no server
        offers the URI), journaled, the server's questions going to the agent; the result (a
        `ReadResourceResult`, or an `InputRequiredResult` at 2026-07-28)."""
        uri = str(params.uri)
        return await self._ask(ctx, params, uri, lambda caller: self.catalog.read(
            uri, self._allowed, single=self.single, caller=caller))

    async def _ask(self, ctx: Any, params: Any, what: str, upstream: Callable[[Caller], Awaitable[Any]]) -> Any:
        """`upstream(caller)`, the server's questions going to this agent: on the request's
        channel (handshake era), or in input_required rounds (2026-07-28)."""
        self.remember(ctx)
        async with self.request_log(ctx) as log:
            request = AgentRequest.of(ctx, params, log)
            answer = await self.rounds(request, what, upstream)
            if answer is None:
                answer = await upstream(asking(self.questions(ctx, request.protocol_version, what=what,
                                                              capabilities=request.capabilities(), log=log),
                                               request.meta))
            return _without_server_info(answer)

    async def subscribe(self, ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
        conn = self.remember(ctx)
        if conn is None:
            raise MCPError(types.INVALID_REQUEST, "resources/subscribe needs a handshake-era connection")
        uri = str(params.uri)

        async def deliver(uri: str) -> None:
            await conn.notify("notifications/resources/updated", {"uri": uri})

        await self.subscriptions.subscribe(uri, conn, deliver, self._allowed, single=self.single)
        if conn not in self._subscribed:
            self._subscribed.add(conn)
            # The connection's end releases what it subscribed to (the SDK unwinds this stack).
            conn.exit_stack.push_async_callback(self._release, conn)
        return types.EmptyResult()

    async def unsubscribe(self, ctx: Any, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        conn = self.remember(ctx)
        if conn is not None:
            await self.subscriptions.unsubscribe(str(params.uri), conn)
        return types.EmptyResult()

    async def _release(self, key: object) -> None:
        with anyio.CancelScope(shield=True):
            await self.subscriptions.drop_subscriber(key)

    async def _publish_updated(self, uri: str) -> None:
        await self.bus.publish(ResourceUpdated(uri=uri))

    async def listen(self, ctx: Any, params: types.SubscriptionsListenRequestParams) -> types.SubscriptionsListenResult:
        """2026-07-28 `subscriptions/listen`: the resources it names are subscribed upstream
        for as long as the stream lasts (one shared subscription per URI)."""
        key = object()
        for uri in params.notifications.resource_subscriptions or ():
            try:
                await self.subscriptions.subscribe(str(uri), key, self._publish_updated, self._allowed,
                                                   single=self.single)
            except MCPError as e:  # honored, as a subscription to a URI that never changes is
                log.info("listen: not subscribed upstream to %s: %s", self.catalog.scrub(str(uri)), e.error.message)
        try:
            return await self._listen(ctx, params)
        finally:
            await self._release(key)

    # -- prompts and completion --------------------------------------------------------------
    async def list_prompts(self, ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        self.remember(ctx)
        items = await self.catalog.prompts(self._allowed, single=self.single, strict=self.single is not None)
        items, next_cursor = page("prompts/list", items, _cursor(params))
        return types.ListPromptsResult.model_validate({"prompts": items, "nextCursor": next_cursor})

    async def get_prompt(self, ctx: Any, params: types.GetPromptRequestParams) -> Any:
        """The SDK's prompts/get handler, by exposed name (-32602 for a name no server offers),
        as `read_resource` does; the result (a `GetPromptResult` or an `InputRequiredResult`)."""
        return await self._ask(ctx, params, params.name, lambda caller: self.catalog.get_prompt(
            params.name, params.arguments, self._allowed, single=self.single, caller=caller))

    async def complete(self, ctx: Any, params: types.CompleteRequestParams) -> types.CompleteResult:
        """The SDK's completion/complete handler: to the server owning the prompt or template."""
        self.remember(ctx)
        request = AgentRequest.of(ctx, params)
        # No question is relayed during a completion, yet the request is the agent's: a
        # 2026-07-28 server sees the agent's capabilities in it (sessions/stamp.py).
        asker = self.questions(ctx, request.protocol_version, what=params.ref.name if isinstance(
            params.ref, types.PromptReference) else params.ref.uri, capabilities=request.capabilities())
        caller = Caller(capabilities=asker.client_capabilities())
        return await self.catalog.complete(params, self._allowed, single=self.single, caller=caller)

    # -- logging ---------------------------------------------------------------------------------
    async def set_level(self, ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
        conn = self.remember(ctx)
        if conn is not None:
            self.log_levels[conn] = params.level
        await self._on_level()
        return types.EmptyResult()

    def lowest_level(self) -> str | None:
        return min(self.log_levels.values(), key=LEVELS.index, default=None)

    def _log_body(self, server: str, params: types.LoggingMessageNotificationParams) -> dict[str, Any]:
        logger = params.logger
        if self.single is None:  # the merged gateway: the server names the logger
            logger = f"{server}/{logger}" if logger else server
        body: dict[str, Any] = {"level": params.level, "data": params.data}
        if logger:
            body["logger"] = logger
        return body

    def request_log(self, ctx: Any) -> contextlib.AbstractAsyncContextManager[RequestLog | None]:
        """While a 2026-07-28 request that asked for log messages (`_meta`
        `io.modelcontextprotocol/logLevel`, server/utilities/logging) runs: the messages of
        the servers it reaches (`RequestLog.about`), at that level or above, go out on its
        own response stream, and all of them before its answer. Any other request: nothing
        to do (a no-op context, on every read, get and call's path)."""
        meta = (ctx.params or {}).get("_meta") if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS else None
        level = meta.get(types.LOG_LEVEL_META_KEY) if isinstance(meta, dict) else None
        if level not in LEVELS:
            return contextlib.nullcontext()
        return self._request_log(ctx, level)

    @contextlib.asynccontextmanager
    async def _request_log(self, ctx: Any, level: str) -> AsyncIterator[RequestLog | None]:
        sink = RequestLog(level)
        self._request_logs.add(sink)
        session = ctx.session

        async def drain() -> None:
            async for body in sink.receive:
                with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                    await quiet_deprecated(partial(session.send_log_message, body["level"], body["data"],
                                                   body.get("logger")))

        failed: Exception | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(drain)
            try:
                yield sink
            except Exception as e:  # noqa: BLE001 - the request's own error, re-raised as itself (not in a group)
                failed = e
            finally:
                # A message the server sent just before its answer is handled in a task the
                # SDK started before the answer's: one checkpoint lets it land here.
                await anyio.lowlevel.checkpoint()
                self._request_logs.discard(sink)
                sink.send.close()
        if failed is not None:
            raise failed

    def log_to_requests(self, server: str, params: types.LoggingMessageNotificationParams) -> None:
        """A server's log message to this session's 2026-07-28 requests in flight to that server
        that asked for its level (called as the message arrives: nothing is awaited)."""
        if not self._request_logs or not self._allowed(server):
            return
        body = None
        for sink in list(self._request_logs):
            if level_at_least(params.level, sink.level) and server in sink.servers():
                body = body or self._log_body(server, params)
                with contextlib.suppress(anyio.WouldBlock, anyio.ClosedResourceError, anyio.BrokenResourceError):
                    sink.send.send_nowait(body)

    async def log_message(self, server: str, params: types.LoggingMessageNotificationParams) -> None:
        """A server's log message to each connection of this session that asked for its level."""
        if not self.log_levels or not self._allowed(server):
            return
        body = self._log_body(server, params)
        for conn, threshold in list(self.log_levels.items()):
            if level_at_least(params.level, threshold):
                await conn.notify("notifications/message", body)

    # -- list changes --------------------------------------------------------------------------------
    async def list_changed(self, kind: str) -> None:
        """`kind` ("resources" or "prompts") changed: every connection hears of it."""
        await self.bus.publish(ResourcesListChanged() if kind == "resources" else PromptsListChanged())
        method = f"notifications/{kind}/list_changed"
        for conn in list(self.connections):
            await conn.notify(method, None)

    def remember(self, ctx: Any) -> Any:
        """The request's handshake-era connection (None at 2026-07-28), kept for list changes."""
        conn = connection_of(ctx)
        if conn is not None:
            self.connections.add(conn)
        return conn


def asking(questions: Any, meta: Any) -> Caller:
    """The `Caller` of an upstream request whose questions go to `questions` (an
    `AgentQuestions`), with the capabilities its agent declared and the agent's own keys of
    its request's `_meta` (gateway/meta.py)."""
    return Caller(inputs=questions, capabilities=questions.client_capabilities(), meta=agent_meta(meta))


def _cursor(params: types.PaginatedRequestParams | None) -> str | None:
    return params.cursor if params is not None else None


def _without_server_info(result: Any) -> Any:
    """The upstream server's identity stamp is not ours to pass on (the gateway stamps its own)."""
    meta = result.meta
    if meta and types.SERVER_INFO_META_KEY in meta:
        result = result.model_copy(update={"meta": {k: v for k, v in meta.items()
                                                     if k != types.SERVER_INFO_META_KEY} or None})
    return result


__all__ = ["AgentRequest", "RequestLog", "SessionFeatures", "asking", "connection_of"]
