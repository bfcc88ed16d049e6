"""The requests in flight on one connection, between a transport and the SDK's session.

Every transport records here the requests the session writes and the responses it reads,
so a response that can never arrive (a line over the size limit or not JSON, a refused POST)
fails exactly its request, with a reason, instead of leaving its caller waiting forever
(JSON-RPC 2.0 §5: every request gets a response object; here a local one).

It bounds the era probe: `server/discover` (MCP 2026-07-28, basic/lifecycle "Version
Negotiation") gets `discover_budget` seconds, then a local timeout error, which the SDK's
`mode="auto"` takes as "legacy server": any legacy server connects within the connect
timeout. It sieves list results item by item (listings.py): a bad item is taken out, with a
reason in `left_out`, not the whole list. Every message passes it: `sent` (a 2026-07-28
envelope gets its caller's capabilities, stamp.py), `received` (monad's own lane's answers
are taken there, direct.py).
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
from mcp.shared.message import SessionMessage
from mcp_types import (
    INTERNAL_ERROR,
    REQUEST_TIMEOUT,
    ErrorData,
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    RequestId,
)

from monad_cli.daemon.sessions.listings import LISTS, sieve_listing
from monad_cli.daemon.sessions.stamp import Envelope

if TYPE_CHECKING:
    from monad_cli.daemon.sessions.direct import DirectLane

log = logging.getLogger("monad.transport")

DISCOVER = "server/discover"
CANCELLED = "notifications/cancelled"
# Long-lived by design: never the one a stray, unmatched answer is pinned on.
LONG_LIVED = frozenset({"subscriptions/listen"})
DISCOVER_TIMEOUT_S = 10.0  # the SDK's own bound (DISCOVER_TIMEOUT_SECONDS)
DISCOVER_SHARE = 0.5  # of the connect timeout: the rest is for initialize + tools/list


def discover_budget(connect_timeout: float) -> float:
    """Seconds `server/discover` may take before the server is treated as legacy."""
    return min(DISCOVER_TIMEOUT_S, connect_timeout * DISCOVER_SHARE)


@dataclass
class Outgoing:
    """One request written to the server and not answered yet."""

    id: RequestId
    method: str
    message: SessionMessage | None  # None: a line of monad's own lane (sessions/direct.py)


def _key(request_id: object) -> str:
    # The SDK mints ints; a server may echo "7" for 7 (the dispatcher coerces the same way).
    return str(request_id)


class Exchange:
    """Bookkeeping of one connection's requests; `deliver` puts a message in front of the
    session (the transport's read stream); `envelope`: the session's 2026-07-28 envelope;
    `lane`: monad's own requests on the connection (the transport sets it). Use from the
    transport's tasks only."""

    def __init__(self, deliver: Callable[[SessionMessage], Any], *, name: str = "",
                 discover_budget: float | None = None) -> None:
        self._deliver = deliver
        self.name = name
        self.discover_budget = discover_budget
        self.outstanding: dict[str, Outgoing] = {}
        self._failed: set[str] = set()
        self.last_received = time.monotonic()
        self._tg: anyio.abc.TaskGroup | None = None
        self.version: str | None = None  # the negotiated protocol version, once known (the actor sets it)
        self.left_out: list[str] = []  # why tools/list items were taken out (listings.sieve_listing), until taken
        # Why items of the other lists (prompts/list, resources/list, resources/templates/list)
        # were taken out: per method, the reasons of its latest listing (all its pages).
        self.listed_out: dict[str, list[str]] = {}
        self.envelope = Envelope()
        self.lane: DirectLane | None = None

    def start(self, tg: anyio.abc.TaskGroup) -> None:
        """Timers (the discover budget) run in `tg`, the transport's task group."""
        self._tg = tg

    # -- the session's side ----------------------------------------------------------
    def sent(self, item: SessionMessage) -> None:
        message = item.message
        self.envelope.sent(message)
        if isinstance(message, JSONRPCNotification) and message.method == CANCELLED:
            # The session gave up on that request (a timeout, the caller left): nobody
            # waits for its answer any more, so it no longer makes the session busy.
            cancelled = (message.params or {}).get("requestId")
            if cancelled is not None:
                self.outstanding.pop(_key(cancelled), None)
            return
        if not isinstance(message, JSONRPCRequest):
            return
        key = self.sent_request(message.id, message.method, item)
        if message.method in LISTS and message.method != "tools/list" and not (message.params or {}).get("cursor"):
            self.listed_out[message.method] = []  # a new listing (its first page): its own reasons only
        if message.method == DISCOVER and self.discover_budget is not None and self._tg is not None:
            self._tg.start_soon(self._bound_discover, key, self.discover_budget)

    def sent_request(self, request_id: RequestId, method: str, item: SessionMessage | None = None) -> str:
        """A request written (`item` None: as a line of monad's own lane); its key."""
        key = _key(request_id)
        self.outstanding[key] = Outgoing(request_id, method, item)
        self._failed.discard(key)
        return key

    def forget(self, request_id: RequestId) -> None:
        """Nobody waits for that request's answer any more (its caller cancelled it)."""
        self.outstanding.pop(_key(request_id), None)

    def received(self, message: JSONRPCMessage) -> bool:
        """Note a message from the server; False: it is not the session's (the late answer
        to a request already failed locally, which the session has forgotten; an answer to
        monad's own lane, taken by it)."""
        self.last_received = time.monotonic()
        if isinstance(message, (JSONRPCResponse, JSONRPCError)) and message.id is not None:
            key = _key(message.id)
            if key in self._failed:
                self._failed.discard(key)
                log.info("server %s: dropped a late answer to request %s", self.name, key)
                return False
            outgoing = self.outstanding.pop(key, None)
            if outgoing is not None and outgoing.method in LISTS and isinstance(message, JSONRPCResponse):
                # Before the SDK validates the list as a whole: one bad item costs that item.
                reasons = sieve_listing(outgoing.method, self.version, message.result)
                for reason in reasons:
                    log.warning("server %s: %s", self.name, reason)
                if outgoing.method == "tools/list":
                    self.left_out.extend(reasons)
                else:
                    self.listed_out.setdefault(outgoing.method, []).extend(reasons)
        return self.lane is None or not self.lane.resolve(message)

    # -- failing requests ------------------------------------------------------------
    def lookup(self, request_id: object) -> Outgoing | None:
        return self.outstanding.get(_key(request_id)) if request_id is not None else None

    def unmatched_candidates(self) -> list[Outgoing]:
        """The requests an answer whose id could not be read may have belonged to."""
        return [o for o in self.outstanding.values() if o.method not in LONG_LIVED]

    def calls_waiting(self) -> bool:
        """Whether a request other than a liveness check (`ping`, `server/discover`) or a
        long-lived one waits for its answer: what makes the session busy for `keep_alive`."""
        return any(o.method not in ("ping", DISCOVER) for o in self.unmatched_candidates())

    async def fail(self, outgoing: Outgoing, message: str, *, code: int = INTERNAL_ERROR,
                   data: Any = None) -> None:
        """Answer `outgoing` locally with a JSON-RPC error; its real answer, if it ever
        comes, is dropped."""
        key = _key(outgoing.id)
        if self.outstanding.pop(key, None) is None:
            return
        self._failed.add(key)
        error = JSONRPCError(jsonrpc="2.0", id=outgoing.id, error=ErrorData(code=code, message=message, data=data))
        if self.lane is not None and self.lane.resolve(error):
            return
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await self._deliver(SessionMessage(error))

    async def _bound_discover(self, key: str, budget: float) -> None:
        await anyio.sleep(budget if math.isfinite(budget) else math.inf)
        outgoing = self.outstanding.get(key)
        if outgoing is not None and outgoing.method == DISCOVER:
            log.info("server %s: no answer to server/discover within %.1f s; trying initialize (legacy)",
                     self.name, budget)
            await self.fail(outgoing, f"server/discover was not answered within {budget:g} s",
                            code=REQUEST_TIMEOUT)
