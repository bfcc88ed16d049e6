"""Control API routes for tools, calls and approvals (docs/tools.md "Control API").

    GET  /v1/tools[?server=NAME][&name=X] exposed tools + the set's `signature`
    GET  /v1/tools/changes?since=SIG      long poll (≤ `timeout` s): the new signature
    POST /v1/tools/call                   {name, arguments, via, approval: {mode, ...}}
    GET  /v1/tools/sets/{name}            the server's current tool-set hash and its pin
    GET  /v1/approvals                    pending approvals
    POST /v1/approvals/{id}               {decision: allow|deny, scope: once|session|always}

A call's HTTP connection is its lifetime: when the caller disconnects (Ctrl-C in
`monad mcp call`, a cancelled gateway request) the call's scope is cancelled, the SDK
sends notifications/cancelled, and the call is journaled `cancelled`.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from monad_cli.errors import InvalidInput, MonadError, NotFound
from monad_cli.trust.service import ApprovalRequired, CallRefused

if TYPE_CHECKING:
    from monad_cli.control.server import ControlServer

log = logging.getLogger("monad.control")
MAX_LONG_POLL_S = 60.0


def tools_routes(server: ControlServer) -> list[Route]:
    svc = server.sup.tool_service

    async def list_tools(request: Request) -> JSONResponse:
        name = request.query_params.get("server")
        if name is not None and name not in server.sup.actors:
            raise NotFound(f"server `{name}` is not defined (see `monad mcp list`)")
        listed = svc.listing(name)
        wanted = request.query_params.get("name")
        if wanted is not None:  # one tool: `monad mcp call` needs only its inputSchema
            listed = [t for t in listed if t["name"] == wanted]
        return JSONResponse({"tools": listed, "signature": svc.signature(),
                             "collisions": svc.name_map().collisions})

    async def changes(request: Request) -> JSONResponse:
        since = request.query_params.get("since", "")
        try:
            timeout = min(float(request.query_params.get("timeout", "30")), MAX_LONG_POLL_S)
        except ValueError:
            raise InvalidInput("timeout must be a number of seconds") from None
        return JSONResponse({"signature": await svc.wait_changed(since, timeout)})

    async def tool_set(request: Request) -> JSONResponse:
        name = request.path_params["name"]
        actor = server._actor(name)
        pinned = actor.spec.trust.get("pinnedToolHash") if actor.spec else None
        current = svc.hashes.get(name) if actor.live else None
        return JSONResponse({"server": name, "hash": current, "pinned": pinned,
                             "blocked": svc.blocked.get(name), "state": str(actor.state),
                             "tools": len(actor.tools) if actor.live else None})

    async def call(request: Request) -> JSONResponse:
        body = await server._body(request)
        name = body.get("name")
        if not isinstance(name, str):
            raise InvalidInput('expected {"name": "server__tool", "arguments": {...}}')
        approval = body.get("approval") or {}
        if not isinstance(approval, dict):
            raise InvalidInput("approval must be an object")
        via = str(body.get("via", "api"))[:20]
        outcome: dict[str, Any] = {}

        async with anyio.create_task_group() as tg:
            async def watch_disconnect() -> None:
                while True:
                    message = await request.receive()
                    if message["type"] == "http.disconnect":
                        log.info("caller of %s disconnected: cancelling the call", name)
                        tg.cancel_scope.cancel()
                        return

            tg.start_soon(watch_disconnect)
            try:
                outcome["result"] = await svc.call(name, body.get("arguments"), via=via, approval=approval)
            except Exception as exc:  # noqa: BLE001 - mapped to an answer below
                outcome["error"] = exc
            tg.cancel_scope.cancel()

        failure = outcome.get("error")
        if "result" in outcome:
            return JSONResponse(outcome["result"])
        if isinstance(failure, ApprovalRequired):
            return JSONResponse({"approvalRequired": failure.pending.as_dict()}, status_code=202)
        if isinstance(failure, CallRefused):
            return JSONResponse({"error": {"code": failure.code, "message": failure.message}}, status_code=403)
        if isinstance(failure, (NotFound, InvalidInput)):
            raise failure
        if isinstance(failure, MonadError):
            return JSONResponse({"error": {"code": "tool_call_failed", "message": failure.message}}, status_code=502)
        if failure is not None:
            raise failure
        # The caller went away; nobody reads this answer.
        return JSONResponse({"error": {"code": "cancelled", "message": "the caller disconnected"}},
                            status_code=499)

    async def approvals(request: Request) -> JSONResponse:
        return JSONResponse({"pending": svc.gate.listing()})

    async def decide(request: Request) -> JSONResponse:
        approval_id = request.path_params["id"]
        body = await server._body(request)
        decision = body.get("decision")
        if decision not in ("allow", "deny"):
            raise InvalidInput('expected {"decision": "allow"|"deny", "scope": "once"|"session"|"always"}')
        scope = str(body.get("scope", "once"))
        p = svc.gate.decide(approval_id, allow=decision == "allow", scope=scope,
                            by=f"monad approvals {decision}" + (f" --{scope}" if decision == "allow"
                                                                and scope != "once" else ""))
        return JSONResponse({"id": p.id, "decision": decision, "scope": scope, "server": p.server,
                             "tool": p.tool, "exposed": p.exposed})

    return [
        Route("/v1/tools", list_tools),
        Route("/v1/tools/changes", changes),
        Route("/v1/tools/call", call, methods=["POST"]),
        Route("/v1/tools/sets/{name}", tool_set),
        Route("/v1/approvals", approvals),
        Route("/v1/approvals/{id}", decide, methods=["POST"]),
    ]
