"""The request path of one server's session: monad's requests to the server, from any task.

`SessionRequests` (behind `ServerActor.call_tool` / `call_through`) takes the live
`mcp.Client`, routes the server's questions during a request to its caller (inputs.py), gives
a request its caller's capabilities (stamp.py), sends a plain stdio `tools/call` on monad's
own lane (direct.py) and the rest through the SDK's session, and fails an answer of a shape
the protocol does not define in one line. It is the seam (`Requests`) telemetry's CLIENT
spans wrap when on (`ActorContext.wrap_requests`, daemon/telemetry/wrappers.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, cast
from urllib.parse import urlsplit

from mcp import MCPError
from mcp_types import CONNECTION_CLOSED, INTERNAL_ERROR, CallToolResult
from pydantic import ValidationError

from monad_cli.core.errors import MonadError
from monad_cli.core.redact import redact_url
from monad_cli.daemon.sessions.reasons import describe, leaf_exceptions
from monad_cli.daemon.sessions.stamp import caller_meta
from monad_cli.daemon.trust.servers import SessionCut

if TYPE_CHECKING:
    from mcp import Client

    from monad_cli.daemon.sessions.actor import ServerActor
    from monad_cli.daemon.trust.call import ToolCall
    from monad_cli.daemon.trust.inputs import Caller

T = TypeVar("T")
# A request other than tools/call: `send(client, meta)` sends it on the live client with
# `meta` as its `_meta` (None: none), through the SDK's public `meta=` arguments.
Send = Callable[["Client", "dict[str, Any] | None"], Awaitable[T]]


class Requests(Protocol):
    """monad's requests to one server (see the module docstring)."""

    async def call_tool(self, call: ToolCall) -> CallToolResult:
        """tools/call of `call.tool` with `call.arguments` (`ServerActor.call_tool`)."""
        ...

    async def request(self, send: Send[T], *, caller: Caller | None, method: str | None,
                      target: str | None) -> T:
        """`send(client, meta)`, any other request (`ServerActor.call_through`)."""
        ...


class _WrongShapeFails:
    """`with WRONG_SHAPE_FAILS:` an answer of a shape the protocol does not define fails its
    call with a one-line reason (an MCPError, as any failed call), not pydantic's multi-line
    report. (A class, not a generator: ~7k instructions less a call.)"""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if isinstance(exc, ValidationError):
            raise MCPError(INTERNAL_ERROR, describe(exc)) from None


WRONG_SHAPE_FAILS = _WrongShapeFails()


_UNKNOWN = "whether the server acted on it is unknown"
# httpx2's errors for a connection that broke under a request already sent (not a refused
# connect: that request never reached the server).
_DROPPED_ERRORS = ("RemoteProtocolError", "ReadError")


def _dropped(exc: BaseException) -> bool:
    return any(type(leaf).__name__ in _DROPPED_ERRORS for leaf in leaf_exceptions(exc))


class SessionRequests:
    """The request path of `actor`'s session (see the module docstring)."""

    def __init__(self, actor: ServerActor) -> None:
        self.actor = actor

    def _client(self) -> Client:
        actor = self.actor
        client = actor.client
        if client is None or not actor.live:
            raise MonadError(f"server `{actor.name}` is {actor.state}"
                             f"{': ' + actor.reason if actor.reason else ''} (see `monad mcp status {actor.name}`)")
        return client

    async def call_tool(self, call: ToolCall) -> CallToolResult:
        actor = self.actor
        client = self._client()
        assert call.tool is not None
        rto = actor.spec.request_timeout_ms if actor.spec else None
        # A plain call (no progress asked, no deadline of its own) takes the direct lane.
        lane = actor.conn.lane if actor.conn is not None and call.progress is None and not rto else None
        async with _Cut(actor, client):
            with actor.inputs.serving(call), WRONG_SHAPE_FAILS:
                result = await lane.call(call, client.protocol_version, actor.tools) if lane is not None else None
                if result is None:
                    meta = caller_meta(call, call.meta)
                    result = await client.call_tool(call.tool.name, call.arguments,
                                                    read_timeout_seconds=rto / 1000 if rto else None,
                                                    progress_callback=call.progress, meta=cast(Any, meta))
                return result

    async def request(self, send: Send[T], *, caller: Caller | None, method: str | None,
                      target: str | None) -> T:
        client = self._client()
        # An answer of a shape the protocol does not define fails its request in one line, as a
        # call's does: a read, a get, a listing (a `resources/templates/list` answered `{}`
        # left pydantic's error to the gateway, which failed every server's listing with it).
        async with _Cut(self.actor, client):
            with self.actor.inputs.serving(caller), WRONG_SHAPE_FAILS:
                return await send(client, caller_meta(caller, caller.meta if caller is not None else None))


class _Cut:
    """`async with _Cut(actor, client):` a request on `client` that fails because its session
    ended says why, not what the SDK raised (only "Connection closed", or its own
    RuntimeError once the client is closed): `SessionCut` when monad ended the session on
    purpose; MCPError -32000 with the words of the server's status row when the server
    ended it (it exited, was killed, stopped answering: `ServerActor.ended_reason`), or,
    for a remote server, saying the connection to it was lost, in the same structure.
    (A class, not a generator: ~12k instructions less a call.)"""

    __slots__ = ("actor", "client", "conn")

    def __init__(self, actor: ServerActor, client: Client) -> None:
        self.actor = actor
        self.client = client
        self.conn = actor.conn

    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, exc_type: type[BaseException] | None, e: BaseException | None, tb: object) -> None:
        if not isinstance(e, Exception):
            return  # no failure, or a cancellation: as it is
        actor = self.actor
        closed = isinstance(e, MCPError) and e.error.code == CONNECTION_CLOSED
        why = actor.cut_reason(self.client)
        if why is not None and (closed or not isinstance(e, MCPError)):
            raise SessionCut(actor.name, *why) from None
        if actor.spec is not None and actor.spec.transport == "http" and (closed or _dropped(e)):
            # The response stream broke (the server died, a proxy cut it): HTTP has no exit
            # status to wait for, and the SDK's "Connection closed" or httpx2's own text
            # would not say what the person needs to know.
            raise MCPError(CONNECTION_CLOSED, f"its connection to the server was lost during the request "
                                              f"(`{redact_url(actor.spec.url or '')}`, before the answer); "
                                              f"{_UNKNOWN}; `monad mcp status {actor.name}` says whether it "
                                              "is back") from None
        ended = await actor.ended_reason(self.conn) if closed else None
        if ended is None:
            return  # the failure as it is
        raise MCPError(CONNECTION_CLOSED, f"its session ended during the request: {ended}; {_UNKNOWN}; "
                                          f"`monad mcp status {actor.name}` says whether it is back") from None


def address(actor: Any) -> tuple[str, int | None] | None:
    """`server.address`/`server.port` of a remote server (its URL's host, never its query)."""
    spec = actor.spec
    if spec is None or spec.transport != "http" or not spec.url:
        return None
    try:
        parts = urlsplit(spec.url)
        return (parts.hostname, parts.port) if parts.hostname else None
    except ValueError:
        return None
