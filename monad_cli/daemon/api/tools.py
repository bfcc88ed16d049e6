"""Control API routes for tools, calls and approvals (docs/tools.md "Control API").

    GET  /v1/tools[?server=NAME][&name=X] exposed tools (hidden ones too, with `hidden`: the
                                          rule) + the set's `signature`, name `collisions`
                                          and `leftOut` ({server, reason}: listed items
                                          not taken)
    GET  /v1/tools/search?q=TEXT[&limit=N] the tools best matching a task in plain words, best
                                          first: {tools: [{name, server, description, score}]}
                                          (the gateway's find_tool index; hidden tools never)
    GET  /v1/tools/changes?since=SIG      long poll (≤ `timeout` s): the new signature
    POST /v1/tools/call                   {name, arguments, via, approval: {mode, ...}, ref?, progress?,
                                          questions?}
    POST /v1/tools/call/answer            {id, answer}: a caller's answer to a `question` line
    GET  /v1/tools/sets/{name}            the server's current tool-set hash and its pin; while the
                                          pin refuses the set, `review`: {hash, pinned, change, tools}
    POST /v1/tools/sets/{name}/pin        {hash}: pin the set reviewed (409 if it changed since)
    GET  /v1/approvals                    pending approvals, and `standing` ones (session and always:
                                          {server, tool, exposed, scope, decidedBy, current})
    POST /v1/approvals/{id}               {decision: allow|deny, scope: once|session|always}
    POST /v1/approvals/revoke             {name: EXPOSED} or {server: NAME}, optional scope:
                                          forget standing approvals; {revoked: n}

Each tool row of `GET /v1/tools` carries `approval`: "session" or "always" when a standing
approval (for this definition of the tool) lets its next call run unasked, else None. A
call's HTTP connection is its lifetime: a caller that disconnects cancels it (the SDK sends
notifications/cancelled; journaled `cancelled`). On the Studio's port `via` is always
`studio`; `ref` (the caller's tag, ≤ 64 characters) comes back on the call's events and its
Task's correlation (trust/calls.py). With `progress: true` the answer is NDJSON (progress.py).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from monad_cli.config import edits
from monad_cli.core.errors import Conflict, InvalidInput, NotConnected, NotFound
from monad_cli.daemon.api.progress import CallQuestions, ProgressStream
from monad_cli.daemon.http import error_response, read_json_body, until_disconnect, via
from monad_cli.daemon.port import actor_named
from monad_cli.daemon.trust.call import ToolCall
from monad_cli.daemon.trust.gate import standing_approval
from monad_cli.daemon.trust.pins import same_hash
from monad_cli.daemon.trust.service import ApprovalRequired

if TYPE_CHECKING:
    from monad_cli.daemon.port import DaemonPort

log = logging.getLogger("monad.control")
MAX_LONG_POLL_S = 60.0
PIN_APPLIED_WAIT_S = 10.0  # for the live session to register the tools a pin accepted (a tools/list)


def tools_routes(port: DaemonPort) -> list[Route]:
    svc = port.tool_service
    questions = CallQuestions()

    def approval_of(server: str, name: str) -> str | None:
        actor = port.actors.get(server)
        return None if actor is None else standing_approval(svc.gate, actor, name)

    def standing() -> list[dict[str, Any]]:
        names = svc.name_map()
        out = []
        for g in svc.gate.standing():
            actor = port.actors.get(g["server"])
            spec = actor.spec if actor is not None else None
            exposed = names.exposed_name(g["server"], g["tool"]) or f"{g['server']}__{g['tool']}"
            # `current`: it covers the server's definition and the tool as it is listed now.
            current = spec is not None and spec.definition_hash() == g["definitionHash"] and \
                approval_of(g["server"], g["tool"]) == g["scope"]
            out.append({**g, "exposed": exposed, "current": current})
        return out

    async def list_tools(request: Request) -> JSONResponse:
        name = request.query_params.get("server")
        if name is not None:
            actor_named(port, name)
        everything = svc.listing(hidden=True)  # `monad mcp tools` shows hidden tools and why
        listed = everything if name is None else [t for t in everything if t["server"] == name]
        wanted = request.query_params.get("name")
        if wanted is not None:  # one tool: `monad mcp call` needs only its inputSchema
            listed = [t for t in listed if t["name"] == wanted]
        # Tools a server listed but monad could not take (a bad schema, a repeated name):
        # `monad mcp tools` names them on stderr (sessions/listings.py).
        left_out = [{"server": n, "reason": reason} for n, actor in port.actors.items()
                    if name in (None, n) and actor.live for reason in actor.left_out]
        listed = [{**t, "approval": approval_of(t["server"], t["tool"])} for t in listed]
        return JSONResponse({"tools": listed, "signature": svc.signature(everything),
                             "collisions": svc.name_map().collisions, "leftOut": left_out})

    async def search(request: Request) -> JSONResponse:
        query = request.query_params.get("q", "")
        try:
            limit = int(request.query_params.get("limit", "20"))
        except ValueError:
            raise InvalidInput("limit must be a whole number from 1 to 100") from None
        if not query.strip() or not 1 <= limit <= 100:
            raise InvalidInput("give `q` (the task, in plain words) and a `limit` from 1 to 100")
        built = await port.tool_search.built()
        return JSONResponse({"tools": [
            {"name": name, "server": hit["server"], "description": port.scrub(hit["description"]),
             "score": round(score, 3)}
            for name, score in built.index.search(query[:1000], limit)
            if (hit := port.tool_search.describe(name)) is not None]})

    async def changes(request: Request) -> JSONResponse:
        since = request.query_params.get("since", "")
        try:
            timeout = min(float(request.query_params.get("timeout", "30")), MAX_LONG_POLL_S)
        except ValueError:
            raise InvalidInput("timeout must be a number of seconds") from None
        # End the long poll early when its caller goes away or the supervisor stops, so a
        # shutdown does not have to cancel it mid-wait.
        signature = await until_disconnect(request, lambda: svc.wait_changed(since, timeout), stop=port.stop_event)
        return JSONResponse({"signature": signature or svc.signature()})

    async def tool_set(request: Request) -> JSONResponse:
        name = request.path_params["name"]
        actor = actor_named(port, name)
        pinned = actor.spec.trust.pinned_tool_hash if actor.spec else None
        current = svc.hashes.get(name) if actor.live or actor.listed else None
        # While the pin refuses the set: the change and the refused tools, to review first.
        review = svc.pin_review(name)
        return JSONResponse({"server": name, "hash": review["hash"] if review else current, "pinned": pinned,
                             "blocked": svc.blocked.get(name), "state": str(actor.state),
                             "tools": len(actor.tools) if actor.live or actor.listed else None,
                             "refused": review is not None, "review": review})

    async def pin(request: Request) -> JSONResponse:
        name = request.path_params["name"]
        actor = actor_named(port, name)
        body = await read_json_body(request)
        wanted = body.get("hash")
        if not isinstance(wanted, str):
            raise InvalidInput('expected {"hash": "sha256:..."}: the tool-set hash you reviewed '
                               f"(GET /v1/tools/sets/{name})")
        review = svc.pin_review(name)
        current = review["hash"] if review else (svc.hashes.get(name) if actor.live or actor.listed else None)
        if current is None:
            raise NotConnected(f"server `{name}` is {actor.state}, so its tool set is unknown; pin it once it is "
                               f"connected (`monad mcp wait {name}`)")
        if not same_hash(wanted, current):
            # Accept only what was shown: a set that changed again meanwhile is reviewed again.
            raise Conflict(f"the tool set of server `{name}` changed since it was reviewed (now {current}, reviewed "
                           f"{wanted}); review it again (`monad mcp pin {name}`)")
        before = actor.spec.trust.pinned_tool_hash if actor.spec else None
        source = await anyio.to_thread.run_sync(lambda: edits.set_trust(port.paths, name, "pinnedToolHash", current))
        await port.reconcile()  # applied to the live session before the answer (docs/tools.md)
        if review is not None:
            # The live session's tools meet the new pin in a tools/list of their own: wait for
            # it, bounded, so a status read after this answer sees them registered.
            with anyio.move_on_after(PIN_APPLIED_WAIT_S):
                while name in svc.blocked and same_hash(svc.hashes.get(name), current):
                    await anyio.sleep(0.05)
        by = "the Studio" if via(request) == "studio" else "monad mcp pin"
        if port.journal is not None:
            port.journal.record("config", server=name, reason=f"pinned by {by}: trust.pinnedToolHash = {current}"
                                + (f" (was {before})" if before and not same_hash(before, current) else ""))
        return JSONResponse({"name": name, "source": source, "pinnedToolHash": current,
                             "previous": before, "tools": len(actor.tools), "accepted": review is not None,
                             "registered": name not in svc.blocked})

    async def call(request: Request) -> Response | ProgressStream:
        body = await read_json_body(request)
        name = body.get("name")
        if not isinstance(name, str):
            raise InvalidInput('expected {"name": "server__tool", "arguments": {...}}')
        approval = body.get("approval") or {}
        if not isinstance(approval, dict):
            raise InvalidInput("approval must be an object")
        caller = "studio" if via(request) == "studio" else str(body.get("via", "api"))[:20]
        if body.get("progress"):
            return ProgressStream(svc, name, body, via=caller, approval=approval, scrub=port.scrub,
                                  questions=questions if body.get("questions") else None)
        try:  # any other failure: the ErrorBoundary answers with the kind's status
            result = await until_disconnect(request, lambda: svc.call(ToolCall(
                name, body.get("arguments"), via=caller, approval=approval, detach=bool(body.get("detach")),
                ref=body.get("ref"))))
        except ApprovalRequired as e:  # not an error: the caller asks the person
            return JSONResponse({"approvalRequired": e.pending.as_dict()}, status_code=202)
        if result is None:  # the caller went away; nobody reads this answer
            log.info("caller of %s disconnected: cancelling the call", name)
            return error_response(499, "cancelled", "the caller disconnected")
        return JSONResponse(result)

    async def answer(request: Request) -> JSONResponse:
        body = await read_json_body(request)
        question_id, given = body.get("id"), body.get("answer")
        if not isinstance(question_id, str) or not isinstance(given, dict):
            raise InvalidInput('expected {"id": "...", "answer": {"action": "accept", "content": {...}}}')
        if not questions.answer(question_id, given):
            raise NotFound(f"no question `{question_id}` is waiting (answered, timed out, or its call ended)")
        return JSONResponse({"answered": question_id})

    async def approvals(request: Request) -> JSONResponse:
        return JSONResponse({"pending": svc.gate.listing(), "standing": standing()})

    async def revoke(request: Request) -> JSONResponse:
        body = await read_json_body(request)
        name, server, scope = body.get("name"), body.get("server"), body.get("scope")
        if scope not in (None, "session", "always") or not isinstance(name or server, str):
            raise InvalidInput('expected {"name": "SERVER__TOOL"} or {"server": "NAME"}, and optionally '
                               '"scope": "session"|"always"')
        by = "the Studio" if via(request) == "studio" else "monad approvals revoke"
        targets = {(g["server"], g["tool"]) for g in standing()
                   if (name is not None and g["exposed"] == name) or (name is None and g["server"] == server)}
        if not targets:
            raise NotFound(f"no standing approval of `{name or server}` (see `monad approvals`)")
        revoked = sum(svc.gate.revoke(s, t, scope, by=by) for s, t in sorted(targets))
        return JSONResponse({"revoked": revoked})

    async def decide(request: Request) -> JSONResponse:
        approval_id = request.path_params["id"]
        body = await read_json_body(request)
        decision = body.get("decision")
        if decision == "withdraw":
            # The caller gave up (Ctrl-C at the prompt): the request must not linger in the list.
            p = svc.gate.withdraw(approval_id, by="the caller withdrew it")
            return JSONResponse({"id": p.id, "decision": "withdrawn"})
        if decision not in ("allow", "deny"):
            raise InvalidInput('expected {"decision": "allow"|"deny", "scope": "once"|"session"|"always"}')
        scope = str(body.get("scope", "once"))
        if via(request) == "studio":
            by = f"the Studio ({scope})" if decision == "allow" else "denied in the Studio"
        else:
            by = f"monad approvals {decision}" + (f" --{scope}" if decision == "allow" and scope != "once" else "")
        p = svc.gate.decide(approval_id, allow=decision == "allow", scope=scope, by=by)
        return JSONResponse({"id": p.id, "decision": decision, "scope": scope, "server": p.server,
                             "tool": p.tool, "exposed": p.exposed})

    return [
        Route("/v1/tools", list_tools),
        Route("/v1/tools/search", search),
        Route("/v1/tools/changes", changes),
        Route("/v1/tools/call", call, methods=["POST"]),
        Route("/v1/tools/call/answer", answer, methods=["POST"]),
        Route("/v1/tools/sets/{name}", tool_set),
        Route("/v1/tools/sets/{name}/pin", pin, methods=["POST"]),
        Route("/v1/approvals", approvals),
        Route("/v1/approvals/revoke", revoke, methods=["POST"]),
        Route("/v1/approvals/{id}", decide, methods=["POST"]),
    ]
