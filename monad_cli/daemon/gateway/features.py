"""One gateway session's MCP handlers besides tools: resources, prompts, completion, logging.

Each handler answers for the agent's view (its server filter and the servers' conditions,
as for tools) through the supervisor's `Catalog` (gateway/catalog.py), which routes to the
server and journals reads and gets. What goes back to the agent:

- resources/list, resources/templates/list: every allowed server's, the server named in
  `_meta["monad/server"]` (per-server mode: the server's own items, untouched);
- resources/read: routed by URI, then by template; -32002 when no server offers it;
- resources/subscribe, resources/unsubscribe (handshake era) and a 2026-07-28
  `subscriptions/listen` naming resources: one upstream subscription per URI, shared;
  `notifications/resources/updated` to the connections (or listen streams) that asked;
- prompts/list, prompts/get: `<server>__<prompt>` (per-server mode: the server's names);
- completion/complete: to the server owning the prompt or template;
- logging/setLevel (handshake era): this connection gets each server's
  `notifications/message` at that level or above, `logger` naming the server
  (`server` or `server/logger`);
- list changes of resources and prompts, like tools', reach every connection.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import PromptsListChanged, ResourcesListChanged, ResourceUpdated
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from monad_cli.daemon.gateway.catalog import LEVELS, Catalog, level_at_least
from monad_cli.daemon.gateway.subscriptions import Subscriptions

if TYPE_CHECKING:
    from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler

log = logging.getLogger("monad.gateway")


def connection_of(ctx: Any) -> Any:
    """The per-client Connection of a handshake-era request (None on 2026-07-28).

    `ctx.session` is built per request; the SDK exposes no public handle on the long-lived
    per-client Connection, whose standalone channel carries notifications."""
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return None
    return getattr(ctx.session, "_connection", None)


class SessionFeatures:
    """Resources, prompts, completion and logging for one gateway session.

    `allowed(server)`: whether this session's view shows the server now; `single`: the one
    server of a per-server session (its own names, no `_meta` tag), or None; `bus` and
    `listen`: the session's 2026-07-28 event bus and its `subscriptions/listen` handler;
    `connections`: the session's handshake-era connections (for list changes)."""

    def __init__(self, catalog: Catalog, subscriptions: Subscriptions, *, allowed: Callable[[str], bool],
                 single: str | None,
                 bus: InMemorySubscriptionBus, listen: ListenHandler, connections: weakref.WeakSet[Any],
                 on_level: Callable[[], Any], questions: Callable[..., Any] | None = None,
                 in_rounds: Callable[..., Any] | None = None) -> None:
        self.catalog = catalog
        self.subscriptions = subscriptions
        self.allowed = allowed
        self.single = single
        self.bus = bus
        self._listen = listen
        self.connections = connections
        self.log_levels: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
        self._on_level = on_level
        self.questions = questions or (lambda ctx, version, **about: None)
        self.in_rounds = in_rounds  # a 2026-07-28 request a server asks questions in (GatewaySession's)
        self._subscribed: weakref.WeakSet[Any] = weakref.WeakSet()  # connections holding subscriptions

    def _allowed(self, name: str) -> bool:
        return (self.single is None or name == self.single) and self.allowed(name)

    # -- resources -------------------------------------------------------------------------
    async def list_resources(self, ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        self._remember(ctx)
        items = await self.catalog.resources(self._allowed, tag=self.single is None)
        return types.ListResourcesResult(resources=[types.Resource.model_validate(r) for r in items])

    async def list_templates(self, ctx: Any,
                             params: types.PaginatedRequestParams | None) -> types.ListResourceTemplatesResult:
        self._remember(ctx)
        items = await self.catalog.templates(self._allowed, tag=self.single is None)
        return types.ListResourceTemplatesResult(
            resource_templates=[types.ResourceTemplate.model_validate(t) for t in items])

    async def read_resource(self, ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        self._remember(ctx)
        result = await self.catalog.read(str(params.uri), self._allowed, single=self.single,
                                         inputs=self.questions(ctx, ctx.protocol_version, what=str(params.uri)))
        return _without_server_info(result)

    async def subscribe(self, ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
        conn = self._remember(ctx)
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
        conn = self._remember(ctx)
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
        self._remember(ctx)
        items = await self.catalog.prompts(self._allowed, single=self.single)
        return types.ListPromptsResult(prompts=[types.Prompt.model_validate(p) for p in items])

    async def get_prompt(self, ctx: Any, params: types.GetPromptRequestParams) -> Any:
        """prompts/get; a 2026-07-28 agent gets the server's questions as `input_required`
        rounds, as for tools/call (gateway/rounds.py)."""
        self._remember(ctx)

        async def get(inputs: Any) -> dict[str, Any]:
            result = await self.catalog.get_prompt(params.name, params.arguments, self._allowed,
                                                   single=self.single, inputs=inputs)
            answer: dict[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
            return answer

        answer = await self.in_rounds(ctx, params, params.name, get) if self.in_rounds is not None else None
        if answer is None:
            answer = await get(self.questions(ctx, ctx.protocol_version, what=params.name))
        if answer.get("resultType") == "input_required":
            return types.InputRequiredResult.model_validate(answer)
        return _without_server_info(types.GetPromptResult.model_validate(answer))

    async def complete(self, ctx: Any, params: types.CompleteRequestParams) -> types.CompleteResult:
        self._remember(ctx)
        return await self.catalog.complete(params, self._allowed, single=self.single)

    # -- logging ---------------------------------------------------------------------------------
    async def set_level(self, ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
        conn = self._remember(ctx)
        if conn is not None:
            self.log_levels[conn] = params.level
        await self._on_level()
        return types.EmptyResult()

    def lowest_level(self) -> str | None:
        levels = list(self.log_levels.values())
        return min(levels, key=_rank) if levels else None

    async def log_message(self, server: str, params: types.LoggingMessageNotificationParams) -> None:
        """A server's log message to each connection of this session that asked for its level."""
        if not self._allowed(server):
            return
        logger = server if self.single is None else params.logger
        if self.single is None and params.logger:
            logger = f"{server}/{params.logger}"
        body: dict[str, Any] = {"level": params.level, "data": params.data}
        if logger:
            body["logger"] = logger
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

    def _remember(self, ctx: Any) -> Any:
        conn = connection_of(ctx)
        if conn is not None:
            self.connections.add(conn)
        return conn


def _rank(level: str) -> int:
    return LEVELS.index(level) if level in LEVELS else 0


def _without_server_info(result: Any) -> Any:
    """The upstream server's identity stamp is not ours to pass on (the gateway stamps its own)."""
    meta = result.meta
    if meta and types.SERVER_INFO_META_KEY in meta:
        result = result.model_copy(update={"meta": {k: v for k, v in meta.items()
                                                     if k != types.SERVER_INFO_META_KEY} or None})
    return result


__all__ = ["SessionFeatures", "connection_of"]
