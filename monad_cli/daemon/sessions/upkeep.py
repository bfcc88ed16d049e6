"""A connected session's upkeep: re-listing tools when the server says they changed (without
letting a chatty server burn a core), and noticing a server that stopped answering.

`ToolRefresh` answers `notifications/tools/list_changed` (MCP spec, server/tools "List
Changed Notification"; at 2026-07-28 on `subscriptions/listen`, `listen_for_tool_changes`):
one refresh in flight, at most one pending, at most one per `MIN_INTERVAL_S`. Over
`STORM_COUNT` changes within `STORM_WINDOW_S` is a storm: one refresh per
`STORM_INTERVAL_S`, and `storm_reason` (constant text: a long storm is one journal row)
stays set until `STORM_QUIET_S` of quiet.

`keep_alive` pings an idle session every `PING_INTERVAL_S` (MCP spec, basic/utilities
"Ping"; `server/discover` at 2026-07-28, where `ping` is gone): no answer within
`PING_TIMEOUT_S` means it is hung. `MONAD_PING_INTERVAL` (seconds) shortens it for tests.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import anyio
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from monad_cli.daemon.sessions.reasons import describe

if TYPE_CHECKING:
    from mcp import Client

log = logging.getLogger("monad.actor")

MIN_INTERVAL_S = 1.0
STORM_COUNT = 10
STORM_WINDOW_S = 10.0
STORM_INTERVAL_S = 15.0
STORM_QUIET_S = 60.0
STORM_REASON = (f"it announces tools/list_changed continuously (more than {STORM_COUNT} in "
                f"{STORM_WINDOW_S:.0f} s); its tools are re-listed at most every {STORM_INTERVAL_S:.0f} s")

PING_INTERVAL_S = 30.0
PING_TIMEOUT_S = 10.0
# While calls wait, a ping gets this many times the timeout (5 minutes): a server that handles
# one request at a time answers it only after the call, and must not be killed for a long one.
BUSY_PATIENCE = 30


def ping_schedule() -> tuple[float, float]:
    """(interval, timeout) in seconds; `MONAD_PING_INTERVAL` overrides the interval."""
    try:
        interval = float(os.environ.get("MONAD_PING_INTERVAL", PING_INTERVAL_S))
    except ValueError:
        interval = PING_INTERVAL_S
    if not math.isfinite(interval) or interval <= 0:
        interval = PING_INTERVAL_S
    return interval, min(PING_TIMEOUT_S, max(1.0, interval))


class ToolRefresh:
    """Coalesced, rate-limited re-listing (see the module docstring). `request()` from any
    task; `run()` is the worker, in the session's task group; `on_storm(reason | None)`
    is called when a storm starts or ends."""

    def __init__(self, refresh: Callable[[], Awaitable[None]],
                 on_storm: Callable[[str | None], None] = lambda reason: None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._refresh = refresh
        self._on_storm = on_storm
        self._clock = clock
        self._wake = anyio.Event()
        self._announced: deque[float] = deque()
        self._last_start = -math.inf
        self._last_notice = -math.inf
        self.storm_reason: str | None = None
        self.refreshes = 0
        self.notices = 0

    def request(self, *, announced: bool = True) -> None:
        """Ask for a refresh; `announced`: it comes from the server (counts toward a storm)."""
        if announced:
            now = self._clock()
            self.notices += 1
            self._last_notice = now
            self._announced.append(now)
            while self._announced and now - self._announced[0] > STORM_WINDOW_S:
                self._announced.popleft()
            if self.storm_reason is None and len(self._announced) > STORM_COUNT:
                self.storm_reason = STORM_REASON
                log.warning("tools/list_changed storm: %s", STORM_REASON)
                self._on_storm(self.storm_reason)
        self._wake.set()

    async def run(self) -> None:
        while True:
            with anyio.move_on_after(STORM_QUIET_S if self.storm_reason else math.inf):
                await self._wake.wait()
            self._wake = anyio.Event()
            if self.storm_reason and self._clock() - self._last_notice >= STORM_QUIET_S:
                self.storm_reason = None
                self._on_storm(None)
                continue
            interval = STORM_INTERVAL_S if self.storm_reason else MIN_INTERVAL_S
            wait = self._last_start + interval - self._clock()
            if wait > 0:
                await anyio.sleep(wait)  # requests meanwhile coalesce into this one refresh
            self._wake = anyio.Event()
            self._last_start = self._clock()
            self.refreshes += 1
            await self._refresh()


async def keep_alive(ping: Callable[[], Awaitable[object]], *, idle_for: Callable[[], float],
                     busy: Callable[[], bool], on_hung: Callable[[str], None],
                     gone: Callable[[], str | None] | None = None) -> None:
    """Ping every interval while nothing is received for an interval; `on_hung(reason)` once
    when a ping gets no answer in time, then return. While calls wait (`busy()`) a ping
    unanswered at its timeout may take `BUSY_PATIENCE` times it (5 minutes): a server busy
    with a call is not judged by a ping's time, one that answers nothing does not hold its
    callers forever. `gone()` (a remote's transport: why its last request got no answer at
    all, else None), read after each ping: an unreachable server is gone however busy."""
    interval, timeout = ping_schedule()
    while True:
        await anyio.sleep(max(0.05, interval - idle_for()))
        if idle_for() < interval:
            continue
        sent = time.monotonic()
        answered, waiting = await _ping_once(ping, timeout, busy)
        reason = gone() if gone is not None else None
        if reason is not None:
            on_hung(f"it cannot be reached: {reason}")
            return
        if not answered:
            # The time it got (a 2026-07-28 ping, `server/discover`, is bounded sooner: connect.ping).
            waited = round(time.monotonic() - sent) or timeout
            on_hung(f"it stopped answering: no answer to a ping within {waited:g} s "
                    f"after {interval:g} s without traffic{' while calls waited' if waiting else ''}")
            return


async def _ping_once(ping: Callable[[], Awaitable[object]], timeout: float,
                     busy: Callable[[], bool]) -> tuple[bool, bool]:
    """One ping for `keep_alive`: (answered, calls waited). Calls waiting when the ping's own
    `timeout` is up earn it the busy patience; a call that ended meanwhile does not (a server
    that froze right after answering it is not given five minutes)."""
    answered, unanswered = anyio.Event(), False

    async def send() -> None:
        nonlocal unanswered
        try:
            await ping()
        except TimeoutError:
            unanswered = True  # timed out on our side (connect.ping): no answer at all
        except Exception as exc:  # noqa: BLE001 - an error answer is an answer: it lives
            log.debug("ping answered with %s", exc)
        answered.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(send)
        with anyio.move_on_after(timeout):
            await answered.wait()
        waiting = not answered.is_set() and busy()
        if waiting:
            with anyio.move_on_after(timeout * (BUSY_PATIENCE - 1)):
                await answered.wait()
        tg.cancel_scope.cancel()
    return answered.is_set() and not unanswered, waiting


async def listen_for_tool_changes(client: Client, refresh: ToolRefresh, name: str,
                                  fresh_until: Callable[[], float] = lambda: math.inf) -> None:
    """2026-07-28 servers announce list changes only on a `subscriptions/listen` stream
    (legacy ones send notifications/tools/list_changed to `_on_message`); either way `refresh`
    re-lists the tools and the pin is re-checked (MCP spec, server/tools "List Changed
    Notification"). `name`: the server's, for the log.

    The stream opens after the first `tools/list`: a change between the two has no stream to
    ride, so once it is acknowledged the tools are listed again, unless the last listing is
    fresh by the server's word (`fresh_until()`, monotonic: its start + `ttlMs`); one more
    `tools/list` per connect where `ttlMs` is 0, the default."""
    caps = client.server_capabilities
    if client.protocol_version not in MODERN_PROTOCOL_VERSIONS or not (caps and caps.tools
                                                                       and caps.tools.list_changed):
        return
    try:
        async with client.listen(tools_list_changed=True) as events:
            if time.monotonic() >= fresh_until():
                refresh.request(announced=False)
            async for _event in events:
                refresh.request()
    except Exception as exc:  # noqa: BLE001 - no stream means no change events, nothing worse
        log.info("server %s: no subscriptions/listen stream (%s)", name, describe(exc))
