"""One actor task per server: it alone enters and exits the server's `mcp.Client`.

The SDK requires a Client to be entered and exited in the same task (anyio cancel scopes), so
the actor holds `async with Client(...)` open for the life of a session while other tasks use
`actor.client` concurrently. It owns the state machine (states.py), the connect deadline, the
restart policy (backoff.py) and the reasons in `monad mcp status` (reasons.py); what it needs
from around it comes in one `ActorContext`, built once by the supervisor.

An on-demand server (`start = "on-demand"`, docs/supervisor.md "On demand") is `idle` while
nobody uses it: no process, no session, its last lists (kept in the journal) still served.
`in_use()` starts it, waits for the connect and keeps it up for the block; `hold()` keeps it
up between requests; the actor stops it after `idleStop` without use, with nothing in flight,
no open Task (`ctx.busy`) and no holder."""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager, nullcontext
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
from mcp import Client, MCPError
from mcp.client.session import IncomingMessage
from mcp_types import (
    INTERNAL_ERROR,
    CallToolResult,
    Implementation,
    LoggingMessageNotification,
    Prompt,
    PromptListChangedNotification,
    Resource,
    ResourceListChangedNotification,
    ResourceTemplate,
    ServerCapabilities,
    Tool,
    ToolListChangedNotification,
)

from monad_cli import __version__
from monad_cli.config.schema import ServerSpec
from monad_cli.config.start import StartDefaults, describe_duration
from monad_cli.core.errors import NotConnected
from monad_cli.core.messages import one_line
from monad_cli.core.paths import Paths
from monad_cli.core.states import LIVE, State, check_transition
from monad_cli.daemon.scrubber import NO_SCRUB, Ingress
from monad_cli.daemon.sessions import stamp
from monad_cli.daemon.sessions.backoff import Backoff
from monad_cli.daemon.sessions.connect import Learned, ToolListing, list_all_tools, start_upkeep, transport_for
from monad_cli.daemon.sessions.eras import EraStore
from monad_cli.daemon.sessions.inputs import InputHandler, InputRouter
from monad_cli.daemon.sessions.reasons import classify, describe, explain_closed, explain_timeout
from monad_cli.daemon.sessions.remote import legacy_sse_candidate
from monad_cli.daemon.sessions.spawn import EarlySpawns
from monad_cli.daemon.sessions.stderr import StderrSink
from monad_cli.daemon.sessions.transports import Connection
from monad_cli.daemon.sessions.upkeep import ToolRefresh, listen_for_tool_changes
from monad_cli.daemon.telemetry import TELEMETRY
from monad_cli.daemon.trust.listing import dump_tool
from monad_cli.daemon.trust.pins import tool_set_hash
from monad_cli.daemon.trust.servers import ProgressFn
from monad_cli.journal import tools as jt
from monad_cli.journal.db import Journal

if TYPE_CHECKING:
    import httpx2
    from mcp.client import ClientExtension

log = logging.getLogger("monad.actor")
# While an on-demand server is past its idle time but held (an open Task): how often to look again.
BUSY_POLL_S = 5.0
# A call waits for an on-demand start this long beyond the server's own connect `timeout`
# (the previous session's shutdown may still be under way: its stdin grace).
START_SLACK_S = 10.0
# The most pages of prompts/resources/templates kept for an idle server (a server whose
# cursors never end must not hold its session's start).
ITEM_PAGES = 100
_ITEM_MODELS: dict[str, type[Any]] = {"prompts": Prompt, "resources": Resource, "templates": ResourceTemplate}
# States in which a waiting call learns that no start is coming.
_NO_START = (State.FAILED, State.NEEDS_AUTH, State.DISABLED, State.FILTERED, State.BACKOFF, State.STOPPED)


def _no_extensions(actor: ServerActor) -> list[ClientExtension] | None:
    return None


def _no_elicitation(actor: ServerActor) -> Any:
    return None


