"""One gateway client's MCP server inside the supervisor (a `GatewaySession`).

Every client of `monad mcp serve` gets its own session: its own `mcp.server.Server` (the
SDK's lowlevel server, ~25 µs to build), its view (`GatewayView`: facts, environment names,
server filter, approval timeout), its `load_tools` loads and its list-changed delivery.
Every call goes through the supervisor's `ToolService`: the approval gate and journal rows
(`via: gateway`) of `monad mcp call`.

- tools/list: what `gateway/policy.py` lets this view see (never a tool a tool filter
  hides; conditions evaluated on every list and call), plus the meta-tools, in pages;
- tools/call (`call`: the SDK's handler and the stdio direct lane, `gateway/direct.py`): a
  refusal or an upstream failure is a tool error (`isError: true`), an unknown tool -32602
  (MCP spec, server/tools "Error Handling"); progress is relayed under the caller's token
  (basic/utilities/progress); cancelling the request cancels the upstream call;
- list changes reach its `subscriptions/listen` streams and handshake-era connections alike;
- resources, prompts, completion and logging: `gateway/features.py`, over the `Catalog`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from monad_cli import __version__
from monad_cli.core.errors import MonadError, NotFound, ToolCallFailed
from monad_cli.core.hello import GatewayView
from monad_cli.core.states import State
from monad_cli.daemon.gateway.budget import SCHEME, ResultStore, cut
from monad_cli.daemon.gateway.catalog import Catalog, quiet_deprecated
from monad_cli.daemon.gateway.direct import DirectCalls, LaneCall, LaneHandler
from monad_cli.daemon.gateway.features import AgentRequest, RequestLog, SessionFeatures, asking, connection_of
from monad_cli.daemon.gateway.meta import agent_meta
from monad_cli.daemon.gateway.paging import page
from monad_cli.daemon.gateway.policy import (
    LOAD_TOOLS,
    LoadedTools,
    check_call,
    load_tools,
    load_tools_tool,
    offers_load_tools,
    server_available,
    visible_tools,
)
from monad_cli.daemon.gateway.questions import AgentQuestions
from monad_cli.daemon.gateway.rounds import Round, Rounds
from monad_cli.daemon.gateway.search import (
    CALL_TOOL,
    FIND_TOOL,
    FoundTools,
    ToolSearch,
    call_tool_tool,
    estimate_tokens,
    find_tool_tool,
    query_arguments,
)
from monad_cli.daemon.gateway.subscriptions import Subscriptions
from monad_cli.daemon.sessions.reasons import describe, leaf_exceptions
from monad_cli.daemon.trust.call import ToolCall
from monad_cli.daemon.trust.inputs import Caller
from monad_cli.daemon.trust.servers import ProgressFn
from monad_cli.daemon.trust.service import ToolService

log = logging.getLogger("monad.gateway")
# What `ToolService.call` adds to a CallToolResult, and the listing's own keys.
_OUR_KEYS = frozenset({"callId", "server", "tool", "name", "decidedBy", "serverStderr"})
_ROW_KEYS = frozenset({"server", "tool", "autoApproved", "deferred", "condition"})
# The tools the gateway lists itself (tool search's and deferred loading's meta-tools).
GATEWAY_TOOLS = frozenset({FIND_TOOL, CALL_TOOL, LOAD_TOOLS})


class GatewayServer(Server[Any]):
    """The SDK's lowlevel `Server`, advertising `listChanged: true` (tools, prompts,
    resources) however it is run: the streamable-HTTP manager builds its options with no
    `NotificationOptions` (listChanged false) unless this default says otherwise."""

    def create_initialization_options(self, notification_options: NotificationOptions | None = None,
                                      experimental_capabilities: dict[str, dict[str, Any]] | None = None,
                                      extensions: dict[str, dict[str, Any]] | None = None) -> Any:
        changed = NotificationOptions(tools_changed=True, prompts_changed=True, resources_changed=True)
        return super().create_initialization_options(notification_options or changed,
                                                     experimental_capabilities, extensions)


def _envelope_capabilities(meta: Any) -> Any:
    """The `clientCapabilities` of a 2026-07-28 request's `_meta` envelope, or None."""
    return meta.get(types.CLIENT_CAPABILITIES_META_KEY) if isinstance(meta, dict) else None


