"""Control API routes for tasks (docs/tasks.md "Control API").

    POST /v1/tasks                {server, tool, arguments?, correlation?}  → 202 the task
    GET  /v1/tasks                ?server=S&state=active|pending|done      → {"tasks": [...]}
    GET  /v1/tasks/{id}           ?wait=SECONDS&deliver=1                  → the task (+ "delivered")
    POST /v1/tasks/{id}/input     {responses: {<inputRequests key>: answer}} → the task
    POST /v1/tasks/{id}/cancel                                               → the task

Errors: a full queue is 429 `queue_full`, a server that is not connected 409
`not_connected`, no task manager 503 `unavailable`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from monad_cli.core.errors import InvalidInput
from monad_cli.daemon.http import read_json_body

if TYPE_CHECKING:
    from monad_cli.daemon.tasks.manager import TaskManager

MAX_WAIT_S = 25.0  # below the CLI client's 30 s socket timeout


def task_routes(tasks: TaskManager) -> list[Route]:
    async def start(request: Request) -> JSONResponse:
        body = await read_json_body(request)
        server, tool = body.get("server"), body.get("tool")
        arguments, correlation = body.get("arguments") or {}, body.get("correlation")
        if not isinstance(server, str) or not isinstance(tool, str):
            raise InvalidInput('expected {"server": ..., "tool": ..., "arguments": {...}}')
        if not isinstance(arguments, dict):
            raise InvalidInput("`arguments` must be a JSON object")
        if correlation is not None and not isinstance(correlation, dict):
            raise InvalidInput("`correlation` must be a JSON object")
        row = await tasks.start(server, tool, arguments, correlation=correlation)
        return JSONResponse(row, status_code=202)

    async def list_(request: Request) -> JSONResponse:
        q = request.query_params
        rows = tasks.list_tasks(server=q.get("server") or None, state=q.get("state") or None)
        return JSONResponse({"tasks": rows})

    async def show(request: Request) -> JSONResponse:
        q = request.query_params
        try:
            wait = min(max(float(q.get("wait") or 0), 0.0), MAX_WAIT_S)
        except ValueError:
            raise InvalidInput("`wait` must be a number of seconds") from None
        row = await tasks.show(request.path_params["id"], wait=wait, deliver=q.get("deliver") in ("1", "true"))
        return JSONResponse(row)

    async def answer(request: Request) -> JSONResponse:
        body = await read_json_body(request)
        responses = body.get("responses")
        if not isinstance(responses, dict):
            raise InvalidInput('expected {"responses": {"<inputRequests key>": {...}}}')
        return JSONResponse(await tasks.answer(request.path_params["id"], responses))

    async def cancel(request: Request) -> JSONResponse:
        return JSONResponse(await tasks.cancel(request.path_params["id"]))

    return [
        Route("/v1/tasks", start, methods=["POST"]),
        Route("/v1/tasks", list_),
        Route("/v1/tasks/{id}", show),
        Route("/v1/tasks/{id}/input", answer, methods=["POST"]),
        Route("/v1/tasks/{id}/cancel", cancel, methods=["POST"]),
    ]