@dataclass(frozen=True)
class ActorContext:
    """Everything an actor uses from its surroundings (as uvicorn hands its protocols a
    `Config` and a `ServerState`, never the `Server`).

    `paths`: where the server's stderr log goes; `journal`: one `state` row per change;
    `scrub`: the redaction function applied to every reason; `check_pin(actor, tools)`: the
    reason to refuse registering `tools`, or None; `filter_reason(name)`: why the server is
    filtered out, or None; `http_auth(spec)`: the httpx2 Auth of an http server, or None;
    `client_extensions(actor)`: `extensions=` for its next `mcp.Client`;
    `elicitation_callback(actor)`: its `elicitation_callback=` (None: the SDK's default, which
    advertises no elicitation); `on_tools_changed`
    and `on_state_changed`: called after a (re)listing and after every state change;
    `stopping()`: whether the supervisor is shutting down (the `stopped` reason says so);
    `early`: the stdio servers spawned before the SDK's import, one of which a first connect
    adopts (sessions/spawn.py); `start_defaults()`: the `[servers]` defaults of settings.toml
    (`start`, `idleStop`); `busy(actor)`: what holds an on-demand server up besides calls (an
    open Task), or None; `on_notification(actor, notification)`: every notification the server
    sends (an `mcp_types` model: resources/updated, list changes, log messages…), for the
    gateway's fan-out; called in the session's receive task, so it must not block;
    `ingress`: what every message the server sends passes first (the supervisor's scrubber).
    """

    paths: Paths
    journal: Journal
    scrub: Callable[[str], str]
    check_pin: Callable[[ServerActor, list[Tool]], str | None]
    filter_reason: Callable[[str], str | None] = lambda name: None
    http_auth: Callable[[ServerSpec], httpx2.Auth | None] = lambda spec: None
    client_extensions: Callable[[ServerActor], list[ClientExtension] | None] = _no_extensions
    elicitation_callback: Callable[[ServerActor], Any] = _no_elicitation
    on_tools_changed: Callable[[ServerActor], None] = lambda actor: None
    on_state_changed: Callable[[ServerActor], None] = lambda actor: None
    stopping: Callable[[], bool] = lambda: False
    early: EarlySpawns | None = None
    start_defaults: Callable[[], StartDefaults] = StartDefaults
    busy: Callable[[ServerActor], str | None] = lambda actor: None
    on_notification: Callable[[ServerActor, Any], None] = lambda actor, notification: None
    ingress: Ingress = NO_SCRUB


@contextmanager
def _wrong_shape_fails_the_call() -> Iterator[None]:
    """An answer of a shape the protocol does not define fails its call with a one-line
    reason (an MCPError, as any failed call), not pydantic's multi-line report."""
    from pydantic import ValidationError

    try:
        yield
    except ValidationError as exc:
        raise MCPError(INTERNAL_ERROR, describe(exc)) from None


T = TypeVar("T")


