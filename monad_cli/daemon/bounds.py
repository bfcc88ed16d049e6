"""What a stranger can hold of the supervisor through a listener (DESIGN "Control API").

Every uvicorn listener of the supervisor (the control socket, the Studio's and the MCP Apps
sandbox's ports, each HTTP gateway's port, `/metrics`) gets a `ListenerGuard` from
`serving.AppServer`, through two public seams: uvicorn's `Config(http=…)` takes the HTTP
protocol class (the guard wraps uvicorn's `H11Protocol` in an `asyncio.Protocol` of its own,
without touching its insides), and the ASGI app (wrapped too). What they hold to:

- **A request's headers within `HEADER_TIMEOUT_S`** of the connection's start or of its
  previous answer's end. uvicorn's keep-alive timer only counts idle time and is reset by
  every byte (its issue #157): a peer sending a header line every few seconds would hold a
  connection forever (slowloris, CVE-2007-6750). The timer stops while the app handles a
  request: an event stream or a long tool call is not cut.
- **At most `MAX_UNAUTHENTICATED` unauthenticated connections per listener**, until a
  request on one carries valid credentials (the app calls `authenticated()`; the control
  socket's peers are checked at connect by uid). More are answered 503 and closed; an
  unauthenticated request's answer closes its connection (`Connection: close`), so a refused
  peer cannot keep a slot by asking again.
- **All listeners' connections under the nofile limit.** `raise_nofile()` raises the soft
  limit to the hard one at the supervisor's start; the listeners together may hold that many
  less `FD_RESERVE` (`BUDGET`), kept for the control socket, the journal, the logs and the
  spawned servers' pipes: idle connections must not fail every CLI command.
- **Each refusal is one log line**: a refused peer, a connection closed for its headers'
  time, a failed accept (`log_accept_errors`), counted per listener and kind and logged at
  most every `LOG_EVERY_S`.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import resource
import socket
import struct
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, cast

if TYPE_CHECKING:  # stdlib only at run time: daemon/main.py raises the limit before the HTTP stack loads
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("monad.listeners")

HEADER_TIMEOUT_S = 5.0
"""Seconds a connection has to send a request's headers (a local client sends them in one write)."""
MAX_UNAUTHENTICATED = 64
"""Connections per listener that have not made an authenticated request (a browser opens six)."""
FD_RESERVE = 256
"""Descriptors the listeners leave for the control socket, the journal, logs and spawned servers."""
FD_LOW = 16
"""Descriptors left under the soft limit below which `check_descriptors` says accepting fails."""
LOG_EVERY_S = 10.0
"""A listener's refusals of one kind are one log line per this many seconds, with their count."""

# The connection whose bytes uvicorn is handling: set around its `data_received`, where uvicorn
# creates the request's task, which copies the context (asyncio `create_task`); the app reads it.
_CONNECTION: ContextVar[GuardedProtocol | None] = ContextVar("monad_listener_connection", default=None)


def authenticated() -> None:
    """Called by a listener's app once a request carried valid credentials (a bearer token, a
    Studio session): its connection no longer counts against `MAX_UNAUTHENTICATED`, and keeps
    alive after the answer. A no-op outside a guarded connection."""
    connection = _CONNECTION.get()
    if connection is not None:
        connection.authenticate()


@dataclass
class FdBudget:
    """How many connections all guarded listeners together may hold: `limit` (None: no limit,
    before `raise_nofile` set one)."""

    limit: int | None = None
    open: int = 0


BUDGET = FdBudget()


