"""`run/gateway.sock`: where `monad mcp serve` relays reach the gateway in the supervisor.

A unix socket, 0600 inside the 0700 `run/` directory; a peer of another uid is refused
(SO_PEERCRED), as on the control socket. Each connection starts with one hello line
(`gateway/hello.py`) and its answer; then either JSON-RPC lines for one stdio session
(`Gateway.serve_relay`), or, for `--http`, nothing more: the HTTP listener it asked for
lives until the relay closes the connection.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import struct

import anyio
import anyio.abc
from anyio.abc import SocketAttribute

from monad_cli.control.envelope import encode_line
from monad_cli.errors import MonadError
from monad_cli.gateway.hello import MAX_HELLO_BYTES, GatewayView, answer_ok, parse_hello
from monad_cli.gateway.http import bind_loopback, gateway_token, serve_http
from monad_cli.gateway.server import Gateway
from monad_cli.gateway.wire import LineReader
from monad_cli.paths import Paths

log = logging.getLogger("monad.gateway")
HELLO_TIMEOUT_S = 10.0


def peer_uid(stream: anyio.abc.SocketStream) -> int | None:
    """The uid of the process at the other end of a unix socket stream (SO_PEERCRED)."""
    sock = stream.extra(SocketAttribute.raw_socket, None)
    if sock is None or sock.family != socket.AF_UNIX:
        return None
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return int(struct.unpack("3i", creds)[1])


class GatewayListener:
    """The relay socket: binds it, checks each peer, reads its hello and serves it.

    Owns `run/gateway.sock` (created at `serve`, removed at `cleanup`). Never: answers a
    control API route, or lets a relay of another uid in.
    """

    def __init__(self, gateway: Gateway, paths: Paths) -> None:
        self.gateway = gateway
        self.paths = paths

    async def serve(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        path = self.paths.gateway_socket
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # stale: we hold the daemon lock, so no live supervisor owns it
        old = os.umask(0o177)
        try:
            listener = await anyio.create_unix_listener(path, mode=0o600)
        finally:
            os.umask(old)
        task_status.started()
        async with listener:
            await listener.serve(self.handle)

    def cleanup(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.paths.gateway_socket.unlink()

    async def handle(self, stream: anyio.abc.SocketStream) -> None:
        try:
            await self._handle(stream)
        except Exception:  # the boundary of one connection: the others and the listener go on
            log.exception("gateway connection failed")

    async def _handle(self, stream: anyio.abc.SocketStream) -> None:
        async with stream:
            uid = peer_uid(stream)
            if uid is not None and uid not in (os.getuid(), 0):  # root can read the socket anyway
                log.warning("refused a gateway connection from uid %d", uid)
                return
            reader = LineReader(stream, max_line=MAX_HELLO_BYTES)
            try:
                with anyio.fail_after(HELLO_TIMEOUT_S):
                    line = await reader.next()
                if line is None:
                    raise MonadError("gateway hello: the first line is too long")
                view = parse_hello(line)
            except (anyio.EndOfStream, TimeoutError):
                return
            except MonadError as e:
                with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    await stream.send(encode_line(e).encode())
                return
            buffered = bytes(reader.buffer)
            try:
                if view.transport == "http":
                    await self._serve_http(stream, view)
                else:
                    await stream.send(answer_ok())
                    log.info("gateway session opened (stdio relay)")
                    await self.gateway.serve_relay(stream, view, buffered=buffered)
                    log.info("gateway session closed (stdio relay)")
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, ConnectionError):
                log.info("gateway relay went away")

    async def _serve_http(self, stream: anyio.abc.SocketStream, view: GatewayView) -> None:
        try:
            sock = bind_loopback(view.port)
        except MonadError as e:
            await stream.send(encode_line(e).encode())
            return
        port = sock.getsockname()[1]
        token = gateway_token(self.paths)
        until = anyio.Event()
        async with self.gateway.session(view) as session, anyio.create_task_group() as tg:
            tg.start_soon(lambda: serve_http(session, sock, token, until=until))
            url = f"http://127.0.0.1:{port}/mcp"
            await stream.send(answer_ok(url=url, tokenFile=str(self.paths.gateway_token)))
            log.info("HTTP gateway listening on %s", url)
            try:
                while True:  # the relay sends nothing more; its end is the listener's end
                    await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass
            until.set()
            log.info("HTTP gateway on %s stopped (its `monad mcp serve --http` ended)", url)


__all__ = ["GatewayListener", "peer_uid"]
