"""The Studio listener's locks (docs/studio.md "Security"), as one ASGI middleware.

The listener is a local web port, and any web page the person visits can send requests to
it (CVE-2025-49596: the MCP Inspector's unauthenticated proxy let a page start stdio
commands). So, in this order, for every request:

1. `Host` must be `127.0.0.1:PORT` or `localhost:PORT` (DNS rebinding: a foreign name that
   resolves to 127.0.0.1 reaches the port but not the page) → else 403;
2. an `Origin`, when sent, must be the page's own (`http://` + that Host); a state-changing
   request (anything but GET/HEAD/OPTIONS) must send it → else 403, before any route runs,
   so nothing is written;
3. `GET /studio/login?token=…` trades a one-time token (from `POST /v1/studio` on the unix
   socket, handed to the browser in a 0600 redirect file, never on a command line:
   login_file.py) for a session cookie: HttpOnly, SameSite=Strict, named after the port
   (cookies are per host, not per port). The token then no longer works; unused ones expire;
4. every other path needs a live session cookie → else 401; a session ends after
   `SESSION_IDLE_S` unused, `SESSION_MAX_S` after its sign-in, or at a sign-out (`Logins`);
5. `/v1/studio` (minting login URLs) is refused here: only the control socket's peer may.

Every answer, refusals included, carries a Content-Security-Policy that allows only the
Studio's own scripts, styles and connections, images and audio of results as `data:` URLs,
frames only from the MCP Apps sandbox port (sandbox.py), and no framing of the Studio
itself. Stdlib + starlette only.
"""

from __future__ import annotations

import contextlib
import hashlib
import html
import secrets
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from monad_cli.daemon.bounds import authenticated
from monad_cli.daemon.http import MAX_BODY, error_response

LOGIN_PATH = "/studio/login"
TOKEN_TTL_S = 600.0  # an unused login URL stops working after 10 minutes
SESSION_IDLE_S = 8 * 3600.0
"""A session no page has used for this long ends (a tab left open with its event stream is in
use: the idle clock runs only while no request of the session is in flight)."""
SESSION_MAX_S = 7 * 86400.0
"""A session ends this long after its sign-in, however much it is used (its open streams too)."""
SEEN_WRITE_S = 60.0  # a session's last use is written to studio.json at most this often
SAFE_METHODS = {"GET", "HEAD", "OPTIONS"}
# Its own (empty) icon, as the Studio page has: else a browser asks for /favicon.ico, a 404 in the
# console of the first load.
SIGNED_IN_PAGE = (b'<!doctype html><meta charset=utf-8><link rel="icon" href="data:,">'
                  b'<meta http-equiv="refresh" content="0;url=/studio/">'
                  b'<title>monad Studio</title><p>Signed in: <a href="/studio/">open the Studio</a>.</p>')
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; media-src 'self' data:; "
       "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")


def studio_csp(sandbox_port: int | None) -> str:
    """`CSP`, plus `frame-src` for the MCP Apps sandbox on `sandbox_port` (None: no frames)."""
    if sandbox_port is None:
        return CSP
    return f"{CSP}; frame-src http://127.0.0.1:{sandbox_port} http://localhost:{sandbox_port}"


SECURITY_HEADERS = {
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",  # the login URL carries a token
    "x-frame-options": "DENY",
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-resource-policy": "same-origin",
    "cache-control": "no-store",  # unless the answer says how to cache
}


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@dataclass
class Session:
    """One signed-in browser: when it signed in and was last used (`clock()` seconds), and how
    many of its requests are in flight now (an open event stream is one)."""

    created: float
    seen: float
    busy: int = 0


