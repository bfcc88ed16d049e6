"""Transports to remote servers: streamable HTTP, and the legacy HTTP+SSE transport of
protocol version 2024-11-05, both from the SDK, under monad's own bookkeeping.

- `SessionKeeper`, an httpx2 transport under the SDK's HTTP client, records each POST's
  status by JSON-RPC method (`initialize` answered 400/404/405: "try legacy SSE", MCP spec,
  basic/transports "Backwards Compatibility") and keeps a streamable-HTTP session across a
  server restart: a 404 to an old `Mcp-Session-Id` (or a 400 saying the session is not
  valid) gets a new `initialize`, then the request is sent again, once ("Session
  Management", item 4; the keeper rewrites the old id the SDK keeps sending). It honours
  `Retry-After` on a 429 or 503 (RFC 9110 §10.2.3, RFC 6585 §4), answering locally until then.
- An HTTP error without a JSON-RPC error gets one saying `HTTP 404 Not Found from URL`: the
  SDK's stand-in drops the status and where it came from.
- The streams pass through an `Exchange` (exchange.py), every message from the server first
  through the supervisor's scrubber (`TransportOptions.ingress`).
"""

from __future__ import annotations

import contextvars
import json
import logging
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from email.utils import parsedate_to_datetime
from typing import Any

import anyio
import anyio.abc
import httpx2
from mcp.shared.message import ClientMessageMetadata, SessionMessage
from mcp_types import INTERNAL_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, JSONRPCNotification, JSONRPCRequest

from monad_cli.config.schema import ServerSpec
from monad_cli.core.messages import connect_failure
from monad_cli.core.redact import redact_url
from monad_cli.daemon.sessions.direct import DirectLane
from monad_cli.daemon.sessions.exchange import Exchange, Outgoing
from monad_cli.daemon.sessions.transports import Connection, TransportOptions, http_headers

log = logging.getLogger("monad.transport")

LEGACY_SSE_STATUSES = frozenset({400, 404, 405})
# "Too Many Requests" (RFC 6585 §4) and "Service Unavailable" (RFC 9110 §15.6.4) may carry a
# Retry-After; honoured up to the retry cap (backoff.MAX_DELAY_S).
RETRY_AFTER_STATUSES = frozenset({429, 503})
# The authorization flow (the SDK's OAuth provider, RFC 6750 §3.1) reads these answers as they came.
AUTH_STATUSES = frozenset({401, 403})
MAX_RETRY_AFTER_S = 300.0
SESSION_HEADER = "mcp-session-id"
HTTP_TIMEOUT_S = 30.0  # the SDK's own defaults (create_mcp_http_client): 30 s,
SSE_READ_TIMEOUT_S = 300.0  # and 300 s between events of an SSE stream


def retry_after_seconds(value: str | None, *, now: float | None = None) -> float | None:
    """The wait a `Retry-After` header asks for, in seconds (RFC 9110 §10.2.3: delay-seconds
    or an HTTP-date; a date in the past is 0), or None when absent or unreadable."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None  # an HTTP-date is always GMT; one without a zone is not one
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def legacy_sse_candidate(conn: Connection) -> bool:
    """A failed streamable-HTTP connect whose `initialize` POST was refused the way a
    GET-only legacy SSE endpoint refuses it."""
    return conn.post_status.get("initialize") in LEGACY_SSE_STATUSES


async def _with_rpc_error(request: httpx2.Request, response: httpx2.Response, request_id: Any) -> httpx2.Response:
    """`response` (an HTTP error to the POST of request `request_id`) as it is when its body is
    a JSON-RPC error, else the same status with one that names the status and the URL. The
    code is the one the SDK would give (streamable_http `_handle_post_request`): a 404 without
    a session is METHOD_NOT_FOUND, with one INVALID_REQUEST (the session is gone), any other
    status INTERNAL_ERROR."""
    body = await response.aread()
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("error"), dict) and "jsonrpc" in data:
        return response
    status = response.status_code
    code = INTERNAL_ERROR if status != 404 else INVALID_REQUEST if SESSION_HEADER in request.headers \
        else METHOD_NOT_FOUND
    message = f"HTTP {status} {response.reason_phrase} from {redact_url(str(request.url))}"
    error = {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    return httpx2.Response(status, json=error, request=request)


def _rpc_of(body: bytes) -> tuple[Any, str] | None:
    """(id, method) of a JSON-RPC request or notification body, else None."""
    try:
        data = json.loads(body)
    except ValueError:
        return None
    if isinstance(data, dict) and isinstance(data.get("method"), str):
        return data.get("id"), data["method"]
    return None


def _sse_or_json_result(body: bytes) -> dict[str, Any] | None:
    """The `result` of the one JSON-RPC response in a JSON or SSE body."""
    candidates = [body] + [line[5:] for line in body.splitlines() if line.startswith(b"data:")]
    for raw in candidates:
        try:
            data = json.loads(raw)
        except ValueError:
            continue
        if isinstance(data, dict) and isinstance(data.get("result"), dict):
            return data["result"]
    return None


async def _session_unknown(response: httpx2.Response) -> bool:
    """Whether the server no longer knows the session the request carried: 404 (MCP spec,
    basic/transports "Session Management" item 4), or a 400 whose body says so, as
    `@modelcontextprotocol/server-everything` and other TypeScript servers answer after a
    restart ("Bad Request: No valid session ID provided"). A 400 for anything else is the
    request's own answer."""
    if response.status_code == 404:
        return True
    if response.status_code != 400:
        return False
    body = await response.aread()
    return b"session" in body[:4096].lower()


