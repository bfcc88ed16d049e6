"""`run/gateway.sock`: where `monad mcp serve` relays reach the gateway in the supervisor.

A unix socket, 0600 inside the 0700 `run/` directory; a peer of another uid is refused
(SO_PEERCRED), as on the control socket. Each connection starts with one hello line
(`core/hello.py`) and its answer; then one of:

- `stdio: fds`: the hello brought the relay's stdin and stdout (SCM_RIGHTS), and the session
  reads and writes the MCP client's pipes directly; the connection stays open as the
  relay's lifeline (its end ends the session) and gets `{"end": "client"}` at the end;
- `stdio: bytes`: JSON-RPC lines on the connection itself (a relay whose stdio cannot be
  polled: a terminal, a file);
- `--http`: nothing more: the HTTP listener it asked for lives until the relay closes the
  connection.
"""

from __future__ import annotations

import contextlib
import logging
import os

import anyio
import anyio.abc
from anyio.abc import SocketAttribute

from monad_cli.core.envelope import encode_line
from monad_cli.core.errors import MonadError
from monad_cli.core.hello import END_LINE, MAX_HELLO_BYTES, GatewayView, answer_ok, parse_hello
from monad_cli.core.paths import Paths
from monad_cli.daemon.bounds import peer_uid
from monad_cli.daemon.gateway.http import bind_loopback, gateway_token, serve_http
from monad_cli.daemon.gateway.server import Gateway
from monad_cli.daemon.gateway.wire import PipeStream
from monad_cli.daemon.sessions.framing import LineReader, Oversize

log = logging.getLogger("monad.gateway")
HELLO_TIMEOUT_S = 10.0


class GatewayListener:
    """The relay socket `run/gateway.sock` (created at `serve`, removed at `cleanup`): checks
    each peer (never a relay of another uid), reads its hello and serves it."""

    def __init__(self, gateway: Gateway, paths: Paths) -> None:
        self.gateway = gateway
        self.paths = paths
        self._scope = anyio.CancelScope()

    async def serve(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Accept relays until `close` (or cancellation); `task_status` once listening."""
        path = self.paths.gateway_socket
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # stale: we hold the daemon lock, so no live supervisor owns it
        old = os.umask(0o177)
        try:
            listener = await anyio.create_unix_listener(path, mode=0o600)
        finally:
            os.umask(old)
        task_status.started()
        with self._scope:
            async with listener:
                await listener.serve(self.handle)

    def close(self) -> None:
        """Stop accepting and end the open sessions (their relays see the connection end)."""
        self._scope.cancel()

    def cleanup(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.paths.gateway_socket.unlink()

    async def handle(self, stream: anyio.abc.SocketStream) -> None:
        try:
            await self._handle(stream)
        except Exception:  # the boundary of one connection: the others and the listener go on
            log.exception("gateway connection failed")

    async def _handle(self, stream: anyio.abc.SocketStream) -> None:
        fds: list[int] = []
        if not isinstance(stream, anyio.abc.UNIXSocketStream):  # what a unix listener accepts
            await stream.aclose()
            return
        try:
            async with stream:
                uid = peer_uid(stream.extra(SocketAttribute.raw_socket, None))
                if uid is not None and uid not in (os.getuid(), 0):  # root can read the socket anyway
                    log.warning("refused a gateway connection from uid %d", uid)
                    return
                try:
                    with anyio.fail_after(HELLO_TIMEOUT_S):
                        # The relay's stdin and stdout ride on the hello's message (SCM_RIGHTS).
                        first, fds = await stream.receive_fds(MAX_HELLO_BYTES, 2)
                        reader = LineReader(stream, MAX_HELLO_BYTES, buffered=first)
                        line = await reader.next()
                    if isinstance(line, Oversize):
                        raise MonadError("gateway hello: the first line is too long")
                    view = parse_hello(line)
                    self.gateway.check_view(view)
                    if view.stdio_fds and len(fds) != 2:
                        raise MonadError("gateway hello: `stdio: fds` without the two descriptors")
                except (anyio.EndOfStream, TimeoutError):
                    return
                except MonadError as e:
                    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                        await stream.send(encode_line(e).encode())
                    return
                buffered = reader.rest()
                try:
                    if view.transport == "http":
                        await self._serve_http(stream, view)
                    elif view.stdio_fds:
                        pipes, fds = PipeStream(fds[0], fds[1]), []
                        try:
                            await self._serve_pipes(stream, pipes, view)
                        finally:
                            pipes.close()
                    else:
                        await stream.send(answer_ok())
                        log.info("gateway session opened (stdio relay)")
                        await self.gateway.serve_relay(stream, view, buffered=buffered)
                        log.info("gateway session closed (stdio relay)")
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, ConnectionError):
                    log.info("gateway relay went away")
        finally:
            for fd in fds:  # descriptors received but never put to use
                with contextlib.suppress(OSError):
                    os.close(fd)

    async def _serve_pipes(self, stream: anyio.abc.SocketStream, pipes: PipeStream, view: GatewayView) -> None:
        """A session on the MCP client's own pipes: no bytes pass through the relay. The
        relay's connection only says it is alive: its end (the relay died) ends the session
        as the client's stdin ending would, cancelling the calls in flight."""
        await stream.send(answer_ok())
        log.info("gateway session opened (stdio, the client's pipes)")
        async with anyio.create_task_group() as tg:
            async def relay_gone() -> None:
                await _until_closed(stream)
                log.info("gateway relay went away: ending its session")
                tg.cancel_scope.cancel()

            tg.start_soon(relay_gone)
            await self.gateway.serve_relay(pipes, view)
            tg.cancel_scope.cancel()
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            await stream.send(END_LINE)
        log.info("gateway session closed (stdio, the client's pipes)")

    async def _serve_http(self, stream: anyio.abc.SocketStream, view: GatewayView) -> None:
        try:
            sock = bind_loopback(view.port)
        except MonadError as e:
            await stream.send(encode_line(e).encode())
            return
        token = gateway_token(self.paths)
        until = anyio.Event()
        async with self.gateway.session(view, transport="tcp") as session, anyio.create_task_group() as tg:
            tg.start_soon(lambda: serve_http(session, sock, token, until=until, session_idle=view.session_idle))
            url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
            await stream.send(answer_ok(url=url, tokenFile=str(self.paths.gateway_token)))
            log.info("HTTP gateway listening on %s", url)
            await _until_closed(stream)  # its end is the listener's end
            until.set()
            log.info("HTTP gateway on %s stopped (its `monad mcp serve --http` ended)", url)


async def _until_closed(stream: anyio.abc.SocketStream) -> None:
    """Until the relay closes its connection (it sends nothing after its hello)."""
    with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
        while True:
            await stream.receive()


__all__ = ["GatewayListener"]