def _answers(capabilities: Any) -> bool:
    """Whether a 2026-07-28 agent can answer any question of a server (else its calls run
    in their own request, and a question is refused naming the capability)."""
    return isinstance(capabilities, dict) and any(k in capabilities for k in ("elicitation", "sampling", "roots"))


async def before_initialize(ctx: Any, call_next: Any) -> Any:
    """Server middleware: the SDK refuses a request before `initialize` on a handshake-era
    connection with a bare -32602 "Invalid request parameters"; the agent gets what to do."""
    try:
        return await call_next(ctx)
    except MCPError as e:
        conn = connection_of(ctx) if e.error.code == types.INVALID_PARAMS and not e.error.data else None
        if conn is None or conn.initialize_accepted:
            raise
        raise MCPError(types.INVALID_PARAMS, f"{ctx.method} before initialize: send `initialize` (and "
                                             f"notifications/initialized) first (MCP spec, basic/lifecycle), "
                                             f"or speak 2026-07-28 with the `_meta` envelope on each request",
                       ctx.method) from None


def failures_in_one_line(scrub: Callable[[str], str]) -> Callable[[Any, Any], Awaitable[Any]]:
    """Server middleware: a handler's failure that is not an MCP error becomes one (-32603, one
    scrubbed line: `METHOD failed: WHY`; its traceback in the daemon log only with MONAD_DEBUG),
    where the SDK answers error code 0, which JSON-RPC 2.0 does not define (section 5.1), and
    "unhandled errors in a TaskGroup (1 sub-exception)". A pydantic ValidationError passes:
    the SDK's own answer to bad params (-32602). A server's own error with code 0 (an SDK
    server's answer to its handler's exception) is answered -32603 too, its scrubbed message
    ending `(MCP error 0)`; every other code passes as the server gave it."""
    from pydantic import ValidationError

    async def middleware(ctx: Any, call_next: Any) -> Any:
        try:
            return await call_next(ctx)
        except MCPError as e:
            if e.error.code != 0:
                raise
            raise MCPError(types.INTERNAL_ERROR, scrub(f"{e.error.message} (MCP error 0)")) from None
        except ValidationError:
            raise
        except Exception as e:
            leaf = leaf_exceptions(e)[0]
            said = scrub(f"{ctx.method} failed: {describe(leaf)}")
            log.warning("gateway %s", said, exc_info=leaf if log.isEnabledFor(logging.DEBUG) else None)
            raise MCPError(types.INTERNAL_ERROR, said) from None

    return middleware


@dataclass(frozen=True)
class GatewayWrappers:
    """What cuts across every gateway request, installed by the supervisor (telemetry, when
    on): `lane(handle)` wraps the direct lane's tools/call handler; `middleware(sdk_default,
    transport)` is the SDK path's middleware list (`transport`: `pipe` or `tcp`);
    `session_ended(transport, seconds)` hears each session's end."""

    lane: Callable[[LaneHandler], LaneHandler] = lambda handle: handle
    middleware: Callable[[list[Any], str], list[Any]] = lambda sdk_default, transport: []
    session_ended: Callable[[str, float], None] = lambda transport, seconds: None


# A per-server entry's server in one of these, with no tools to show, is not serving: its
# agent is told so (docs/gateway.md "A server that is not serving").
_NOT_SERVING = frozenset({State.FAILED, State.BACKOFF, State.STOPPED, State.DISABLED, State.NEEDS_AUTH})
_STATE_WORDS = {State.FAILED: "has failed", State.BACKOFF: "is waiting to retry", State.STOPPED: "is stopped",
                State.DISABLED: "is disabled", State.NEEDS_AUTH: "needs authorization"}


def not_serving(actor: Any, scrub: Callable[[str], str]) -> str | None:
    """One line for the agent of `monad mcp serve NAME` when NAME's server is not serving (failed,
    retrying, stopped, disabled or waiting for authorization, and not listed from its cache):
    what it is, why, and what to run. None while it serves, starts, or is idle with its lists
    cached."""
    if actor is None or actor.live or actor.listed or actor.state not in _NOT_SERVING:
        return None
    why = f" ({scrub(actor.reason)})" if actor.reason else ""
    # A disabled server is not reconnected (`reconnect` refuses it): enabling it is the way;
    # one waiting for authorization connects once authorized (or on a call of one of its tools).
    again = (f"`monad mcp enable {actor.name}` turns it on" if actor.state == State.DISABLED
             else f"`monad mcp authorize {actor.name}` authorizes it (a call of one of its tools starts "
                  "that too)" if actor.state == State.NEEDS_AUTH
             else f"`monad mcp reconnect {actor.name}` tries again")
    return (f"server `{actor.name}` {_STATE_WORDS[actor.state]}{why}: its tools are unavailable until it "
            f"connects; `monad mcp status {actor.name}` says why, {again}")