class Logins:
    """One-time login tokens and the sessions they become, for one port. Only digests are
    kept, never the secrets. Times are `clock()` seconds, wall-clock by default: they are kept
    across supervisor restarts. A session ends `SESSION_IDLE_S` unused, `SESSION_MAX_S` after
    its sign-in, or at `sign_out`. `on_change(saved)` hears `saved()` after each change worth
    keeping (a new session, an ended one, a last use `SEEN_WRITE_S` newer than the one kept)."""

    def __init__(self, *, clock: Callable[[], float] = time.time,
                 on_change: Callable[[dict[str, tuple[float, float]]], None] | None = None) -> None:
        self._clock = clock
        self._tokens: dict[str, float] = {}  # digest → expiry
        self._files: dict[str, Path] = {}  # token digest → its redirect file (login_file.py)
        self._sessions: dict[str, Session] = {}  # digest → session
        self.on_change = on_change
        self._written = 0.0  # when on_change last heard

    def new_token(self) -> str:
        """A fresh 256-bit token, valid once, for `TOKEN_TTL_S` seconds."""
        now = self._clock()
        for digest in [d for d, t in self._tokens.items() if t <= now]:
            self._spend(digest)
        token = secrets.token_urlsafe(32)
        self._tokens[_digest(token)] = now + TOKEN_TTL_S
        return token

    def keep_file(self, token: str, path: Path) -> None:
        """`path` (a redirect file holding `token`) is removed when the token is spent or expires."""
        self._files[_digest(token)] = path

    def redeem(self, token: str) -> str | None:
        """A new session id for a valid unused token (which is used up), else None."""
        digest = _digest(token)
        expiry = self._tokens.get(digest)
        self._spend(digest)
        now = self._clock()
        if expiry is None or expiry < now:
            return None
        session = secrets.token_urlsafe(32)
        self._sessions[_digest(session)] = Session(created=now, seen=now)
        self._changed()
        return session

    def _spend(self, digest: str) -> None:
        self._tokens.pop(digest, None)
        path = self._files.pop(digest, None)
        if path is not None:
            with contextlib.suppress(OSError):
                path.unlink()

    def hand_over(self, other: Logins) -> int:
        """Move this port's live login tokens (and their redirect files) to `other`, the port
        the page moved to; how many moved."""
        now = self._clock()
        live = {d: t for d, t in self._tokens.items() if t > now}
        other._tokens.update(live)
        other._files.update({d: p for d, p in self._files.items() if d in live})
        for digest in list(self._tokens):
            if digest not in live:
                self._spend(digest)
        self._tokens.clear()
        self._files.clear()
        return len(live)

    def session(self, cookie: str | None) -> str | None:
        """The digest of the live session `cookie` names (now its last use), or None: unknown,
        or ended by its lifetimes (then it is gone)."""
        if not cookie:
            return None
        digest = _digest(cookie)
        found = self._sessions.get(digest)
        if found is None:
            return None
        now = self._clock()
        if self._ended(found, now):
            del self._sessions[digest]
            self._changed()
            return None
        self._seen(found, now)
        return digest

    def valid(self, cookie: str | None) -> bool:
        return self.session(cookie) is not None

    @contextlib.contextmanager
    def using(self, digest: str) -> Iterator[None]:
        """While a request of the session is in flight its idle clock stands still."""
        found = self._sessions.get(digest)
        if found is None:
            yield
            return
        found.busy += 1
        try:
            yield
        finally:
            found.busy -= 1
            self._seen(found, self._clock())

    def expire(self) -> int:
        """End the sessions and spend the login tokens past their lifetimes (their redirect
        files go now); how many sessions ended."""
        now = self._clock()
        for digest in [d for d, t in self._tokens.items() if t <= now]:
            self._spend(digest)
        ended = [d for d, s in self._sessions.items() if self._ended(s, now)]
        for digest in ended:
            del self._sessions[digest]
        if ended:
            self._changed()
        return len(ended)

    def sign_out(self) -> int:
        """End every session and spend every login token; returns how many live sessions ended."""
        now = self._clock()
        count = sum(not self._ended(s, now) for s in self._sessions.values())
        self._sessions.clear()
        for digest in list(self._tokens):
            self._spend(digest)
        self._changed()
        return count

    @staticmethod
    def _ended(session: Session, now: float) -> bool:
        return now - session.created > SESSION_MAX_S or (session.busy == 0 and now - session.seen > SESSION_IDLE_S)

    def _seen(self, session: Session, now: float) -> None:
        session.seen = now
        if now - self._written >= SEEN_WRITE_S:
            self._changed()

    def saved(self) -> dict[str, tuple[float, float]]:
        """What is kept of the sessions: digest → (signed in, last used)."""
        return {d: (s.created, s.seen) for d, s in self._sessions.items()}

    def restore(self, saved: dict[str, tuple[float, float]]) -> None:
        """Sessions of an earlier run of this port, within their lifetimes (counted from the
        kept times)."""
        now = self._clock()
        for digest, (created, seen) in saved.items():
            session = Session(created=created, seen=min(seen, now))
            if len(digest) == 64 and not self._ended(session, now):
                self._sessions[digest] = session

    def _changed(self) -> None:
        self._written = self._clock()
        if self.on_change is not None:
            self.on_change(self.saved())

    def clear(self) -> None:
        """Forget everything (the listener stopped); the kept sessions stay kept."""
        for digest in list(self._tokens):
            self._spend(digest)
        self._sessions.clear()

    def end_sessions(self) -> None:
        """End every signed-in session (the page moved; its login tokens may live on)."""
        self._sessions.clear()


