"""Control API server (docs/supervisor.md "Control API").

Starlette routes served by uvicorn on a unix socket we bind ourselves: 0600 inside the
0700 `run/` directory, and every connection's peer uid checked with SO_PEERCRED.
Routes raise `MonadError` kinds; `daemon/http.py`'s `ErrorBoundary` answers them as
`{"error": {"code": ..., "message": ...}}` with the kind's status. Every answer passes
through the one redaction function.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.middleware import Middleware

from monad_cli.daemon.api.clients import client_routes
from monad_cli.daemon.api.daemon import daemon_routes
from monad_cli.daemon.api.env import env_routes
from monad_cli.daemon.api.features import feature_routes
from monad_cli.daemon.api.registry import registry_routes
from monad_cli.daemon.api.servers import server_routes
from monad_cli.daemon.api.studio import StudioHub, studio_routes
from monad_cli.daemon.api.tasks import task_routes
from monad_cli.daemon.api.tools import tools_routes
from monad_cli.daemon.http import MAX_BODY, ErrorBoundary
from monad_cli.daemon.serving import AppServer
from monad_cli.daemon.studio.scrub import ScrubAnswers

if TYPE_CHECKING:
    from monad_cli.daemon.port import DaemonPort

log = logging.getLogger("monad.control")


def build_app(port: DaemonPort) -> Starlette:
    """The control API's one Starlette app: every resource's routes inside `ErrorBoundary` and
    `ScrubAnswers`. It answers on the unix socket and, behind the Studio's locks, on the
    Studio's port (the Studio's routes are handed it as `lambda: app`)."""
    # Every JSON answer scrubbed, tool results and arguments too: the CLI shows what the Studio
    # shows (docs/atoms.md "Secrets"); streamed answers scrub their own lines.
    hub = StudioHub(port, lambda: app)
    app = Starlette(routes=[*daemon_routes(port), *server_routes(port), *tools_routes(port), *env_routes(port),
                            *feature_routes(port), *registry_routes(port), *client_routes(port),
                            *task_routes(port.tasks), *studio_routes(port, hub)],
                    middleware=[Middleware(ScrubAnswers, scrub=port.scrub),
                                Middleware(ErrorBoundary, scrub=port.scrub)])
    app.state.studio_hub = hub
    return app


class ControlServer:
    """The control API (`/v1/`) on the unix socket (`run/monad.sock`, 0600, peers of another
    uid refused), serving `build_app(port)`; the routes live one module per resource.

    Never: keeps API state of its own (every answer is read from the supervisor at request
    time), opens an MCP session (the actors own them), writes a definition other than through
    `config.edits`, answers an error other than by raising a `MonadError` kind, or lets a
    secret value into an answer (definitions pass `redact_definition`).
    """

    def __init__(self, sup: DaemonPort) -> None:
        self.sup = sup
        self.server: AppServer | None = None
        self.app = build_app(sup)

    async def start(self) -> None:
        path = self.sup.paths.socket
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # stale: we hold the daemon lock, so no live supervisor owns it
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            sock.bind(str(path))
        finally:
            os.umask(old)
        os.chmod(path, 0o600)
        sock.listen(128)
        sock.setblocking(False)
        # Peers are checked by uid at connect (SO_PEERCRED), which is their authentication; the
        # control socket is left out of the listeners' descriptor budget, whose reserve is for it.
        self.server = AppServer(self.app, what="the control socket", check_peer_uid=True, budgeted=False,
                                timeout_graceful_shutdown=2, h11_max_incomplete_event_size=MAX_BODY)
        await self.server.start(sock)

    async def resume_studio(self) -> None:
        """Serve the Studio again where it was before the supervisor stopped, if it was
        (docs/studio.md): the supervisor runs this once its control API listens."""
        await self.app.state.studio_hub.resume()

    async def stop(self) -> None:
        if self.server is not None:
            await self.server.stop()

    def cleanup(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.sup.paths.socket.unlink()
