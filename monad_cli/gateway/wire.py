"""JSON-RPC lines over one relay connection: the byte stream ↔ the SDK server's streams.

The relay (`monad mcp serve`) passes its client's stdin and stdout through unparsed, so
this is where the gateway's stdio framing lives (MCP spec, basic/transports "stdio":
newline-delimited JSON-RPC messages). Each line is parsed once, into the SDK's
`SessionMessage`; each outgoing message is written as one line.

A line that is not JSON is answered `-32700 Parse error`, and JSON that is not a JSON-RPC
message (an array, a number, an object without `jsonrpc: "2.0"`) `-32600 Invalid Request`,
with `id: null` unless the object carries a usable id (JSON-RPC 2.0 §5 and §5.1). Neither
ends the session. A line over `max_line` bytes is answered `-32600` and skipped.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.abc
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage
from mcp_types import jsonrpc_message_adapter

log = logging.getLogger("monad.gateway")

MAX_LINE_BYTES = 16 * 1024 * 1024
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
Serve = Callable[[MemoryObjectReceiveStream[Any], MemoryObjectSendStream[SessionMessage]], Awaitable[None]]


def error_line(code: int, message: str, request_id: Any = None) -> bytes:
    """One JSON-RPC error response line (JSON-RPC 2.0 §5.1)."""
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}},
                      separators=(",", ":")).encode() + b"\n"


def rejection(line: bytes) -> bytes:
    """The answer to a line that is not a JSON-RPC message: -32700 for text that is not
    JSON, -32600 for JSON of the wrong shape (echoing its id when it has a valid one)."""
    try:
        body = json.loads(line)
    except ValueError:
        return error_line(PARSE_ERROR, "Parse error")
    rid = body.get("id") if isinstance(body, dict) else None
    if isinstance(rid, bool) or not isinstance(rid, str | int):
        rid = None
    return error_line(INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message", rid)


class LineReader:
    """Lines from a byte stream, at most `max_line` bytes each (the newline excluded);
    `next()` returns a line, `None` for a line over the limit (already skipped), and
    raises `anyio.EndOfStream` at the end. `buffered` bytes come first (what the hello
    read brought along)."""

    def __init__(self, stream: anyio.abc.ByteReceiveStream, *, buffered: bytes = b"",
                 max_line: int = MAX_LINE_BYTES) -> None:
        self.stream = stream
        self.buffer = bytearray(buffered)
        self.max_line = max_line
        self._skipping = False

    async def next(self) -> bytes | None:
        while True:
            cut = self.buffer.find(b"\n")
            if cut >= 0:
                line = bytes(self.buffer[:cut])
                del self.buffer[:cut + 1]
                if self._skipping:
                    self._skipping = False
                    return None
                return line
            if len(self.buffer) > self.max_line:
                # Keep reading to the end of the oversized line without keeping it.
                self.buffer.clear()
                if not self._skipping:
                    self._skipping = True
            try:
                chunk = await self.stream.receive(65536)
            except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                if self.buffer and not self._skipping:
                    line = bytes(self.buffer)  # a last line without its newline still counts
                    self.buffer.clear()
                    return line
                raise anyio.EndOfStream from None
            self.buffer += chunk


async def serve_lines(stream: anyio.abc.ByteStream, serve: Serve, *, buffered: bytes = b"",
                      max_line: int = MAX_LINE_BYTES) -> None:
    """Run `serve(read, write)` (the SDK server loop) over `stream` until the client closes
    its side. The end of the stream ends the read side, which makes the SDK cancel every
    request still in flight (and so their upstream calls); what the server still writes
    is flushed before this returns."""
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)
    reader = LineReader(stream, buffered=buffered, max_line=max_line)
    sending = anyio.Lock()  # our rejections and the server's messages share the stream

    async def send(data: bytes) -> None:
        async with sending:
            await stream.send(data)

    async def read_lines() -> None:
        async with read_send:
            while True:
                try:
                    line = await reader.next()
                except anyio.EndOfStream:
                    return
                if line is None:
                    answer = error_line(INVALID_REQUEST, f"Invalid Request: a message over {max_line} bytes")
                elif not line.strip():
                    continue
                else:
                    try:
                        message = jsonrpc_message_adapter.validate_json(line, by_name=False)
                    except ValueError:
                        answer = rejection(line)
                    else:
                        try:
                            await read_send.send(SessionMessage(message))
                        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                            return
                        continue
                try:
                    await send(answer)
                except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                    return

    async def write_lines() -> None:
        try:
            async with write_recv:
                async for msg in write_recv:
                    await send(msg.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            log.debug("a gateway client went away while we wrote to it")

    async with anyio.create_task_group() as tg:
        tg.start_soon(read_lines)
        tg.start_soon(write_lines)
        # Returns once the read side ended (the SDK loop closes `write_send` on its way out,
        # which ends the writer after its last line).
        await serve(read_recv, write_send)


__all__ = ["MAX_LINE_BYTES", "LineReader", "error_line", "rejection", "serve_lines"]