class StudioLocks:
    """ASGI middleware in front of everything the Studio's port serves."""

    def __init__(self, app: ASGIApp, *, port: int, logins: Logins, csp: str = CSP) -> None:
        self.app = app
        self.headers = {"content-security-policy": csp, **SECURITY_HEADERS}
        self.port = port
        self.logins = logins
        self.cookie = f"monad_studio_{port}"
        self.hosts = {f"127.0.0.1:{port}", f"localhost:{port}"}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        send = _with_security_headers(send, self.headers)
        request = Request(scope)
        headers = request.headers
        host = headers.get("host", "")
        if host not in self.hosts:
            await self._refuse(scope, receive, send, 403, "forbidden_host",
                               f"this Studio answers only at http://127.0.0.1:{self.port}/ (the request named "
                               f"another host: DNS rebinding protection)")
            return
        origin = headers.get("origin")
        if origin is not None and origin != f"http://{host}":
            await self._refuse(scope, receive, send, 403, "cross_origin",
                               "a request from another web page is refused; nothing was changed")
            return
        if scope["method"] not in SAFE_METHODS and origin is None:
            await self._refuse(scope, receive, send, 403, "origin_required",
                               "a change needs the Studio page's own Origin header; nothing was changed")
            return
        if not headers.get("content-length", "0").isdigit() or int(headers.get("content-length", "0")) > MAX_BODY:
            # Refused before anything is read, with the control socket's limit: a huge
            # upload must not tie up the supervisor.
            await self._refuse(scope, receive, send, 413, "too_large",
                               "the request body is too large; nothing was changed")
            return
        session = request.cookies.get(self.cookie)
        if scope["path"] == LOGIN_PATH and scope["method"] == "GET":
            await self._login(scope, receive, send, session, request.query_params.get("token"))
            return
        digest = self.logins.session(session)
        if digest is None:
            await self._refuse(scope, receive, send, 401, "unauthorized",
                               "not signed in to the Studio (or the session ended): run `monad studio` to sign in")
            return
        authenticated()  # its connection is no stranger's any more (bounds.py)
        if scope["path"].rstrip("/") == "/v1/studio":
            await self._refuse(scope, receive, send, 403, "forbidden",
                               "login URLs are made over the control socket only (`monad studio`)")
            return
        # Routes behind this point journal what they change as made from the Studio.
        scope.setdefault("state", {})["via"] = "studio"
        with self.logins.using(digest):
            await self.app(scope, receive, send)

    async def _login(self, scope: Scope, receive: Receive, send: Send, session: str | None,
                     token: str | None) -> None:
        if self.logins.valid(session):  # already signed in (say, the login URL reloaded)
            await RedirectResponse("/studio/", status_code=303)(scope, receive, send)
            return
        new = self.logins.redeem(token) if token else None
        if new is None:
            await self._refuse(scope, receive, send, 401, "unauthorized",
                               "this login URL was used already or has expired: run `monad studio` for a new one")
            return
        authenticated()
        # A page that goes on to /studio/, not a redirect: the browser came from the redirect
        # file (file://), a cross-site start, and SameSite=Strict withholds the new cookie from
        # every request of that navigation, redirects included; one this page starts is same-site.
        cookie = f"{self.cookie}={new}; HttpOnly; SameSite=Strict; Path=/"
        await HTMLResponse(SIGNED_IN_PAGE, headers={"set-cookie": cookie})(scope, receive, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, status: int, code: str, message: str) -> None:
        response: Response = (error_response(status, code, message)
                              if scope["path"].startswith("/v1/") else
                              HTMLResponse(f"<!doctype html><meta charset=utf-8><title>monad Studio</title>"
                                           f"<p>{html.escape(message)}</p>", status))
        await response(scope, receive, send)


def _with_security_headers(send: Send, security: dict[str, str]) -> Send:
    """Every answer gets the security headers it does not set itself."""
    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = MutableHeaders(scope=message)
            for name, value in security.items():
                headers.setdefault(name, value)
        await send(message)

    return wrapped


__all__ = ["CSP", "LOGIN_PATH", "Logins", "StudioLocks", "studio_csp"]
