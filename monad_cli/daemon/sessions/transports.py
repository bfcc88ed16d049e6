"""Transports the supervisor hands to `mcp.Client` (any async CM yielding read/write streams).

stdio is ours, not the SDK's `stdio_client`, which does not expose what the supervisor
needs: the pid and exit status (why it failed), a bound on a stdout line (memory), stray
non-JSON lines counted, not ending the session (the transport forbids them, but one stray
print should not cost a working session), an end-of-connection signal while idle, and
monad's own requests (direct.py). It keeps the SDK's policy: its own process group, the
SDK's environment allowlist, close stdin → 2 s → SIGTERM the group → 2 s → SIGKILL (MCP
spec, basic/lifecycle "Shutdown"), and the group killed on a cancelled connect.

The command, environment and cwd are built in spawn.py (shared with the early spawn); the
http transports are in remote.py; `http_headers` serves both.
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc
from mcp.shared.message import SessionMessage

from monad_cli.config.schema import ServerSpec
from monad_cli.daemon.scrubber import NO_SCRUB, Ingress
from monad_cli.daemon.sessions.direct import DirectLane
from monad_cli.daemon.sessions.exchange import Exchange
from monad_cli.daemon.sessions.framing import (
    DEFAULT_MAX_MESSAGE_BYTES,
    Decoded,
    LineReader,
    Oversize,
    ScrubbedLines,
    decode_line,
    encode_line,
    find_message_id,
    format_size,
)
from monad_cli.daemon.sessions.popen import open_process
from monad_cli.daemon.sessions.processes import (
    SpawnRecord,
    SpawnRecords,
    alive,
    members,
    signal_group,
    signal_pids,
    spawn_record,
)
from monad_cli.daemon.sessions.spawn import EarlySpawns, SpawnError, stdio_command
from monad_cli.daemon.sessions.stderr import StderrSink

log = logging.getLogger("monad.transport")

STDIN_CLOSE_GRACE_S = 2.0
TERM_GRACE_S = 2.0
KILL_REAP_S = 2.0


@dataclass(frozen=True)
class TransportOptions:
    """How a transport bounds one connection: `max_message_bytes` per message (a stdio line,
    an SSE event); `discover_budget` seconds for `server/discover` (None: the SDK's 10 s);
    `workdir`: the cwd of a stdio server without `cwd`; `records`: where spawns are recorded
    (None: nowhere); `early`: the early spawns, one of which it may adopt; `ingress`: what
    every message from the server passes first (daemon/scrubber.py)."""

    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    discover_budget: float | None = None
    workdir: str | None = None
    records: SpawnRecords | None = None
    early: EarlySpawns | None = None
    ingress: Ingress = NO_SCRUB


@dataclass
class Connection:
    """What the supervisor learns about one connection attempt."""

    on_closed: Callable[[], None] = lambda: None
    pid: int | None = None
    returncode: int | None = None
    stdout_lines: int = 0  # every line a stdio server wrote, JSON-RPC or not
    stray_lines: int = 0
    first_stray_line: str | None = None  # the first one, cut short: it names the culprit in a reason
    repaired_lines: int = 0
    oversize_messages: int = 0
    protocol_error: str | None = None
    hung: str | None = None  # why the supervisor ended an unresponsive session
    last_http_status: int | None = None
    retry_after: float | None = None  # seconds a 429/503 asked the client to wait (Retry-After)
    unreachable: str | None = None  # http: why the last request got no usable answer (None: it did)
    # HTTP status of the last POST of each JSON-RPC method (`initialize` → 405 means the
    # URL is a legacy HTTP+SSE endpoint).
    post_status: dict[str, int] = field(default_factory=dict)
    transport: str | None = None  # stdio, streamable-http or sse once connected
    exchange: Exchange | None = None
    lane: DirectLane | None = None  # monad's own requests beside the SDK's session (sessions/direct.py)
    closed: bool = False
    established: bool = False  # the handshake completed: it earns a graceful stop
    extra: dict[str, Any] = field(default_factory=dict)

    def mark_closed(self) -> None:
        if not self.closed:
            self.closed = True
            if self.lane is not None:
                self.lane.close()
            self.on_closed()


class StdinWriter(anyio.abc.ObjectSendStream[SessionMessage]):
    """The session's write stream, straight onto the server's stdin, one line a message,
    written by the sending task (no writer task: one event-loop hop less a request). A lock
    keeps lines whole; a cancelled sender never cuts one (the whole line is buffered before
    the drain). When stdin is gone the read side is closed (the session ends) and the send
    raises BrokenResourceError, which the SDK reports as a closed connection."""

    def __init__(self, stdin: anyio.abc.ByteSendStream, exchange: Exchange,
                 on_broken: Callable[[], Any]) -> None:
        self.stdin = stdin
        self.exchange = exchange
        self.on_broken = on_broken
        # asyncio's: uncontended, taking it neither yields nor looks for a cancellation (anyio's
        # walks the task's cancel scopes, ~11k instructions more a line); a cancelled task
        # writes its whole line and hears of it at its next wait.
        self.lock = asyncio.Lock()
        self.closed = False

    async def send(self, item: SessionMessage, /) -> None:
        if self.closed:
            raise anyio.ClosedResourceError
        self.exchange.sent(item)
        await self._write(item.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n")

    # The `Wire` of monad's own lane (sessions/direct.py): its requests are recorded in the
    # exchange as the session's are; a cancellation ends the wait for the request it names.
    async def request(self, body: dict[str, Any], headers: dict[str, str]) -> None:
        data = encode_line(body)
        if self.closed:
            raise anyio.ClosedResourceError
        self.exchange.sent_request(body["id"], body["method"])
        await self._write(data)

    async def notify(self, body: dict[str, Any]) -> None:
        data = encode_line(body)
        if self.closed:
            raise anyio.ClosedResourceError
        self.exchange.forget(body["params"]["requestId"])
        await self._write(data)

    async def _write(self, data: bytes) -> None:
        try:
            async with self.lock:
                await self.stdin.send(data)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            self.closed = True
            await self.on_broken()
            raise anyio.BrokenResourceError from None

    async def aclose(self) -> None:
        self.closed = True  # stdin itself is closed by `_stop` (the graceful shutdown)


STRAY_LOGGED = 10  # stray stdout lines logged one by one; after that at every power of ten


@asynccontextmanager
async def stdio_transport(spec: ServerSpec, sink: StderrSink, conn: Connection,
                          options: TransportOptions | None = None) -> AsyncIterator[Any]:
    opts = options or TransportOptions()
    cmd = stdio_command(spec, opts.workdir)
    marker = cmd.marker
    errfd = sink.open_pipe()
    try:
        early = opts.early.take(cmd) if opts.early is not None else None
        if early is not None:  # started at supervisor start, before the SDK import (and recorded)
            process, marker = early.process, early.marker
            sink.adopt(early.stderr_fd)
        else:
            process = await open_process(cmd.argv, stderr=errfd, env=cmd.env, cwd=cmd.cwd)
    except OSError as e:
        sink.close()
        raise SpawnError(f"cannot start `{spec.command}`: {e.strerror or e}") from None
    finally:
        sink.close_write_end()
    conn.pid = process.pid
    conn.transport = "stdio"
    record = early.record if early is not None else spawn_record(spec.name, process.pid, marker)
    if opts.records is not None and (early is None or early.recorded_in != opts.records.dir):
        opts.records.write(record)
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    injector = read_writer.clone()
    exchange = Exchange(injector.send, name=spec.name, discover_budget=opts.discover_budget)
    assert process.stdin is not None
    write_stream = StdinWriter(process.stdin, exchange, read_writer.aclose)
    lane = exchange.lane = DirectLane(write_stream, exchange.envelope, fast=True)
    conn.exchange, conn.lane = exchange, lane
    limit = opts.max_message_bytes

    async def oversize(item: Oversize) -> None:
        conn.oversize_messages += 1
        found = find_message_id(item.head, item.tail)
        target = exchange.lookup(found)
        looks_like_answer = target is not None or b'"result"' in item.head[:64] or b'"error"' in item.head[:64]
        log.warning("server %s: a %s stdout message over %s was skipped", spec.name, format_size(item.size),
                    format_size(limit))
        if not looks_like_answer:
            return  # a notification or request from the server: nobody waits for it
        size = format_size(item.size)
        targets = [target] if target is not None else exchange.unmatched_candidates()
        for out in targets:
            what = f"the response to `{out.method}`" if target is not None else \
                "a response (its id unreadable; it may be this request's)"
            await exchange.fail(out, f"{what} is {size}, over the {format_size(limit)} message limit (raise "
                                     f"`maxMessageBytes` in `{spec.source}`); the session goes on",
                                data={"size": item.size, "limit": limit})

    async def bad_line(line: bytes, decoded: Decoded) -> None:
        target = exchange.lookup(decoded.response_id)
        if target is not None:
            log.warning("server %s: its response to %s was %s", spec.name, target.method, decoded.problem)
            await exchange.fail(target, f"the server's response to `{target.method}` was {decoded.problem}; "
                                        f"the request failed, the session goes on")
            return
        # Not JSON-RPC and no request waits for it: count and log it, keep the session.
        conn.stray_lines += 1
        if conn.first_stray_line is None:
            conn.first_stray_line = line[:80].decode("utf-8", "replace").strip()
        n = conn.stray_lines
        if n <= STRAY_LOGGED or str(n).rstrip("0") == "1":  # counted always, logged 10 times, then at 100, 1000, ...
            log.warning("server %s: ignored a non-JSON-RPC stdout line (%d so far%s): %.200r", spec.name, n,
                        "; further ones are counted, and logged at 100, 1000, ..." if n == STRAY_LOGGED else "",
                        line[:200])

    async def read_stdout() -> None:
        assert process.stdout is not None
        # Every line is scrubbed here, before the exchange, the direct lane or the SDK sees it.
        reader = ScrubbedLines(LineReader(process.stdout, limit), opts.ingress.line)
        async with read_writer, injector:
            try:
                while True:
                    try:
                        item = await reader.next()
                    except anyio.EndOfStream:
                        return
                    if isinstance(item, Oversize):
                        await oversize(item)
                        continue
                    if not item.strip():
                        continue
                    conn.stdout_lines += 1
                    decoded = decode_line(item)
                    if decoded.message is None:
                        await bad_line(item, decoded)
                        continue
                    if decoded.repaired:
                        conn.repaired_lines += 1
                        log.warning("server %s: repaired a stdout message: %s", spec.name, decoded.repaired)
                    if not exchange.received(decoded.message):
                        continue
                    try:
                        await read_writer.send(SessionMessage(decoded.message))
                    except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                        return
            finally:
                conn.mark_closed()

    async def reap() -> None:
        # The exit itself, not the pipes' end (PipeProcess.wait, on a pidfd): a child that
        # inherited stdout must not make an exited server look alive.
        conn.returncode = await process.wait()
        conn.mark_closed()

    drained = anyio.Event()

    async def drain() -> None:
        try:
            await sink.drain()
        finally:
            drained.set()

    try:
        async with anyio.create_task_group() as tg:
            exchange.start(tg)
            tg.start_soon(drain)
            tg.start_soon(read_stdout)
            tg.start_soon(reap)
            try:
                yield read_stream, write_stream
            finally:
                with anyio.CancelScope(shield=True):
                    await _stop(process, conn, record, opts.records)
                    await write_stream.aclose()
                    await read_stream.aclose()
                    # Let the last stderr lines in: they are the reason a person reads.
                    with anyio.move_on_after(0.5):
                        await drained.wait()
                tg.cancel_scope.cancel()
    finally:
        sink.close()
        lane.close()
        if lane.taken:
            log.info("server %s: %s on monad's own lane this session", spec.name,
                     ", ".join(f"{n} {method}" for method, n in lane.taken.items()))


async def _stop(process: anyio.abc.Process, conn: Connection, record: SpawnRecord,
                records: SpawnRecords | None) -> None:
    """close stdin → 2 s → SIGTERM → 2 s → SIGKILL → reap (MCP spec, basic/lifecycle
    "Shutdown"), for the server's group and every process of the spawn that left it
    (`processes.members`), also after the leader exited gracefully. No stdin grace before
    the handshake completed: the connect timeout is the time a person waits."""
    pgid = process.pid  # start_new_session: the server leads its own group
    if process.returncode is None:
        with suppress(Exception):
            assert process.stdin is not None
            await process.stdin.aclose()
        with anyio.move_on_after(STDIN_CLOSE_GRACE_S if conn.established else 0.1):
            await process.wait()
    others = members(record) - {process.pid}
    if process.returncode is None or others:
        signal_group(pgid, signal.SIGTERM)
        signal_pids(others, signal.SIGTERM)
        with anyio.move_on_after(TERM_GRACE_S):
            while process.returncode is None or alive(others):
                await anyio.sleep(0.05)
    # SIGKILL whatever is left: the group, and the spawn's processes outside it.
    signal_group(pgid, signal.SIGKILL)
    others = alive(others | (members(record) - {process.pid}))
    signal_pids(others, signal.SIGKILL)
    if process.returncode is None:
        with anyio.move_on_after(KILL_REAP_S):
            await process.wait()
        if process.returncode is None:
            log.error("process %d survived SIGKILL for %.0f s; abandoning it", pgid, KILL_REAP_S)
    with anyio.move_on_after(KILL_REAP_S):
        while alive(others):
            await anyio.sleep(0.05)
    left = alive(others)
    if left:
        log.error("server %s: %d processes survived SIGKILL; the next supervisor start retries", record.server,
                  len(left))
    elif records is not None and process.returncode is not None:
        records.forget(record)
    conn.returncode = process.returncode


def http_headers(spec: ServerSpec) -> dict[str, str]:
    """The headers every request to an http server carries: `headers`, plus the bearer
    token (RFC 6750 §2.1) or the `auth.headers` of those auth modes."""
    headers = dict(spec.headers)
    if spec.auth.mode == "bearer":
        headers["Authorization"] = f"Bearer {spec.auth.token}"
    elif spec.auth.mode == "headers":
        headers.update(spec.auth.headers)
    return headers
