"""One actor task per server: it alone enters and exits the server's `mcp.Client`.

The SDK requires a Client to be entered and exited in the same task (anyio cancel scopes), so
the actor holds `async with Client(...)` open for the life of a session while other tasks use
`actor.client` concurrently. It owns the state machine (states.py), the connect deadline, the
restart policy (backoff.py) and the reasons in `monad mcp status` (reasons.py); what it needs
from around it comes in one `ActorContext`, built once by the supervisor."""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
from mcp import Client
from mcp.client.session import IncomingMessage
from mcp_types import (
    CallToolResult,
    Implementation,
    LoggingMessageNotification,
    ServerCapabilities,
    Tool,
    ToolListChangedNotification,
)

from monad_cli import __version__
from monad_cli.config.schema import ServerSpec
from monad_cli.core.states import LIVE, State, check_transition
from monad_cli.daemon.sessions.backoff import Backoff
from monad_cli.daemon.sessions.connect import Learned, list_all_tools, start_upkeep, transport_for
from monad_cli.daemon.sessions.context import ActorContext
from monad_cli.daemon.sessions.inputs import InputHandler, InputRouter
from monad_cli.daemon.sessions.reasons import classify, describe, explain_closed, explain_timeout
from monad_cli.daemon.sessions.remote import legacy_sse_candidate
from monad_cli.daemon.sessions.status import status_row
from monad_cli.daemon.sessions.stderr import StderrSink
from monad_cli.daemon.sessions.transports import Connection
from monad_cli.daemon.sessions.upkeep import ToolRefresh, listen_for_tool_changes
from monad_cli.daemon.trust.servers import ProgressFn

log = logging.getLogger("monad.actor")
T = TypeVar("T")


