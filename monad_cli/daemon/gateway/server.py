"""The gateway inside the supervisor: its sessions and their list-changed fan-out.

One `Gateway` per supervisor, built on the supervisor's `ToolService` (never on the
supervisor itself). Each client of `monad mcp serve` is one `GatewaySession`
(`gateway/session.py`): a relay's connection on `run/gateway.sock` (`gateway/listener.py`)
or one `monad mcp serve --http` listener (`gateway/http.py`, whose HTTP clients share it).
While any session exists, one task watches the tool service's signature (the exposed
tool set, deferral and conditions included) and tells every session when it changes
(MCP spec, server/tools "List Changed Notification").
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio

from monad_cli.core.hello import GatewayView
from monad_cli.daemon.gateway.session import GatewaySession
from monad_cli.daemon.gateway.wire import PipeStream, serve_lines
from monad_cli.daemon.telemetry import TELEMETRY
from monad_cli.daemon.trust.service import ToolService

log = logging.getLogger("monad.gateway")
WATCH_POLL_S = 30.0


class Gateway:
    """The gateway's sessions and the watcher that tells them about tool-set changes.

    Owns: the live sessions and the change watcher (`run`, one task for the supervisor's
    life). Never: holds an MCP client session (the actors do), answers a control API
    request, or reads a definition file.
    """

    def __init__(self, tools: ToolService, *, scrub: Callable[[str], str]) -> None:
        self.tools = tools
        self.scrub = scrub
        self.sessions: set[GatewaySession] = set()
        self._opened = anyio.Event()

    @asynccontextmanager
    async def session(self, view: GatewayView, *, transport: str = "pipe") -> AsyncIterator[GatewaySession]:
        """A new session for `view`, told about changes until the block ends. `transport`:
        how its client reaches it (`pipe`: a relay's stdio, `tcp`: HTTP), for telemetry."""
        session = GatewaySession(self.tools, view, scrub=self.scrub, transport=transport)
        self.sessions.add(session)
        self._opened.set()
        started = time.monotonic()
        try:
            yield session
        finally:
            self.sessions.discard(session)
            session.close()
            if (recorder := TELEMETRY.recorder) is not None:
                recorder.gateway_session_ended(transport, time.monotonic() - started)

    async def serve_relay(self, stream: anyio.abc.ByteStream | PipeStream, view: GatewayView, *,
                          buffered: bytes = b"") -> None:
        """Serve one relay connection (JSON-RPC lines) until its client closes it."""
        async with self.session(view) as session:
            try:
                await serve_lines(stream, lambda read, write: session.server.run(read, write, session.init_options()),
                                  buffered=buffered, lane=session.direct_lane)
            finally:
                log.info("gateway session served %s", session.calls_summary())

    async def notify_changed(self) -> None:
        for session in list(self.sessions):
            await session.notify_changed()

    async def run(self) -> None:
        """Watch the exposed tool set while sessions exist; never returns (cancel it)."""
        since = ""
        while True:
            if not self.sessions:
                self._opened = anyio.Event()
                await self._opened.wait()
                since = self.tools.signature()  # what the new session's first list shows
                continue
            signature = await self.tools.wait_changed(since, WATCH_POLL_S)
            if signature != since:
                log.debug("exposed tool set changed (%s -> %s): telling %d gateway session(s)", since, signature,
                          len(self.sessions))
                await self.notify_changed()
            since = signature


__all__ = ["Gateway"]
