"""`monad mcp serve`'s side: hand the MCP client's stdio to the supervisor, or relay it.

Stdlib only, and it parses nothing of the MCP traffic (the MCP server is the gateway inside
the supervisor; its framing is `gateway/wire.py`'s). Two ways, chosen by what stdin and
stdout are:

- pipes or sockets (how MCP clients start a stdio server): the hello's message carries
  them (SCM_RIGHTS) and the supervisor reads and writes the client's pipes itself, so no
  byte passes through this process and no hop is added; the relay only `wait`s, its
  connection being the session's lifeline, until the supervisor says the client closed
  its side (`{"end": "client"}`);
- anything else (a terminal, a file): `pump` copies stdin to `run/gateway.sock` and the
  socket to stdout, 64 KiB at a time, in two threads (each blocks in a read that releases
  the GIL). The end of stdin half-closes the socket and the supervisor ends the session.

Either way the end of the connection without that end first means the supervisor went away
(stopped): `ConnectionClosed`.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import socket
import stat
import threading
import time
from dataclasses import dataclass
from typing import Any

from monad_cli.core.envelope import decode_line
from monad_cli.core.errors import ConnectionClosed, MonadError, SupervisorNotRunning
from monad_cli.core.hello import END_LINE
from monad_cli.core.paths import Paths

CHUNK = 65536
MAX_ANSWER_BYTES = 64 * 1024


@dataclass
class Relay:
    """One open relay connection: the socket, the supervisor's answer to the hello and the
    bytes that came after it."""

    sock: socket.socket
    answer: dict[str, Any]
    leftover: bytes = b""


def passable(fd: int) -> bool:
    """Whether `fd` can be handed to the supervisor: a pipe or a socket (pollable, and not a
    terminal the supervisor has no business holding)."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def open_relay(paths: Paths, hello: bytes, *, timeout: float = 30.0, fds: list[int] | None = None) -> Relay:
    """Connect to the gateway socket, send `hello` (with `fds` on its message, SCM_RIGHTS),
    read the answer. Raises `SupervisorNotRunning` when nothing listens, the answer's error
    kind when the supervisor refuses the hello, `ConnectionClosed` when it hangs up first."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        try:
            sock.connect(str(paths.gateway_socket))
        except (FileNotFoundError, ConnectionRefusedError):
            raise SupervisorNotRunning(f"the supervisor is not running for `{paths.home}` (or predates the "
                                       f"gateway socket); start it with `monad daemon start`") from None
        sent = socket.send_fds(sock, [hello], fds) if fds else 0
        if sent < len(hello):  # never an empty send: the supervisor may have refused and closed (EPIPE)
            sock.sendall(hello[sent:])
        data = b""
        while b"\n" not in data and len(data) < MAX_ANSWER_BYTES:
            chunk = sock.recv(CHUNK)
            if not chunk:
                raise ConnectionClosed(f"the supervisor closed the gateway connection before answering (see "
                                       f"`{paths.daemon_log}`)")
            data += chunk
        line, _, rest = data.partition(b"\n")
        refused = decode_line(line.decode(errors="replace"))
        if refused is not None:
            raise refused
        try:
            answer = json.loads(line)
        except ValueError:
            answer = None
        if not isinstance(answer, dict) or answer.get("ok") is not True:
            raise MonadError(f"the supervisor answered the gateway hello with something else (see "
                             f"`{paths.daemon_log}`)")
        sock.settimeout(None)
        return Relay(sock, answer, rest)
    except BaseException:
        sock.close()
        raise


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def pump(relay: Relay, *, stdin: int = 0, stdout: int = 1) -> None:
    """Copy `stdin` → socket and socket → `stdout` until one side ends. Returns when the
    client closed stdin (or stdout) and the supervisor finished the session; raises
    `ConnectionClosed` when the supervisor ended it first."""
    sock = relay.sock
    client_done = threading.Event()

    def upstream() -> None:
        try:
            while True:
                data = os.read(stdin, CHUNK)
                if not data:
                    break
                sock.sendall(data)
        except OSError:
            pass
        finally:
            client_done.set()
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_WR)  # the supervisor sees the end and closes the session

    threading.Thread(target=upstream, name="monad-relay-stdin", daemon=True).start()
    try:
        if relay.leftover:
            _write_all(stdout, relay.leftover)
        while True:
            data = sock.recv(CHUNK)
            if not data:
                break
            _write_all(stdout, data)
    except BrokenPipeError:
        return  # the client closed its stdout: nobody reads the rest
    finally:
        sock.close()
    if not client_done.is_set():
        raise ConnectionClosed("the supervisor ended this gateway session (stopped or restarted?); restart the "
                               "MCP client to reconnect")


def wait(relay: Relay) -> None:
    """The supervisor serves the client's own pipes: wait until it says the client closed
    its side. Raises `ConnectionClosed` when the supervisor went away first."""
    data = relay.leftover
    try:
        while END_LINE not in data:
            chunk = relay.sock.recv(CHUNK)
            if not chunk:
                raise ConnectionClosed("the supervisor ended this gateway session (stopped or restarted?); restart "
                                       "the MCP client to reconnect")
            data = (data + chunk)[-CHUNK:]
    finally:
        relay.sock.close()


def refuse_requests(message: str, *, stdin: int = 0, stdout: int = 1, wait: float = 10.0,
                    after: float = 2.0) -> int:
    """Answer the MCP client's requests with a JSON-RPC error whose message is `message`, when
    `monad mcp serve` cannot serve: a client keeps a stdio server's stderr to itself (the MCP
    Inspector said only "Connection closed"). JSON-RPC 2.0 §5.1: code -32000, a server error.
    Every request is answered (a client that tried `server/discover` first falls back to
    `initialize`), for up to `wait` seconds until the first and `after` seconds past the
    latest, or until the client closes stdin; notifications are skipped. Returns how many
    requests were answered."""
    deadline = time.monotonic() + wait
    data = b""
    answered = 0
    while time.monotonic() < deadline:
        try:
            ready, _, _ = select.select([stdin], [], [], max(0.0, deadline - time.monotonic()))
            chunk = os.read(stdin, CHUNK) if ready else b""
        except (OSError, ValueError):
            break
        if not chunk:
            break
        data = (data + chunk)[-MAX_ANSWER_BYTES:]
        while b"\n" in data:
            line, _, data = data.partition(b"\n")
            try:
                request = json.loads(line)
            except ValueError:
                continue
            if isinstance(request, dict) and "id" in request and "method" in request:
                answer = {"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32000, "message": message}}
                try:
                    _write_all(stdout, json.dumps(answer).encode() + b"\n")
                except OSError:
                    return answered
                answered += 1
                deadline = time.monotonic() + after
    return answered


def hold(relay: Relay) -> None:
    """Keep the connection (and with it the supervisor's HTTP listener) open until the
    supervisor closes it; Ctrl-C (KeyboardInterrupt) propagates to the caller."""
    try:
        while relay.sock.recv(CHUNK):
            pass
    finally:
        relay.sock.close()
    raise ConnectionClosed("the supervisor stopped the HTTP gateway (stopped or restarted?)")


__all__ = ["Relay", "hold", "open_relay", "passable", "pump", "refuse_requests", "wait"]