def _text_result(text: str, *, error: bool) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": error}


class GatewaySession:
    """One gateway client: its view, its loads, its `Server` and its list-changed delivery.
    Every call goes through `ToolService.call`; it reads no definition file or secret, and
    answers only the meta-tools itself. `scrub` redacts every error text it returns."""

    def __init__(self, tools: ToolService, view: GatewayView, *, scrub: Callable[[str], str], catalog: Catalog,
                 subscriptions: Subscriptions, on_level: Callable[[], Any], spawn: Callable[..., None],
                 search: ToolSearch, wrappers: GatewayWrappers, transport: str = "pipe") -> None:
        self.tools = tools
        self.wrappers = wrappers
        self.rounds = Rounds(spawn, answer_timeout=view.approval_timeout)
        self.view = view
        self.scrub = scrub
        self.environ = view.environ
        self.loaded = LoadedTools()
        self.search = search  # the gateway's tool index (gateway/search.py)
        self.found = FoundTools()
        self.transport = transport
        self.results = ResultStore() if view.max_result_tokens else None  # the result budget's whole results
        self.bus = InMemorySubscriptionBus()
        self.listen = ListenHandler(self.bus)
        # Its handshake-era connections (features.py `connection_of`), for their notifications.
        self.legacy_connections: weakref.WeakSet[Any] = weakref.WeakSet()
        self.catalog = catalog
        self.single = view.single
        self.subscriptions = subscriptions
        self.features = SessionFeatures(catalog, subscriptions, allowed=self.allowed, single=self.single,
                                        bus=self.bus, listen=self.listen, connections=self.legacy_connections,
                                        on_level=on_level, questions=self.questions, rounds=self.in_rounds)
        f = self.features
        # logging/setLevel is deprecated at 2026-07-28 (SEP-2577), the SDK warns of it; the
        # handshake-era agents that use it are what it is here for.
        identity = self._identity()
        self.server = quiet_deprecated(lambda: GatewayServer(
            **identity, on_list_tools=self.list_tools,
            on_call_tool=self.call_tool, on_subscriptions_listen=f.listen, on_list_resources=f.list_resources,
            on_list_resource_templates=f.list_templates, on_read_resource=self.read_resource,
            on_subscribe_resource=f.subscribe, on_unsubscribe_resource=f.unsubscribe,
            on_list_prompts=f.list_prompts, on_get_prompt=f.get_prompt, on_completion=f.complete,
            on_set_logging_level=f.set_level))
        # The SDK's default middleware opens an OpenTelemetry SERVER span per request, named
        # by the tool the agent sent, listed or not: what wraps the gateway decides
        # (`GatewayWrappers.middleware`; off, emptying the list is the SDK's opt-out).
        self.server.middleware[:] = [*wrappers.middleware(list(self.server.middleware), transport),
                                     before_initialize, failures_in_one_line(scrub)]
        self.lane: DirectCalls | None = None
        self.sdk_calls = 0  # tools/calls the SDK's server handled (the rest: `lane.taken`)

    def _identity(self) -> dict[str, Any]:
        """Who this session's server says it is: monad, or on a per-server entry that
        server's own serverInfo and instructions (as its last session gave them)."""
        actor: Any = self.tools.servers.get(self.single) if self.single else None  # the actor itself
        if actor is None:
            return {"name": "monad", "version": __version__, "title": "monad gateway"}
        info = actor.server_info or {}
        failed = not_serving(actor, self.scrub)  # what the agent (and its MCP panel) shows first
        return {"name": info.get("name") or actor.name, "version": info.get("version") or "",
                "title": info.get("title"), "description": info.get("description"),
                "website_url": info.get("website_url"),
                "instructions": f"monad: {failed}" if failed else actor.instructions}

    def questions(self, ctx: Any, protocol_version: str, *, what: str | None = None, lane: DirectCalls | None = None,
                  round: Round | None = None, capabilities: Any = None,
                  log: RequestLog | None = None) -> AgentQuestions:
        """The handler of a server's questions during this agent request (`ctx`, a direct-lane
        call's `lane`, or a 2026-07-28 call's `round`; gateway/questions.py) about `what` (a
        tool, prompt or URI). A 2026-07-28 request's `capabilities` default to its envelope's,
        which its upstream request carries (sessions/stamp.py). `log`: the request's
        `RequestLog`, which gets its servers' messages."""
        if capabilities is None and ctx is not None and protocol_version in MODERN_PROTOCOL_VERSIONS:
            capabilities = _envelope_capabilities((ctx.params or {}).get("_meta")) or {}
        inputs = AgentQuestions(ctx, self.tools.journal, protocol_version=protocol_version, what=what, lane=lane,
                                round=round, capabilities=capabilities, log=log, timeout=self.view.approval_timeout)
        if log is not None:
            log.about.append(inputs)
        if round is not None:
            round.about.append(inputs)
        return inputs

    async def call_in_rounds(self, name: str, arguments: dict[str, Any] | None, protocol_version: str, *,
                             capabilities: Any, meta: dict[str, Any], request_state: str | None = None,
                             input_responses: dict[str, Any] | None = None,
                             progress: ProgressFn | None = None, log: RequestLog | None = None) -> dict[str, Any]:
        """A 2026-07-28 tools/call whose server may ask the agent something
        (gateway/rounds.py): the result, or an `InputRequiredResult` (wire shape) carrying the
        server's question; a call with `request_state` answers one and goes on. Cancelling
        it while it waits cancels the call."""
        def go(inputs: AgentQuestions) -> Any:
            return self.call(name, arguments, protocol_version, progress=progress, inputs=inputs, meta=meta)

        return await self._next_round(protocol_version, name, capabilities, request_state, input_responses,
                                      "tools/call", log, go)

    async def _next_round(self, version: str, what: str, capabilities: Any, request_state: str | None,
                          responses: dict[str, Any] | None, method: str, log: RequestLog | None,
                          go: Callable[[AgentQuestions], Any]) -> Any:
        """The next answer of the call `request_state` names (`responses` handed to its
        questions), or of a new one running `go(inputs)`, its questions asked in rounds.
        Cancelling it while it waits cancels the call."""
        if request_state is not None:
            r = self.rounds.resume(request_state, responses, method)
            if log is not None:
                log.about += r.about
        else:
            r = self.rounds.start(lambda r: go(self.questions(None, version, what=what, round=r,
                                                              capabilities=capabilities, log=log)), method)
        try:
            return self.rounds.done(r, await r.next())
        except anyio.get_cancelled_exc_class():
            r.scope.cancel()
            raise

    async def in_rounds(self, request: AgentRequest, what: str, ask: Callable[[Caller], Any]) -> Any:
        """A 2026-07-28 `resources/read` or `prompts/get` run in rounds, as tools/call
        (gateway/rounds.py): `ask(caller)` is the upstream request, its questions going to
        `caller.inputs`. Returns its result or an `InputRequiredResult`; None when the request
        is not for rounds (handshake era, or it can answer nothing and sent no `requestState`)."""
        if not request.modern:
            return None
        capabilities = _envelope_capabilities(request.meta)
        if request.request_state is None and not _answers(capabilities):
            return None
        answer = await self._next_round(request.protocol_version, what, capabilities, request.request_state,
                                        request.input_responses, request.method, request.log,
                                        lambda inputs: ask(asking(inputs, request.meta)))
        if isinstance(answer, dict) and answer.get("resultType") == "input_required":
            return types.InputRequiredResult.model_validate(answer)
        return answer

    async def _warm_index(self) -> None:
        await self.search.built(self.view.include_tools, self.view.exclude_tools)

    def allowed(self, server: str) -> bool:
        """Whether this view shows `server` now (its filter and the server's condition)."""
        actor = self.tools.servers.get(server)
        condition = actor.spec.condition if actor is not None and actor.spec is not None else None
        return server_available(server, conditions={server: condition}, facts=self.view.facts,
                                environ=self.environ, server_filter=self.view.server_filter)

    def _policy(self, rows: list[dict[str, Any]]) -> dict[str, Any]:
        """The policy's inputs from `ToolService.listing()` rows, whose `deferred` the service
        decided: exposed names are `[A-Za-z0-9_-]` only, so each is an exact-match glob."""
        by_server: dict[str, list[str]] = {}
        conditions: dict[str, str | None] = {}
        for row in rows:
            by_server.setdefault(row["server"], []).append(row["name"])
            conditions[row["server"]] = row.get("condition")
        return dict(tools_by_server=by_server, deferred_servers=(),
                    deferred_globs=[r["name"] for r in rows if r.get("deferred")], conditions=conditions,
                    facts=self.view.facts, environ=self.environ, server_filter=self.view.server_filter)

    async def list_tools(self, ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        self.features.remember(ctx)
        if self.single is not None and (failed := not_serving(self.tools.servers.get(self.single), self.scrub)):
            # An empty list would look healthy; the error is what an agent's MCP panel shows.
            # Once the server connects, tools/list_changed tells the agent to list again.
            raise MCPError(types.INTERNAL_ERROR, failed)
        rows = self.tools.listing(include=self.view.include_tools, exclude=self.view.exclude_tools)
        policy = self._policy(rows)
        by_server = policy.pop("tools_by_server")
        shown = set(visible_tools(by_server, loaded=self.loaded, **policy))
        listed: list[dict[str, Any]] = [{k: v for k, v in row.items() if k not in _ROW_KEYS}
                                        for row in rows if row["name"] in shown]
        if self._searching(listed):  # tool search: the meta-tools and what this agent's find_tool found
            key = self._finder(ctx)
            found = self.found.of(key, (t["name"] for t in listed)) if key is not None else set()
            listed = [find_tool_tool(), call_tool_tool(), *(t for t in listed if t["name"] in found)]
            self.rounds.spawn(self._warm_index)  # the index built (if it must be) before the first find_tool
        if self.single is not None:  # a per-server entry: the server's own names
            own = {row["name"]: row["tool"] for row in rows}
            listed = [{**t, "name": own.get(t["name"], t["name"])} for t in listed]
        available = {s: names for s, names in by_server.items() if self.allowed(s)}
        if offers_load_tools(available, deferred_servers=(), deferred_globs=policy["deferred_globs"]):
            listed.append(load_tools_tool(available, deferred_servers=(), deferred_globs=policy["deferred_globs"]))
        listed, next_cursor = page("tools/list", listed, params.cursor if params is not None else None)
        # The model, not a dict: it carries the 2026-07-28 cache fields (ttlMs, cacheScope).
        return types.ListToolsResult(tools=[types.Tool.model_validate(t) for t in listed], next_cursor=next_cursor)

    def _searching(self, listed: list[dict[str, Any]]) -> bool:
        """Whether tools/list shows find_tool and call_tool instead of `listed` (the tools
        this view would list): `on`, or `auto` while `listed` passes the threshold."""
        mode = self.view.tool_search
        return mode == "on" or (mode == "auto" and estimate_tokens(listed) > self.view.tool_search_threshold)

    def _finder(self, ctx: Any) -> Any:
        """Whose found tools a request's are (`FoundTools` key): on stdio the session's (one
        agent), on HTTP the agent's handshake-era connection; None for a 2026-07-28 request
        over HTTP, which belongs to no session: what it finds joins no list."""
        if self.transport == "pipe":
            return self
        return connection_of(ctx) if ctx is not None else None

    async def _find_tool(self, arguments: dict[str, Any], ctx: Any = None) -> dict[str, Any]:
        """The `find_tool` meta-tool: the best of the tools this view's plain tools/list would
        show; they join the list of the agent that asked (`_finder`), told by
        `notifications/tools/list_changed` when any is new."""
        try:
            query, limit = query_arguments(arguments)
        except ValueError as e:
            return _text_result(str(e), error=True)
        built = await self.search.built(self.view.include_tools, self.view.exclude_tools)
        policy = self._policy([{"name": n, "server": s, "deferred": d, "condition": c}
                               for n, (s, d, c) in built.meta.items()])
        by_server = policy.pop("tools_by_server")
        shown = set(visible_tools(by_server, loaded=self.loaded, **policy))
        hits = [d for name, _score in built.index.search(query, limit, among=shown)
                if (d := self.search.describe(name)) is not None]
        key = self._finder(ctx)
        changed = key is not None and self.found.add(key, [h["name"] for h in hits])
        if self.single is not None:  # a per-server entry: the server's own names
            own = self.tools.name_map().by_exposed
            hits = [{**h, "name": own[h["name"]].tool} for h in hits]
        # The hits are the servers' listed tools, which the scrubber masked as they arrived
        # (daemon/scrubber.py, the one choke point): nothing to scrub again here.
        structured = {"tools": hits}
        if changed and key is self:  # tell the agent that found them only
            await self.notify_changed()
        elif changed:
            try:
                await key.send_tool_list_changed()
            except Exception:  # noqa: BLE001 - a gone agent: its found tools go with its connection
                log.debug("gateway client gone before its list change")
        return {"content": [{"type": "text", "text": json.dumps(structured, ensure_ascii=False)}],
                "structuredContent": structured, "isError": False}

    async def read_resource(self, ctx: Any, params: types.ReadResourceRequestParams) -> Any:
        """The SDK's resources/read handler: a result the budget kept (`monad://results/…`),
        else the features' read."""
        if self.results is not None and str(params.uri).startswith(SCHEME):
            return self.results.read(str(params.uri))
        return await self.features.read_resource(ctx, params)

    async def _load_tools(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """The `load_tools` meta-tool: local to the session (no upstream call, no approval)."""
        policy = self._policy(self.tools.listing(include=self.view.include_tools, exclude=self.view.exclude_tools))
        try:
            result = load_tools(self.loaded, servers=arguments.get("servers") or [],
                                tools=arguments.get("tools") or [], **policy)
        except ValueError as e:
            return _text_result(str(e), error=True)
        self.loaded = result.loaded
        if result.changed:
            await self.notify_changed()
        failed = not result.added and bool(result.unknown_servers or result.unmatched_globs or result.hidden)
        return _text_result(result.summary(), error=failed)

    def _refusal(self, exposed: str) -> str | None:
        """Why this view may not call `exposed` now (filter or condition), or None. Cheap:
        one name lookup, not the whole listing (this is on every call's path)."""
        server = self.tools.server_of(exposed)
        if server is None:
            # A server in `needs-auth` lists no tools, yet a call of it starts its authorization
            # (trust/authorization.py): only for a server this view may call.
            actor = self.tools.named_server(exposed)
            if actor is None or not actor.needs_authorization:
                return None  # unknown or refused by a pin: the service says which
            server = actor.name
        actor = self.tools.servers.get(server)
        condition = actor.spec.condition if actor is not None and actor.spec is not None else None
        return check_call(exposed, {server: [exposed]}, conditions={server: condition}, facts=self.view.facts,
                          environ=self.environ, server_filter=self.view.server_filter)

    async def call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> Any:
        """The SDK's tools/call handler (every call `gateway/direct.py` does not take)."""
        async with self.features.request_log(ctx) as log:
            return await self._call_tool(ctx, params, log)

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams, log: RequestLog | None) -> Any:
        self.features.remember(ctx)
        self.sdk_calls += 1
        request = AgentRequest.of(ctx, params, log)
        raw_meta, progress = request.meta, None
        if raw_meta is not None and raw_meta.get("progressToken") is not None:
            session = ctx.session

            async def forward(progress: float, total: float | None, message: str | None) -> None:
                # Sent on this request's own channel under the caller's progressToken (a
                # 2026-07-28 call that went on to another round has none left: dropped).
                with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                    await session.report_progress(progress, total, message)  # scrubbed as it arrived

            progress = forward
        if request.modern and (params.request_state is not None or _answers(_envelope_capabilities(raw_meta))):
            answer = await self.call_in_rounds(params.name, params.arguments, ctx.protocol_version,
                                               capabilities=_envelope_capabilities(raw_meta),
                                               request_state=params.request_state,
                                               input_responses=request.input_responses,
                                               progress=progress, log=log, meta=agent_meta(raw_meta))
            if answer.get("resultType") == "input_required":
                return types.InputRequiredResult.model_validate(answer)
            return answer
        # A dict, not a CallToolResult: the SDK validates the wire shape once, on the way out.
        return await self.call(params.name, params.arguments, ctx.protocol_version, progress=progress,
                               inputs=self.questions(ctx, ctx.protocol_version, what=params.name, log=log),
                               meta=agent_meta(raw_meta))

    async def call(self, name: str, arguments: dict[str, Any] | None, protocol_version: str, *,
                   inputs: AgentQuestions, meta: dict[str, Any], progress: ProgressFn | None = None) -> dict[str, Any]:
        """One tools/call of this view at `protocol_version` (the client's): the result as a
        dict in that era's vocabulary. Raises MCPError(-32602) for an unknown tool; every
        other failure is a tool error result (`isError: true`). The server's questions go to
        `inputs`; `meta`: the agent's own `_meta` keys, which the server is sent (gateway/meta.py)."""
        result = await self._call(name, arguments, progress, inputs, meta)
        # `resultType` is 2026-07-28 vocabulary (required there, unknown before); the upstream
        # server's era need not be the client's.
        if protocol_version in MODERN_PROTOCOL_VERSIONS:
            result.setdefault("resultType", "complete")
        else:
            result.pop("resultType", None)
        return result

    async def _call(self, name: str, arguments: dict[str, Any] | None,
                    progress: ProgressFn | None, inputs: AgentQuestions, meta: dict[str, Any]) -> dict[str, Any]:
        if name == LOAD_TOOLS:
            return await self._load_tools(arguments or {})
        if self.view.tool_search != "off" and name in (FIND_TOOL, CALL_TOOL):
            if name == FIND_TOOL:
                return await self._find_tool(arguments or {}, inputs.ctx)
            # call_tool: the named tool's call, down this very path (gate, journal, scrubber).
            inner, inner_arguments = (arguments or {}).get("name"), (arguments or {}).get("arguments")
            if not isinstance(inner, str) or not inner or inner in (FIND_TOOL, CALL_TOOL, LOAD_TOOLS):
                return _text_result("call_tool: `name` must be a tool's name as find_tool gave it", error=True)
            if inner_arguments is not None and not isinstance(inner_arguments, dict):
                return _text_result("call_tool: `arguments` must be an object (the tool's arguments)", error=True)
            try:
                return await self._call(inner, inner_arguments, progress, inputs, meta)
            except MCPError as e:
                if e.error.code != types.INVALID_PARAMS:
                    raise
                # A name call_tool cannot resolve is a bad argument of call_tool, which exists:
                # a tool error the model reads and corrects, not a protocol error it may never see.
                return _text_result(f"call_tool: {e.error.message}; call a name that find_tool gave", error=True)
        if self.single is not None:  # the server's own name -> its exposed name
            exposed = self.tools.name_map().exposed_name(self.single, name)
            actor = self.tools.servers.get(self.single) if exposed is None else None
            # A server waiting for authorization lists nothing to map by: a call names it
            # `server__tool`, which starts its authorization (trust/authorization.py).
            authorizes = actor is not None and actor.needs_authorization
            name = exposed or (f"{self.single}__{name}" if authorizes else name)
            if exposed is None and not authorizes and (failed := not_serving(actor, self.scrub)):
                # An unknown name of a server that is not serving: the agent learns why, not just "no tool".
                raise MCPError(code=types.INVALID_PARAMS, message=f"no tool `{name}`: {failed}")
        inputs.server = self.tools.server_of(name)
        inputs.what = name
        refused = self._refusal(name)
        if refused:
            self.tools.refuse(name, arguments, via="gateway", reason=refused)
            return _text_result(refused, error=True)
        try:
            # The service refuses a hidden tool (with this view's globs), naming the rule.
            call = ToolCall(
                name, arguments, via="gateway", approval={"mode": "wait", "timeout": self.view.approval_timeout},
                progress=progress, inputs=inputs, waiting=self._waiting(progress, inputs),
                capabilities=inputs.client_capabilities(), write_behind=True, include=self.view.include_tools,
                exclude=self.view.exclude_tools, meta=dict(meta))
            data = await self.tools.call(call)
        except NotFound as e:  # no such tool: a protocol error (MCP spec, server/tools "Error Handling")
            raise MCPError(code=types.INVALID_PARAMS, message=self.scrub(e.message)) from None
        except MonadError as e:
            if isinstance(e, ToolCallFailed) and e.rpc_error is not None:
                # The server needs a capability this agent did not declare (its own are what the
                # server saw: sessions/stamp.py): the agent gets the server's -32021 as it is.
                raise MCPError(e.rpc_error["code"], e.rpc_error.get("message", ""), e.rpc_error.get("data")) from None
            # Refusals, invalid arguments and upstream failures are tool errors the model can read.
            return _text_result(self.scrub(e.message), error=True)
        # No stored secret is in it: the server's answer passed the supervisor's scrubber as it
        # arrived (daemon/scrubber.py; docs/atoms.md "Secrets").
        result = {k: v for k, v in data.items() if k not in _OUR_KEYS}
        meta = {k: v for k, v in (result.pop("_meta", None) or {}).items() if k != types.SERVER_INFO_META_KEY}
        if meta:  # the upstream server's own identity is not ours to pass on
            result["_meta"] = meta
        if self.results is not None:  # the result budget (gateway/budget.py); a typed result's structure stays whole
            result = cut(result, self.view.max_result_tokens, self.results,
                         typed=call.tool is not None and call.tool.output_schema is not None)
        return result

    def _waiting(self, progress: ProgressFn | None, inputs: AgentQuestions) -> Callable[[str], Awaitable[None]]:
        """How a call says it waits for a person (docs/gateway.md "A call that waits for
        approval"): notifications/progress under the agent's token (progress 0, the line as
        its message), else a `warning` log message on the request's channel if the agent's
        level lets it (at 2026-07-28 only when the request's `_meta` asked for log messages)."""
        async def tell(line: str) -> None:
            line = self.scrub(line)
            if progress is not None:
                await progress(0.0, None, line)
                return
            threshold = None
            if inputs.lane is not None:  # a relay connection: its one handshake-era connection's level
                threshold = self.features.lowest_level()
            elif inputs.ctx is not None and (conn := connection_of(inputs.ctx)) is not None:
                threshold = self.features.log_levels.get(conn)
            await inputs.tell("warning", line, threshold=threshold)

        return tell

    async def lane_call(self, call: LaneCall, lane: DirectCalls) -> dict[str, Any]:
        """A plain tools/call the stdio direct lane took (`gateway/direct.py`): as the SDK's
        handler runs it, its questions asked on the lane's connection, or in input_required
        rounds for a 2026-07-28 agent that can answer them."""
        modern = call.version in MODERN_PROTOCOL_VERSIONS
        capabilities = _envelope_capabilities(call.meta)
        if modern and _answers(capabilities):
            return await self.call_in_rounds(call.name, call.arguments, call.version, capabilities=capabilities,
                                             meta=call.passed)
        return await self.call(call.name, call.arguments, call.version, meta=call.passed, inputs=self.questions(
            None, call.version, what=call.name, lane=lane, capabilities=(capabilities or {}) if modern else None))

    def direct_lane(self, writer: Any) -> DirectCalls:
        """This session's direct lane for one relay connection (`gateway/direct.py`), its
        calls' handler wrapped by what the supervisor installed (`GatewayWrappers.lane`)."""
        def handle(call: LaneCall) -> Awaitable[dict[str, Any]]:
            return self.lane_call(call, lane)

        lane = self.lane = DirectCalls(self.wrappers.lane(handle), writer.send_line,
                                       server_info=self.server.server_info_stamp,
                                       listed=lambda: bool(self.legacy_connections),
                                       held=writer.unanswered.__contains__)
        return lane

    def calls_summary(self) -> str:
        direct = self.lane.taken if self.lane is not None else 0
        return f"{direct + self.sdk_calls} tools/call ({direct} on the direct lane)"

    async def notify_changed(self, kind: str = "tools") -> None:
        """`kind` ("tools", "resources", "prompts") changed: tell every connection."""
        if kind != "tools":
            await self.features.list_changed(kind)
            return
        await self.bus.publish(ToolsListChanged())
        for conn in list(self.legacy_connections):
            try:
                await conn.send_tool_list_changed()
            except Exception:  # noqa: BLE001 - a gone client must not stop the others
                self.legacy_connections.discard(conn)

    def close(self) -> None:
        """End this session's listen streams (the client is gone)."""
        self.listen.close()


__all__ = ["GATEWAY_TOOLS", "GatewayServer", "GatewaySession"]
