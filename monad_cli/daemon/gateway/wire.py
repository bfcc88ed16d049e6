"""JSON-RPC lines over one relay connection: the byte stream ↔ the SDK server's streams.

The relay (`monad mcp serve`) passes its client's stdio through unparsed, so the gateway's
stdio framing lives here (MCP spec, basic/transports "stdio": newline-delimited JSON-RPC).
Each line is offered to the connection's direct lane first (`gateway/direct.py`); any other
is parsed once, into the SDK's `SessionMessage`; each outgoing message is one line. The
reader and writer are the SDK server's streams themselves (`ReadStream`/`WriteStream`): no
task or memory stream of ours sits between the socket and the SDK.

Not JSON is answered `-32700 Parse error`; JSON that is not a JSON-RPC message (an array, a
number, no `jsonrpc: "2.0"`) `-32600 Invalid Request`, `id: null` unless it carries a usable
id (JSON-RPC 2.0 §5, §5.1), and so is a request whose id is not a string or an integer
(`1.5`, `null`, `true`: the SDK's model would take it for a notification). None ends the
session. A line over `max_line` bytes is answered `-32600` (under its id, found at either
end) and skipped. A request under an id still in flight on either path (the SDK's
`unanswered`, the lane's `holds`) is answered `-32600` under that id and never run (MCP
basic: a request id must not be reused within the session); the first goes on. At the end
of the client's input, what it asked has `EOF_GRACE_S` to be answered before the SDK
cancels the rest.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.abc
from mcp.shared.message import SessionMessage
from mcp_types import (
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    jsonrpc_message_adapter,
)

from monad_cli.daemon.sessions.framing import EDGE_BYTES, LineReader, Oversize, find_message_id
from monad_cli.tools.arguments import unsendable

log = logging.getLogger("monad.gateway")

MAX_LINE_BYTES = 16 * 1024 * 1024
EOF_GRACE_S = 1.0  # after the client's end of input, what it asked has this long to be answered
SETTLE_POLL_S = 0.005
BACKLOG_BYTES = 32 * 1024 * 1024  # unread answers past this: stop reading the client's requests
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
Serve = Callable[["MessageReader", "LineWriter"], Awaitable[None]]
Lane = Callable[["LineWriter"], Any]


def error_line(code: int, message: str, request_id: Any = None) -> bytes:
    """One JSON-RPC error response line (JSON-RPC 2.0 §5.1)."""
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}},
                      separators=(",", ":")).encode() + b"\n"


def rejection(line: bytes) -> bytes:
    """The answer to a line that is not a JSON-RPC message: -32700 for text that is not
    JSON (or nested past what the parser takes), -32600 for JSON of the wrong shape or that
    no server can be sent (`unsendable`: a lone surrogate escape, NaN, nesting), saying
    where; echoing the id when it has a valid one."""
    try:
        body = json.loads(line)
    except ValueError:
        return error_line(PARSE_ERROR, "Parse error")
    except RecursionError:
        return error_line(PARSE_ERROR, "Parse error: nested too deeply", find_message_id(line[:EDGE_BYTES]))
    rid = body.get("id") if isinstance(body, dict) else None
    if isinstance(rid, bool) or not isinstance(rid, str | int):
        rid = None
    why = unsendable(body) if isinstance(body, dict) else None
    return error_line(INVALID_REQUEST, f"Invalid Request: {why or 'not a JSON-RPC 2.0 message'}", rid)


def spellings(request_id: object) -> set[int | str]:
    """The ids the SDK's dispatcher takes `request_id` (a cancellation's `requestId`) to
    name: itself and its other spelling (7 and "7"); none for a value that is no id."""
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        return set()
    if isinstance(request_id, int):
        return {request_id, str(request_id)}
    with contextlib.suppress(ValueError):
        return {request_id, int(request_id)}
    return {request_id}


def in_flight_line(request_id: int | str) -> bytes:
    """The answer to a request under an id the agent still waits on: MCP basic, "The request
    ID MUST NOT have been previously used by the requestor within the same session". Only the
    second is refused; the first goes on to its own one answer."""
    return error_line(INVALID_REQUEST, f"Invalid Request: id {json.dumps(request_id)} is already in flight on this "
                                       "session; send this request under a new id", request_id)


def _has_id(line: bytes) -> bool:
    try:
        body = json.loads(line)
    except (ValueError, RecursionError):
        return False
    return isinstance(body, dict) and "id" in body


class PipeStream:
    """A byte stream over two pipe fds a relay handed over (the MCP client's stdin and
    stdout, or a socketpair): `receive` reads one, `send` writes the other; `close` is the
    owner's. Reads are the event loop's pipe transport (`loop.connect_read_pipe`, C under
    uvloop), registered once (`wait_readable` per line cost seven system calls a request);
    writes go straight to the fd and wait only when the pipe is full."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self.read_fd, self.write_fd = read_fd, write_fd
        os.set_blocking(read_fd, False)
        os.set_blocking(write_fd, False)
        self._reader: asyncio.StreamReader | None = None
        self._transport: asyncio.ReadTransport | None = None
        self._closed = False

    async def _connect(self) -> asyncio.StreamReader:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(loop=loop)  # pauses the pipe past 128 KiB unread
        # The transport owns the read fd from here on (it closes it).
        pipe = os.fdopen(self.read_fd, "rb", buffering=0, closefd=True)
        self._transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop),
                                                          pipe)
        self._reader = reader
        return reader

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if self._closed:
            raise anyio.ClosedResourceError
        reader = self._reader or await self._connect()
        try:
            data = await reader.read(max_bytes)
        except OSError:
            raise anyio.EndOfStream from None
        if not data:
            raise anyio.EndOfStream
        return data

    async def send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                n = os.write(self.write_fd, view)
            except BlockingIOError:
                await self._writable()
                continue
            except OSError:  # the client closed its stdout (EPIPE)
                raise anyio.BrokenResourceError from None
            view = view[n:]

    async def _writable(self) -> None:
        """Until the pipe takes more: the loop's writer callback, not `anyio.wait_writable`
        (a 1 MB answer waits ~16 times, each a cancel scope's bookkeeping there). Cancelling
        the task cancels the wait."""
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()

        def writable() -> None:
            if not ready.done():
                ready.set_result(None)

        loop.add_writer(self.write_fd, writable)
        try:
            await ready
        finally:
            loop.remove_writer(self.write_fd)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._transport is not None:
            self._transport.close()  # closes the read fd
        else:
            with contextlib.suppress(OSError):
                os.close(self.read_fd)
        with contextlib.suppress(OSError):
            os.close(self.write_fd)


