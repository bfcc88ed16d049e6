"""One actor task per server: it alone enters and exits the server's `mcp.Client`.

The SDK requires a Client to be entered and exited in the same task (anyio cancel scopes), so
the actor holds `async with Client(...)` open for the life of a session while other tasks use
`actor.client` concurrently. It owns the state machine (states.py), the connect deadline and
the restart loop (`run`: backoff.py, reasons.py); what it needs from around it comes in one
`ActorContext`. Its collaborators: the request path (requests.py, `actor.requests`),
on-demand holds (ondemand.py, `actor.demand`), an idle server's lists (idle.py,
`actor.lists`) and its status row (status.py)."""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
from mcp import Client
from mcp.client.session import IncomingMessage
from mcp_types import (
    CallToolResult,
    Implementation,
    LoggingMessageNotification,
    PromptListChangedNotification,
    ResourceListChangedNotification,
    ServerCapabilities,
    Tool,
    ToolListChangedNotification,
)

from monad_cli import __version__
from monad_cli.config.schema import ServerSpec
from monad_cli.config.settings import ServersSection
from monad_cli.config.start import describe_duration
from monad_cli.core.messages import one_line
from monad_cli.core.paths import Paths
from monad_cli.core.states import LIVE, State, check_transition
from monad_cli.daemon.scrubber import NO_SCRUB, Ingress
from monad_cli.daemon.sessions.backoff import Backoff
from monad_cli.daemon.sessions.connect import Learned, ToolListing, list_all_tools, start_upkeep, transport_for
from monad_cli.daemon.sessions.direct import DirectLane
from monad_cli.daemon.sessions.eras import EraStore
from monad_cli.daemon.sessions.idle import IdleLists
from monad_cli.daemon.sessions.inputs import InputRouter
from monad_cli.daemon.sessions.ondemand import Demand
from monad_cli.daemon.sessions.reasons import classify, describe, explain_closed, explain_timeout
from monad_cli.daemon.sessions.remote import legacy_sse_candidate
from monad_cli.daemon.sessions.requests import Requests, Send, SessionRequests
from monad_cli.daemon.sessions.spawn import EarlySpawns
from monad_cli.daemon.sessions.status import status_row
from monad_cli.daemon.sessions.stderr import StderrSink
from monad_cli.daemon.sessions.transports import Connection
from monad_cli.daemon.sessions.upkeep import ToolRefresh, listen_for_tool_changes
from monad_cli.daemon.trust.call import ToolCall
from monad_cli.daemon.trust.inputs import Caller
from monad_cli.journal.db import Journal

if TYPE_CHECKING:
    import httpx2
    from mcp.client import ClientExtension

log = logging.getLogger("monad.actor")
T = TypeVar("T")
# How long a request the session's end failed waits to learn why (`ServerActor.ended_reason`):
# a process that closed its stdout but lives on is stopped first (stdin grace, SIGTERM,
# SIGKILL: about 6 s at most, sessions/transports.py `_stop`).
END_KNOWN_S = 10.0


class SessionEvents:
    """A server's session lifecycle (`ActorContext.events`): an attempt starts (`connecting`)
    and ends (`connected`: `error` None, or the exception's type, `timeout`, `cancelled`), a
    live session ends after `seconds` (`session_ended`: `error` `closed` or `needs-auth` when
    monad did not end it), a retry (`restarting`: `failed` or `closed`). No-ops here;
    telemetry's (daemon/telemetry/wrappers.py) records."""

    def connecting(self, actor: ServerActor) -> None:
        pass

    def connected(self, actor: ServerActor, error: str | None) -> None:
        pass

    def session_ended(self, actor: ServerActor, seconds: float, *, error: str | None) -> None:
        pass

    def restarting(self, actor: ServerActor, why: str) -> None:
        pass


