"""Reading a stdio server's stdout: newline-delimited JSON-RPC (MCP spec, basic/transports
"stdio": messages are delimited by newlines and MUST NOT contain embedded newlines).

`LineReader` cuts the byte stream into lines with bounded memory: a line over the limit is
skipped to its newline and reported as `Oversize` (its first and last few KiB kept, to find
the request it answers); the session goes on. `encode_line` writes one message as a line
(monad's own lane, the gateway's answers). `decode_line` turns a line into a JSON-RPC
message, repairing what other clients repair: invalid UTF-8 and lone UTF-16 surrogate
escapes (`\\ud83d` from a server that cut an emoji in half) become U+FFFD. A line still not
JSON-RPC but naming a response `id` is reported, so exactly that request can be failed.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

import anyio
import pydantic_core
from anyio.abc import ByteReceiveStream
from mcp_types import JSONRPCMessage, jsonrpc_message_adapter
from pydantic import ValidationError

from monad_cli.config.schema import DEFAULT_MAX_MESSAGE_BYTES

__all__ = ["DEFAULT_MAX_MESSAGE_BYTES", "Decoded", "LineReader", "Oversize", "ScrubbedLines", "decode_line",
           "encode_line", "find_message_id", "format_size"]

EDGE_BYTES = 4096  # kept from each end of an oversize line: where the `id` is
READ_CHUNK = 65536


@dataclass
class Oversize:
    """A line longer than the limit, already skipped: `size` bytes, its edges kept."""

    size: int
    head: bytes
    tail: bytes


class LineReader:
    """Newline-delimited lines from `stream` (a stdio server's stdout, a gateway client's
    requests), each at most `limit` bytes (else `Oversize`), in at most `limit` + one read
    chunk of memory, each byte scanned once. Raises `anyio.EndOfStream` after the last line
    (a final line without a newline is returned first). `buffered` bytes come first (what an
    earlier read brought along: the gateway's hello)."""

    def __init__(self, stream: ByteReceiveStream | Any, limit: int, *, buffered: bytes = b"") -> None:
        self._stream = stream
        self.limit = limit
        self._buf = bytearray(buffered)
        self._scanned = 0
        self._eof = False

    def rest(self) -> bytes:
        """What was read past the last line returned (the next reader's `buffered`)."""
        return bytes(self._buf)

    async def _more(self) -> bytes | None:
        if self._eof:
            return None
        try:
            return await self._stream.receive(READ_CHUNK)
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._eof = True
            return None

    async def next(self) -> bytes | Oversize:
        buf = self._buf
        while True:
            cut = buf.find(b"\n", self._scanned)
            if cut >= 0:
                with memoryview(buf) as view:  # one copy of the line (a slice of a bytearray is one more)
                    line = bytes(view[:cut])
                del buf[:cut + 1]
                self._scanned = 0
                if len(line) > self.limit:  # it came whole, in one read: over the limit all the same
                    return Oversize(len(line), line[:EDGE_BYTES], line[-EDGE_BYTES:])
                return line
            self._scanned = len(buf)
            if len(buf) > self.limit:
                return await self._skip()
            chunk = await self._more()
            if chunk is None:
                if buf:
                    line = bytes(buf)
                    buf.clear()
                    self._scanned = 0
                    return line
                raise anyio.EndOfStream
            buf.extend(chunk)

    async def _skip(self) -> Oversize:
        """Drop the rest of an over-long line, keeping its edges."""
        head = bytes(self._buf[:EDGE_BYTES])
        size = len(self._buf)
        tail = bytes(self._buf[-EDGE_BYTES:])
        self._buf.clear()
        self._scanned = 0
        while True:
            chunk = await self._more()
            if chunk is None:
                return Oversize(size, head, tail)
            cut = chunk.find(b"\n")
            if cut >= 0:
                size += cut
                tail = (tail + chunk[:cut])[-EDGE_BYTES:]
                self._buf.extend(chunk[cut + 1:])
                return Oversize(size, head, tail)
            size += len(chunk)
            tail = (tail + chunk)[-EDGE_BYTES:]


class ScrubbedLines:
    """A `LineReader` whose every line has passed `scrub` (`SecretScrubber.line`): the
    ingress choke point of a stdio server's stdout. Whoever reads the server's lines (the
    transport's bookkeeping, the direct lane, the SDK's session) reads them from here, so
    none of them ever holds a secret the server echoed (docs/atoms.md "Secrets"). An
    `Oversize` line is skipped unread and passes as it is (only its size is ever shown)."""

    def __init__(self, reader: LineReader, scrub: Any) -> None:
        self.reader = reader
        self.scrub = scrub

    async def next(self) -> bytes | Oversize:
        item = await self.reader.next()
        return item if isinstance(item, Oversize) else self.scrub(item)


@dataclass
class Decoded:
    """What one line is: a message (maybe `repaired`), or `problem` text plus the `id` of
    the response it seems to be (None: a stray line, not a response)."""

    message: JSONRPCMessage | None = None
    repaired: str | None = None
    problem: str | None = None
    response_id: str | int | None = None


_SURROGATE = re.compile("[\ud800-\udfff]")
_ID = r'(-?\d+|"(?:[^"\\]|\\.){0,200}")'
# `id` near the start (the Python SDK writes jsonrpc, id, result or method) or at the end
# (the TypeScript SDK writes result, jsonrpc, id).
_HEAD_ID = re.compile(rb'\A\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*' + _ID.encode())
_TAIL_ID = re.compile(rb'"id"\s*:\s*' + _ID.encode() + rb'\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*\Z')


def find_message_id(head: bytes, tail: bytes = b"") -> str | int | None:
    """The JSON-RPC `id` a (possibly cut or oversize) line names at its top level, or None:
    a server's response (the supervisor's side) or an agent's request (the gateway's)."""
    for pattern, text in ((_HEAD_ID, head), (_TAIL_ID, tail or head)):
        m = pattern.search(text.rstrip(b"\r"))
        if m:
            try:
                found = json.loads(m.group(1))
            except ValueError:
                continue
            if isinstance(found, (str, int)) and not isinstance(found, bool):
                return found
    return None


def _scrub_surrogates(value: Any) -> tuple[Any, int]:
    """`value` with every lone surrogate (the only kind json.loads leaves) → U+FFFD."""
    if isinstance(value, str):
        fixed, n = _SURROGATE.subn("\ufffd", value)
        return fixed, n
    # Loops, not comprehensions: one frame a level (a comprehension is a frame of its own
    # before Python 3.12), so whatever json.loads took deep is walked.
    total = 0
    if isinstance(value, list):
        out = []
        for item in value:
            fixed, n = _scrub_surrogates(item)
            out.append(fixed)
            total += n
        return out, total
    if isinstance(value, dict):
        obj = {}
        for k, v in value.items():
            fk, nk = _scrub_surrogates(k)
            fv, nv = _scrub_surrogates(v)
            obj[fk] = fv
            total += nk + nv
        return obj, total
    return value, 0


# A line up to this long is searched for the words `NaN` and `Infinity` once written, and its
# value walked only when one is there: a gateway call's two lines (the request upstream, the
# answer to the agent) cost 27.2k instructions instead of 60.6k with the walk first, a Python
# loop over every item (callgrind; bench/README.md, issue 37). A longer line is walked: a
# search of a megabyte costs as much as writing it.
_SEARCHED_BYTES = 4096


def encode_line(body: Any) -> bytes:
    """`body` (a JSON-shaped value) as one line: compact JSON, UTF-8, ending in a newline.
    Raises ValueError for what JSON cannot hold (RFC 8259 §6: no NaN or infinity; a lone
    surrogate is no UTF-8). pydantic_core's encoder: 0.8 ms for a 1 MB answer where
    `json.dumps(ensure_ascii=False)` takes 5–6 ms (bench/README.md, issue 38); it writes NaN
    and infinity as bare words, so a line that may hold one has its numbers looked at."""
    line = pydantic_core.to_json(body)
    if (len(line) > _SEARCHED_BYTES or b"NaN" in line or b"Infinity" in line) and not _finite(body):
        raise ValueError("Out of range float values are not JSON compliant")
    return line + b"\n"


def _finite(value: Any) -> bool:
    """Whether no float in `value` (and its lists and dicts) is NaN or infinite."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return False
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return True


def decode_line(line: bytes) -> Decoded:
    """One stdout line → `Decoded` (see the module docstring for the repair policy)."""
    try:
        # Parsed first, then validated: `validate_json` on the union of message shapes takes
        # ~3 ms for a 1 MB answer, parsing and validating the parsed value ~0.9 ms.
        return Decoded(jsonrpc_message_adapter.validate_python(pydantic_core.from_json(line), by_name=False))
    except ValueError:
        pass
    repairs = []
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        text = line.decode("utf-8", errors="replace")
        repairs.append("invalid UTF-8")
    try:
        parsed, fixed = _scrub_surrogates(json.loads(text))
    except json.JSONDecodeError as e:
        return Decoded(problem=f"not valid JSON ({e.msg} at column {e.colno})",
                       response_id=find_message_id(line[:EDGE_BYTES], line[-EDGE_BYTES:]))
    except RecursionError:  # from either: out of the stdout reader it would end the session
        return Decoded(problem="JSON nested too deeply",
                       response_id=find_message_id(line[:EDGE_BYTES], line[-EDGE_BYTES:]))
    if fixed:
        repairs.append(f"{fixed} lone UTF-16 surrogate{'s' if fixed > 1 else ''}")
    try:
        message = jsonrpc_message_adapter.validate_python(parsed, by_name=False)
    except ValidationError:
        rid = parsed.get("id") if isinstance(parsed, dict) and ("result" in parsed or "error" in parsed) else None
        rid = rid if isinstance(rid, (str, int)) and not isinstance(rid, bool) else None
        return Decoded(problem="JSON but not a JSON-RPC message", response_id=rid)
    return Decoded(message, repaired=" and ".join(repairs) + " replaced by U+FFFD" if repairs else None)


def format_size(n: int) -> str:
    """Bytes as a person reads them: `512 KiB`, `16 MiB`, `20.5 MiB`."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            value = n / scale
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{n} bytes"
