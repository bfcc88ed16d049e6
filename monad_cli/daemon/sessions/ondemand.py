"""On-demand holds and idling of one server (`Demand`, a collaborator of its `ServerActor`).

An on-demand server (`start = "on-demand"`, docs/supervisor.md "On demand") is `idle` while
unused: no process, its last lists (idle.py) still served. `in_use()` starts it and keeps it
up for the block, `hold()` between requests; the actor stops it after `idleStop` without use,
nothing in flight, no open Task (`ctx.busy`) and no holder (`serve_until_woken`).
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING

import anyio

from monad_cli.core.errors import NotConnected
from monad_cli.core.states import State

if TYPE_CHECKING:
    from monad_cli.config.schema import ServerSpec
    from monad_cli.daemon.sessions.actor import ServerActor

# While an on-demand server is past its idle time but held (an open Task): how often to look again.
BUSY_POLL_S = 5.0
# A call waits for an on-demand start this long beyond the server's own connect `timeout`
# (the previous session's shutdown may still be under way: its stdin grace).
START_SLACK_S = 10.0
# States in which a waiting call learns that no start is coming.
_NO_START = (State.FAILED, State.NEEDS_AUTH, State.DISABLED, State.FILTERED, State.BACKOFF, State.STOPPED)


class Demand:
    """Who uses `actor`'s session and whether it must run (see the module docstring).
    `inflight`: requests using it; `last_used` (monotonic s): when the last ended (-inf:
    started for nobody); `start_wanted`: a call or `reconnect` asked for a start;
    `failed_starts`/`start_failure`: how many failed, why the last did (a waiting call fails
    when the count moves); `holders`: what keeps it up between calls (a subscription);
    `calls_ended` fires when the last request in flight ends."""

    def __init__(self, actor: ServerActor) -> None:
        self.actor = actor
        self.inflight = 0
        self.last_used = -math.inf
        self.start_wanted = False
        self.failed_starts = 0
        self.start_failure: str | None = None
        self.calls_ended = anyio.Event()
        self.holders: set[object] = set()

    def on_demand(self, spec: ServerSpec | None = None) -> bool:
        spec = spec or self.actor.spec
        return spec is not None and spec.start_mode(self.actor.ctx.start_defaults()) == "on-demand"

    def idle_stop(self, spec: ServerSpec) -> float:
        return spec.idle_stop_s(self.actor.ctx.start_defaults())

    def in_use(self) -> _InUse:
        """`async with demand.in_use():` hold the server up for the block: an idle on-demand
        server is started first and waited for (within its connect `timeout`); concurrent
        callers share one start. Counted before anything is awaited, so an idle stop cannot
        slip in between the start and the request. Raises NotConnected with the start's
        reason when it fails. For any other server (or a live one) it only counts the request."""
        return _InUse(self)

    def _done(self) -> None:
        """A block of `in_use` ended."""
        self.inflight -= 1
        self.last_used = time.monotonic()
        # Only for a waiter (`after_calls`): a new event on every call's end cost one a call.
        if self.inflight == 0 and self.calls_ended.statistics().tasks_waiting:
            self.calls_ended.set()
            self.calls_ended = anyio.Event()

    async def _ensure_started(self) -> None:
        actor = self.actor
        spec = actor.spec
        if actor.live or spec is None or not self.on_demand(spec):
            return
        if actor.state not in (State.IDLE, State.CONNECTING, State.CONNECTED, State.DEGRADED):
            return  # failed, disabled, …: the call is refused below with the state's reason
        failures = self.failed_starts
        if actor.state != State.CONNECTING:  # a start under way is shared, not asked for again
            self.start_wanted = True
            actor.wakeup("demand")
        with anyio.move_on_after(spec.timeout + START_SLACK_S):
            while not actor.live:
                if self.failed_starts != failures:
                    raise NotConnected(f"server `{actor.name}` could not be started: {self.start_failure} "
                                       f"(see `monad mcp status {actor.name}`)")
                if actor.state in _NO_START or actor.retired:
                    raise NotConnected(f"server `{actor.name}` is {actor.state}"
                                       f"{': ' + actor.reason if actor.reason else ''} "
                                       f"(see `monad mcp status {actor.name}`)")
                await actor.state_changed.wait()
            return
        raise NotConnected(f"server `{actor.name}` did not start within {spec.timeout:g} s "
                           f"(see `monad mcp status {actor.name}`)")

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
            if self.actor.live:  # the session's wait recomputes its idle deadline
                self.actor.wakeup("released")

    def held(self) -> str | None:
        """Why an on-demand server must stay up between calls, or None."""
        if self.holders:
            return f"held by {len(self.holders)} client(s)"
        return self.actor.ctx.busy(self.actor)

    def wanted(self) -> bool:
        """Whether an on-demand server must run now: a call or `reconnect` asked, or it is held."""
        return self.start_wanted or self.inflight > 0 or self.held() is not None

    def start_failed(self, reason: str) -> None:
        """A start failed: the calls waiting for it fail with `reason`."""
        self.failed_starts += 1
        self.start_failure = reason

    async def serve_until_woken(self, spec: ServerSpec) -> str | None:
        """The live session's wait: a wake reason, or `idle` once an on-demand server has gone
        `idleStop` without a call and nothing holds it."""
        actor = self.actor
        while True:
            if not self.on_demand(spec):
                reason = await actor.sleep_until_woken()
                if reason == "released":  # a holder let go: only an on-demand server's idle time cares
                    continue
                return reason
            idle = self.idle_stop(spec)
            left = self.last_used + idle - time.monotonic()
            if left <= 0 and self.inflight == 0 and not self.start_wanted:
                if self.held() is None:
                    return "idle"
                left = min(idle, BUSY_POLL_S)
            reason = await actor.sleep_until_woken(max(left, 0.05))
            if reason not in (None, "demand", "released"):
                return reason

    async def after_calls(self) -> None:
        """Return once the requests in flight now are answered (at most `START_SLACK_S`)."""
        with anyio.move_on_after(START_SLACK_S):
            while self.inflight > 0:
                await self.calls_ended.wait()


class _InUse:
    """`Demand.in_use`'s block (a class, not a generator: ~12k instructions less a call)."""

    __slots__ = ("demand",)

    def __init__(self, demand: Demand) -> None:
        self.demand = demand

    async def __aenter__(self) -> None:
        demand = self.demand
        demand.inflight += 1
        try:
            await demand._ensure_started()
        except BaseException:
            demand._done()
            raise

    async def __aexit__(self, *exc: object) -> None:
        self.demand._done()
