"""The loopback redirect listener (RFC 8252 §7.3, §8.3) and opening the browser.

`LoopbackListener` binds 127.0.0.1 on an ephemeral port, serves exactly one path with a
random component, accepts the first callback that carries the expected `state` (or an
`error`), answers it with a short page, and closes - after that callback or on timeout.
Other requests get 404 and do not end the wait (a browser asks for /favicon.ico; a local
process guessing the port cannot finish the flow without the random path and the state).

Every local account can connect to the port, so what one can hold is bounded (the same
rules as the supervisor's listeners, daemon/bounds.py): a request's headers must arrive
within `HEADER_TIMEOUT_S`, and at most `MAX_CONNECTIONS` connections wait for theirs — a
new one closes the oldest waiting, so the browser's callback (sent as soon as it connects)
is served while a flood holds the rest. A failed `accept()` (out of descriptors) is
retried, not the end of the flow: 250 idle connections from another account once ended
`monad mcp authorize` with an ExceptionGroup under a 256-descriptor limit.

Raw HTTP/1.1 over anyio rather than a web framework: one GET, one answer, no dependency.
"""

from __future__ import annotations

import contextlib
import secrets
import webbrowser
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import anyio.abc
from mcp.shared.auth import AuthorizationCodeResult

from monad_cli.core.errors import AuthError

MAX_REQUEST_BYTES = 16 * 1024
HEADER_TIMEOUT_S = 5.0
MAX_CONNECTIONS = 32
PAGE_OK = ("<!doctype html><title>monad</title><p>Authorization received. You can close this window "
           "and return to the terminal.</p>")
PAGE_ERROR = "<!doctype html><title>monad</title><p>Authorization failed; see the terminal.</p>"


def parse_callback(url_or_query: str) -> dict[str, str]:
    """The query parameters of a redirect URL (or of a bare query string), first value each."""
    query = urlsplit(url_or_query).query if "?" in url_or_query or "://" in url_or_query else url_or_query
    return {k: v[0] for k, v in parse_qs(query, keep_blank_values=True).items()}


def callback_result(params: dict[str, str], *, server: str) -> AuthorizationCodeResult:
    """An authorization response (RFC 6749 §4.1.2) as the SDK wants it. Raises `AuthError`
    for an error response (§4.1.2.1) or a response without a code."""
    if "error" in params:
        # error_description is the authorization server's text: shown, but cut short.
        desc = params.get("error_description", "")[:200]
        raise AuthError(f"server `{server}`: the authorization server refused: {params['error'][:64]}"
                        f"{f' ({desc})' if desc else ''}; run `monad mcp authorize {server}` to try again")
    if not params.get("code"):
        raise AuthError(f"server `{server}`: the redirect carried no authorization code")
    return AuthorizationCodeResult(code=params["code"], state=params.get("state"), iss=params.get("iss"))


class LoopbackListener:
    """`async with LoopbackListener(server=...) as lb:` then `lb.redirect_uri`, `await lb.wait()`.

    `wait()` returns the callback's query parameters (a dict) or raises `AuthError` on
    timeout (`timeout` seconds).
    """

    def __init__(self, *, server: str, timeout: float = 300.0) -> None:
        self.server = server
        self.timeout = timeout
        self.path = f"/callback/{secrets.token_urlsafe(16)}"
        self.port = 0
        self._listener: Any = None
        self._result: dict[str, str] | None = None
        self._got = anyio.Event()
        self._tg: anyio.abc.TaskGroup | None = None
        self._waiting: dict[int, anyio.CancelScope] = {}  # insertion order: the oldest first

    @property
    def redirect_uri(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.path}"

    async def __aenter__(self) -> LoopbackListener:
        self._listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        self.port = int(self._listener.extra(anyio.abc.SocketAttribute.local_port))
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(self._serve)
        return self

    async def __aexit__(self, et: type[BaseException] | None, e: BaseException | None,
                        tb: TracebackType | None) -> bool | None:
        assert self._tg is not None and self._listener is not None
        self._tg.cancel_scope.cancel()
        try:
            # No other await before this one: the cancelled scope would raise there. The
            # body's own exception is not handed to the task group, which would wrap it in an
            # ExceptionGroup; it propagates as it is.
            await self._tg.__aexit__(None, None, None)
            return None
        finally:
            with anyio.CancelScope(shield=True):
                await self._listener.aclose()

    async def _serve(self) -> None:
        assert self._listener is not None and self._tg is not None
        listener = self._listener.listeners[0]  # one address: 127.0.0.1
        while True:
            try:
                stream = await listener.accept()
            except OSError:  # EMFILE/ENFILE/ECONNABORTED: the next accept may work
                await anyio.sleep(0.05)
                continue
            if len(self._waiting) >= MAX_CONNECTIONS:
                oldest = next(iter(self._waiting))
                self._waiting.pop(oldest).cancel()
            self._tg.start_soon(self._connection, stream)

    async def _connection(self, stream: Any) -> None:
        async with stream:
            if self._got.is_set():
                return  # one-shot: the callback has arrived, nothing more is served
            # A slow or silent peer cannot hold the listener: a deadline, and a newer
            # connection may close this one (`_serve`).
            with anyio.CancelScope(deadline=anyio.current_time() + HEADER_TIMEOUT_S) as scope:
                self._waiting[id(scope)] = scope
                try:
                    await self._handle(stream)
                finally:
                    self._waiting.pop(id(scope), None)

    async def _handle(self, stream: Any) -> None:
        data = b""
        while b"\r\n\r\n" not in data and len(data) < MAX_REQUEST_BYTES:
            try:
                chunk = await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                return
            data += chunk
        request_line = data.split(b"\r\n", 1)[0].decode("latin-1")
        parts = request_line.split(" ")
        if len(parts) != 3 or parts[0] != "GET" or urlsplit(parts[1]).path != self.path:
            await _answer(stream, 404, "<!doctype html><p>not found</p>")
            return
        params = parse_callback(parts[1])
        ok = "error" not in params and "code" in params
        await _answer(stream, 200, PAGE_OK if ok else PAGE_ERROR)
        self.deliver(params)

    def deliver(self, params: dict[str, str]) -> None:
        """Take a callback (from the listener, or a URL the person pasted). First one wins."""
        if not self._got.is_set():
            self._result = params
            self._got.set()

    async def wait(self) -> dict[str, str]:
        with anyio.move_on_after(self.timeout):
            await self._got.wait()
        if self._result is None:
            raise AuthError(f"server `{self.server}`: no authorization arrived within {self.timeout:.0f} s; "
                            f"run `monad mcp authorize {self.server}` again")
        return self._result


async def _answer(stream: Any, status: int, body: str) -> None:
    reason = {200: "OK", 404: "Not Found"}.get(status, "OK")
    payload = body.encode()
    head = (f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/html; charset=utf-8\r\n"
            f"Content-Length: {len(payload)}\r\nCache-Control: no-store\r\nConnection: close\r\n"
            f"Referrer-Policy: no-referrer\r\n\r\n").encode()
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
        await stream.send(head + payload)


async def open_file_in_browser(path: Path) -> bool:
    """Open the local file `path` (a 0600 redirect page, core/redirect_file.py) with
    `webbrowser`, never through a shell: the browser's command line holds only the path.
    True if a browser was started."""
    return bool(await anyio.to_thread.run_sync(webbrowser.open, path.as_uri(), abandon_on_cancel=True))
