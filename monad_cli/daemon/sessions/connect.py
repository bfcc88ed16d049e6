"""How an actor reaches its server: the transport for the definition, the bounds it gets,
and what earlier connections to the same definition taught.

- stdio → transports.stdio_transport; http → remote.streamable_http_transport, or
  remote.sse_transport for a legacy HTTP+SSE endpoint (2024-11-05), found by the spec's
  backwards-compatibility procedure (remote.legacy_sse_candidate) or remembered.
- `Learned`: a handshake-era server (up to 2025-11-25) reconnects with `mode="legacy"` (no
  `server/discover` probe), one on legacy SSE straight over SSE; kept per connection
  fingerprint in memory and `run/eras.json` (eras.py). A changed definition forgets it,
  `monad mcp reconnect` only the SSE finding.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

import anyio.abc
from mcp import Client, MCPError
from mcp_types import REQUEST_TIMEOUT, Tool
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from monad_cli.config.schema import ServerSpec
from monad_cli.config.workdir import default_workdir
from monad_cli.core.paths import Paths
from monad_cli.daemon.scrubber import NO_SCRUB, Ingress
from monad_cli.daemon.sessions.eras import EraStore
from monad_cli.daemon.sessions.exchange import Exchange, discover_budget
from monad_cli.daemon.sessions.listings import declared, first_of_each_name
from monad_cli.daemon.sessions.processes import SpawnRecords
from monad_cli.daemon.sessions.remote import sse_transport, streamable_http_transport
from monad_cli.daemon.sessions.spawn import EarlySpawns
from monad_cli.daemon.sessions.stderr import StderrSink
from monad_cli.daemon.sessions.transports import Connection, TransportOptions, stdio_transport
from monad_cli.daemon.sessions.upkeep import ToolRefresh, keep_alive

if TYPE_CHECKING:
    import httpx2

Mode = Literal["auto", "legacy"]


@dataclass
class Learned:
    """What connecting to one definition showed: `legacy` (no 2026-07-28), `sse`; kept in
    `store` too (eras.py: across reconnects and supervisor restarts), when given."""

    fingerprint: str | None = None
    legacy: bool = False
    sse: bool = False
    store: EraStore | None = None

    def for_spec(self, spec: ServerSpec) -> Learned:
        """Itself, forgotten first if `spec` is not the definition it was learned from (then
        what the store remembers of `spec`, if anything)."""
        fingerprint = spec.connection_fingerprint()
        if fingerprint != self.fingerprint:
            self.fingerprint, self.legacy, self.sse = fingerprint, False, False
            recalled = self.store.recall(fingerprint) if self.store is not None else None
            if recalled is not None:
                self.legacy, self.sse = recalled
        return self

    def note(self, protocol_version: str | None, transport: str | None) -> None:
        """After a successful connect: remember the era and the HTTP transport."""
        self.legacy = protocol_version not in MODERN_PROTOCOL_VERSIONS
        self.sse = transport == "sse"
        if self.store is not None and self.fingerprint is not None:
            self.store.remember(self.fingerprint, legacy=self.legacy, sse=self.sse)

    def mode(self, *, over_sse: bool) -> Mode:
        # HTTP+SSE is the 2024-11-05 transport: the modern era is not defined over it.
        return "legacy" if self.legacy or over_sse else "auto"


def transport_for(spec: ServerSpec, conn: Connection, sink: StderrSink, paths: Paths, *,
                  auth: httpx2.Auth | None, over_sse: bool,
                  early: EarlySpawns | None = None, ingress: Ingress = NO_SCRUB) -> AbstractAsyncContextManager[Any]:
    """The transport (an async CM yielding the session's read and write streams), bounded by
    `spec`'s message limit and a `server/discover` budget from its connect timeout, spawning
    in its default working directory, recorded in the spawn records, adopting one of the
    `early` spawns, and every message from the server passing `ingress` first."""
    options = TransportOptions(max_message_bytes=spec.max_message_bytes, discover_budget=discover_budget(spec.timeout),
                               workdir=str(default_workdir(paths, spec.name)), records=SpawnRecords(paths.run_dir),
                               early=early, ingress=ingress)
    if spec.transport == "stdio":
        return stdio_transport(spec, sink, conn, options)
    if over_sse:
        return sse_transport(spec, conn, options, auth=auth)
    return streamable_http_transport(spec, conn, options, auth=auth)


MAX_TOOL_PAGES = 1000


@dataclass
class ToolListing:
    """A server's tools: `left_out`, one reason per item not taken (named); `problem`, why
    the listing itself stopped early (None: it did not)."""

    tools: list[Tool]
    left_out: list[str]
    problem: str | None = None
    # Until when (time.monotonic()) the server says this listing stays fresh: the listing's
    # start + the least `ttlMs` of its pages (2026-07-28 CacheableResult; 0, immediately
    # stale, when absent or on a legacy session).
    fresh_until: float = 0.0

    def problems(self) -> str | None:
        """Everything worth a `degraded` state, as one reason (None: nothing)."""
        return "; ".join([*self.left_out, *([self.problem] if self.problem else [])]) or None


async def list_all_tools(client: Client, exchange: Exchange | None = None) -> ToolListing:
    """Every page of tools/list, or none for a server that did not declare `tools` (it
    connects with 0 tools: MCP spec, basic/lifecycle "Capability Negotiation"). Items the
    transport's sieve took out (`exchange.left_out`) and later copies of a repeated name are
    left out, each with a reason; a repeated cursor ends the listing with a problem."""
    if exchange is not None:
        exchange.version = client.protocol_version
        exchange.left_out.clear()
    if not declared(client.server_capabilities, "tools"):
        return ToolListing([], [], fresh_until=math.inf)  # nothing to list, ever
    tools: list[Tool] = []
    seen: set[str] = set()
    cursor: str | None = None
    problems: list[str] = []
    started, ttl_ms = time.monotonic(), math.inf
    for _ in range(MAX_TOOL_PAGES):
        result = await client.list_tools(cursor=cursor)
        tools.extend(result.tools)
        ttl_ms = min(ttl_ms, result.ttl_ms if client.protocol_version in MODERN_PROTOCOL_VERSIONS else 0)
        cursor = result.next_cursor
        if cursor is None:
            break
        if cursor in seen:
            problems.append(f"tools/list repeated cursor {cursor[:40]!r}; stopped after {len(seen) + 1} pages")
            break
        seen.add(cursor)
    else:
        problems.append(f"tools/list did not end after {MAX_TOOL_PAGES} pages")
    tools, repeated = first_of_each_name(tools)
    left_out = (list(exchange.left_out) if exchange is not None else []) + repeated
    if exchange is not None:
        exchange.left_out.clear()
    return ToolListing(tools, left_out, "; ".join(problems) or None, fresh_until=started + ttl_ms / 1000)


async def ping(client: Client) -> None:
    """A liveness check: `ping` (MCP spec, basic/utilities "Ping"), or `server/discover` on
    2026-07-28, where `ping` was removed and discover is the cheap stateless request.
    Raises TimeoutError when the request timed out here (the transport's `server/discover`
    budget answers it locally, exchange.py): that is no answer from the server."""
    try:
        if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
            await client.session.send_discover(client.protocol_version)
        else:
            await client.session.send_ping()
    except MCPError as exc:
        if exc.error.code == REQUEST_TIMEOUT:
            raise TimeoutError(exc.error.message) from None
        raise


def start_upkeep(tg: anyio.abc.TaskGroup, client: Client, conn: Connection, refresh: ToolRefresh, *,
                 on_hung: Callable[[str], None]) -> None:
    """Start a connected session's upkeep in `tg` (the session's task group): the tool
    re-listing worker, the idle-liveness pings (upkeep.py), and a re-listing after a
    restarted remote's new session (remote.SessionKeeper), which may list other tools."""
    tg.start_soon(refresh.run)
    keeper = conn.extra.get("keeper")
    if keeper is not None:
        keeper.on_reinitialized = lambda: refresh.request(announced=False)
    exchange = conn.exchange
    if exchange is not None:
        tg.start_soon(partial(keep_alive, partial(ping, client),
                              idle_for=lambda: time.monotonic() - exchange.last_received,
                              busy=exchange.calls_waiting, on_hung=on_hung,
                              gone=(lambda: conn.unreachable) if keeper is not None else None))