async def _on_lane(lane: Any, method: str | None, plain: dict[str, Any] | None, version: str | None) -> Any:
    """A plain read or get (`ServerActor.call_through`) on the stdio session's direct lane:
    its result, or None (the SDK's to send). A result of a type the method does not define
    fails with MCPError(-32603) naming it."""
    try:
        if plain is None:
            return None
        if method == "resources/read" and isinstance(uri := plain.get("uri"), str):
            return await lane.read(uri, version)
        if method == "prompts/get" and isinstance(name := plain.get("name"), str):
            return await lane.get(name, plain.get("arguments"), version)
        return None
    except ValueError as exc:  # a result type the method does not define: refused, never sent again
        from pydantic import ValidationError

        if isinstance(exc, ValidationError):  # `_wrong_shape_fails_the_call` words it
            raise
        raise MCPError(INTERNAL_ERROR, str(exc)) from None


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
        self._phase = ""
        self._refresh: ToolRefresh | None = None
        self.storm_reason: str | None = None
        self.learned = Learned(store=EraStore.at(ctx.paths.run_dir))
        self.attempt = 0  # connection attempts since the last success (or reset), this one included
        self._connect_span: Any = None  # `connect {server}` while connecting, telemetry on
        self.last_failure: str | None = None  # why the previous attempt failed, while retrying
        self.next_attempt_at: float | None = None  # epoch seconds of the next attempt, while backing off
        self.retired = False
        # On demand: the lists' hash and time (from the journal while idle), calls using the
        # session, a start asked for by a call or by `reconnect`, and failed starts so far
        # (a waiting call fails when the count moves). `state_changed` fires on every change.
        self.tools_hash: str | None = None
        self.listed_at: float | None = None
        self.inflight = 0
        self.last_used = -math.inf
        self.start_wanted = False
        self.failed_starts = 0
        self.start_failure: str | None = None
        self.state_changed = anyio.Event()
        self.calls_ended = anyio.Event()  # fires when the last request in flight ends
        self.holders: set[object] = set()  # what keeps it up between calls (a gateway's subscription)
        # Its prompts, resources and templates as last learned (kind -> wire dumps, and the
        # same as models), served while it is idle (`cached_items`).
        self._item_dumps: dict[str, list[dict[str, Any]]] = {}
        self._items: dict[str, list[Any]] = {}
        self._last_instructions: str | None = None  # a per-server gateway entry's, while idle

    # -- control from other tasks ------------------------------------------------------
    def update(self, spec: ServerSpec | None, *, config_error: str | None = None,
               source: str | None = None) -> None:
        """A new definition (or a new config error with no valid definition)."""
        self.spec = spec
        self.config_error = config_error
        self.source = spec.source if spec else source or self.source
        self.backoff.reset()
        self.tools_hash = None  # an idle server's cached tools meet the new definition (its pin) again
        self._wakeup("update")

    def auth_required(self, reason: str, *, end_session: bool = True) -> None:
        """The OAuth provider cannot authorize requests any more: end the session and wait in
        `needs-auth` (`end_session=False`, a refused step-up: only a connect failing on it)."""
        self._auth_reason = reason
        self._lapsed = self._lapsed or end_session
        if self.live and end_session:  # while connecting, the failed connect carries the reason
            self._wakeup("needs-auth")

    def reconnect(self) -> None:
        """Drop the session and connect again: a legacy SSE endpoint is found again; a legacy
        era is remembered (connect.Learned: no second wait for an unanswered discover). An idle
        on-demand server is started (and stays up for its `idleStop`)."""
        self.backoff.reset()
        self.learned.forget_transport()
        self.start_wanted = True
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
        # One line: a reason is one row of `status` and one journal field (an HTTP library's
        # hint may span lines).
        reason = one_line(self.ctx.scrub(reason)) if reason else reason
        if state == self.state and reason == self.reason:
            return
        check_transition(self.state, state)
        self.state, self.reason, self.since = state, reason, time.time()
        self.state_changed.set()
        self.state_changed = anyio.Event()
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

    @property
    def restarting(self) -> bool:
        """Not live, but on its way back: connecting, or waiting out its backoff (not given up,
        not disabled, not removed). A call to it waits (`ToolService.call`)."""
        return (not self.live and not self.retired and self.spec is not None and self.spec.enabled
                and (self.state in (State.CONNECTING, State.BACKOFF) or self.state in LIVE))

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

    def on_demand(self, spec: ServerSpec | None = None) -> bool:
        spec = spec or self.spec
        return spec is not None and spec.start_mode(self.ctx.start_defaults()) == "on-demand"

    def _idle_stop(self, spec: ServerSpec) -> float:
        return spec.idle_stop_s(self.ctx.start_defaults())

    # -- on demand ---------------------------------------------------------------------
    @asynccontextmanager
    async def in_use(self) -> AsyncIterator[None]:
        """Hold the server up for the block: an idle on-demand server is started first and
        waited for (within its connect `timeout`); concurrent callers share one start.
        Counted before anything is awaited, so an idle stop cannot slip in between the start
        and the request. Raises NotConnected with the start's reason when it fails. For any
        other server (or a live one) it only counts the request."""
        self.inflight += 1
        try:
            await self._ensure_started()
            yield
        finally:
            self.inflight -= 1
            self.last_used = time.monotonic()
            if self.inflight == 0:
                self.calls_ended.set()
                self.calls_ended = anyio.Event()

    async def _ensure_started(self) -> None:
        spec = self.spec
        if self.live or spec is None or not self.on_demand(spec):
            return
        if self.state not in (State.IDLE, State.CONNECTING, State.CONNECTED, State.DEGRADED):
            return  # failed, disabled, …: the call is refused below with the state's reason
        failures = self.failed_starts
        if self.state != State.CONNECTING:  # a start under way is shared, not asked for again
            self.start_wanted = True
            self._wakeup("demand")
        with anyio.move_on_after(spec.timeout + START_SLACK_S):
            while not self.live:
                if self.failed_starts != failures:
                    raise NotConnected(f"server `{self.name}` could not be started: {self.start_failure} "
                                       f"(see `monad mcp status {self.name}`)")
                if self.state in _NO_START or self.retired:
                    raise NotConnected(f"server `{self.name}` is {self.state}"
                                       f"{': ' + self.reason if self.reason else ''} "
                                       f"(see `monad mcp status {self.name}`)")
                await self.state_changed.wait()
            return
        raise NotConnected(f"server `{self.name}` did not start within {spec.timeout:g} s "
                           f"(see `monad mcp status {self.name}`)")

    def hold(self, holder: object) -> None:
        """Keep the server up, between calls too, until `release(holder)`: what a gateway does
        for a client's resource subscription (it starts the server with `in_use()` to send the
        subscribe request, then holds it). Holding an idle server does not start it."""
        self.holders.add(holder)

    def release(self, holder: object) -> None:
        """Let go of `hold(holder)`; the idle time counts from now."""
        if holder in self.holders:
            self.holders.discard(holder)
            self.last_used = time.monotonic()
            if self.live:  # the session's wait recomputes its idle deadline
                self._wakeup("released")

    def _held(self) -> str | None:
        """Why an on-demand server must stay up between calls, or None."""
        if self.holders:
            return f"held by {len(self.holders)} client(s)"
        return self.ctx.busy(self)

    def _wanted(self) -> bool:
        """Whether an on-demand server must run now: a call or `reconnect` asked, or it is held."""
        return self.start_wanted or self.inflight > 0 or self._held() is not None

    def _cached(self, spec: ServerSpec) -> jt.CachedLists | None:
        """The journal's lists of this server, if they came from this very definition."""
        try:
            cached = jt.cached_lists(self.ctx.journal, self.name)
        except Exception:  # a journal that cannot be read: learn the lists again
            log.exception("journal read failed")
            return None
        # Lists from before prompts and resources were kept (`complete`) are learned again.
        return cached if cached is not None and cached.definition_hash == spec.definition_hash() \
            and cached.complete else None

    def _go_idle(self, cached: jt.CachedLists, reason: str) -> None:
        """Serve the cached lists with no session: the tools, checked against the pin again."""
        if cached.tool_hash != self.tools_hash:
            tools = [Tool.model_validate(t) for t in cached.tools]
            self.tools, self.tools_hash, self.tool_problem = tools, cached.tool_hash, None
            self.tool_problem = self.ctx.check_pin(self, tools)
            self.ctx.on_tools_changed(self)
        self.listed_at = cached.listed_at
        self._keep_items(cached.items)
        self.set_state(State.IDLE, reason)

    def cached_items(self, kind: str) -> list[Any] | None:
        """What an on-demand server that is not running (idle, or starting) lists of `kind`
        (`prompts`, `resources`, `templates`: `mcp_types` models) from its cached lists; None
        while it is live (ask the session) or when nothing is cached."""
        if self.live or self.state not in (State.IDLE, State.CONNECTING) or not self.on_demand():
            return None
        return self._items.get(kind)

    def _keep_items(self, items: dict[str, list[dict[str, Any]]]) -> list[str]:
        """Take `items` (kind -> wire dumps) as the cached lists; the kinds that changed
        against lists known before (a kind not known before is no change)."""
        changed = [k for k, dumps in items.items() if k in self._item_dumps and self._item_dumps[k] != dumps]
        for kind, dumps in items.items():
            if self._item_dumps.get(kind) != dumps or kind not in self._items:
                models = []
                for d in dumps:
                    try:
                        models.append(_ITEM_MODELS[kind].model_validate(d))
                    except ValueError:  # kept by an older SDK, say: left out, as a bad live item would be
                        log.debug("server %s: a cached %s item does not validate", self.name, kind)
                self._items[kind] = models
            self._item_dumps[kind] = dumps
        return changed

    async def _learn_items_after_calls(self, client: Client, spec: ServerSpec) -> None:
        """`_learn_items` once the requests that started the server are answered (at most
        `START_SLACK_S` later): the lists wait for the first answer, not the other way."""
        with anyio.move_on_after(START_SLACK_S):
            while self.inflight > 0:
                await self.calls_ended.wait()
        await self._learn_items(client, spec)

    async def _learn_items(self, client: Client, spec: ServerSpec, *, announce: bool = True) -> None:
        """List an on-demand server's prompts, resources and templates on its live session
        and keep them in the journal for while it is idle. With `announce`, lists that
        differ from the cached ones are told to the gateway as the server's own
        `notifications/{resources,prompts}/list_changed` (the agents were shown the cached
        ones). A kind that fails to list, or is not listed within the server's `timeout`,
        keeps what was cached (none: empty)."""
        caps = client.server_capabilities
        items: dict[str, list[dict[str, Any]]] = {}
        with anyio.move_on_after(spec.timeout):  # a server that never answers must not hold a learning start
            await self._list_items(client, caps, items)
        for kind in jt.ITEM_KINDS:
            if kind not in items:
                log.info("server %s: listing %s to keep them took over %g s", self.name, kind, spec.timeout)
                items[kind] = self._item_dumps.get(kind, [])
        now = self.spec
        # Its definition changed meanwhile (a new session follows): these lists are not its
        # lists. An equal one swapped in (a reload of its unchanged atom, which a write read
        # twice within a second gives as a new spec) keeps them: else it starts again to
        # learn what it just listed.
        if now is None or now.connection_fingerprint() != spec.connection_fingerprint():
            return
        changed = self._keep_items(items)
        try:
            jt.save_items(self.ctx.journal, self.name, items)
        except Exception:  # the session works without it; an idle server would list less
            log.exception("journal write failed")
        if announce:
            if "prompts" in changed:
                self.ctx.on_notification(self, PromptListChangedNotification())
            if "resources" in changed or "templates" in changed:
                self.ctx.on_notification(self, ResourceListChangedNotification())

    async def _list_items(self, client: Client, caps: ServerCapabilities | None,
                          items: dict[str, list[dict[str, Any]]]) -> None:
        """Each kind's items into `items` as wire dumps, kind by kind."""
        for kind in jt.ITEM_KINDS:
            family = None if caps is None else caps.prompts if kind == "prompts" else caps.resources
            got: list[Any] = []
            try:
                cursor: str | None = None
                for _page in range(ITEM_PAGES if family is not None else 0):
                    if kind == "prompts":
                        page: Any = await client.list_prompts(cursor=cursor)
                        got += page.prompts
                    elif kind == "resources":
                        page = await client.list_resources(cursor=cursor)
                        got += page.resources
                    else:
                        page = await client.list_resource_templates(cursor=cursor)
                        got += page.resource_templates
                    cursor = page.next_cursor
                    if not cursor:
                        break
            except Exception as exc:  # noqa: BLE001 - the session works without them
                log.info("server %s: listing %s to keep them failed: %s", self.name, kind,
                         self.ctx.scrub(describe(exc)))
                items[kind] = self._item_dumps.get(kind, [])
                continue
            # As the journal keeps them: an idle server lists the same before and after a
            # supervisor restart (secrets were `***` as they arrived: `ActorContext.ingress`).
            items[kind] = [i.model_dump(by_alias=True, mode="json", exclude_none=True) for i in got]

    def _remember_lists(self, spec: ServerSpec, tools: list[Tool]) -> None:
        dumped = [dump_tool(t) for t in tools]
        self.tools_hash = tool_set_hash(dumped)
        self.listed_at = time.time()
        try:
            jt.save_lists(self.ctx.journal, self.name, spec.definition_hash(), self.tools_hash, dumped)
        except Exception:  # the session works without it; a stopped server would not be listed
            log.exception("journal write failed")

    async def _serve_until_woken(self, spec: ServerSpec) -> str | None:
        """The live session's wait: a wake reason, or `idle` once an on-demand server has gone
        `idleStop` without a call and nothing holds it."""
        while True:
            if not self.on_demand(spec):
                reason = await self._sleep_until_woken()
                if reason == "released":  # a holder let go: only an on-demand server's idle time cares
                    continue
                return reason
            idle = self._idle_stop(spec)
            left = self.last_used + idle - time.monotonic()
            if left <= 0 and self.inflight == 0 and not self.start_wanted:
                if self._held() is None:
                    return "idle"
                left = min(idle, BUSY_POLL_S)
            reason = await self._sleep_until_woken(max(left, 0.05))
            if reason not in (None, "demand", "released"):
                return reason

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
            on_demand = self.on_demand(spec)
            cached = self._cached(spec) if on_demand else None
            if cached is not None and not self._wanted():
                # Nothing needs it: no process; a call, a Task or `reconnect` wakes it.
                if self.state != State.IDLE or self.tools_hash != cached.tool_hash:
                    self._go_idle(cached, "on demand: not running; the first call starts it")
                self.first_attempt.set()
                await self._sleep_until_woken()
                continue
            outcome, reason = await self._session(spec)
            self.first_attempt.set()
            if self.retired:
                return
            if outcome in ("update", "reconnect", "idle"):
                continue
            if on_demand and outcome in ("failed", "closed"):
                # The calls waiting for this start fail with its reason.
                self.failed_starts += 1
                self.start_failure = self.ctx.scrub(reason)
                cached = self._cached(spec)
                # No retries for nobody: the next call tries again. A held server (a client's
                # resource subscription) is somebody: it is retried as any server.
                if cached is not None and not self.holders:
                    self.start_wanted = False
                    verb = "exited" if outcome == "closed" else "could not start"
                    self._go_idle(cached, f"on demand: {verb}: {reason}; the next call starts it again")
                    await self._sleep_until_woken()
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
            # A remote's failures are transient (refused, reset, 5xx, 429, timeouts): only a
            # 401, a config error or a person stop its retries. A stdio crash loop may give up.
            if self.backoff.record_failure(time.monotonic(), may_give_up=spec.transport == "stdio"):
                n = self.backoff.give_up_after
                self.set_state(State.FAILED, f"{reason}; gave up after {n} failures in "
                                             f"{self.backoff.window:.0f} s, run `monad mcp reconnect {self.name}`")
                await self._sleep_until_woken()
                self.backoff.reset()
                continue
            asked = self.conn.retry_after if self.conn is not None else None
            delay = self.backoff.delay_for(asked)
            self.next_attempt_at = time.time() + delay
            wait = f"; it asked to wait {asked:g} s (Retry-After)" if asked is not None else ""
            if (recorder := TELEMETRY.recorder) is not None:
                recorder.restarted(self.name, outcome)
            self.set_state(State.BACKOFF, f"{reason}{wait}; retrying in {delay:.1f} s")
            try:
                await self._sleep_until_woken(delay)
            finally:
                self.next_attempt_at = None

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
        self._lapsed = False
        kicked, self.start_wanted = self.start_wanted, False  # this attempt answers the calls waiting now
        self.attempt = self.backoff.consecutive + 1
        what = "starting" if spec.transport == "stdio" else "connecting"
        self.set_state(State.CONNECTING, what if self.attempt == 1 else f"{what} (attempt {self.attempt})")
        self._phase = "starting the server" if spec.transport == "stdio" else "connecting"
        recorder = TELEMETRY.recorder
        self._connect_span = recorder.connecting(self.name, spec.transport) if recorder is not None else None
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
            self._connect_ended("cancelled")  # stopped while connecting
            if self.connected_at is not None:
                uptime = time.monotonic() - self.connected_at
                self.backoff.record_uptime(uptime)
                self.connected_at = None
                if (recorder := TELEMETRY.recorder) is not None:
                    # A session the server ended (or whose token died) ended in error.
                    recorder.session_ended(self.name, spec.transport, uptime,
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
            self.last_used = time.monotonic() if kicked or self.inflight else -math.inf
            self._connected(client, listing)
            async with anyio.create_task_group() as tg:
                self._tg = tg
                start_upkeep(tg, client, conn, refresh, on_hung=self._on_hung)
                tg.start_soon(listen_for_tool_changes, client, refresh, self.name, lambda: self._fresh_until)
                if self.on_demand(spec):
                    # Its other lists, for while it is idle: before it stops when it was started
                    # only to learn them; beside the waiting calls when they started it.
                    if self.last_used == -math.inf:
                        await self._learn_items(client, spec)
                    else:
                        tg.start_soon(self._learn_items_after_calls, client, spec)
                reason = await self._serve_until_woken(spec)
                if reason == "idle":  # from here on, a call starts a new session instead of using this one
                    self.client = None
                    self._announce_end(reason)
                tg.cancel_scope.cancel()
            # Shutting a session down takes up to seconds (stdin grace); status
            # must not say `connected` meanwhile, and calls must fail fast.
            self.client = None
            self._refresh = None
            self._announce_end(reason)
            self._tg = None
        return reason

    def _connect_ended(self, error: str | None) -> None:
        """End the `connect {server}` span (telemetry on), once: connected, or why not."""
        span, self._connect_span = self._connect_span, None
        if span is not None and TELEMETRY.recorder is not None:
            TELEMETRY.recorder.connected(span, protocol_version=self.protocol_version if error is None else None,
                                         error=error)

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
        elif reason == "idle" and spec is not None:
            self.set_state(State.IDLE, "on demand: its lists are learned; not running until the first call"
                           if self.last_used == -math.inf else
                           f"on demand: stopped after {describe_duration(self._idle_stop(spec))} without use; "
                           f"the next call starts it")

    def _connected(self, client: Client, listing: ToolListing) -> None:
        self.client = client
        self.last_failure = None
        tools, problem = listing.tools, listing.problems()
        self.tools = tools
        self.left_out = listing.left_out
        self._fresh_until = listing.fresh_until
        self.tool_problem = problem
        self.connected_at = time.monotonic()
        if self.conn is not None:
            self.conn.established = True
        self.protocol_version = client.protocol_version
        self._connect_ended(None)
        if self.conn is not None and self.conn.lane is not None:
            self.conn.lane.attach(client)  # it shares the session's ids
        self.server_info = client.server_info.model_dump(exclude_none=True) if client.server_info else None
        self._last_instructions = client.instructions
        if self.spec is not None:
            self._remember_lists(self.spec, tools)
        pin_problem = self.ctx.check_pin(self, tools)  # always: it also unblocks
        self.tool_problem = "; ".join(p for p in (problem, pin_problem) if p) or None
        self.ctx.on_tools_changed(self)
        problem = self._problem()
        self.set_state(State.DEGRADED if problem else State.CONNECTED, problem)
        self.first_attempt.set()  # it ended connected (else `_loop` sets it when `_session` returns)
        if self.conn is not None and self.conn.closed:  # died between tools/list and now
            self._wakeup("closed")

    def all_left_out(self) -> list[str]:
        """Why items of its lists were not taken: its tools/list's, then those of the latest
        prompts/list, resources/list and resources/templates/list (listed when an agent
        asks: the gateway's catalog), one reason per item, naming it."""
        exchange = self.conn.exchange if self.conn is not None else None
        listed = exchange.listed_out if exchange is not None and self.live else {}
        return [*self.left_out, *(reason for method in sorted(listed) for reason in listed[method])]

    async def refresh_tools(self) -> None:
        client = self.client
        if client is None:
            return
        try:
            listing = await list_all_tools(client, self.conn.exchange if self.conn is not None else None)
        except Exception as exc:  # noqa: BLE001
            self.set_state(State.DEGRADED, f"tools/list failed: {describe(exc)}")
            return
        tools, problem = listing.tools, listing.problems()
        self.left_out = listing.left_out
        self._fresh_until = listing.fresh_until
        # A changed list meets the pin again: no swapping tools under an approved pin mid-session.
        pin_problem = self.ctx.check_pin(self, tools)
        if self.spec is not None:
            self._remember_lists(self.spec, tools)
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
        transport's direct lane (sessions/direct.py), any other the SDK's session. Raises
        MonadError if not connected. Returns `mcp_types.CallToolResult`."""
        from monad_cli.core.errors import MonadError

        client = self.client
        if client is None or not self.live:
            raise MonadError(f"server `{self.name}` is {self.state}"
                             f"{': ' + self.reason if self.reason else ''} (see `monad mcp status {self.name}`)")
        rto = self.spec.request_timeout_ms if self.spec else None
        stamp.ensure(client.session)  # the caller's capabilities in a 2026-07-28 `_meta`
        lane = self.conn.lane if self.conn is not None and progress is None and not rto else None
        recorder = TELEMETRY.recorder
        if recorder is None:
            with self.inputs.serving(inputs), _wrong_shape_fails_the_call():
                result = await lane.call(tool, arguments, client.protocol_version, self.tools) if lane else None
                return result if result is not None else await client.call_tool(
                    tool, arguments, read_timeout_seconds=rto / 1000 if rto else None, progress_callback=progress)
        # The CLIENT span of the upstream request; its context goes into the request's `_meta`
        # (the direct lane is given the span; the SDK's dispatcher injects the current one).
        with recorder.client_request("tools/call", tool, server=self.name, transport=self.spec.transport
                                     if self.spec else "stdio", protocol_version=client.protocol_version,
                                     address=self._address(), session_id=None, current=False) as span, \
                self.inputs.serving(inputs), _wrong_shape_fails_the_call():
            result = await lane.call(tool, arguments, client.protocol_version, self.tools, span=span) if lane else None
            if result is None:
                with recorder.current(span):
                    result = await client.call_tool(tool, arguments, read_timeout_seconds=rto / 1000 if rto else None,
                                                    progress_callback=progress)
            recorder.result(span, result)
            return result

    def _address(self) -> tuple[str, int | None] | None:
        """`server.address`/`server.port` of a remote server (its URL's host, never its query)."""
        if self.spec is None or self.spec.transport != "http" or not self.spec.url:
            return None
        from urllib.parse import urlsplit

        try:
            parts = urlsplit(self.spec.url)
            return (parts.hostname, parts.port) if parts.hostname else None
        except ValueError:
            return None

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
        return self._last_instructions if self.listed else None

    async def call_through(self, request: Callable[[Client], Awaitable[T]], *,
                           inputs: InputHandler | None = None, method: str | None = None,
                           target: str | None = None, plain: dict[str, Any] | None = None) -> T:
        """A request other than tools/call on this session from any task (resources/*,
        prompts/*, completion/complete, logging/setLevel: the gateway's, gateway/catalog.py):
        `request(client)` is awaited with the live `mcp.Client`; the server's questions during
        it go to `inputs` (none: refused). `method` (the JSON-RPC method) and `target` (the
        prompt's name, the resource's URI, as the server names them): with telemetry on, the
        request gets a CLIENT span by them, as tools/call does (docs/telemetry.md). `plain`:
        a plain resources/read's `{"uri"}` or prompts/get's `{"name", "arguments"}` (as the
        server names them), which takes the stdio transport's direct lane (sessions/direct.py)
        in place of `request` when it can; on either path a result of a shape the protocol
        does not define fails it with MCPError(-32603) in one line. Raises MonadError if not
        connected, and whatever the request raises (`mcp.MCPError` when the server fails it)."""
        from monad_cli.core.errors import MonadError

        client = self.client
        if client is None or not self.live:
            raise MonadError(f"server `{self.name}` is {self.state}"
                             f"{': ' + self.reason if self.reason else ''} (see `monad mcp status {self.name}`)")
        stamp.ensure(client.session)  # the caller's capabilities in a 2026-07-28 `_meta`
        lane = self.conn.lane if plain is not None and self.conn is not None else None
        # A read's or get's answer of a shape the protocol does not define fails it in one line,
        # on either path, as a call's does.
        shaped = _wrong_shape_fails_the_call() if plain is not None else nullcontext()
        recorder = TELEMETRY.recorder
        if recorder is None or method is None:
            with self.inputs.serving(inputs), shaped:
                result = await _on_lane(lane, method, plain, client.protocol_version) if lane else None
                return result if result is not None else await request(client)
        with recorder.client_request(method, target, server=self.name, transport=self.spec.transport
                                     if self.spec else "stdio", protocol_version=client.protocol_version,
                                     address=self._address(), session_id=None), self.inputs.serving(inputs), shaped:
            result = await _on_lane(lane, method, plain, client.protocol_version) if lane else None
            return result if result is not None else await request(client)

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
            self._tg.start_soon(partial(self._learn_items, self.client, self.spec, announce=False))
        if not isinstance(message, Exception):
            self.ctx.on_notification(self, message)

    # -- status ------------------------------------------------------------------------
    def status(self, *, detail: bool = False) -> dict[str, Any]:
        """The server's row in `monad mcp status` (docs/supervisor.md "Routes"):
        `{name, transport, state, reason, since, tools, protocolVersion, source, enabled,
        required, pid, configError, attempt, lastAttemptReason, nextAttemptAt, start, listedAt,
        stoppedAt, variables}`:
        - `pid` also while it connects; `attempt` and why the last one failed while connecting
          or backing off; `nextAttemptAt` (epoch s) while backing off;
        - `start` (`always` | `on-demand`), `listedAt` (epoch s: when its tools were last
          listed) and, while `idle`, `stoppedAt` (epoch s; `tools` then counts the cached list);
        - `variables`: each `$VAR` its definition references, `{name, source}` with source
          `env-file` or `environment`, never a value.
        With `detail`, also `toolNames`, `stderrTail` (scrubbed), `probeNoiseLines` (lines of an
        older SDK's validation warning about the `server/discover` probe, left out of the tail),
        `serverInfo`, `strayStdoutLines`, `repairedStdoutLines`, `oversizeMessages`,
        `httpTransport` (`streamable-http` or `sse`, for an http server) and `leftOut` (one
        reason per item of its tools/list, and of its latest prompts and resources lists,
        that was not taken: sessions/listings.py)."""
        spec, conn = self.spec, self.conn
        live = self.live or self.listed  # an idle server's tools are its cached lists
        retrying = self.state in (State.CONNECTING, State.BACKOFF)
        row: dict[str, Any] = {
            "name": self.name,
            "transport": spec.transport if spec else None,
            "state": str(self.state),
            "reason": self.reason,
            "since": self.since,
            "tools": len(self.tools) if live else None,
            "protocolVersion": self.protocol_version if live else None,
            "source": self.source,
            "enabled": spec.enabled if spec else None,
            "required": spec.required if spec else None,
            # While it connects too: a server that hangs at start is a live process worth naming.
            "pid": conn.pid if conn and conn.returncode is None and (self.live or self.state == State.CONNECTING)
            else None,
            "configError": one_line(self.config_error) if spec and self.config_error else None,
            "attempt": self.attempt if retrying else None,
            "lastAttemptReason": one_line(self.last_failure) if retrying and self.last_failure else None,
            "nextAttemptAt": self.next_attempt_at if self.state == State.BACKOFF else None,
            "start": "on-demand" if self.on_demand() else "always" if spec else None,
            "listedAt": self.listed_at if live else None,
            "stoppedAt": self.since if self.state == State.IDLE else None,
            "variables": [{"name": n, "source": src} for n, src in spec.variables.items()] if spec else [],
        }
        if detail:
            row["toolNames"] = [t.name for t in self.tools] if live else []
            row["stderrTail"] = self.sink.lines()  # scrubbed as they were read (StderrSink)
            row["probeNoiseLines"] = self.sink.probe_noise
            row["serverInfo"] = self.server_info if self.live else None
            row["strayStdoutLines"] = conn.stray_lines if conn else 0
            row["repairedStdoutLines"] = conn.repaired_lines if conn else 0
            row["oversizeMessages"] = conn.oversize_messages if conn else 0
            row["httpTransport"] = conn.transport if conn and spec and spec.transport == "http" else None
            row["leftOut"] = self.all_left_out() if live else []
        return row