class SessionKeeper(httpx2.AsyncBaseTransport):
    """An `httpx2.AsyncBaseTransport` wrapping `inner` (see the module docstring).
    `on_refused(id, method, status)`: awaited when a request's POST gets a 4xx/5xx the SDK's
    transport does not turn into a response (the legacy SSE client only logs it: the request
    would wait forever)."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, conn: Connection, *,
                 keep_session: bool = True,
                 on_refused: Callable[[Any, str, int], Awaitable[None]] | None = None) -> None:
        self.inner = inner
        self.conn = conn
        self.keep_session = keep_session
        self.on_refused = on_refused
        self._initialize: tuple[bytes, Any] | None = None
        self._initialized: tuple[bytes, Any] | None = None
        self._current: str | None = None  # the session id the server knows now
        self._renamed: dict[str, str] = {}  # an id the SDK still sends → the current one
        self._lock = anyio.Lock()
        self.reinitialized = 0
        self.on_reinitialized: Callable[[], None] = lambda: None
        self._quiet_until = 0.0  # monotonic: until then the server asked not to be sent anything

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        body = await request.aread() if request.method == "POST" else b""
        rpc = _rpc_of(body) if body else None
        sent_sid = request.headers.get(SESSION_HEADER)
        if sent_sid is not None and sent_sid in self._renamed:
            request.headers[SESSION_HEADER] = self._renamed[sent_sid]
        quiet = self._quiet_until - time.monotonic()
        if quiet > 0:
            # The server asked for quiet (429/503 with Retry-After): answered here, not sent.
            status = self.conn.last_http_status or 429
            if rpc is not None:
                self.conn.post_status[rpc[1]] = status
            return httpx2.Response(status, request=request, headers={"retry-after": str(math.ceil(quiet))})
        try:
            response = await self.inner.handle_async_request(request)
        except Exception as exc:
            # Refused, reset, timed out: no answer at all. The session's liveness check reads it,
            # in the words of a failed first connect (`reasons.classify`), not httpx2's.
            self.conn.unreachable = connect_failure(exc, str(request.url))
            raise
        status = response.status_code
        self.conn.last_http_status = status
        self.conn.unreachable = f"it answers HTTP {status}" if status >= 500 or status == 429 else None
        if status in RETRY_AFTER_STATUSES:
            wait = retry_after_seconds(response.headers.get("retry-after"))
            if wait is not None:
                self.conn.retry_after = wait
                self._quiet_until = time.monotonic() + min(wait, MAX_RETRY_AFTER_S)
        if rpc is not None:
            self.conn.post_status[rpc[1]] = status
            self._remember(rpc[1], body, request, response)
        if sent_sid is not None and self.keep_session and self._initialize is not None \
                and request.method in ("POST", "GET") and await _session_unknown(response):
            await response.aclose()
            response = await self._retry_in_new_session(request, sent_sid)
        if response.status_code >= 400 and rpc is not None and rpc[0] is not None:
            if self.on_refused is not None:
                await self.on_refused(rpc[0], rpc[1], response.status_code)
            elif response.status_code not in AUTH_STATUSES:
                return await _with_rpc_error(request, response, rpc[0])
        return response

    def _remember(self, method: str, body: bytes, request: httpx2.Request, response: httpx2.Response) -> None:
        if response.status_code >= 300:
            return
        if method == "initialize":
            self._initialize = (body, request.headers.copy())
            self._current = response.headers.get(SESSION_HEADER)
        elif method == "notifications/initialized" and self._initialized is None:
            self._initialized = (body, request.headers.copy())

    async def _retry_in_new_session(self, request: httpx2.Request, sent_sid: str) -> httpx2.Response:
        async with self._lock:
            if self._renamed.get(sent_sid, sent_sid) == self._current:
                # Nobody re-initialized since this request went out: this one does.
                new_sid = await self._reinitialize(request)
                if new_sid is None:
                    self.conn.mark_closed()  # the actor reconnects from scratch
                    return httpx2.Response(404, request=request)
                for old in [sent_sid, *self._renamed]:
                    self._renamed[old] = new_sid
            request.headers[SESSION_HEADER] = self._current or ""
        log.info("retrying a %s in the new session", request.method)
        return await self.inner.handle_async_request(request)  # once: a second 404 stands

    async def _replay(self, saved: tuple[bytes, Any], failed: httpx2.Request, sid: str | None) -> httpx2.Response:
        """A POST the session began with (`saved`: its body and headers) sent again to
        `failed`'s URL in session `sid` (None: without one); the answer, read."""
        body, headers = saved
        headers = headers.copy()
        headers.pop("content-length", None)
        headers.pop(SESSION_HEADER, None)
        if sid is not None:
            headers[SESSION_HEADER] = sid
        if "authorization" in failed.headers:  # the token may have been refreshed since
            headers["authorization"] = failed.headers["authorization"]
        response = await self.inner.handle_async_request(
            httpx2.Request("POST", failed.url, headers=headers, content=body))
        await response.aread()
        await response.aclose()
        return response

    async def _reinitialize(self, failed: httpx2.Request) -> str | None:
        """A new session with the restarted server: `initialize` without a session id,
        the same parameters as the first time, then `notifications/initialized`."""
        assert self._initialize is not None
        response = await self._replay(self._initialize, failed, None)
        new_sid = response.headers.get(SESSION_HEADER)
        result = _sse_or_json_result(response.content)
        negotiated = failed.headers.get("mcp-protocol-version")
        if response.status_code >= 300 or result is None or not new_sid:
            log.warning("the server lost the session and refused a new one (HTTP %d)", response.status_code)
            return None
        if negotiated and result.get("protocolVersion") != negotiated:
            log.warning("the restarted server negotiates %s, not %s; reconnecting", result.get("protocolVersion"),
                        negotiated)
            return None
        self._current = new_sid
        if self._initialized is not None:
            await self._replay(self._initialized, failed, new_sid)
        self.reinitialized += 1
        log.info("the server lost the session; re-initialized (%d so far)", self.reinitialized)
        self.on_reinitialized()
        return new_sid


