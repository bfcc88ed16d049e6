"""`POST /v1/tools/call` with `progress: true`: the call's progress as it happens (NDJSON).

The answer is `200 application/x-ndjson`, one JSON object per line, sent as it comes:

    {"progress": {"progress": 1.0, "total": 3.0, "message": "step 1"}}   (zero or more)
    {"result": {...CallToolResult + callId, server, tool, name, decidedBy}}   (last line), or
    {"approvalRequired": {...}}, or
    {"error": {"code": "<kind code>", "message": "..."}, "status": <the kind's HTTP status>}

The progress lines are the server's notifications/progress for this call (MCP spec,
basic/utilities/progress); the last line is what the plain answer's body would be, with
an error's status beside its envelope (the client raises it as the same kind). The
connection is the call's lifetime, as for the plain answer: a caller that goes away
cancels the call. Progress lines that the caller does not read fast enough are dropped
(at most 64 wait), never the outcome.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable
from typing import Any

import anyio
from starlette.types import Receive, Scope, Send

from monad_cli.core.envelope import encode_error
from monad_cli.core.errors import MonadError
from monad_cli.core.redact import scrub_data
from monad_cli.daemon.trust.calls import call_ref
from monad_cli.daemon.trust.service import ApprovalRequired, ToolService

log = logging.getLogger("monad.control")
MAX_QUEUED = 64


def _line(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), default=str).encode() + b"\n"


class ProgressStream:
    """An ASGI response that runs one tool call and streams its progress, then its outcome."""

    def __init__(self, svc: ToolService, name: str, body: dict[str, Any], *, via: str,
                 approval: dict[str, Any], scrub: Callable[[str], str]) -> None:
        self.svc = svc
        self.name = name
        self.body = body
        self.via = via
        self.approval = approval
        self.scrub = scrub

    def _outcome(self, exc: BaseException) -> dict[str, Any]:
        if isinstance(exc, ApprovalRequired):  # not an error: the caller asks the person
            return {"approvalRequired": scrub_data(exc.pending.as_dict(), self.scrub)}
        if isinstance(exc, MonadError):
            envelope = encode_error(exc)
            envelope["error"]["message"] = self.scrub(exc.message)
            return {**envelope, "status": type(exc).http_status}
        log.exception("control API error on POST /v1/tools/call (progress)", exc_info=exc)
        return {**encode_error(MonadError(self.scrub(f"{type(exc).__name__}: {exc}"))),
                "status": MonadError.http_status}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        send_line, lines = anyio.create_memory_object_stream[bytes](MAX_QUEUED)

        async def progress(progress: float, total: float | None, message: str | None) -> None:
            line = {"progress": {"progress": progress, "total": total,
                                 "message": self.scrub(message) if message else message}}
            with contextlib.suppress(anyio.WouldBlock):  # a slow reader misses a step, never the outcome
                send_line.send_nowait(_line(line))

        async def run() -> None:
            try:
                with call_ref(self.body.get("ref")):
                    result = await self.svc.call(self.name, self.body.get("arguments"), via=self.via,
                                                 approval=self.approval, detach=bool(self.body.get("detach")),
                                                 progress=progress)
                last = {"result": scrub_data(result, self.scrub)}  # one rule: no secret value out
            except Exception as exc:  # noqa: BLE001 - every outcome becomes the last line
                last = self._outcome(exc)
            async with send_line:
                await send_line.send(_line(last))

        answered = anyio.Event()

        async def write() -> None:
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"application/x-ndjson"), (b"cache-control", b"no-store")]})
            async with lines:
                async for chunk in lines:
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
            answered.set()  # the outcome line is out: a disconnect from here on is the caller done
            await send({"type": "http.response.body", "body": b"", "more_body": False})

        async with anyio.create_task_group() as tg:
            async def watch_disconnect() -> None:
                while (await receive())["type"] != "http.disconnect":
                    pass
                if not answered.is_set():
                    log.info("caller of %s disconnected: cancelling the call", self.name)
                tg.cancel_scope.cancel()

            tg.start_soon(watch_disconnect)
            tg.start_soon(run)
            await write()
            tg.cancel_scope.cancel()


__all__ = ["ProgressStream"]