class ServerActor:
    """The lifecycle of one server's session; `spec is None`: its definition does not validate.

    Owns the server's one `mcp.Client` (entered and exited in its own task, `run()`), its state
    and reason, its tool list, its stderr log and its restart backoff. Other tasks read `client`,
    `tools`, `state` and call `call_tool`, `update`, `reconnect`, `auth_required` and `stop`.
    It never decides approvals or pins (it asks `ctx.check_pin`), never edits a definition file,
    never opens a browser, and never raises out of `run()` for a server's failure: every
    failure becomes a state and a reason."""

    def __init__(self, name: str, spec: ServerSpec | None, ctx: ActorContext,
                 *, config_error: str | None = None, source: str | None = None) -> None:
        self.name = name
        self.spec = spec
        self.source = spec.source if spec else source
        self.ctx = ctx
        self.config_error = config_error
        self.state = State.STOPPED
        self.reason: str | None = None
        self.since = time.time()
        self.client: Client | None = None
        self.tools: list[Tool] = []
        self.tool_problem: str | None = None
        self.protocol_version: str | None = None
        self.server_info: dict[str, Any] | None = None
        self.conn: Connection | None = None
        self.connected_at: float | None = None
        self.sink = StderrSink(ctx.paths.server_stderr_log(name), scrub=ctx.scrub)
        self.backoff = Backoff()
        self.first_attempt = anyio.Event()
        self.done = anyio.Event()
        self._wake = anyio.Event()
        self._wake_reason: str | None = None
        self._scope: anyio.CancelScope | None = None
        self._tg: anyio.abc.TaskGroup | None = None
        self._auth_reason: str | None = None
        self.inputs = InputRouter(name)
        self._phase = ""
        self._refresh: ToolRefresh | None = None
        self.storm_reason: str | None = None
        self.learned = Learned()
        self.attempt = 0  # connection attempts since the last success (or reset), this one included
        self.last_failure: str | None = None  # why the previous attempt failed, while retrying
        self.retired = False

    # -- control from other tasks ------------------------------------------------------
    def update(self, spec: ServerSpec | None, *, config_error: str | None = None,
               source: str | None = None) -> None:
        """A new definition (or a new config error with no valid definition)."""
        self.spec = spec
        self.config_error = config_error
        self.source = spec.source if spec else source or self.source
        self.backoff.reset()
        self._wakeup("update")

    def auth_required(self, reason: str, *, end_session: bool = True) -> None:
        """The OAuth provider cannot authorize requests any more: end the session and wait in
        `needs-auth` (`end_session=False`, a refused step-up: only a connect failing on it)."""
        self._auth_reason = reason
        if self.live and end_session:  # while connecting, the failed connect carries the reason
            self._wakeup("needs-auth")

    def reconnect(self) -> None:
        """Drop the session and connect again, from scratch: what earlier connections
        taught (a legacy era, a legacy SSE endpoint) is forgotten too."""
        self.backoff.reset()
        self.learned = Learned()
        self._wakeup("reconnect")

    def retire(self) -> None:
        """The definition is gone: no new attempt and no state change but `stopped` (whatever the
        loop was about to do next, such as a `backoff`), so the journal's rows for the server end
        with its removal. A live session stays up until `stop()`, for its tasks' cancellation."""
        self.retired = True

    async def stop(self) -> None:
        if self._scope is not None:
            self._scope.cancel()
            await self.done.wait()

    def _wakeup(self, reason: str) -> None:
        if self._wake_reason is None:
            self._wake_reason = reason
        self._wake.set()

    async def _sleep_until_woken(self, timeout: float = math.inf) -> str | None:
        with anyio.move_on_after(timeout):
            await self._wake.wait()
        reason, self._wake_reason = self._wake_reason, None
        self._wake = anyio.Event()
        return reason

    # -- state -------------------------------------------------------------------------
    def set_state(self, state: State, reason: str | None = None) -> None:
        reason = self.ctx.scrub(reason) if reason else reason
        if state == self.state and reason == self.reason:
            return
        check_transition(self.state, state)
        self.state, self.reason, self.since = state, reason, time.time()
        log.info("server %s: %s%s", self.name, state, f" ({reason})" if reason else "")
        try:
            self.ctx.journal.record("state", server=self.name, state=str(state), reason=reason)
        except Exception:
            # A journal that cannot be written (disk full, locked too long) must not stop
            # the session; the log above still has the change.
            log.exception("journal write failed")
        self.ctx.on_state_changed(self)

    @property
    def live(self) -> bool:
        return self.state in LIVE and self.client is not None

    # -- the task ----------------------------------------------------------------------
    async def run(self) -> None:
        with anyio.CancelScope() as self._scope:
            try:
                await self._loop()
            finally:
                self.first_attempt.set()
                with anyio.CancelScope(shield=True):
                    self.client = None
                    self.set_state(State.STOPPED, "supervisor stopping" if self.ctx.stopping() else "removed")
                self.done.set()

    async def _loop(self) -> None:
        while not self.retired:
            spec = self.spec
            if spec is None:
                self.set_state(State.FAILED, f"config error: {self.config_error}")
                self.first_attempt.set()
                await self._sleep_until_woken()
                continue
            if not spec.enabled:
                self.set_state(State.DISABLED, "enabled = false in its definition")
                self.first_attempt.set()
                await self._sleep_until_woken()
                continue
            filtered = self.ctx.filter_reason(self.name)
            if filtered is not None:
                self.set_state(State.FILTERED, filtered)
                self.first_attempt.set()
                await self._sleep_until_woken()
                continue
            outcome, reason = await self._session(spec)
            self.first_attempt.set()
            if self.retired:
                return
            if outcome in ("update", "reconnect"):
                continue
            if outcome == "needs-auth":
                self.set_state(State.NEEDS_AUTH, reason)
                await self._sleep_until_woken()
                continue
            if outcome == "fatal":
                self.set_state(State.FAILED, reason)
                await self._sleep_until_woken()
                continue
            # "failed" (connect failed) or "closed" (a live session ended)
            self.last_failure = self.ctx.scrub(reason) if reason else reason
            if self.backoff.record_failure(time.monotonic()):
                n = self.backoff.give_up_after
                self.set_state(State.FAILED, f"{reason}; gave up after {n} failures in "
                                             f"{self.backoff.window:.0f} s, run `monad mcp reconnect {self.name}`")
                await self._sleep_until_woken()
                self.backoff.reset()
                continue
            delay = self.backoff.next_delay()
            self.set_state(State.BACKOFF, f"{reason}; retrying in {delay:.1f} s")
            await self._sleep_until_woken(delay)

    def _new_connection(self) -> Connection:
        conn = Connection()  # only a live session's end wakes the actor; a failed connect reports itself
        conn.on_closed = lambda: self._wakeup("closed") if self.client is not None and self.conn is conn else None
        self.conn = conn
        return conn

    async def _session(self, spec: ServerSpec) -> tuple[str, str]:
        """One connection attempt and, if it succeeds, the session until it ends.

        An http URL whose `initialize` POST is refused as a GET-only endpoint refuses it
        is tried again as legacy HTTP+SSE within the same deadline (MCP spec,
        basic/transports "Backwards Compatibility")."""
        conn = self._new_connection()
        self._wake = anyio.Event()
        self._wake_reason = None
        self._auth_reason = None
        self.attempt = self.backoff.consecutive + 1
        what = "starting" if spec.transport == "stdio" else "connecting"
        self.set_state(State.CONNECTING, what if self.attempt == 1 else f"{what} (attempt {self.attempt})")
        self._phase = "starting the server" if spec.transport == "stdio" else "connecting"
        learned = self.learned.for_spec(spec)
        over_sse = spec.transport == "http" and learned.sse
        first: tuple[Exception, Connection] | None = None
        reason: str | None = None
        try:
            with anyio.CancelScope() as deadline:
                deadline.deadline = anyio.current_time() + spec.timeout
                while True:
                    try:
                        reason = await self._run_client(spec, conn, deadline, over_sse=over_sse)
                        break
                    except Exception as exc:
                        if over_sse or spec.transport != "http" or conn.established \
                                or not legacy_sse_candidate(conn):
                            raise
                        first, over_sse = (exc, conn), True
                        conn = self._new_connection()
                        self._phase = "connecting over legacy HTTP+SSE (GET, `endpoint` event)"
            if deadline.cancelled_caught:
                return "failed", explain_timeout(spec, self._phase, self.sink.lines(), conn)
        except Exception as exc:  # noqa: BLE001 - every failure becomes a reason
            self.client = None
            self._tg = None
            if first is not None:  # neither streamable HTTP nor legacy SSE: the first reason tells more
                verdict, text = classify(spec, first[0], "connecting", conn=first[1], auth_reason=self._auth_reason,
                                         stderr=())
                return verdict, f"{text}; a GET did not open a legacy SSE stream either ({describe(exc)})"
            return classify(spec, exc, self._phase, conn=self.conn, auth_reason=self._auth_reason,
                            stderr=self.sink.lines())
        finally:
            self.client = None
            if self._wake_reason == "closed":  # stale: this session is over either way
                self._wake_reason = None
                self._wake = anyio.Event()
            if self.connected_at is not None:
                self.backoff.record_uptime(time.monotonic() - self.connected_at)
                self.connected_at = None
        if reason == "closed":
            return "closed", explain_closed(spec, conn, self.sink.lines())
        if reason == "needs-auth":
            return "needs-auth", self._auth_reason or f"run `monad mcp authorize {self.name}`"
        return reason or "reconnect", reason or "reconnect"

    async def _run_client(self, spec: ServerSpec, conn: Connection, deadline: anyio.CancelScope,
                          *, over_sse: bool) -> str | None:
        """Enter the Client, list the tools, serve the session until woken; the wake reason."""
        transport = transport_for(spec, conn, self.sink, self.ctx.paths, auth=self.ctx.http_auth(spec),
                                  over_sse=over_sse)
        client = Client(transport, mode=self.learned.mode(over_sse=over_sse), cache=None,
                        client_info=Implementation(name="monad", version=__version__),
                        message_handler=self._on_message, extensions=self.ctx.client_extensions(self),
                        elicitation_callback=self.inputs.callback(self.ctx.elicitation_callback(self)),
                        sampling_callback=self.inputs.sampling_callback, list_roots_callback=self.inputs.roots_callback,
                        # 2026-07-28 servers log only within requests that opt in: info and up
                        # reach the server's log file (and agents that asked), as on legacy.
                        log_level="info")
        self._phase = "negotiating the protocol version (server/discover, initialize)"
        async with client:
            self._phase = "listing tools"
            tools, problem = await list_all_tools(client)
            deadline.deadline = math.inf
            self._phase = "connected"
            self.learned.note(client.protocol_version, conn.transport)
            refresh = self._refresh = ToolRefresh(self.refresh_tools, on_storm=self._on_storm)
            self.storm_reason = None
            self._connected(client, tools, problem)
            async with anyio.create_task_group() as tg:
                self._tg = tg
                start_upkeep(tg, client, conn, refresh, on_hung=self._on_hung)
                tg.start_soon(listen_for_tool_changes, client, refresh, self.name)
                reason = await self._sleep_until_woken()
                tg.cancel_scope.cancel()
            # Shutting a session down takes up to seconds (stdin grace); status
            # must not say `connected` meanwhile, and calls must fail fast.
            self.client = None
            self._refresh = None
            self._announce_end(reason)
            self._tg = None
        return reason

    def _on_hung(self, reason: str) -> None:
        if self.conn is not None:
            self.conn.hung = reason
        self._wakeup("closed")

    def _on_storm(self, reason: str | None) -> None:
        self.storm_reason = reason
        if self.client is not None:
            problem = self._problem()
            self.set_state(State.DEGRADED if problem else State.CONNECTED, problem)

    def _problem(self) -> str | None:
        return "; ".join(p for p in (self.tool_problem, self.storm_reason) if p) or None

    def _announce_end(self, reason: str | None) -> None:
        spec = self.spec
        if reason == "update" and (spec is None or not spec.enabled):
            self.set_state(State.DISABLED if spec else State.FAILED,
                           "enabled = false in its definition" if spec else f"config error: {self.config_error}")
        elif reason == "update":
            self.set_state(State.CONNECTING, "reconnecting: its definition changed")
        elif reason == "reconnect":
            self.set_state(State.CONNECTING, "reconnecting")

    def _connected(self, client: Client, tools: list[Tool], problem: str | None) -> None:
        self.client = client
        self.last_failure = None
        self.tools = tools
        self.tool_problem = problem
        self.connected_at = time.monotonic()
        if self.conn is not None:
            self.conn.established = True
        self.protocol_version = client.protocol_version
        if self.conn is not None and self.conn.lane is not None:
            self.conn.lane.attach(client)  # it shares the session's ids
        self.server_info = client.server_info.model_dump(exclude_none=True) if client.server_info else None
        pin_problem = self.ctx.check_pin(self, tools)  # always: it also unblocks
        self.tool_problem = "; ".join(p for p in (problem, pin_problem) if p) or None
        self.ctx.on_tools_changed(self)
        problem = self._problem()
        self.set_state(State.DEGRADED if problem else State.CONNECTED, problem)
        self.first_attempt.set()  # it ended connected (else `_loop` sets it when `_session` returns)
        if self.conn is not None and self.conn.closed:  # died between tools/list and now
            self._wakeup("closed")

    async def refresh_tools(self) -> None:
        client = self.client
        if client is None:
            return
        try:
            tools, problem = await list_all_tools(client)
        except Exception as exc:  # noqa: BLE001
            self.set_state(State.DEGRADED, f"tools/list failed: {describe(exc)}")
            return
        # A changed list meets the pin again: no swapping tools under an approved pin mid-session.
        pin_problem = self.ctx.check_pin(self, tools)
        self.tools = tools
        self.tool_problem = "; ".join(p for p in (problem, pin_problem) if p) or None
        self.ctx.on_tools_changed(self)
        if self.client is not None:
            problem = self._problem()
            self.set_state(State.DEGRADED if problem else State.CONNECTED, problem)

    async def call_tool(self, tool: str, arguments: dict[str, Any] | None, *,
                        progress: ProgressFn | None = None,
                        inputs: InputHandler | None = None) -> CallToolResult:
        """tools/call on this session from any task (the actor task keeps the Client open).

        `tool` is the server's own name. The deadline is `requestTimeoutMs` (unset = none); on
        expiry, or when the caller's scope is cancelled, the server gets notifications/cancelled
        (expiry raises MCPError(-32001)). `progress(progress, total, message)` is awaited per
        notifications/progress (basic/utilities/progress; None asks for none); the server's
        questions go to `inputs` (trust/inputs.py; none: refused). A plain call takes the stdio
        transport's direct lane (supervisor/direct.py), any other the SDK's session. Raises
        MonadError if not connected. Returns `mcp_types.CallToolResult`."""
        from monad_cli.core.errors import MonadError

        client = self.client
        if client is None or not self.live:
            raise MonadError(f"server `{self.name}` is {self.state}"
                             f"{': ' + self.reason if self.reason else ''} (see `monad mcp status {self.name}`)")
        rto = self.spec.request_timeout_ms if self.spec else None
        lane = self.conn.lane if self.conn is not None and progress is None and not rto else None
        with self.inputs.serving(inputs):
            result = await lane.call(tool, arguments, client.protocol_version, self.tools) if lane else None
            return result if result is not None else await client.call_tool(
                tool, arguments, read_timeout_seconds=rto / 1000 if rto else None, progress_callback=progress)

    @property
    def capabilities(self) -> ServerCapabilities | None:
        """What the live session's server declared (None: not connected)."""
        client = self.client
        return client.server_capabilities if client is not None and self.live else None

    @property
    def instructions(self) -> str | None:
        """The live session's `instructions` (initialize / server/discover), or None."""
        client = self.client
        return client.instructions if client is not None and self.live else None

    async def call_through(self, request: Callable[[Client], Awaitable[T]], *,
                           inputs: InputHandler | None = None) -> T:
        """A request other than tools/call on this session from any task (resources/*,
        prompts/*, completion/complete, logging/setLevel: the gateway's, gateway/catalog.py):
        `request(client)` is awaited with the live `mcp.Client`; the server's questions during
        it go to `inputs` (none: refused). Raises MonadError if not connected, and whatever the
        request raises (`mcp.MCPError` when the server fails it)."""
        from monad_cli.core.errors import MonadError

        client = self.client
        if client is None or not self.live:
            raise MonadError(f"server `{self.name}` is {self.state}"
                             f"{': ' + self.reason if self.reason else ''} (see `monad mcp status {self.name}`)")
        with self.inputs.serving(inputs):
            return await request(client)

    async def _on_message(self, message: IncomingMessage) -> None:
        if isinstance(message, ToolListChangedNotification) and self._refresh is not None:
            self._refresh.request()
        if isinstance(message, LoggingMessageNotification):
            # Always in the server's log file, whoever listens (docs/gateway.md "Logging").
            p = message.params
            self.sink.note(f"[notifications/message {p.level}{' ' + p.logger if p.logger else ''}] "
                           f"{p.data if isinstance(p.data, str) else json.dumps(p.data, default=str)}")
        if not isinstance(message, Exception):
            self.ctx.on_notification(self, message)

    # -- status ------------------------------------------------------------------------
    def status(self, *, detail: bool = False) -> dict[str, Any]:
        """The server's row in `monad mcp status` (docs/supervisor.md "Routes")."""
        return status_row(self, detail=detail)