# -- the session's streams, through an Exchange ----------------------------------------
class _ReadSide(anyio.abc.ObjectReceiveStream[Any]):
    """What the SDK session reads: the transport's messages (their sender context kept,
    as the SDK's context streams do) and local answers from the exchange. anyio's base
    gives the iteration and the async CM; the SDK's dispatcher takes a closed stream as
    the end of it."""

    def __init__(self, receive: Any) -> None:
        self._receive = receive
        self.last_context: contextvars.Context | None = None

    async def receive(self) -> Any:
        ctx, item = await self._receive.receive()
        self.last_context = ctx
        return item

    async def aclose(self) -> None:
        await self._receive.aclose()


class _WriteSide(anyio.abc.ObjectSendStream[SessionMessage]):
    """What the SDK session writes to: recorded, then sent on in the caller's own task
    (the SDK's streams capture the caller's contextvars, e.g. its request clock). Also the
    `Wire` of monad's own lane (sessions/direct.py): its messages take the same way."""

    def __init__(self, inner: Any, exchange: Exchange) -> None:
        self._inner = inner
        self._exchange = exchange

    async def send(self, item: SessionMessage) -> None:
        self._exchange.sent(item)
        await self._inner.send(item)

    async def request(self, body: dict[str, Any], headers: dict[str, str]) -> None:
        message = JSONRPCRequest.model_validate(body)
        await self.send(SessionMessage(message, metadata=ClientMessageMetadata(headers=headers)))

    async def notify(self, body: dict[str, Any]) -> None:
        await self.send(SessionMessage(JSONRPCNotification.model_validate(body)))

    async def aclose(self) -> None:
        await self._inner.aclose()


