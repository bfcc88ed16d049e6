"""`POST /v1/tools/call` with `progress: true`: the call's progress as it happens (NDJSON).

The answer is `200 application/x-ndjson`, one JSON object per line, sent as it comes:

    {"progress": {"progress": 1.0, "total": 3.0, "message": "step 1"}}   (zero or more)
    {"question": {"id": "...", "name": "server__tool", "request": {"method": "elicitation/create", ...},
                  "input": {...core/task_forms.py describe_request: mode, message, url, host, fields}}}
    {"result": {...CallToolResult + callId, server, tool, name, decidedBy}}   (last line), or
    {"approvalRequired": {...}}, or
    {"error": {"code": "<kind code>", "message": "..."}, "status": <the kind's HTTP status>}

The progress lines are the server's notifications/progress for this call (MCP spec,
basic/utilities/progress). With `questions: true` in the body, a server's form or URL
question (`elicitation/create`, client/elicitation) is a `question` line, and the call waits
(at most `QUESTION_TIMEOUT_S`) for its answer, posted to `POST /v1/tools/call/answer`
`{"id", "answer": {"action", "content"?}}`; other questions (sampling, roots) are refused,
naming them: neither the CLI nor the Studio's page (`via: studio`) has a model or workspace
roots. Without it every question is refused. A 2026-07-28 server sees this caller declare
`elicitation` (form and URL), neither sampling nor roots (daemon/sessions/stamp.py). The
last line is what the plain answer's body would be, with an error's status beside its
envelope. A caller that goes away cancels the call. Progress lines the caller does not read
fast enough are dropped (at most 64 wait), never the outcome.
"""

from __future__ import annotations

import contextlib
import json
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from monad_cli.core.envelope import encode_error
from monad_cli.core.errors import MonadError
from monad_cli.core.redact import scrub_data
from monad_cli.core.task_forms import describe_request
from monad_cli.daemon.http import until_disconnect
from monad_cli.daemon.trust.call import ToolCall
from monad_cli.daemon.trust.inputs import PERSON_CAPABILITIES, InputRefused
from monad_cli.daemon.trust.service import ApprovalRequired, ToolService

log = logging.getLogger("monad.control")
MAX_QUEUED = 64
QUESTION_TIMEOUT_S = 600.0


class CallQuestions:
    """The questions waiting for a caller's answer, by id (one per control server)."""

    def __init__(self) -> None:
        self.waiting: dict[str, tuple[anyio.Event, list[dict[str, Any]]]] = {}

    async def ask(self, send: Callable[[bytes], Any], name: str, request: dict[str, Any], *,
                  asker: str = "`monad mcp call`") -> dict[str, Any]:
        """Send the question line with `send` and wait for its answer. Raises InputRefused
        for what `asker` (the CLI, the Studio) does not answer, or an answer that does not
        come in time."""
        method = request.get("method")
        if method != "elicitation/create":
            # Neither a terminal nor a page has a model to sample with or workspace roots to
            # list: the server learns why in one line (docs/studio.md "Questions during a call").
            raise InputRefused(f"{asker} answers forms and URLs (elicitation/create), not `{method}`; "
                               f"call the tool from an agent (`monad mcp serve`) for that")
        question_id = secrets.token_urlsafe(12)
        done, box = anyio.Event(), list[dict[str, Any]]()
        self.waiting[question_id] = (done, box)
        try:
            await send(_line({"question": {"id": question_id, "name": name, "request": request,
                                           "input": describe_request(question_id, request)}}))
            with anyio.move_on_after(QUESTION_TIMEOUT_S):
                await done.wait()
        finally:
            self.waiting.pop(question_id, None)
        if not box:
            raise InputRefused(f"the caller did not answer within {QUESTION_TIMEOUT_S:.0f} s")
        return box[0]

    def answer(self, question_id: str, answer: dict[str, Any]) -> bool:
        """Hand `answer` to the question `question_id`; False when none waits under that id."""
        waiting = self.waiting.get(question_id)
        if waiting is None:
            return False
        waiting[1].append(answer)
        waiting[0].set()
        return True


def _line(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), default=str).encode() + b"\n"


@dataclass
class ProgressStream:
    """An ASGI response that runs one tool call and streams its progress, then its outcome;
    `questions`: where the caller's answers arrive, None when it takes no questions."""

    svc: ToolService
    name: str
    body: dict[str, Any]
    via: str
    approval: dict[str, Any]
    scrub: Callable[[str], str]
    questions: CallQuestions | None = None

    def _note(self, method: str, outcome: str, **detail: Any) -> None:
        """The journal event `question` of a question asked of this caller, as the gateway
        writes one for an agent's (gateway/questions.py): never the answer's content."""
        try:
            self.svc.journal.record("question", server=self.name.partition("__")[0], detail={
                "method": method, "outcome": outcome, "about": self.name, "via": self.via, **detail})
        except Exception:  # a journal that cannot be written must not fail the question
            log.exception("journal write failed")

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
            line = {"progress": {"progress": progress, "total": total, "message": message}}  # scrubbed on arrival
            with contextlib.suppress(anyio.WouldBlock):  # a slow reader misses a step, never the outcome
                send_line.send_nowait(_line(line))

        inputs = None
        if self.questions is not None:
            questions = self.questions

            async def inputs(request: dict[str, Any], *, key: str | None = None,
                             call_id: int | None = None) -> dict[str, Any]:
                method = str(request.get("method"))
                try:
                    answer = await questions.ask(send_line.send, self.name, request,
                                                 asker="the Studio" if self.via == "studio" else "`monad mcp call`")
                except InputRefused as e:
                    self._note(method, "refused", reason=str(e))
                    raise
                except anyio.get_cancelled_exc_class():  # withdrawn, or the call it came in ended
                    self._note(method, "cancelled")
                    raise
                self._note(method, "answered", **({"action": answer["action"]} if "action" in answer else {}))
                return answer

        async def run() -> None:
            try:
                # What a 2026-07-28 server sees this caller declare (sessions/stamp.py): a person
                # answers forms and URLs (or is told why not, without a terminal); no sampling, no roots.
                result = await self.svc.call(ToolCall(
                    self.name, self.body.get("arguments"), via=self.via, approval=self.approval,
                    detach=bool(self.body.get("detach")), progress=progress, inputs=inputs,
                    capabilities=PERSON_CAPABILITIES, ref=self.body.get("ref")))
                last = {"result": result}  # scrubbed as it arrived from the server (daemon/scrubber.py)
            except Exception as exc:  # noqa: BLE001 - every outcome becomes the last line
                last = self._outcome(exc)
            async with send_line:
                await send_line.send(_line(last))

        answered = anyio.Event()

        async def respond() -> None:
            async with anyio.create_task_group() as tg:
                tg.start_soon(run)
                await send({"type": "http.response.start", "status": 200, "headers": [
                    (b"content-type", b"application/x-ndjson"), (b"cache-control", b"no-store")]})
                async with lines:
                    async for chunk in lines:
                        await send({"type": "http.response.body", "body": chunk, "more_body": True})
            answered.set()  # the outcome line is out: a disconnect from here on is the caller done
            await send({"type": "http.response.body", "body": b"", "more_body": False})

        await until_disconnect(Request(scope, receive), respond)
        if not answered.is_set():
            log.info("caller of %s disconnected: cancelling the call", self.name)


__all__ = ["CallQuestions", "ProgressStream"]