@dataclass(frozen=True)
class ActorContext:
    """Everything an actor uses from its surroundings (as uvicorn hands its protocols a
    `Config` and a `ServerState`, never the `Server`).

    `paths`: where its stderr log goes; `journal`: a `state` row per change; `scrub`: applied
    to every reason; `check_pin(actor, tools)`: why `tools` are refused, or None;
    `filter_reason(name)`: why it is filtered out, or None; `http_auth(spec)`: an http
    server's httpx2 Auth, or None; `client_extensions(actor)` and `elicitation_callback(actor)`:
    `extensions=` and `elicitation_callback=` for its next `mcp.Client` (None: the SDK's
    default, no elicitation); `on_tools_changed`, `on_state_changed`: after a (re)listing and
    a state change; `stopping()`: the supervisor is shutting down (the `stopped` reason says
    so); `early`: the stdio servers spawned before the SDK's import, one of which a first
    connect adopts (spawn.py); `start_defaults()`: `[servers]` of settings.toml (`start`,
    `idleStop`); `busy(actor)`: what holds an on-demand server up besides calls (an open
    Task), or None; `on_notification(actor, notification)`: each notification the server
    sends (an `mcp_types` model), for the gateway's fan-out, in the session's receive task
    (it must not block). Installed by the supervisor for what cuts across sessions
    (telemetry when on): `wrap_requests(actor, requests)` around each request path
    (requests.py), `events` for each lifecycle; `ingress`: what every message from the
    server passes first (the supervisor's scrubber).
    """

    paths: Paths
    journal: Journal
    scrub: Callable[[str], str]
    check_pin: Callable[[ServerActor, list[Tool]], str | None]
    filter_reason: Callable[[str], str | None] = lambda name: None
    http_auth: Callable[[ServerSpec], httpx2.Auth | None] = lambda spec: None
    client_extensions: Callable[[ServerActor], list[ClientExtension] | None] = lambda actor: None
    elicitation_callback: Callable[[ServerActor], Any] = lambda actor: None
    on_tools_changed: Callable[[ServerActor], None] = lambda actor: None
    on_state_changed: Callable[[ServerActor], None] = lambda actor: None
    stopping: Callable[[], bool] = lambda: False
    early: EarlySpawns | None = None
    start_defaults: Callable[[], ServersSection] = ServersSection
    busy: Callable[[ServerActor], str | None] = lambda actor: None
    on_notification: Callable[[ServerActor, Any], None] = lambda actor, notification: None
    wrap_requests: Callable[[ServerActor, Requests], Requests] = lambda actor, requests: requests
    events: SessionEvents = field(default_factory=lambda: SessionEvents())
    ingress: Ingress = NO_SCRUB


