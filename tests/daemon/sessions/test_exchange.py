"""The requests-in-flight bookkeeping between a transport and the SDK session
(monad_cli/daemon/sessions/exchange.py), in-process; transports use it in test_transports.py and test_remote.py."""

from __future__ import annotations

import anyio
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCError, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse

from monad_cli.daemon.sessions.exchange import Exchange, discover_budget


def _request(rid: int, method: str) -> SessionMessage:
    return SessionMessage(JSONRPCRequest(jsonrpc="2.0", id=rid, method=method))


def test_answers_cancels_and_local_failures() -> None:
    delivered: list[SessionMessage] = []

    async def deliver(message: SessionMessage) -> None:
        delivered.append(message)

    async def main() -> None:
        ex = Exchange(deliver, name="x")
        ex.sent(_request(1, "tools/call"))
        ex.sent(_request(2, "subscriptions/listen"))
        ex.sent(_request(3, "tools/list"))
        assert [o.method for o in ex.unmatched_candidates()] == ["tools/call", "tools/list"]  # not the stream
        assert ex.received(JSONRPCResponse(jsonrpc="2.0", id="3", result={}))  # "3" answers 3
        ex.sent(SessionMessage(JSONRPCNotification(jsonrpc="2.0", method="notifications/cancelled",
                                                   params={"requestId": 1})))
        assert ex.unmatched_candidates() == []  # a cancelled request keeps nobody busy
        ex.sent(_request(4, "tools/call"))
        target = ex.lookup(4)
        assert target is not None
        await ex.fail(target, "the response was too big")
        error = delivered[-1].message
        assert isinstance(error, JSONRPCError) and error.id == 4 and error.error.message == "the response was too big"
        assert not ex.received(JSONRPCResponse(jsonrpc="2.0", id=4, result={}))  # the late real answer: dropped

    anyio.run(main)


def test_an_unanswered_discover_is_failed_after_its_budget() -> None:
    delivered: list[SessionMessage] = []

    async def deliver(message: SessionMessage) -> None:
        delivered.append(message)

    async def main() -> None:
        ex = Exchange(deliver, discover_budget=0.2)
        async with anyio.create_task_group() as tg:
            ex.start(tg)
            ex.sent(_request(1, "server/discover"))
            await anyio.sleep(0.5)
        error = delivered[0].message
        assert isinstance(error, JSONRPCError) and error.error.code == -32001
        assert "server/discover was not answered within 0.2 s" in error.error.message

    anyio.run(main)
    assert discover_budget(10) == 5 and discover_budget(60) == 10  # half the connect timeout, at most the SDK's