def raise_nofile(budget: FdBudget = BUDGET) -> tuple[int, int]:
    """Raise this process's `RLIMIT_NOFILE` soft limit to its hard limit and set `budget` to it
    less `FD_RESERVE` (at least half of it). Returns (soft before, soft now); a limit that
    cannot be raised is kept. The supervisor's children inherit the raised limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
    now = soft
    if soft != resource.RLIM_INFINITY and target > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            now = target
        except (ValueError, OSError):
            pass
    usable = now if now != resource.RLIM_INFINITY else 1 << 20
    budget.limit = max(usable - FD_RESERVE, usable // 2)
    return soft, now


class Tally:
    """One listener's refusals of each kind, logged as one line at most every `LOG_EVERY_S`
    (the first at once, the rest summed in the next, scheduled if none follows)."""

    def __init__(self, what: str, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.what = what
        self._clock = clock
        self._pending: dict[str, tuple[int, str]] = {}  # kind → (count since the last line, last detail)
        self._last: dict[str, float] = {}
        self._flush: dict[str, asyncio.TimerHandle] = {}

    def note(self, kind: str, detail: str) -> None:
        """Count one `kind` event (`detail`: what happened, for the log line)."""
        count = self._pending.get(kind, (0, ""))[0] + 1
        self._pending[kind] = (count, detail)
        now = self._clock()
        due = self._last.get(kind, -LOG_EVERY_S) + LOG_EVERY_S
        if now >= due:
            self._write(kind)
        elif kind not in self._flush:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                return
            self._flush[kind] = loop.call_later(due - now, self._write, kind)

    def _write(self, kind: str) -> None:
        handle = self._flush.pop(kind, None)
        if handle is not None:
            handle.cancel()
        count, detail = self._pending.pop(kind, (0, ""))
        if not count:
            return
        self._last[kind] = self._clock()
        more = f" ({count} in the last {LOG_EVERY_S:.0f} s)" if count > 1 else ""
        log.warning("%s: %s%s", self.what, detail, more)


def peer_uid(sock: socket.socket | None) -> int | None:
    """The uid of the process at the other end of a unix socket (SO_PEERCRED); None for any
    other socket."""
    if sock is None or sock.family != socket.AF_UNIX:
        return None
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return int(struct.unpack("3i", creds)[1])


def _peer(transport: asyncio.BaseTransport) -> str:
    name = transport.get_extra_info("peername")
    return f"{name[0]}:{name[1]}" if isinstance(name, tuple) and len(name) >= 2 else "a local process"


class ListenerGuard:
    """The bounds of one listener (`what` names it in the log: "the Studio on port 8720").

    `check_peer_uid`: a unix socket's peers must be this uid (or root, which can read the
    socket anyway); they are authenticated by that, at connect. `budget`: None leaves the
    listener out of `BUDGET` (the control socket: the reserve is kept for it)."""

    def __init__(self, what: str, *, check_peer_uid: bool = False, budget: FdBudget | None = BUDGET,
                 header_timeout: float = HEADER_TIMEOUT_S, max_unauthenticated: int = MAX_UNAUTHENTICATED) -> None:
        self.what = what
        self.check_peer_uid = check_peer_uid
        self.budget = budget
        self.header_timeout = header_timeout
        self.max_unauthenticated = max_unauthenticated
        self.unauthenticated = 0
        self.tally = Tally(what)

    def protocol(self, inner: type[asyncio.Protocol]) -> type[asyncio.Protocol]:
        """The class to pass as `uvicorn.Config(http=…)`: `inner` (uvicorn's protocol class,
        built with uvicorn's own arguments) behind this guard."""
        return type(f"Guarded{inner.__name__}", (GuardedProtocol,), {"guard": self, "inner_class": inner})

    def app(self, app: ASGIApp) -> ASGIApp:
        """`app` behind this guard: each request stops its connection's header timer for as long
        as it runs, and the answer to an unauthenticated one closes the connection."""

        async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
            connection = _CONNECTION.get()
            if connection is None or scope["type"] != "http":
                await app(scope, receive, send)
                return

            async def closing(message: Message) -> None:
                if message["type"] == "http.response.start" and not connection.authenticated:
                    message = {**message, "headers": [*message.get("headers", []), (b"connection", b"close")]}
                await send(message)

            connection.request_started()
            try:
                await app(scope, receive, closing)
            finally:
                connection.request_ended()

        return guarded

    # -- admission ---------------------------------------------------------------------------
    def admit(self, transport: asyncio.BaseTransport) -> tuple[bool, str | None]:
        """(authenticated, refusal): whether the new connection on `transport` is let in."""
        if self.check_peer_uid:
            uid = peer_uid(transport.get_extra_info("socket"))
            if uid is not None and uid not in (os.getuid(), 0):
                return False, f"refused a connection from uid {uid} (only this user's processes may connect)"
            return True, None
        if self.budget is not None and self.budget.limit is not None and self.budget.open >= self.budget.limit:
            return False, (f"refused a connection from {_peer(transport)}: the listeners hold {self.budget.open} "
                           f"connections, as many as the open-file limit allows beside {FD_RESERVE} descriptors "
                           f"kept for the control socket and servers")
        if self.unauthenticated >= self.max_unauthenticated:
            return False, (f"refused a connection from {_peer(transport)}: {self.unauthenticated} connections "
                           f"without credentials are open already (at most {self.max_unauthenticated})")
        return False, None


_BUSY_TEXT = b"too many connections to this port; retry\n"
_BUSY = (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\nconnection: close\r\n"
         b"content-length: " + str(len(_BUSY_TEXT)).encode() + b"\r\n\r\n" + _BUSY_TEXT)


class GuardedProtocol(asyncio.Protocol):
    """One connection of a guarded listener: uvicorn's protocol inside (`inner_class`, built
    with uvicorn's arguments once the connection is admitted), the guard's timer and counts
    around it. Only the `asyncio.Protocol` interface of the inner one is used."""

    guard: ClassVar[ListenerGuard]
    inner_class: ClassVar[type[asyncio.Protocol]]

    def __init__(self, **uvicorn_arguments: Any) -> None:
        self._arguments = uvicorn_arguments
        self.inner: asyncio.Protocol | None = None
        self.transport: asyncio.Transport | None = None
        self.authenticated = False
        self._counted = False  # in the guard's unauthenticated count
        self._budgeted = False  # in the budget's open count
        self._timer: asyncio.TimerHandle | None = None

    # -- asyncio.Protocol ---------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not `asyncio.Transport` subclasses, but have its methods.
        self.transport = cast("asyncio.Transport", transport)
        guard = self.guard
        authenticated, refusal = guard.admit(transport)
        if refusal is not None:
            guard.tally.note("refused", refusal)
            if not guard.check_peer_uid:  # a browser or an agent says why; the socket's stranger gets nothing
                self.transport.write(_BUSY)
            transport.close()
            return
        if guard.budget is not None:
            guard.budget.open += 1
            self._budgeted = True
        if authenticated:
            self.authenticated = True
        else:
            guard.unauthenticated += 1
            self._counted = True
        self.inner = self.inner_class(**self._arguments)
        self.inner.connection_made(self.transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self.inner is None:
            return
        token = _CONNECTION.set(self)
        try:
            self.inner.data_received(data)
        finally:
            _CONNECTION.reset(token)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received() if self.inner is not None else None

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        guard = self.guard
        if self._counted:
            guard.unauthenticated -= 1
            self._counted = False
        if self._budgeted and guard.budget is not None:
            guard.budget.open -= 1
            self._budgeted = False
        if self.inner is not None:
            self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        if self.inner is not None:
            self.inner.pause_writing()

    def resume_writing(self) -> None:
        if self.inner is not None:
            self.inner.resume_writing()

    # -- what the guard's app says --------------------------------------------------------------
    def authenticate(self) -> None:
        self.authenticated = True
        if self._counted:
            self.guard.unauthenticated -= 1
            self._counted = False

    def request_started(self) -> None:
        self._disarm()

    def request_ended(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self._arm()

    # -- the header timer ---------------------------------------------------------------------
    def _arm(self) -> None:
        self._disarm()
        self._timer = asyncio.get_running_loop().call_later(self.guard.header_timeout, self._expire)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expire(self) -> None:
        self._timer = None
        if self.transport is not None and not self.transport.is_closing():
            self.guard.tally.note("timeout", f"closed a connection from {_peer(self.transport)} that sent no "
                                             f"complete request within {self.guard.header_timeout:g} s")
            self.transport.close()


_ACCEPT = Tally("accepting connections")


def check_descriptors(open_now: Callable[[], int | None] | None = None) -> bool:
    """Note (one counted line, `_ACCEPT`) when fewer than `FD_LOW` descriptors are left
    under the soft limit: `accept()` fails from there on. True when it did. `open_now` counts
    the descriptors open (None where it cannot be told)."""
    count = (open_now or _open_descriptors)()
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if count is None or soft == resource.RLIM_INFINITY or soft - count >= FD_LOW:
        return False
    _ACCEPT.note("descriptors", f"{count} of {soft} descriptors are open: new connections fail from here "
                                f"(uvloop closes one it cannot accept without a word)")
    return True


def _open_descriptors() -> int | None:
    try:
        return len(os.listdir("/proc/self/fd")) - 1  # less the one listdir opened
    except OSError as e:
        if e.errno in (errno.EMFILE, errno.ENFILE):  # none left even to look with
            return int(resource.getrlimit(resource.RLIMIT_NOFILE)[0])
        return None  # not Linux: nothing to count with


def log_accept_errors(loop: asyncio.AbstractEventLoop) -> None:
    """Make the loop's report of a failed `accept()` (asyncio's "socket.accept() out of
    system resource", a traceback on every retry) one counted log line; other reports go
    where they went. uvloop reports none (libuv closes a connection it cannot accept without
    a word; measured: 50 refused, no report), so `check_descriptors` also looks every
    `LOG_EVERY_S`, on any loop; the budget above keeps the listeners from getting there."""

    def watch() -> None:
        check_descriptors()
        loop.call_later(LOG_EVERY_S, watch)

    loop.call_later(LOG_EVERY_S, watch)
    previous = loop.get_exception_handler()

    def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if isinstance(exc, OSError) and "accept" in str(context.get("message", "")):
            sock = context.get("socket")
            where = sock.getsockname() if sock is not None else "?"
            _ACCEPT.note("accept", f"accept() failed on {where}: {exc.strerror or exc}; the connection waits "
                                   f"in the backlog or is dropped")
            return
        if previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    loop.set_exception_handler(handler)


__all__ = ["BUDGET", "HEADER_TIMEOUT_S", "MAX_UNAUTHENTICATED", "ListenerGuard", "authenticated",
           "check_descriptors", "log_accept_errors", "peer_uid", "raise_nofile"]