class ServerActor:
    """The lifecycle of one server's session; `spec is None`: its definition does not validate.

    Owns the server's `mcp.Client` (entered and exited in `run()`), state and reason, tools,
    stderr log and backoff; other tasks read `client`, `tools`, `state` and call `call_tool`,
    `update`, `reconnect`, `auth_required`, `stop`. It never decides approvals or pins (it
    asks `ctx.check_pin`), edits a definition or opens a browser, and never raises out of
    `run()` for a server's failure: every failure becomes a state and a reason."""

    def __init__(self, name: str, spec: ServerSpec | None, ctx: ActorContext,
                 *, config_error: str | None = None, source: str | None = None) -> None:
        self.name = name
        self.spec = spec
        self.source = spec.source if spec else source
        self.ctx = ctx
        self.config_error = config_error
        self.state = State.STOPPED
        self._reason: str | None = None  # as set (`reason` adds a back-off's wait, counted from now)
        self.since = time.time()
        self.client: Client | None = None
        self.tools: list[Tool] = []
        self.tool_problem: str | None = None
        self.left_out: list[str] = []  # why items of its tools/list were not taken (named)
        self._fresh_until = 0.0  # until when its last tools/list is fresh by the server's ttlMs (monotonic)
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
        self._lapsed = False  # the grant lapsed under the live session, which is ending for it
        self.inputs = InputRouter(name)
        self.requests: Requests = ctx.wrap_requests(self, SessionRequests(self))  # its request path
        self._connecting = False  # a connection attempt is under way (`ctx.events`)
        self._phase = ""
        self._refresh: ToolRefresh | None = None
        self.storm_reason: str | None = None
        self.learned = Learned(store=EraStore.at(ctx.paths.run_dir))
        self.attempt = 0  # connection attempts since the last success (or reset), this one included
        self.last_failure: str | None = None  # why the previous attempt failed, while retrying
        self.next_attempt_at: float | None = None  # epoch seconds of the next attempt, while backing off
        self.retired = False
        # What ended a live session on purpose ("reconnect", "update"), and that session's
        # client: a request that fails on that client says why (`cut_reason`).
        self._cut: tuple[Any, str] | None = None
        # The last session's connection and, when the server ended it, why (`ended_reason`).
        self._ended: tuple[Connection | None, str | None] | None = None
        self._session_of: tuple[Any, Connection | None] | None = None  # the live client and its connection
        self.state_changed = anyio.Event()  # fires on every state change
        self.demand = Demand(self)  # who uses the session, whether it must run (on demand)
        self.lists = IdleLists(self)  # what it is served from while it is idle (on demand)

    # -- control from other tasks ------------------------------------------------------
    def update(self, spec: ServerSpec | None, *, config_error: str | None = None,
               source: str | None = None) -> None:
        """A new definition (or a new config error with no valid definition)."""
        self.spec = spec
        self.config_error = config_error
        self.source = spec.source if spec else source or self.source
        self.backoff.reset()
        self.lists.tools_hash = None  # an idle server's cached tools meet the new definition (its pin) again
        self.wakeup("update")

    def auth_required(self, reason: str, *, end_session: bool = True) -> None:
        """The OAuth provider cannot authorize requests any more: end the session and wait in
        `needs-auth` (`end_session=False`, a refused step-up: only a connect failing on it)."""
        self._auth_reason = reason
        self._lapsed = self._lapsed or end_session
        if self.live and end_session:  # while connecting, the failed connect carries the reason
            self.wakeup("needs-auth")

    def reconnect(self) -> None:
        """Drop the session and connect again: a legacy SSE endpoint is found again; a legacy
        era is remembered (connect.Learned: no second wait for an unanswered discover). An idle
        on-demand server is started (and stays up for its `idleStop`)."""
        self.backoff.reset()
        self.learned.sse = False  # the HTTP transport is found again; the era is kept
        self.demand.start_wanted = True
        self.wakeup("reconnect")

    def retire(self) -> None:
        """The definition is gone: no new attempt and no state change but `stopped` (whatever the
        loop was about to do next, such as a `backoff`), so the journal's rows for the server end
        with its removal. A live session stays up until `stop()`, for its tasks' cancellation."""
        self.retired = True

    async def stop(self) -> None:
        if self._scope is not None:
            self._scope.cancel()
            await self.done.wait()

    def wakeup(self, reason: str) -> None:
        if self._wake_reason is None:
            self._wake_reason = reason
        if reason in ("reconnect", "update") and self.client is not None:
            self._cut = (self.client, reason)  # the requests this cuts say why (`cut_reason`)
        self._wake.set()

    def cut_reason(self, client: Any) -> tuple[str, str] | None:
        """Why a request on `client` (the session's `mcp.Client` it was sent on) was cut by
        monad ending that session, as (what happened, what to do): the supervisor stopped, or
        the server was removed, reconnected, disabled or redefined. None: not ended on purpose
        (a crash says its own reason), or `client` is not that session's."""
        name = self.name
        cut_by = self._cut[1] if self._cut is not None and self._cut[0] is client else None
        if self.ctx.stopping():
            return ("the supervisor stopped (`monad daemon stop` or a signal)",
                    "call it again once the supervisor is back (`monad daemon start`)")
        if self.retired:
            return (f"server `{name}` was removed (`monad mcp remove`, or its definition deleted)",
                    "it is no longer defined (see `monad mcp status`)")
        if cut_by == "reconnect":
            return (f"server `{name}` was reconnected (`monad mcp reconnect {name}`)",
                    f"call it again once it is back (`monad mcp wait {name}`)")
        if cut_by == "update":
            if self.spec is not None and not self.spec.enabled:
                return (f"server `{name}` was disabled", f"`monad mcp enable {name}` turns it on again")
            return (f"server `{name}` reconnected because its definition changed",
                    f"call it again once it is back (`monad mcp wait {name}`)")
        return None

    async def ended_reason(self, conn: Connection | None) -> str | None:
        """Why the server ended its session on `conn` (it exited, was killed, closed its stdout,
        stopped answering), in its status row's words (`explain_closed`, scrubbed), for a
        request that end failed. Waits until the actor has seen the end (process reaped, stderr
        drained), at most END_KNOWN_S seconds. None: it ended otherwise, or not by then."""
        with anyio.move_on_after(END_KNOWN_S):
            # After each session the loop moves the state on (backoff, failed, idle, connecting).
            while (self._ended is None or self._ended[0] is not conn) and not self.done.is_set():
                await self.state_changed.wait()
        return self._ended[1] if self._ended is not None and self._ended[0] is conn else None

    async def lost_reason(self, client: Any) -> str | None:
        """Why the session on `client` ended under a request, in words: what `cut_reason`
        says happened (monad ended it on purpose), else "the server's session ended: " and
        `ended_reason` (the server ended it; waits for it as that does). None: unknown."""
        why = self.cut_reason(client)
        if why is not None:
            return why[0]
        conn = self._session_of[1] if self._session_of is not None and self._session_of[0] is client else None
        ended = await self.ended_reason(conn) if conn is not None else None
        return f"the server's session ended: {ended}" if ended else None

    async def sleep_until_woken(self, timeout: float = math.inf) -> str | None:
        with anyio.move_on_after(timeout):
            await self._wake.wait()
        reason, self._wake_reason = self._wake_reason, None
        self._wake = anyio.Event()
        return reason

    # -- state -------------------------------------------------------------------------
    def set_state(self, state: State, reason: str | None = None) -> None:
        # One line: a reason is one row of `status` and one journal field (an HTTP library's
        # hint may span lines).
        reason = one_line(self.ctx.scrub(reason)) if reason else reason
        if state == self.state and reason == self._reason:
            return
        check_transition(self.state, state)
        self.state, self._reason, self.since = state, reason, time.time()
        self.state_changed.set()
        self.state_changed = anyio.Event()
        reason = self.reason
        log.info("server %s: %s%s", self.name, state, f" ({reason})" if reason else "")
        try:
            self.ctx.journal.record("state", server=self.name, state=str(state), reason=reason)
        except Exception:
            # A journal that cannot be written (disk full, locked too long) must not stop
            # the session; the log above still has the change.
            log.exception("journal write failed")
        self.ctx.on_state_changed(self)

    @property
    def reason(self) -> str | None:
        """Why it is in its state, one line; backing off, it ends `retrying in N s` with N the
        seconds left now (a status row read later than the state was set says the wait left)."""
        if self.state == State.BACKOFF and self.next_attempt_at is not None and self._reason:
            return f"{self._reason}; retrying in {max(0.0, self.next_attempt_at - time.time()):.1f} s"
        return self._reason

    @property
    def live(self) -> bool:
        return self.state in LIVE and self.client is not None

    @property
    def lane(self) -> DirectLane | None:
        """monad's own requests on the live session's connection (sessions/direct.py)."""
        return self.conn.lane if self.conn is not None and self.live else None

    @property
    def restarting(self) -> bool:
        """Not live, but on its way back: connecting, or waiting out its backoff (not given up,
        not disabled, not removed). A call to it waits (`ToolService.call`)."""
        return (not self.live and not self.retired and self.spec is not None and self.spec.enabled
                and (self.state in (State.CONNECTING, State.BACKOFF) or self.state in LIVE
                     # just enabled or added: its loop has not moved it yet
                     or (self.state in (State.DISABLED, State.STOPPED) and not self.done.is_set())))

    @property
    def needs_authorization(self) -> bool:
        """Its OAuth grant lapsed: `needs-auth`, or about to be (a refresh or a token failed
        under the live session, which is ending). A call may start the authorization
        (trust/authorization.py)."""
        return self.state == State.NEEDS_AUTH or self._lapsed

    @property
    def listed(self) -> bool:
        """Its tools are listed though no session is open: an on-demand server, idle."""
        return self.state == State.IDLE

    # -- on demand (ondemand.py) and its lists (idle.py) ----------------------------
    def on_demand(self, spec: ServerSpec | None = None) -> bool:
        return self.demand.on_demand(spec)

    def in_use(self) -> AbstractAsyncContextManager[None]:
        """Hold the server up for the block, starting it if it is an idle on-demand server
        (`Demand.in_use`); raises NotConnected with the start's reason when that fails."""
        return self.demand.in_use()

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
            parked = self._parked(spec)
            if parked is not None:
                self.set_state(*parked)
                self.first_attempt.set()
                await self.sleep_until_woken()
                continue
            assert spec is not None
            on_demand = self.on_demand(spec)
            cached = self.lists.cached(spec) if on_demand else None
            if cached is not None and not self.demand.wanted():
                # Nothing needs it: no process; a call, a Task or `reconnect` wakes it.
                if self.state != State.IDLE or self.lists.tools_hash != cached.tool_hash:
                    self.lists.go_idle(cached, "on demand: not running; the first call starts it")
                self.first_attempt.set()
                await self.sleep_until_woken()
                continue
            outcome, reason = await self._session(spec)
            self._ended = (self.conn, self.ctx.scrub(reason) if outcome == "closed" else None)
            self.first_attempt.set()
            if self.retired:
                return
            if outcome in ("update", "reconnect", "idle"):
                continue
            if on_demand and outcome in ("failed", "closed"):
                # The calls waiting for this start fail with its reason.
                self.demand.start_failed(self.ctx.scrub(reason))
                cached = self.lists.cached(spec)
                # No retries for nobody: the next call tries again. A held server (a client's
                # resource subscription) is somebody: it is retried as any server.
                if cached is not None and not self.demand.holders:
                    self.demand.start_wanted = False
                    verb = "exited" if outcome == "closed" else "could not start"
                    self.lists.go_idle(cached, f"on demand: {verb}: {reason}; the next call starts it again")
                    await self.sleep_until_woken()
                    continue
            if outcome in ("needs-auth", "fatal"):  # only a person (authorize, fix, reconnect) moves it on
                self.set_state(State.NEEDS_AUTH if outcome == "needs-auth" else State.FAILED, reason)
                await self.sleep_until_woken()
                continue
            # "failed" (connect failed) or "closed" (a live session ended)
            self.last_failure = self.ctx.scrub(reason) if reason else reason
            # A remote's failures are transient (refused, reset, 5xx, 429, timeouts): only a
            # 401, a config error or a person stop its retries. A stdio crash loop may give up.
            if self.backoff.record_failure(time.monotonic(), may_give_up=spec.transport == "stdio"):
                n = self.backoff.give_up_after
                self.set_state(State.FAILED, f"{reason}; gave up after {n} failures in "
                                             f"{self.backoff.window:.0f} s, run `monad mcp reconnect {self.name}`")
                await self.sleep_until_woken()
                self.backoff.reset()
                continue
            asked = self.conn.retry_after if self.conn is not None else None
            delay = self.backoff.delay_for(asked)
            self.next_attempt_at = time.time() + delay
            wait = f"; it asked to wait {asked:g} s (Retry-After)" if asked is not None else ""
            self.ctx.events.restarting(self, outcome)
            self.set_state(State.BACKOFF, f"{reason}{wait}")  # `reason` adds "retrying in N s"
            try:
                await self.sleep_until_woken(delay)
            finally:
                self.next_attempt_at = None

    def _parked(self, spec: ServerSpec | None) -> tuple[State, str] | None:
        """The state it waits in with no session (a config error, disabled, filtered out), or None."""
        if spec is None:
            return State.FAILED, f"config error: {self.config_error}"
        if not spec.enabled:
            return State.DISABLED, "enabled = false in its definition"
        filtered = self.ctx.filter_reason(self.name)
        return None if filtered is None else (State.FILTERED, filtered)

    def _new_connection(self) -> Connection:
        conn = Connection()  # only a live session's end wakes the actor; a failed connect reports itself
        conn.on_closed = lambda: self.wakeup("closed") if self.client is not None and self.conn is conn else None
        self.conn = conn
        return conn

    async def _session(self, spec: ServerSpec) -> tuple[str, str]:
        """One connection attempt and, if it succeeds, the session until it ends. An http URL
        that refuses the `initialize` POST as a GET-only endpoint does is tried again as legacy
        HTTP+SSE within the same deadline (MCP spec, basic/transports "Backwards Compatibility")."""
        conn = self._new_connection()
        self._wake = anyio.Event()
        self._wake_reason = None
        self._auth_reason = None
        self._lapsed = False
        kicked, self.demand.start_wanted = self.demand.start_wanted, False  # this attempt answers the calls waiting now
        self.attempt = self.backoff.consecutive + 1
        what = "starting" if spec.transport == "stdio" else "connecting"
        self.set_state(State.CONNECTING, what if self.attempt == 1 else f"{what} (attempt {self.attempt})")
        self._phase = "starting the server" if spec.transport == "stdio" else "connecting"
        self._connecting = True
        self.ctx.events.connecting(self)
        learned = self.learned.for_spec(spec)
        over_sse = spec.transport == "http" and learned.sse
        first: tuple[Exception, Connection] | None = None
        reason: str | None = None
        try:
            with anyio.CancelScope() as deadline:
                deadline.deadline = anyio.current_time() + spec.timeout
                while True:
                    try:
                        reason = await self._run_client(spec, conn, deadline, over_sse=over_sse, kicked=kicked)
                        break
                    except Exception as exc:
                        if over_sse or spec.transport != "http" or conn.established \
                                or not legacy_sse_candidate(conn):
                            raise
                        first, over_sse = (exc, conn), True
                        conn = self._new_connection()
                        self._phase = "connecting over legacy HTTP+SSE (GET, `endpoint` event)"
            if deadline.cancelled_caught:
                self._connect_ended("timeout")
                return "failed", explain_timeout(spec, self._phase, self.sink.lines(), conn)
        except Exception as exc:  # noqa: BLE001 - every failure becomes a reason
            self._connect_ended(type(exc).__qualname__)
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
            self._connect_ended("cancelled")  # stopped while connecting
            if self.connected_at is not None:
                uptime = time.monotonic() - self.connected_at
                self.backoff.record_uptime(uptime)
                self.connected_at = None
                # A session the server ended (or whose token died) ended in error.
                self.ctx.events.session_ended(self, uptime,
                                              error=reason if reason in ("closed", "needs-auth") else None)
        if reason == "closed":
            return "closed", explain_closed(spec, conn, self.sink.lines())
        if reason == "needs-auth":
            return "needs-auth", self._auth_reason or f"run `monad mcp authorize {self.name}`"
        return reason or "reconnect", reason or "reconnect"

    async def _run_client(self, spec: ServerSpec, conn: Connection, deadline: anyio.CancelScope,
                          *, over_sse: bool, kicked: bool = False) -> str | None:
        """Enter the Client, list the tools, serve the session until woken; the wake reason."""
        transport = transport_for(spec, conn, self.sink, self.ctx.paths, auth=self.ctx.http_auth(spec),
                                  over_sse=over_sse, early=self.ctx.early, ingress=self.ctx.ingress)
        client = Client(transport, mode=self.learned.mode(over_sse=over_sse), cache=None,
                        client_info=Implementation(name="monad", version=__version__),
                        message_handler=self._on_message, extensions=self.ctx.client_extensions(self),
                        elicitation_callback=self.inputs.callback(self.ctx.elicitation_callback(self)),
                        sampling_callback=self.inputs.sampling_callback, list_roots_callback=self.inputs.roots_callback,
                        # 2026-07-28 servers log only within requests that opt in: every level
                        # reaches the server's log file (and the agents that asked for it).
                        log_level="debug")
        self._phase = "negotiating the protocol version (server/discover, initialize)"
        async with client:
            try:
                self._phase = "listing tools"
                # Before the first tools/list: a list_changed that arrives while it is in flight
                # asks for a re-listing, which runs once the session is up (not lost).
                refresh = self._refresh = ToolRefresh(self.refresh_tools, on_storm=self._on_storm)
                listing = await list_all_tools(client, conn.exchange)
                deadline.deadline = math.inf
                self._phase = "connected"
                self.learned.note(client.protocol_version, conn.transport)
                self.storm_reason = None
                # Started for nobody (only to learn its lists): stop at once; else `idleStop` from now.
                self.demand.last_used = time.monotonic() if kicked or self.demand.inflight else -math.inf
                self._connected(client, conn, listing)
                async with anyio.create_task_group() as tg:
                    self._tg = tg
                    start_upkeep(tg, client, conn, refresh, on_hung=self._on_hung)
                    tg.start_soon(listen_for_tool_changes, client, refresh, self.name, lambda: self._fresh_until)
                    if self.on_demand(spec):
                        # Its other lists, for while it is idle: before it stops when it was started
                        # only to learn them; beside the waiting calls when they started it.
                        if self.demand.last_used == -math.inf:
                            await self.lists.learn(client, spec)
                        else:
                            tg.start_soon(self._learn_after_calls, client, spec)
                    reason = await self.demand.serve_until_woken(spec)
                    if reason == "idle":  # from here on, a call starts a new session instead of using this one
                        self.client = None
                        self._announce_end(reason)
                    tg.cancel_scope.cancel()
            finally:
                # The SDK fails the requests waiting on the session's answers ("Connection
                # closed"), but not one whose 2026-07-28 `input_required` round waits on its
                # caller's answer (its round driver runs in the calling task, outside the
                # session): that one would wait out the question (`--approval-timeout`), holding
                # its caller's request. The questions still waiting end now, and their requests
                # with them (`cut_reason` says why).
                self.inputs.session_ended()
            # Shutting a session down takes up to seconds (stdin grace); status
            # must not say `connected` meanwhile, and calls must fail fast.
            self.client = None
            self._refresh = None
            self._announce_end(reason)
            self._tg = None
        return reason

    async def _learn_after_calls(self, client: Client, spec: ServerSpec) -> None:
        """Its other lists once the requests that started it are answered: the lists wait for
        the first answer, not the other way."""
        await self.demand.after_calls()
        await self.lists.learn(client, spec)

    def _connect_ended(self, error: str | None) -> None:
        """The connection attempt ended (once): connected (`error` None), or why not."""
        if self._connecting:
            self._connecting = False
            self.ctx.events.connected(self, error)

    def _on_hung(self, reason: str) -> None:
        if self.conn is not None:
            self.conn.hung = reason
        self.wakeup("closed")

    def _on_storm(self, reason: str | None) -> None:
        self.storm_reason = reason
        self._settle()

    def _settle(self) -> None:
        """A live session is `connected`, or `degraded` by its tools' or its storm's problem."""
        problem = "; ".join(p for p in (self.tool_problem, self.storm_reason) if p) or None
        if self.client is not None:
            self.set_state(State.DEGRADED if problem else State.CONNECTED, problem)

    def _announce_end(self, reason: str | None) -> None:
        spec = self.spec
        if reason == "update" and (spec is None or not spec.enabled):
            self.set_state(State.DISABLED if spec else State.FAILED,
                           "enabled = false in its definition" if spec else f"config error: {self.config_error}")
        elif reason == "update":
            self.set_state(State.CONNECTING, "reconnecting: its definition changed")
        elif reason == "reconnect":
            self.set_state(State.CONNECTING, "reconnecting")
        elif reason == "idle" and spec is not None:
            self.set_state(State.IDLE, "on demand: its lists are learned; not running until the first call"
                           if self.demand.last_used == -math.inf else
                           f"on demand: stopped after {describe_duration(self.demand.idle_stop(spec))} without use; "
                           f"the next call starts it")

    def _connected(self, client: Client, conn: Connection, listing: ToolListing) -> None:
        self.client = client
        self._session_of = (client, conn)
        self.last_failure = None
        self.connected_at = time.monotonic()
        conn.established = True
        self.protocol_version = client.protocol_version
        self._connect_ended(None)
        if conn.lane is not None:
            conn.lane.attach(client)  # it shares the session's ids
        self.server_info = client.server_info.model_dump(exclude_none=True) if client.server_info else None
        self.lists.instructions = client.instructions
        self._take_listing(listing)
        self.first_attempt.set()  # it ended connected (else `_loop` sets it when `_session` returns)
        if conn.closed:  # died between tools/list and now
            self.wakeup("closed")

    async def refresh_tools(self) -> None:
        client = self.client
        if client is None:
            return
        try:
            listing = await list_all_tools(client, self.conn.exchange if self.conn is not None else None)
        except Exception as exc:  # noqa: BLE001
            self.set_state(State.DEGRADED, f"tools/list failed: {describe(exc)}")
            return
        self._take_listing(listing)

    def _take_listing(self, listing: ToolListing) -> None:
        """A (re)listing of the live session's tools: it meets the pin again (always: the check
        also unblocks; no swapping tools under an approved pin mid-session), is remembered for
        while it is idle, and sets `connected` or `degraded`."""
        tools = self.tools = listing.tools
        self.left_out = listing.left_out
        self._fresh_until = listing.fresh_until
        pin_problem = self.ctx.check_pin(self, tools)
        if self.spec is not None:
            self.lists.remember(self.spec, tools)
        self.tool_problem = "; ".join(p for p in (listing.problems(), pin_problem) if p) or None
        self.ctx.on_tools_changed(self)
        self._settle()

    async def call_tool(self, call: ToolCall) -> CallToolResult:
        """tools/call of `call.tool` (the server's own name) from any task, through its request
        path (requests.py): deadline `requestTimeoutMs` (unset = none); on expiry (MCPError
        -32001) or the caller's cancellation the server gets notifications/cancelled;
        `call.progress` is awaited per notifications/progress; the server's questions go to
        `call.inputs`. Raises MonadError if not connected. Returns `mcp_types.CallToolResult`."""
        return await self.requests.call_tool(call)

    @property
    def capabilities(self) -> ServerCapabilities | None:
        """What the live session's server declared (None: not connected)."""
        client = self.client
        return client.server_capabilities if client is not None and self.live else None

    @property
    def instructions(self) -> str | None:
        """The live session's `instructions` (initialize / server/discover); while idle (on
        demand), the last session's; else None."""
        client = self.client
        if client is not None and self.live:
            return client.instructions
        return self.lists.instructions if self.listed else None

    async def call_through(self, send: Send[T], *, caller: Caller | None = None, method: str | None = None,
                           target: str | None = None) -> T:
        """A request other than tools/call from any task (resources/*, prompts/*,
        completion/complete, logging/setLevel: gateway/catalog.py), through its request path
        (requests.py): `send(client, meta)` is awaited with the live `mcp.Client` and the
        `_meta` for `caller` (whose `inputs` answer the server's questions; None: monad's own).
        `method` (JSON-RPC) and `target` (the prompt's name, the resource's URI) name it for
        what wraps the path (telemetry's CLIENT span, docs/telemetry.md). A result of a shape
        the protocol does not define raises MCPError(-32603) in one line. Raises MonadError if
        not connected, and what the request raises (`mcp.MCPError` when the server fails it)."""
        return await self.requests.request(send, caller=caller, method=method, target=target)

    async def _on_message(self, message: IncomingMessage) -> None:
        if isinstance(message, ToolListChangedNotification) and self._refresh is not None:
            self._refresh.request()
        if isinstance(message, LoggingMessageNotification):
            # Always in the server's log file, whoever listens (docs/gateway.md "Logging").
            p = message.params
            self.sink.note(f"[notifications/message {p.level}{' ' + p.logger if p.logger else ''}] "
                           f"{p.data if isinstance(p.data, str) else json.dumps(p.data, default=str)}")
        if isinstance(message, ResourceListChangedNotification | PromptListChangedNotification) \
                and self._tg is not None and self.client is not None and self.spec is not None \
                and self.on_demand(self.spec):
            # Keep the changed lists for while it is idle (the agents hear this notification itself).
            self._tg.start_soon(partial(self.lists.learn, self.client, self.spec, announce=False))
        if not isinstance(message, Exception):
            self.ctx.on_notification(self, message)

    # -- status (status.py) ------------------------------------------------------------
    def status(self, *, detail: bool = False) -> dict[str, Any]:
        """The server's row in `monad mcp status` (status.py `status_row`)."""
        return status_row(self, detail=detail)
