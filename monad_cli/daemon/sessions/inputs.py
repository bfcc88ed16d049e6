"""Routing a server's requests for input to the tool call they belong to.

The SDK calls `InputRouter.callback` (it advertises form and URL elicitation) for a legacy
`elicitation/create` and for each one inside a 2026-07-28 `InputRequiredResult`
(SEP-2322: the SDK runs the rounds, echoes `requestState`, retries with a new id). Its call:

- a 2026 round runs in the calling task: that task's call (`trust.inputs.serving`, entered
  for the call; tasks the SDK starts for concurrent questions inherit it);
- a legacy request arrives on the session's receive task: the only call in flight with a
  handler; refused when there are several (the session does not say which it is for).

With no handler it is refused with an error naming why, which fails the call. One naming a
2025-11-25 task goes to the task manager (`callback`). `sampling/createMessage` and
`roots/list` are routed the same way: monad has no model and no roots of its own, so only a
caller that declared the capability (an agent through the gateway) answers them.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
from mcp.client.session import ElicitationFnT
from mcp_types import (
    CONNECTION_CLOSED,
    INVALID_REQUEST,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    ErrorData,
    ListRootsResult,
)

from monad_cli.daemon.tasks.legacy import related_task_id
from monad_cli.daemon.trust.inputs import Caller, InputRefused, current_caller, serving

log = logging.getLogger("monad.actor")


class _Serving:
    """`InputRouter.serving`'s block (a class, not a generator: ~7k instructions less a call)."""

    __slots__ = ("answers", "inner", "router")

    def __init__(self, router: InputRouter, caller: Caller | None) -> None:
        self.router = router
        self.inner = serving(caller)
        self.answers = caller if caller is not None and caller.inputs is not None else None

    def __enter__(self) -> None:
        self.router._calls += 1
        if self.answers is not None:
            self.router._inflight.append(self.answers)
        try:
            self.inner.__enter__()
        except BaseException:
            self._left()
            raise

    def __exit__(self, *exc: object) -> None:
        try:
            self.inner.__exit__(*exc)
        finally:
            self._left()

    def _left(self) -> None:
        self.router._calls -= 1
        if self.answers is not None:
            self.router._inflight.remove(self.answers)


class InputRouter:
    """One per server session (see the module docstring). `server` names it in messages."""

    def __init__(self, server: str) -> None:
        self.server = server
        self._inflight: list[Caller] = []  # the calls in flight whose caller answers questions
        self._calls = 0  # calls in flight, with or without a handler
        self._asking: set[anyio.CancelScope] = set()  # the questions waiting for their caller's answer

    def session_ended(self) -> None:
        """The session ended (or is ending): its questions still waiting end, each answered
        -32000 (which fails its request) and withdrawn from whoever was asked (the gateway's
        `AgentQuestions`, cancelled, tells its agent). Needed for a 2026-07-28
        `input_required` round, run in its request's task (SEP-2322), which would otherwise
        wait out the question; the SDK cancels a handshake-era session's handlers itself."""
        for scope in list(self._asking):
            scope.cancel()

    def serving(self, caller: Caller | None) -> _Serving:
        """`with router.serving(caller):` the requests for input of the request made inside
        the block go to `caller`'s handler (None, or no handler: refused)."""
        return _Serving(self, caller)

    def _caller(self) -> Caller | None:
        # In a request's own task (a 2026-07-28 round), that request's caller; on the
        # session's receive task (a legacy request), the one call that can answer.
        caller = current_caller()
        if caller is None and len(self._inflight) == 1:
            caller = self._inflight[0]
        return caller

    def callback(self, tasks: ElicitationFnT | None = None) -> ElicitationFnT:
        """The session's `elicitation_callback=`: a request that names a task of the session
        (`_meta` "io.modelcontextprotocol/related-task", 2025-11-25 tasks) goes to `tasks` (the
        task manager's, which holds it as that task's input request); any other to its call."""

        async def elicit(context: Any, params: ElicitRequestParams) -> ElicitResult | ErrorData:
            if tasks is not None and (related_task_id(getattr(context, "meta", None))
                                      or related_task_id(params.meta)):
                result: ElicitResult | ErrorData = await tasks(context, params)
                return result
            return await self._ask("elicitation/create", params, ElicitResult, context)

        return elicit

    async def sampling_callback(self, context: Any, params: CreateMessageRequestParams) -> Any:
        """The session's `sampling_callback=`: to the caller of the call, as elicitation is."""
        return await self._ask("sampling/createMessage", params, CreateMessageResult, context)

    async def roots_callback(self, context: Any) -> ListRootsResult | ErrorData:
        """The session's `list_roots_callback=`: to the caller of the call, as elicitation is."""
        return await self._ask("roots/list", None, ListRootsResult, context)

    async def _ask(self, method: str, params: Any, result_type: Any, context: Any = None) -> Any:
        caller = self._caller()
        if caller is None or caller.inputs is None:
            why = "the caller of this tool call cannot answer questions"
            if not self._calls:
                why = "it was asked outside any call, and monad answers only during a call, for its caller"
            elif caller is None and self._inflight:
                why = "several calls are waiting and the request does not say which it is for"
            return ErrorData(code=INVALID_REQUEST, message=f"monad: server `{self.server}` asked for input "
                                                           f"({method}), but {why}")
        # In a 2026-07-28 round (this task's own call asks) the SDK names the question's
        # `inputRequests` key as the context's request id; a legacy request's id is the
        # server's JSON-RPC id, no key.
        key = getattr(context, "request_id", None) if caller is current_caller() else None
        request: dict[str, Any] = {"method": method}
        if params is not None:
            request["params"] = params.model_dump(by_alias=True, mode="json", exclude_none=True)
        scope = anyio.CancelScope()
        self._asking.add(scope)
        try:
            with scope:
                answer = await caller.inputs(request, key=key if isinstance(key, str) else None,
                                             call_id=getattr(caller, "call_id", None))
                return result_type.model_validate(answer)
        except InputRefused as e:
            return ErrorData(code=INVALID_REQUEST, message=f"monad: {e}")
        except ValueError as e:  # an answer that is not a result of that request
            log.warning("server %s: an input answer was not usable: %s", self.server, type(e).__name__)
            return ErrorData(code=INVALID_REQUEST, message="monad: the answer to the server's question was not usable")
        finally:
            self._asking.discard(scope)
        # `session_ended`: "Connection closed", as the SDK fails a request whose session ended
        # (its request path says why, when monad ended it: sessions/requests.py `_cut`).
        return ErrorData(code=CONNECTION_CLOSED, message="Connection closed")