class LineWriter(anyio.abc.ObjectSendStream[SessionMessage]):
    """The SDK server's write stream, straight onto the connection: each message one line,
    written by the task that sends it, under one lock with our rejections (lines never
    interleave). A connection gone raises BrokenResourceError: the session's end to the SDK."""

    def __init__(self, stream: anyio.abc.ByteSendStream | PipeStream) -> None:
        self.stream = stream
        # asyncio's: uncontended, taking it neither yields nor looks for a cancellation (anyio's
        # walks the task's cancel scopes, ~11k instructions more a line); a cancelled task
        # writes its whole line and hears of it at its next wait.
        self.lock = asyncio.Lock()
        self.closed = False
        self.on_send: Callable[[Any], None] = lambda message: None  # sees each SDK message on its way out
        # Ids of the requests handed to the SDK, until answered, as sent (7 and "7" are two ids).
        self.unanswered: set[int | str] = set()
        self.waiting_bytes = 0  # bytes of the writes under way (they wait when the client's pipe is full)
        self._flowing = anyio.Event()
        self._flowing.set()

    def asked(self, message: JSONRPCMessage) -> None:
        """A message handed to the SDK: a request waits for its answer; a cancellation ends
        the wait for the request it names (a cancelled request is never answered)."""
        if isinstance(message, JSONRPCRequest):
            self.unanswered.add(message.id)
        elif isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled":
            # The SDK's dispatcher matches "7" to 7 (`coerce_request_id`): either may be the one cancelled.
            self.unanswered.difference_update(spellings((message.params or {}).get("requestId")))

    async def send_raw(self, data: bytes) -> None:
        if self.closed:
            raise anyio.ClosedResourceError
        await self.send_line(data)

    async def send_line(self, data: bytes) -> None:
        """`data` onto the connection even after the SDK closed its side (`aclose`): the
        direct lane's last answers come after the SDK has ended, while the connection,
        which its owner closes, is still open."""
        self.waiting_bytes += len(data)
        try:
            async with self.lock:
                await self.stream.send(data)
        finally:
            self.waiting_bytes -= len(data)
            if self.waiting_bytes <= BACKLOG_BYTES:
                self._flowing.set()

    @property
    def backlogged(self) -> bool:
        """More than `BACKLOG_BYTES` of answers wait for the client to read them. A write
        that goes through at once never yields, so what a reader sees waiting is stuck."""
        return self.waiting_bytes > BACKLOG_BYTES

    async def flowing(self) -> None:
        """Return once the backlog is under `BACKLOG_BYTES` again."""
        if self.backlogged:
            self._flowing = anyio.Event()
            await self._flowing.wait()

    async def send(self, item: SessionMessage) -> None:
        if isinstance(item.message, JSONRPCResponse | JSONRPCError) and item.message.id is not None:
            self.unanswered.discard(item.message.id)
        self.on_send(item.message)
        await self.send_raw(item.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n")

    async def aclose(self) -> None:
        self.closed = True  # the connection itself is its owner's to close


class MessageReader(anyio.abc.ObjectReceiveStream[SessionMessage]):
    """The SDK server's read stream, straight off the connection: one `SessionMessage` per
    line; a line that is no JSON-RPC message is answered here (`rejection`), and one
    `take(line)` claims (`gateway/direct.py`) goes no further. Ends (StopAsyncIteration) when
    the client closes its side."""

    def __init__(self, lines: LineReader, writer: LineWriter, max_line: int, *, take: Callable[[bytes], bool],
                 busy: Callable[[], bool], holds: Callable[[int | str], bool]) -> None:
        self.lines = lines
        self.writer = writer
        self.max_line = max_line
        self.take = take
        self.busy = busy  # the lane has calls in flight
        self.holds = holds  # the lane has a call in flight under this id

    async def receive(self) -> SessionMessage:
        while True:
            if self.writer.backlogged:
                # The client is not reading what it asked for: read no more of its requests
                # until it does, so its answers cannot pile up without bound. (Not at the
                # first stuck answer: a client that writes a few requests before it reads
                # any would deadlock against us.)
                await self.writer.flowing()
            try:
                line = await self.lines.next()
            except anyio.EndOfStream:
                await self._settle()
                raise
            if isinstance(line, Oversize):  # answered under its id, so the agent's request ends
                answer = error_line(INVALID_REQUEST, f"Invalid Request: a message over {self.max_line} bytes",
                                    find_message_id(line.head, line.tail))
            elif not line.strip() or self.take(line):
                continue
            else:
                try:
                    message = jsonrpc_message_adapter.validate_json(line, by_name=False)
                except ValueError:
                    answer = rejection(line)
                else:
                    if isinstance(message, JSONRPCRequest) and (
                            message.id in self.writer.unanswered or self.holds(message.id)):
                        # The SDK would run it and answer both under one id (its dispatcher
                        # overwrites the first's entry), leaving the agent unable to tell them apart.
                        answer = in_flight_line(message.id)
                    elif not (isinstance(message, JSONRPCNotification) and b'"id"' in line and _has_id(line)):
                        self.writer.asked(message)
                        return SessionMessage(message)
                    else:
                        # The SDK's model reads a request with a bad id as a notification, and
                        # would answer nothing (JSON-RPC 2.0 §4: ids are strings or numbers).
                        answer = error_line(INVALID_REQUEST, "Invalid Request: `id` must be a string or an integer")
            try:
                await self.writer.send_raw(answer)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                raise anyio.EndOfStream from None

    async def _settle(self) -> None:
        """The client's end of input: what it asked gets up to `EOF_GRACE_S` to be answered
        before the SDK hears of it (and answers the rest `Connection closed`). A request and
        the end often come in one read, and the SDK cancelled the handler before it ran
        (`echo '{... "ping"}' | monad mcp serve`)."""
        with anyio.move_on_after(EOF_GRACE_S):
            while self.writer.unanswered or self.busy():
                await anyio.sleep(SETTLE_POLL_S)

    async def aclose(self) -> None:
        pass  # the connection itself is its owner's to close


async def serve_lines(stream: anyio.abc.ByteStream | PipeStream, serve: Serve, *, buffered: bytes = b"",
                      max_line: int = MAX_LINE_BYTES, lane: Lane) -> None:
    """Run `serve(read, write)` (the SDK server loop) over `stream` until the client closes
    its side, which makes the SDK cancel every request in flight (and their upstream calls).
    `lane(writer)` builds the connection's direct lane (`gateway/direct.py`): its `take` sees
    every line first, its `sent` every SDK message out; its calls are cancelled at the end."""
    writer = LineWriter(stream)
    async with anyio.create_task_group():  # a failure leaves as a task group's, as it always has
        direct = lane(writer)
        writer.on_send = direct.sent
        reader = MessageReader(LineReader(stream, max_line, buffered=buffered), writer, max_line, take=direct.take,
                               busy=lambda: bool(direct.in_flight), holds=direct.ids.__contains__)
        try:
            await serve(reader, writer)
        finally:
            await direct.close()


__all__ = ["MAX_LINE_BYTES", "LineWriter", "MessageReader", "PipeStream", "error_line", "rejection",
           "serve_lines"]
