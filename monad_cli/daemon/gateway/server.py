"""The gateway inside the supervisor: its sessions and their list-changed fan-out.

One `Gateway` per supervisor, on the supervisor's `ToolService`. Each client of `monad mcp
serve` is one `GatewaySession` (`gateway/session.py`): a relay's connection on
`run/gateway.sock` (`gateway/listener.py`) or one `--http` listener (`gateway/http.py`,
shared by its HTTP clients). While any session exists, one task watches the tool service's
signature (exposed tools, deferral, conditions) and tells every session when it changes
(MCP spec, server/tools "List Changed Notification").

The sessions share the `Catalog` (gateway/catalog.py: resources, prompts, log levels) and
`Subscriptions` (gateway/subscriptions.py). The servers' notifications (`on_notification`)
and session renewals (`on_actor_state`) hand their work to the gateway's task group, so a
slow agent never holds a server's session.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc
import mcp_types as types

from monad_cli.core.errors import NotFound
from monad_cli.core.hello import GatewayView
from monad_cli.core.messages import server_not_defined
from monad_cli.core.states import State
from monad_cli.daemon.gateway.catalog import LEVELS, Catalog
from monad_cli.daemon.gateway.search import ToolSearch
from monad_cli.daemon.gateway.session import GatewaySession, GatewayWrappers
from monad_cli.daemon.gateway.subscriptions import Subscriptions
from monad_cli.daemon.gateway.wire import PipeStream, serve_lines
from monad_cli.daemon.trust.service import ToolService

log = logging.getLogger("monad.gateway")
WATCH_POLL_S = 30.0
SINGLE_WAIT_S = 60.0


class Gateway:
    """The gateway's live sessions and the watcher that tells them about tool-set changes
    (`run`, one task for the supervisor's life). Holds no MCP client session (the actors do)
    and reads no definition file."""

    def __init__(self, tools: ToolService, *, scrub: Callable[[str], str], wrappers: GatewayWrappers) -> None:
        self.tools = tools
        self.scrub = scrub
        self.wrappers = wrappers  # what the supervisor installs around each session
        self.sessions: set[GatewaySession] = set()
        self._opened = anyio.Event()
        self.catalog = Catalog(tools.servers, tools.journal, scrub=scrub, spawn=self._spawn)
        self.subscriptions = Subscriptions(self.catalog, spawn=self._spawn)
        self.search = ToolSearch(tools)  # the tool index every session's find_tool shares
        self._tg: anyio.abc.TaskGroup | None = None
        self._early: list[Callable[[], Coroutine[Any, Any, None]]] = []  # spawned before `run` had its task group
        self._clients: dict[str, Any] = {}  # server -> the session its lists came from
        self._from_cache: set[str] = set()  # idle on-demand servers, listed from their cached lists

    def check_view(self, view: GatewayView) -> None:
        """Raises NotFound when `monad mcp serve NAME…` names a server that is not defined."""
        unknown = [n for n in view.servers if n not in self.tools.servers]
        if len(unknown) == 1:  # the closest name, or that names are case-sensitive
            raise NotFound(server_not_defined(unknown[0], self.tools.servers))
        if unknown:
            raise NotFound(f"no server {', '.join(f'`{n}`' for n in unknown)} is defined (see `monad mcp status`)")

    @asynccontextmanager
    async def session(self, view: GatewayView, *, transport: str = "pipe") -> AsyncIterator[GatewaySession]:
        """A new session for `view`, told about changes until the block ends. `transport`:
        `pipe` (a relay's stdio) or `tcp` (HTTP), for telemetry. A per-server session
        (`view.single`) first waits (at most the server's connect timeout) for the server's
        first connection attempt: its serverInfo and instructions are its identity."""
        actor: Any = self.tools.servers.get(view.single) if view.single else None  # the actor itself
        if actor is not None:
            timeout = actor.spec.timeout if actor.spec is not None else SINGLE_WAIT_S
            with anyio.move_on_after(min(timeout, SINGLE_WAIT_S)):
                await actor.first_attempt.wait()
        session = GatewaySession(self.tools, view, scrub=self.scrub, catalog=self.catalog,
                                 subscriptions=self.subscriptions, on_level=self.pass_log_level, spawn=self._spawn,
                                 transport=transport, search=self.search, wrappers=self.wrappers)
        self.sessions.add(session)
        self._opened.set()
        started = time.monotonic()
        try:
            yield session
        finally:
            self.sessions.discard(session)
            session.close()
            self.wrappers.session_ended(transport, time.monotonic() - started)
            if session.features.log_levels:
                self._spawn(self.pass_log_level)

    async def serve_relay(self, stream: anyio.abc.ByteStream | PipeStream, view: GatewayView, *,
                          buffered: bytes = b"") -> None:
        """Serve one relay connection (JSON-RPC lines) until its client closes it."""
        async with self.session(view) as session:
            server, options = session.server, session.server.create_initialization_options()
            try:
                await serve_lines(stream, lambda read, write: server.run(read, write, options),
                                  buffered=buffered, lane=session.direct_lane)
            finally:
                log.info("gateway session served %s", session.calls_summary())

    async def notify_changed(self, kind: str = "tools") -> None:
        for session in list(self.sessions):
            try:
                await session.notify_changed(kind)
            except Exception:
                log.debug("list change for a gone session dropped", exc_info=True)

    # -- what the servers say ------------------------------------------------------------
    def _spawn(self, fn: Any, *args: Any) -> None:
        async def guarded() -> None:
            try:
                await fn(*args)
            except Exception:  # one failed delivery must not end the gateway's task group
                log.exception("gateway: %s failed", getattr(fn, "__name__", fn))

        if self._tg is not None:
            self._tg.start_soon(guarded)
        else:  # the control API serves before `run` starts (daemon/supervisor.py): run it then
            self._early.append(guarded)

    def on_notification(self, actor: Any, message: Any) -> None:
        """A server's notification (from its session's receive task: nothing is awaited here)."""
        root = getattr(message, "root", message)
        if isinstance(root, types.ResourceUpdatedNotification):
            self._spawn(self.subscriptions.updated, actor.name, str(root.params.uri))
        elif isinstance(root, types.ResourceListChangedNotification):
            self.catalog.forget(actor.name, ("resources", "templates"))
            self._spawn(self.notify_changed, "resources")
        elif isinstance(root, types.PromptListChangedNotification):
            self.catalog.forget(actor.name, ("prompts",))
            self._spawn(self.notify_changed, "prompts")
        elif isinstance(root, types.LoggingMessageNotification) and self.sessions:
            for session in list(self.sessions):  # 2026-07-28 requests that asked: before their answer
                session.features.log_to_requests(actor.name, root.params)
            if any(session.features.log_levels for session in self.sessions):
                self._spawn(self._log_message, actor.name, root.params)

    async def _log_message(self, server: str, params: types.LoggingMessageNotificationParams) -> None:
        for session in list(self.sessions):
            try:
                await session.features.log_message(server, params)
            except Exception:
                log.debug("log message for a gone session dropped", exc_info=True)

    def on_actor_state(self, actor: Any) -> None:
        """A server's state changed: a new session (or none) changes what is listed, and a
        new session needs the subscriptions and the log level again. An on-demand server
        going idle or starting again changes nothing listed (its cached lists are shown while
        it is idle; the actor announces lists that differ when it starts)."""
        client = actor.client if actor.live else None
        cached = actor.listed and actor.on_demand()  # idle: shown from its cached lists
        was_cached = actor.name in self._from_cache
        if cached:
            self._from_cache.add(actor.name)
        elif client is not None or actor.state != State.CONNECTING:  # starting: still shown
            self._from_cache.discard(actor.name)
        if self._clients.get(actor.name) is client:
            if was_cached and actor.name not in self._from_cache:  # removed, disabled…: no longer listed
                self._spawn(self.notify_changed, "resources")
                self._spawn(self.notify_changed, "prompts")
            return
        had = self._clients.get(actor.name) is not None
        self._clients[actor.name] = client
        if client is not None:
            self._spawn(self._renewed, actor)
        caps = actor.capabilities
        if client is None and (not had or cached):
            return
        if client is not None and was_cached:
            return
        if had or (caps is not None and caps.resources is not None):
            self._spawn(self.notify_changed, "resources")
        if had or (caps is not None and caps.prompts is not None):
            self._spawn(self.notify_changed, "prompts")

    async def _renewed(self, actor: Any) -> None:
        await self.subscriptions.renewed(actor)
        await self.catalog.pass_log_level(actor)

    async def pass_log_level(self) -> None:
        """The lowest level any agent asked for goes to the servers (gateway/catalog.py)."""
        levels = [lv for s in self.sessions if (lv := s.features.lowest_level())]
        await self.catalog.set_log_level(min(levels, key=LEVELS.index, default=None))

    async def run(self) -> None:
        """Watch the exposed tool set while sessions exist and carry the servers'
        notifications to them; never returns (cancel it)."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            for early in self._early:
                tg.start_soon(early)
            self._early.clear()
            try:
                await self._watch()
            finally:
                self._tg = None

    async def _watch(self) -> None:
        since = ""
        while True:
            if not self.sessions:
                self._opened = anyio.Event()
                await self._opened.wait()
                since = self.tools.signature()  # what the new session's first list shows
                continue
            signature = await self.tools.wait_changed(since, WATCH_POLL_S)
            if signature != since:
                log.debug("exposed tool set changed (%s -> %s): telling %d gateway session(s)", since, signature,
                          len(self.sessions))
                await self.notify_changed()
            since = signature


__all__ = ["Gateway"]
