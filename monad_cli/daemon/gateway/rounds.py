"""A server's questions to a 2026-07-28 agent: `input_required` rounds (SEP-2322).

A 2026-07-28 agent cannot be sent a request: a server that asks it something answers the
call with an `InputRequiredResult` (`inputRequests`, `requestState`), and the agent calls
again with `inputResponses` and that `requestState`. The server behind monad asks in its own
era, in the middle of one upstream call (tools/call, resources/read or prompts/get), so the
gateway keeps that call running across the agent's rounds:

- the first request starts the upstream call in a task of the gateway (`spawn`), not of the
  request, and answers with its result or its questions, whose `requestState` names the
  running call (a random token, new each round);
- questions a server asks together go out together, each under the server's own
  `inputRequests` key when it gave one, else `q1`, `q2`, …;
- a request with that `requestState` (and the method that got it) hands the
  `inputResponses` to the waiting questions and answers again the same way;
- a question no round answers within `answer_timeout` seconds ends (gateway/questions.py);
  an unknown or finished token is refused with -32602.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError

from monad_cli.daemon.trust.inputs import QuestionTimedOut

log = logging.getLogger("monad.gateway")
KEEP_FINISHED_S = 300.0  # a finished call's answer waits this long for the agent's next round
TOGETHER_S = 0.05  # questions asked within this long of the first go out in the same round


@dataclass
class _Question:
    request: dict[str, Any]
    answered: anyio.Event = field(default_factory=anyio.Event)
    answer: dict[str, Any] | None = None


class Round:
    """One upstream call an agent is answering questions for (see the module docstring)."""

    def __init__(self, token: str, answer_timeout: float, method: str, retoken: Callable[[Round], str]) -> None:
        self.token = token
        self.method = method  # the agent's request (tools/call, resources/read, prompts/get)
        self.about: list[Any] = []  # the call's `AgentQuestions` (they know its server)
        self.answer_timeout = answer_timeout
        self.send, self.receive = anyio.create_memory_object_stream[tuple[str, Any]](64)
        self.questions: dict[str, _Question] = {}
        self.asked = 0
        self.finished_at: float | None = None
        self.scope = anyio.CancelScope()
        self.held: tuple[str, Any] | None = None
        self.retoken = retoken  # `Rounds`': a new token per round

    def new_token(self) -> str:
        """The `requestState` for the next round: new each round (SEP-2322 has a server's
        state change as the call goes on; an agent echoes the latest)."""
        self.token = self.retoken(self)
        return self.token

    async def ask(self, request: dict[str, Any], key: str | None = None) -> dict[str, Any]:
        """The upstream call's question (`key`: the server's own `inputRequests` key, if it
        gave one): out to the agent in the next round; its answer back. Raises
        QuestionTimedOut when no round answers it in time."""
        self.asked += 1
        key = key or f"q{self.asked}"
        if key in self.questions:
            key = f"q{self.asked}"
        question = self.questions[key] = _Question(request)
        await self.send.send(("question", key))
        try:
            with anyio.move_on_after(self.answer_timeout):
                await question.answered.wait()
        finally:
            self.questions.pop(key, None)
        if question.answer is None:
            raise QuestionTimedOut(f"the agent did not answer within {self.answer_timeout:g} s")
        return question.answer

    def answer(self, responses: dict[str, Any]) -> None:
        """The agent's `inputResponses` (wire shapes by key) to the questions waiting for them."""
        for key, response in responses.items():
            question = self.questions.get(key)
            if question is not None and isinstance(response, dict):
                question.answer = response
                question.answered.set()

    async def next(self) -> Any:
        """The call's result (a dict), or its next questions (those asked within `TOGETHER_S`
        of the first) as an `InputRequiredResult` (wire shape) with a new `requestState`.
        Re-raises what the call raised."""
        if self.held is not None:
            (kind, value), self.held = self.held, None
        else:
            kind, value = await self.receive.receive()
        if kind == "question":
            keys = [value]
            with anyio.move_on_after(TOGETHER_S):
                while True:
                    more = await self.receive.receive()
                    if more[0] != "question":
                        self.held = more  # the call's end, for the round after
                        break
                    keys.append(more[1])
            asked = {k: self.questions[k].request for k in keys if k in self.questions}
            if not asked:  # answered by a timeout meanwhile: wait for what comes next
                return await self.next()
            return {"resultType": "input_required", "inputRequests": asked, "requestState": self.new_token()}
        if kind == "error":
            raise value
        return value


class Rounds:
    """The running calls of one gateway session, by `requestState` token."""

    def __init__(self, spawn: Callable[[Callable[[], Awaitable[None]]], None], *, answer_timeout: float) -> None:
        self.spawn = spawn
        self.answer_timeout = answer_timeout
        self.calls: dict[str, Round] = {}

    def _tidy(self) -> None:
        now = time.monotonic()
        for token, r in list(self.calls.items()):
            if r.finished_at is not None and now - r.finished_at > KEEP_FINISHED_S:
                del self.calls[token]

    def start(self, run: Callable[[Round], Awaitable[Any]], method: str = "tools/call") -> Round:
        """Run `run(round)` (the upstream call, its questions going to `round.ask`) in a task
        of the gateway; returns the round to take its answers from. `method`: the agent's
        request, which a `requestState` must come back with."""
        self._tidy()
        token = secrets.token_urlsafe(18)
        r = self.calls[token] = Round(token, self.answer_timeout, method, self._retoken)

        async def go() -> None:
            outcome: tuple[str, Any] = ("error", MCPError(types.INTERNAL_ERROR, "the call was cancelled"))
            with r.scope:  # the agent cancelling its waiting round cancels the call
                try:
                    outcome = ("result", await run(r))
                except Exception as e:  # noqa: BLE001 - the agent's next round raises it
                    outcome = ("error", e)
            r.finished_at = time.monotonic()
            r.send.send_nowait(outcome)

        self.spawn(go)
        return r

    def _retoken(self, r: Round) -> str:
        """A new token for `r`; the one before stops naming it."""
        self.calls.pop(r.token, None)
        token = secrets.token_urlsafe(18)
        self.calls[token] = r
        return token

    def resume(self, token: str, responses: dict[str, Any] | None, method: str = "tools/call") -> Round:
        """The running call `token` names, with the agent's answers handed over. Raises
        MCPError(-32602) for a token this session does not know (or no longer), or one
        another method's request gave."""
        r = self.calls.get(token)
        if r is not None and r.method != method:
            raise MCPError(types.INVALID_PARAMS, f"requestState names a {r.method} in progress, not a {method}; "
                                                 f"send it back with the request that got it")
        if r is None:
            raise MCPError(types.INVALID_PARAMS, "requestState names no call this gateway session is running "
                                                 "(unknown, or finished more than 5 minutes ago)")
        r.answer(responses or {})
        return r

    def done(self, r: Round, answer: Any) -> Any:
        """Unless `answer` asks again (an `input_required` dict), it is the call's last:
        forget the call."""
        if not (isinstance(answer, dict) and answer.get("resultType") == "input_required"):
            self.calls.pop(r.token, None)
        return answer


__all__ = ["Round", "Rounds"]