@asynccontextmanager
async def _through_exchange(read: Any, write: Any, conn: Connection, exchange_box: list[Exchange],
                            name: str, options: TransportOptions) -> AsyncIterator[tuple[_ReadSide, _WriteSide]]:
    send, receive = anyio.create_memory_object_stream[tuple[contextvars.Context | None, Any]](0)
    local = send.clone()

    async def deliver(message: SessionMessage) -> None:
        await local.send((None, message))

    exchange = Exchange(deliver, name=name, discover_budget=options.discover_budget)
    exchange_box.append(exchange)
    conn.exchange = exchange

    async def pump() -> None:
        async with send, local:
            try:
                async for item in read:
                    if isinstance(item, SessionMessage):
                        # The ingress choke point: every message the server sent, before the
                        # exchange or the SDK's session reads it (daemon/scrubber.py).
                        message = options.ingress.message(item.message)
                        if message is not item.message:
                            item = SessionMessage(message, metadata=item.metadata)
                        if not exchange.received(item.message):
                            continue
                    await send.send((getattr(read, "last_context", None), item))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream):
                pass
            finally:
                conn.mark_closed()

    write_side = _WriteSide(write, exchange)
    conn.lane = exchange.lane = DirectLane(write_side, exchange.envelope)
    async with anyio.create_task_group() as tg:
        exchange.start(tg)
        tg.start_soon(pump)
        try:
            yield _ReadSide(receive), write_side
        finally:
            tg.cancel_scope.cancel()


def _client(spec: ServerSpec, keeper: SessionKeeper, auth: Any, headers: dict[str, str] | None = None,
            timeout: Any = None) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(headers=headers if headers is not None else http_headers(spec), auth=auth,
                              timeout=timeout or httpx2.Timeout(HTTP_TIMEOUT_S, read=SSE_READ_TIMEOUT_S),
                              transport=keeper)


@asynccontextmanager
async def streamable_http_transport(spec: ServerSpec, conn: Connection, options: TransportOptions | None = None,
                                    *, auth: Any = None) -> AsyncIterator[Any]:
    """The SDK's streamable-HTTP client over a `SessionKeeper`; yields (read, write)."""
    from mcp.client.streamable_http import streamable_http_client

    opts = options or TransportOptions()
    assert spec.url is not None
    conn.transport = "streamable-http"
    keeper = SessionKeeper(httpx2.AsyncHTTPTransport(), conn)
    conn.extra["keeper"] = keeper
    box: list[Exchange] = []
    async with (_client(spec, keeper, auth) as http,
                streamable_http_client(spec.url, http_client=http,
                                       max_sse_event_size=opts.max_message_bytes) as (read, write),
                _through_exchange(read, write, conn, box, spec.name, opts) as streams):
        yield streams


@asynccontextmanager
async def sse_transport(spec: ServerSpec, conn: Connection, options: TransportOptions | None = None,
                        *, auth: Any = None) -> AsyncIterator[Any]:
    """The SDK's legacy HTTP+SSE client (2024-11-05: GET the URL for an SSE stream whose
    `endpoint` event names where to POST); yields (read, write). A POST the server
    refuses fails its request at once and ends the session (the SDK's writer stops)."""
    from mcp.client.sse import sse_client

    opts = options or TransportOptions()
    assert spec.url is not None
    conn.transport = "sse"
    box: list[Exchange] = []

    async def refused(request_id: Any, method: str, status: int) -> None:
        outgoing: Outgoing | None = box[0].lookup(request_id) if box else None
        if outgoing is not None:
            await box[0].fail(outgoing, f"the server answered HTTP {status} to the POST of `{method}`")
        conn.mark_closed()

    keeper = SessionKeeper(httpx2.AsyncHTTPTransport(), conn, keep_session=False, on_refused=refused)

    def factory(headers: dict[str, str] | None = None, timeout: Any = None, auth: Any = None) -> Any:
        return _client(spec, keeper, auth, headers=headers, timeout=timeout)

    async with (sse_client(spec.url, headers=http_headers(spec), timeout=HTTP_TIMEOUT_S,
                           sse_read_timeout=SSE_READ_TIMEOUT_S, httpx_client_factory=factory,
                           auth=auth) as (read, write),
                _through_exchange(read, write, conn, box, spec.name, opts) as streams):
        yield streams
