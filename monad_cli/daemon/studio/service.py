"""The Studio service: serves the page on 127.0.0.1:PORT until the supervisor stops.

What the port serves, behind `locks.StudioLocks`:

    GET /studio/login?token=…   one-time token → session cookie (locks.py)
    GET /studio/…               the page (static files shipped in the package)
    GET /v1/events              server-sent events (events.py)
    everything else             the control API's own Starlette app: the same routes and the
                                same JSON as on the unix socket, scrubbed there (scrub.py)

and, on a second loopback port bound with the first listener, the MCP Apps sandbox proxy
(sandbox.py): another origin, so an app never runs in the page's.

`Studio.serve(port=…)` starts the listener (or keeps the running one) and returns a fresh
one-time login URL and the 0600 redirect file holding it (login_file.py): the token is never
on a command line. Sessions end at `Studio.sign_out()` or by their lifetimes (locks.py),
checked on every request and once a minute. Another explicit port moves the page: the new
port is bound first (a busy port leaves the old one serving), then the old listener stops.
The service gets only what it uses (`StudioDeps`), never the supervisor.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import anyio
from sse_starlette import EventSourceResponse
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from monad_cli.core.errors import Conflict
from monad_cli.daemon.serving import AppServer, listen_loopback
from monad_cli.daemon.studio.events import PING_S, EventBus, event_stream
from monad_cli.daemon.studio.locks import LOGIN_PATH, TOKEN_TTL_S, Logins, StudioLocks, studio_csp
from monad_cli.daemon.studio.login_file import LoginFiles
from monad_cli.daemon.studio.sandbox import PROXY_PATH, SandboxProxy
from monad_cli.daemon.studio.state import StudioState

log = logging.getLogger("monad.studio")
STATIC = Path(__file__).resolve().parent / "static"
HOST = "127.0.0.1"
REAP_EVERY_S = 60.0  # how often sessions past their lifetimes are ended while no request comes


@dataclass
class StudioDeps:
    """What the Studio needs from the supervisor: `snapshot()` is `{servers, problems,
    definitions}` as the events carry them; `refresh()` re-reads the definition files if they
    changed (a page opened right after `monad mcp add` shows the server); `start_soon(fn)`
    runs a task that ends with the supervisor; `state`: what is kept across restarts."""

    control_app: ASGIApp
    snapshot: Callable[[], dict[str, Any]]
    refresh: Callable[[], Coroutine[Any, Any, None]]
    stopping: anyio.Event
    start_soon: Callable[[Callable[[], Coroutine[Any, Any, Any]]], None]
    state: StudioState
    login_files: LoginFiles


class StaticPage:
    """The page's files (`static/`), read once and answered from memory (a first render must
    not wait on a thread pool opening files), with ETags. The page carries the current
    `snapshot()` in a JSON data block, so it renders before its event stream is open, and
    `host()` (where MCP Apps render) in another."""

    TYPES: ClassVar[dict[str, str]] = {".html": "text/html; charset=utf-8", ".css": "text/css; charset=utf-8",
                                       ".js": "text/javascript; charset=utf-8"}
    SLOT = b'<script type="application/json" id="studio-snapshot">null</script>'
    HOST_SLOT = b'<script type="application/json" id="studio-host">null</script>'

    def __init__(self, snapshot: Callable[[], dict[str, Any]], refresh: Callable[[], Coroutine[Any, Any, None]],
                 root: Path = STATIC, host: Callable[[], dict[str, Any]] = dict) -> None:
        self.snapshot = snapshot
        self.host = host
        self.refresh = refresh
        self.files: dict[str, tuple[bytes, str, str]] = {}
        for path in sorted(root.rglob("*")):
            if path.is_file() and path.suffix in self.TYPES:
                body = path.read_bytes()
                etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
                self.files["/" + path.relative_to(root).as_posix()] = (body, self.TYPES[path.suffix], etag)
        self.files["/"] = self.files["/index.html"]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope["path"][len(scope.get("root_path", "")):] or "/"
        found = self.files.get(path)
        if scope["method"] not in ("GET", "HEAD") or found is None:
            await PlainTextResponse("not found", status_code=404)(scope, receive, send)
            return
        body, kind, etag = found
        if path in ("/", "/index.html"):
            await self.refresh()
            await Response(self._page(body), media_type=kind)(scope, receive, send)
            return
        headers = {"ETag": etag, "Cache-Control": "no-cache", "Content-Type": kind}
        if etag in Headers(scope=scope).get("if-none-match", ""):
            await Response(status_code=304, headers=headers)(scope, receive, send)
            return
        await Response(body, headers=headers)(scope, receive, send)  # uvicorn sends no body to a HEAD

    def _page(self, template: bytes) -> bytes:
        # `<` escaped: no text in the data can end the block (`</script>`) or open a comment.
        def block(slot: bytes, value: Any) -> bytes:
            data = json.dumps(value, separators=(",", ":"), default=str).replace("<", "\\u003c")
            return slot.replace(b">null<", f">{data}<".encode())

        page = template.replace(self.SLOT, block(self.SLOT, self.snapshot()), 1)
        return page.replace(self.HOST_SLOT, block(self.HOST_SLOT, self.host()), 1)


class Listener:
    """One bound port: its socket, its uvicorn server, its logins (cookies of one port)."""

    def __init__(self, make_app: Callable[[Listener], ASGIApp], *, port: int, what: str = "Studio",
                 path: str = "/studio/") -> None:
        self.what, self.path = what, path
        self.requested = port
        self.port = port
        self.logins = Logins()
        self.moved_to: Listener | None = None  # the page moved: this port forwards login URLs there
        self._make_app = make_app
        self._server: AppServer | None = None

    async def start(self) -> None:
        """Bind 127.0.0.1:port (0: any free port) and serve. Raises `Conflict` (HTTP 409, exit 2:
        a port to change) when the port cannot be bound."""
        try:
            sock = listen_loopback(self.requested)
        except OSError as e:
            hint = ("pass `--port N` for another port, or `--port 0` for any free one"
                    if e.errno == errno.EADDRINUSE else "pass `--port N` with N above 1023")
            raise Conflict(f"cannot serve the {self.what} on {HOST}:{self.requested}: "
                             f"{e.strerror or e}; {hint}") from None
        self.port = int(sock.getsockname()[1])
        self._server = AppServer(self._make_app(self), what=f"the {self.what} on port {self.port}",
                                 timeout_graceful_shutdown=1)
        await self._server.start(sock)
        log.info("%s listening on http://%s:%d%s", self.what, HOST, self.port, self.path)

    async def stop(self) -> None:
        self.logins.clear()
        if self._server is not None:
            await self._server.stop()
        log.info("%s on port %d stopped", self.what, self.port)


class Studio:
    """The page's listener on 127.0.0.1 (at most one at a time) and its login URLs.

    Owns: binding, moving and stopping the listener, the ASGI app it serves (locks → login,
    page, events, the control app), the MCP Apps sandbox listener (bound with the first page
    listener, on any free port, kept while the page moves), and minting one-time tokens.
    Never: answers a `/v1/` route itself but `/v1/events`, or serves anything before
    `StudioLocks` passed it.
    """

    def __init__(self, deps: StudioDeps, bus: EventBus) -> None:
        self.deps = deps
        self.bus = bus
        self.listener: Listener | None = None
        self.sandbox: Listener | None = None
        self._forwarding: list[Listener] = []  # old ports a move left forwarding login URLs
        self._lock = anyio.Lock()
        self._watching = False
        self.page = StaticPage(deps.snapshot, deps.refresh, host=self.host_info)

    def host_info(self) -> dict[str, Any]:
        """What the page needs to host MCP Apps: `{sandboxPort, sandboxPath}`."""
        return {"sandboxPort": self.sandbox.port if self.sandbox else None, "sandboxPath": PROXY_PATH}

    def _sandbox_app(self, listener: Listener) -> ASGIApp:
        return SandboxProxy(port=lambda: listener.port,
                            page_port=lambda: self.listener.port if self.listener else None)

    async def serve(self, *, port: int | None, default_port: int) -> dict[str, Any]:
        """`{url, port, started, movedFrom, file}`: a new one-time login URL for the page, and the
        0600 redirect file that opens it (None when it could not be written: logged).

        `port` None or 0 keeps a running listener; another port moves it there; with no
        listener yet it binds `port`, or `default_port` when `port` is None."""
        async with self._lock:
            current = self.listener
            started = current is None or (port not in (None, 0) and port != current.port)
            if started:
                if self.sandbox is None:
                    sandbox = Listener(self._sandbox_app, port=0, what="MCP Apps sandbox", path=PROXY_PATH)
                    await sandbox.start()
                    self.sandbox = sandbox
                wanted = default_port if port is None else port
                for old in [f for f in self._forwarding if f.port == wanted]:
                    # Moving back to a port that only forwards: it is the page's again.
                    self._forwarding.remove(old)
                    await old.stop()
                new = Listener(self._app, port=wanted)
                await new.start()  # a port that cannot be bound leaves the current one serving
                self._keep_sessions(new)
                self.listener = new
                if current is not None:
                    await self._retire(current, new)
                if not self._watching:
                    self._watching = True
                    self.deps.start_soon(self._until_stopped)
            listener = self.listener
            assert listener is not None
            token = listener.logins.new_token()
            url = f"http://{HOST}:{listener.port}{LOGIN_PATH}?token={token}"
            file = None
            try:
                file = self.deps.login_files.write(url)
                listener.logins.keep_file(token, file)
            except OSError as e:
                log.warning("cannot write the Studio's login file: %s", e.strerror or e)
            return {"url": url, "port": listener.port, "started": started,
                    "movedFrom": current.port if started and current else None,
                    "file": str(file) if file is not None else None}

    async def sign_out(self) -> int:
        """End every session of the page, on every port it answers (and spend every login URL
        handed out); their pages' event streams end, and the pages say "Signed out". Returns
        how many sessions ended."""
        async with self._lock:
            count = 0
            for listener in [*self._forwarding, *([self.listener] if self.listener else [])]:
                count += listener.logins.sign_out()
                self.bus.close(group=listener)
            self.deps.login_files.clear()
        log.info("Studio: signed out %d session(s)", count)
        return count

    async def _retire(self, old: Listener, new: Listener) -> None:
        """The page moved from `old` to `new`: its sessions end now, but a login URL handed out
        for `old` and not opened yet (two `monad studio --port` at once) moves to `new`, and
        `old` redirects to it until such a token would have expired."""
        self.bus.close(group=old)
        old.logins.end_sessions()
        for earlier in self._forwarding:  # a second move: older ports forward to the page's port too
            earlier.moved_to = new
        if not old.logins.hand_over(new.logins):
            await old.stop()
            return
        old.moved_to = new
        self._forwarding.append(old)

        async def stop_later() -> None:
            with anyio.move_on_after(TOKEN_TTL_S):
                await self.deps.stopping.wait()
            if old in self._forwarding:
                self._forwarding.remove(old)
                await old.stop()

        self.deps.start_soon(stop_later)

    def _keep_sessions(self, listener: Listener) -> None:
        """Take back the sessions kept for this port, and keep each new one (another port
        starts over)."""
        state = self.deps.state
        saved = state.read()
        if saved is not None and saved["port"] == listener.port:
            listener.logins.restore(saved["sessions"])
        state.write(listener.port, listener.logins.saved())

        def on_change(sessions: dict[str, tuple[float, float]]) -> None:
            if self.listener is listener:
                state.write(listener.port, sessions)

        listener.logins.on_change = on_change

    async def resume(self) -> None:
        """Serve the page again where it was before the supervisor stopped (studio.json), if it was."""
        saved = self.deps.state.read()
        if saved is None:
            return
        try:
            await self.serve(port=saved["port"], default_port=saved["port"])
        except Conflict as e:
            log.warning("the Studio was not served again: %s", e)

    async def _until_stopped(self) -> None:
        """End sessions past their lifetimes even while no request comes, closing the streams of
        their listener (the pages of live sessions reconnect at once); then, once the supervisor
        stops, every listener."""
        while True:
            with anyio.move_on_after(REAP_EVERY_S):
                await self.deps.stopping.wait()
                break
            listener = self.listener
            if listener is not None and listener.logins.expire():
                self.bus.close(group=listener)
        async with self._lock:
            for old in list(self._forwarding):
                self._forwarding.remove(old)
                await old.stop()
            if self.listener is not None:
                self.bus.close(group=self.listener)  # its pages' streams end first, so shutdown need not wait
                await self.listener.stop()
                self.listener = None
            if self.sandbox is not None:
                await self.sandbox.stop()
                self.sandbox = None

    def _app(self, listener: Listener) -> ASGIApp:
        async def to_page(request: Request) -> Response:
            return RedirectResponse("/studio/", status_code=303)

        async def events(request: Request) -> Response:
            await self.deps.refresh()
            return EventSourceResponse(event_stream(self.bus, self.deps.snapshot, group=listener), ping=PING_S,
                                       send_timeout=30)

        app = Starlette(routes=[
            Route("/", to_page),
            Route("/studio", to_page),
            Route("/v1/events", events),
            Mount("/studio", app=self.page),
            Mount("", app=self.deps.control_app),
        ])
        locked = StudioLocks(app, port=listener.port, logins=listener.logins,
                             csp=studio_csp(self.sandbox.port if self.sandbox else None))

        async def forwarding(scope: Scope, receive: Receive, send: Send) -> None:
            moved = listener.moved_to
            if moved is None or scope["type"] != "http":
                await locked(scope, receive, send)
                return
            # The token in the query is checked on the new port; nothing is served here.
            if scope["path"] == LOGIN_PATH:
                query = scope.get("query_string", b"").decode("latin-1")
                response: Response = RedirectResponse(f"http://{HOST}:{moved.port}{LOGIN_PATH}?{query}",
                                                      status_code=307, headers={"cache-control": "no-store"})
            else:
                response = PlainTextResponse(f"the Studio moved to http://{HOST}:{moved.port}/: run `monad studio` "
                                             f"for a login URL", status_code=410)
            await response(scope, receive, send)

        return forwarding
