"""What every route of the supervisor's listeners shares: the JSON body reader and the one error boundary.

Routes just raise. `ErrorBoundary` is the only place an exception becomes an HTTP answer:
a `MonadError` is answered with its kind's status and `{"error": {"code", "message"}}`
(`core/envelope.py`); anything else is a bug, answered 500 `internal` and logged once.
Every message passes through the supervisor's redaction function on the way out.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from monad_cli.core.envelope import encode_error, envelope
from monad_cli.core.errors import InvalidInput, MonadError
from monad_cli.core.messages import cut_values, one_line
from monad_cli.tools.arguments import MAX_DEPTH, unsendable

MAX_BODY = 1024 * 1024  # bytes; a control request is a few hundred

log = logging.getLogger("monad.control")


def error_response(status: int, code: str, message: str) -> JSONResponse:
    """`{"error": {"code", "message"}}` with `status`: the one error shape of the API."""
    return JSONResponse(envelope(code, message), status_code=status)


def error_answer(exc: Exception, *, scrub: Callable[[str], str], where: str = "") -> JSONResponse:
    """The answer for `exc`: its kind's status and envelope, the message scrubbed, on one
    line, long values cut (core/messages.py). A
    non-`MonadError` is logged (with its traceback) and answered 500 `internal`."""
    if isinstance(exc, MonadError):
        if type(exc) is MonadError:  # raised without a kind: worth a line in the log
            log.warning("control API error on %s: %s", where, scrub(exc.message))
        body = encode_error(exc)
        # Scrubbed first: cutting could split a secret the scrubber would then not recognise.
        body["error"]["message"] = cut_values(one_line(scrub(exc.message)))
        return JSONResponse(body, status_code=type(exc).http_status)
    log.exception("control API error on %s", where)
    return error_response(MonadError.http_status, MonadError.code, scrub(f"{type(exc).__name__}: {exc}"))


class ErrorBoundary:
    """ASGI middleware around the control app's routes (inside Starlette's
    ServerErrorMiddleware, outside its ExceptionMiddleware: route-not-found stays its plain
    404/405). Every exception a route raises becomes its answer (`error_answer`), never
    re-raised to uvicorn (no second traceback; the keep-alive connection survives), unless
    the response had started: it never answers twice."""

    def __init__(self, app: ASGIApp, scrub: Callable[[str], str]) -> None:
        self.app = app
        self.scrub = scrub

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watch(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, watch)
        except Exception as exc:  # the error boundary: every exception a route raises ends here
            if started:
                raise
            answer = error_answer(exc, scrub=self.scrub, where=f"{scope.get('method')} {scope.get('path')}")
            await answer(scope, receive, send)


async def read_json_body(request: Request) -> dict[str, Any]:
    """The request's JSON object (`{}` when empty). Raises InvalidInput when too large,
    not JSON, not an object, or JSON that nothing downstream can take (`unsendable`: NaN,
    a lone surrogate escape, nesting past `MAX_DEPTH`), naming where."""
    raw = await request.body()
    if len(raw) > MAX_BODY:
        raise InvalidInput("request body too large")
    try:
        body = json.loads(raw or b"{}")
    except ValueError:
        raise InvalidInput("request body is not JSON") from None
    except RecursionError:
        raise InvalidInput(f"request body is nested more than {MAX_DEPTH} levels deep") from None
    if not isinstance(body, dict):
        raise InvalidInput("request body must be a JSON object")
    why = unsendable(body)
    if why is not None:
        raise InvalidInput(f"request body: {why}")
    return body


def limit_param(request: Request, default: int, most: int) -> int:
    """`?limit=N` clamped to 1 … `most`. Raises InvalidInput when it is not a whole number."""
    try:
        return max(1, min(int(request.query_params.get("limit", default)), most))
    except ValueError:
        raise InvalidInput("limit must be a whole number") from None


def via(request: Request) -> str:
    """`studio` for a request the Studio's listener passed on (studio/locks.py), else `control`."""
    return "studio" if getattr(request.state, "via", None) == "studio" else "control"


def door(request: Request) -> str:
    """How a journal row says which door an edit came through."""
    return "from the Studio" if via(request) == "studio" else "through the control API"


async def until_disconnect(request: Request, work: Callable[[], Awaitable[Any]], *,
                           stop: anyio.Event | None = None) -> Any:
    """Run `work()`; if the caller disconnects (or `stop` is set) first, cancel it (a waiting
    approval goes with it) and return None."""
    outcome: dict[str, Any] = {}
    async with anyio.create_task_group() as tg:
        async def watch() -> None:
            while (await request.receive())["type"] != "http.disconnect":
                pass
            tg.cancel_scope.cancel()

        async def stopped(stop: anyio.Event) -> None:
            await stop.wait()
            tg.cancel_scope.cancel()

        tg.start_soon(watch)
        if stop is not None:
            tg.start_soon(stopped, stop)
        try:
            outcome["value"] = await work()
        except Exception as exc:  # noqa: BLE001 - raised below, outside the task group
            outcome["error"] = exc
        tg.cancel_scope.cancel()
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def bearer_matches(authorization: bytes, token: str) -> bool:
    """Whether an `Authorization` header value carries `Bearer <token>`: the scheme in any case
    (RFC 9110 §11.1, RFC 7235 §2.1: "bearer" is "Bearer"), the credentials compared in
    constant time. An empty `token` matches nothing: an emptied token file fails closed."""
    import hmac

    scheme, _, credentials = authorization.strip().partition(b" ")
    return bool(token) and scheme.lower() == b"bearer" and hmac.compare_digest(credentials.strip(), token.encode())


def bearer_refusal(token: str, token_file: str) -> str:
    """What a refused request is told (the same line as the log's for an empty token file)."""
    return f"missing or wrong bearer token (see {token_file})" if token else empty_token_message(token_file)


def empty_token_message(token_file: str) -> str:
    return (f"{token_file} is empty, so every request is refused; delete the file and start the listener "
            f"again for a new token")


def bearer_token(path: Path) -> str:
    """The bearer token kept in `path` (a loopback listener's: the HTTP gateway's, `/metrics`):
    created once (≥ 256 bits, 0600, never replaced), reused across runs. When two starts race,
    the one that created the file wins and the other reads it. An emptied file gives "" (which
    `bearer_matches` never accepts: fail closed, and `bearer_refusal` says why)."""
    import os
    import secrets

    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    token = secrets.token_urlsafe(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # made by another start meanwhile
        return path.read_text().strip()
    with os.fdopen(fd, "w") as f:
        f.write(token + "\n")
    return token
