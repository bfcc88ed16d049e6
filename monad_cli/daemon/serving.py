"""One way the supervisor serves an ASGI app: uvicorn on a socket the supervisor bound itself
(the control API's unix socket, the Studio's and the sandbox's loopback ports, the HTTP
gateway's port), started and stopped inside the supervisor's own event loop.

Only `Server.startup()` and `Server.shutdown()` are used, never `Server.serve()`: `serve()`
captures SIGINT/SIGTERM, and the supervisor owns its signals (daemon/main.py), so with these
two no uvicorn subclass is needed to keep uvicorn's hands off them. Every listener is bounded
here, by its `ListenerGuard` (bounds.py): a time for a request's headers, a cap on
unauthenticated connections, the descriptors all of them may hold."""

from __future__ import annotations

import socket
from typing import Any

import anyio
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from monad_cli.daemon.bounds import BUDGET, ListenerGuard


class AppServer:
    """`app` served on a bound, listening, non-blocking socket.

    `what` names the listener in the log ("the Studio on port 8720"); `check_peer_uid` and
    `budgeted` go to its `ListenerGuard` (bounds.py), which wraps uvicorn's h11 protocol and
    `app`. `config` goes to `uvicorn.Config` (defaults: `lifespan` "off", `log_config` None,
    `access_log` False, `ws` "none": an upgraded connection would leave the guard).

    `start(sock)` returns once uvicorn listens; `stop()` closes the listener and every
    connection within `stop_within` seconds (event streams cut, not drained) and runs the
    app's lifespan shutdown. `cut`: then cancel every response in flight and close its
    connection (the gateway's listener: agents' event streams never end by themselves); not
    for the control API, whose calls in flight the supervisor's stop answers with a reason."""

    def __init__(self, app: Any, *, what: str, stop_within: float = 3.0, cut: bool = False,
                 check_peer_uid: bool = False, budgeted: bool = True, **config: Any) -> None:
        self.guard = ListenerGuard(what, check_peer_uid=check_peer_uid, budget=BUDGET if budgeted else None)
        config = {"lifespan": "off", "log_config": None, "access_log": False, "ws": "none", **config,
                  "http": self.guard.protocol(H11Protocol)}
        self.config = uvicorn.Config(self.guard.app(app), **config)
        self.server = uvicorn.Server(self.config)
        self.stop_within = stop_within
        self.cut = cut
        self.sock: socket.socket | None = None

    async def start(self, sock: socket.socket) -> None:
        self.sock = sock
        self.config.load()
        self.server.lifespan = self.config.lifespan_class(self.config)
        await self.server.startup(sockets=[sock])

    async def serve(self, sock: socket.socket, until: anyio.Event) -> None:
        """`start(sock)`, serve until `until` is set, then `stop()` (shielded: a cancelled caller
        still closes its connections) and close `sock`."""
        try:
            await self.start(sock)
            await until.wait()
        finally:
            with anyio.CancelScope(shield=True):
                await self.stop()
            sock.close()

    async def stop(self) -> None:
        if not self.server.started:
            return
        # No waiting for responses in flight: an event stream (an agent's GET or listen
        # stream) never ends by itself, and a person pressing Ctrl-C expects it gone now.
        self.server.force_exit = True
        with anyio.move_on_after(self.stop_within):
            await self.server.shutdown(sockets=[self.sock] if self.sock else None)
            # `force_exit` makes uvicorn skip the lifespan shutdown: run it, so the app ends
            # what it runs there (the SDK's session manager ends its sessions and streams).
            if self.config.lifespan != "off":
                await self.server.lifespan.shutdown()
        if self.cut:
            self._cut()

    def _cut(self) -> None:
        """Close what is still open: uvicorn's shutdown only asks an idle keep-alive
        connection to close, and leaves a response in flight (an event stream) running."""
        for task in list(self.server.server_state.tasks):
            task.cancel()
        for connection in list(self.server.server_state.connections):
            transport = getattr(connection, "transport", None)
            if transport is not None:
                transport.close()


def listen_loopback(port: int) -> socket.socket:
    """A listening, non-blocking TCP socket on 127.0.0.1:`port` (0: any free port; never
    0.0.0.0), for `AppServer.start`. SO_REUSEADDR: rebinding right after a stop works, and a
    port in use is still refused. Raises the `OSError` of binding (the socket closed)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    sock.setblocking(False)
    return sock
