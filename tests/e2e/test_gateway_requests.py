"""Every request an agent may send gets its own right answer through the gateway (issue 39,
item 4): the same id used at once by two HTTP sessions, `7` and `"7"` in flight together on
one connection (the direct lane and the SDK's path), a `ping` during a long call, a
cancelled call (the server hears the cancel, the agent gets no answer for it, the session
goes on), `logging/setLevel`, and requests before `initialize` and before `initialized`.
Real supervisor, `monad mcp serve` over stdio (raw JSON-RPC lines, as any agent writes them)
and `--http` (the SDK's client)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import LIGHTTOOLSERVER, wait_state
from tests.e2e.test_gateway_approval_wait import _agent

pytestmark = pytest.mark.e2e
INIT = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}


def _atom(home: Path, markers: Path) -> None:
    (home / "atoms" / "mcp").mkdir(parents=True, exist_ok=True)
    (home / "atoms" / "mcp" / "ts.toml").write_text(
        f"command = {json.dumps(sys.executable)}\n"
        f"args = {json.dumps([LIGHTTOOLSERVER, '--marker-dir', str(markers)])}\n"
        'timeout = 60\ntrust = {autoApproveTools = ["ts__slow", "ts__echo"]}\n')


class Raw:
    """An agent writing JSON-RPC lines to `monad mcp serve` and reading every line back."""

    def __init__(self, home: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "monad_cli", "mcp", "serve"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     env={**os.environ, "MONAD_HOME": str(home), "MONAD_NO_AUTOSTART": "1"})
        self.got: list[dict[str, Any]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.got.append(json.loads(line))

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        self.proc.stdin.flush()

    def answer(self, request_id: Any, timeout: float = 30) -> dict[str, Any]:
        """The one answer to `request_id` (same value and type)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            found = [m for m in self.got if "id" in m and "method" not in m and m["id"] == request_id
                     and type(m["id"]) is type(request_id)]
            if found:
                return found[0]
            time.sleep(0.02)
        raise AssertionError(f"no answer to {request_id!r}: {self.got}")

    def answers_to(self, request_id: Any) -> list[dict[str, Any]]:
        return [m for m in self.got if "method" not in m and m.get("id") == request_id
                and type(m.get("id")) is type(request_id)]

    def start(self) -> None:
        self.send({"id": 0, "method": "initialize", "params": INIT})
        self.answer(0)
        self.send({"method": "notifications/initialized"})
        self.send({"id": "list", "method": "tools/list"})  # after it, plain calls take the direct lane
        self.answer("list")

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def _text(answer: dict[str, Any]) -> str:
    return str(answer["result"]["content"][0]["text"])


@pytest.mark.parametrize("lane", ["direct", "sdk"])
def test_ids_ping_cancel_and_set_level_on_one_connection(supervisor: Any, monad_home: Path, tmp_path: Path,
                                                         lane: str) -> None:
    _atom(monad_home, tmp_path)
    wait_state(supervisor, "ts", "connected", timeout=90)
    # A progressToken takes a call off the direct lane, onto the SDK's path.
    meta: dict[str, Any] = {"_meta": {"progressToken": "p"}} if lane == "sdk" else {}
    agent = Raw(monad_home)
    try:
        agent.start()
        # 7 and "7" are two requests (JSON-RPC 2.0 §4): both in flight, each answered once as itself.
        agent.send({"id": 7, "method": "tools/call", "params": {"name": "ts__slow", "arguments": {"seconds": 2},
                                                                **meta}})
        agent.send({"id": "7", "method": "tools/call", "params": {"name": "ts__echo", "arguments": {"text": "s"},
                                                                  **meta}})
        sent = time.monotonic()
        agent.send({"id": 8, "method": "ping"})
        assert agent.answer(8)["result"] == {} and time.monotonic() - sent < 1.5  # not behind the long call
        assert _text(agent.answer("7")) == "s"
        assert _text(agent.answer(7)) == "slept 2"
        # A cancelled call: the server hears the cancel; the agent gets no answer for it.
        (tmp_path / "slow.started").unlink()  # id 7's
        agent.send({"id": 9, "method": "tools/call", "params": {"name": "ts__slow", "arguments": {"seconds": 30},
                                                                **meta}})
        deadline = time.monotonic() + 30
        while not (tmp_path / "slow.started").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        agent.send({"method": "notifications/cancelled", "params": {"requestId": 9, "reason": "the user stopped it"}})
        deadline = time.monotonic() + 30
        while not (tmp_path / "slow.cancelled").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (tmp_path / "slow.cancelled").exists()
        agent.send({"id": 10, "method": "logging/setLevel", "params": {"level": "error"}})
        assert agent.answer(10)["result"] == {}
        agent.send({"id": 11, "method": "tools/call", "params": {"name": "ts__echo", "arguments": {"text": "on"}}})
        assert _text(agent.answer(11)) == "on"  # the session went on
        time.sleep(0.5)
        assert agent.answers_to(9) == [], agent.got
        for request_id in (7, "7", 8, 10, 11):
            assert len(agent.answers_to(request_id)) == 1, (request_id, agent.got)
    finally:
        agent.close()


def test_requests_before_initialize_and_before_initialized(supervisor: Any, monad_home: Path,
                                                           tmp_path: Path) -> None:
    _atom(monad_home, tmp_path)
    wait_state(supervisor, "ts", "connected", timeout=90)
    early = Raw(monad_home)
    try:
        early.send({"id": 1, "method": "tools/call", "params": {"name": "ts__echo", "arguments": {"text": "x"}}})
        refused = early.answer(1)["error"]
        assert refused["code"] == -32602 and refused["message"].startswith(
            "tools/call before initialize: send `initialize` (and notifications/initialized) first"), refused
        early.send({"id": 2, "method": "ping"})  # a ping is always allowed (basic/lifecycle)
        assert early.answer(2)["result"] == {}
        # After `initialize`, before `initialized`: the spec has a client wait, and a server
        # may answer; monad answers (never a misleading refusal).
        early.send({"id": 3, "method": "initialize", "params": INIT})
        assert early.answer(3)["result"]["protocolVersion"] == "2025-11-25"
        early.send({"id": 4, "method": "tools/call", "params": {"name": "ts__echo", "arguments": {"text": "early"}}})
        assert _text(early.answer(4)) == "early"
    finally:
        early.close()


def test_two_http_sessions_with_the_same_ids_at_once(supervisor: Any, monad_home: Path, tmp_path: Path) -> None:
    """Two SDK clients of one `serve --http` listener number their requests alike: their calls
    in flight together under the same ids each get their own answer; a ping meanwhile too; a
    call one of them cancels is cancelled at the server, and nothing else is."""
    _atom(monad_home, tmp_path)
    wait_state(supervisor, "ts", "connected", timeout=90)
    got: dict[str, Any] = {}

    async def main() -> None:
        async with _agent(monad_home, "http", "legacy", 60) as a, _agent(monad_home, "http", "legacy", 60) as b:
            async def call(who: str, client: Any, seconds: float) -> None:
                got[who] = (await client.call_tool("ts__slow", {"seconds": seconds})).content[0].text

            async with anyio.create_task_group() as tg:
                tg.start_soon(call, "a", a, 1.5)
                tg.start_soon(call, "b", b, 1)
                await anyio.sleep(0.3)
                started = time.monotonic()
                with warnings.catch_warnings():  # ping is the handshake era's, which these clients speak
                    warnings.simplefilter("ignore")
                    await b.send_ping()
                got["ping"] = time.monotonic() - started

                # A call the agent gives up on (the SDK sends notifications/cancelled): the server
                # hears it; the other session's call with the same id goes on to its answer.
                (tmp_path / "slow.started").unlink(missing_ok=True)
                tg.start_soon(call, "b2", b, 2)
                with anyio.move_on_after(1):
                    await a.call_tool("ts__slow", {"seconds": 30})
                with anyio.fail_after(30):
                    while not (tmp_path / "slow.cancelled").exists():
                        await anyio.sleep(0.05)
                got["a2"] = (await a.call_tool("ts__echo", {"text": "after"})).content[0].text

    anyio.run(main)
    assert got["a"] == "slept 1.5" and got["b"] == "slept 1" and got["b2"] == "slept 2", got
    assert got["ping"] < 1.0 and got["a2"] == "after", got


def test_a_request_whose_id_is_in_flight_is_refused_and_the_first_still_answered(supervisor: Any, monad_home: Path,
                                                                              tmp_path: Path) -> None:
    """MCP basic ("The request ID MUST NOT have been previously used by the requestor within
    the same session"): a second request under an id still in flight gets -32600 under that
    id at once, whichever path (the direct lane, the SDK's) holds the first and takes the
    second, and is never run; the first gets its one answer. An id answered may be used again."""
    _atom(monad_home, tmp_path)
    wait_state(supervisor, "ts", "connected", timeout=90)
    agent = Raw(monad_home)

    def sdk(token: str) -> dict[str, Any]:  # a progressToken takes a call onto the SDK's path
        return {"_meta": {"progressToken": token}}

    # id: (the first request's path, the second's)
    cases: dict[Any, tuple[dict[str, Any], dict[str, Any]]] = {
        7: ({}, {}), 17: ({}, sdk("b17")), "27": (sdk("a27"), {}), 37: (sdk("a37"), sdk("b37"))}
    try:
        agent.start()
        for request_id, (first, _) in cases.items():
            agent.send({"id": request_id, "method": "tools/call",
                        "params": {"name": "ts__slow", "arguments": {"seconds": 8}, **first}})
        for request_id, (_, second) in cases.items():
            agent.send({"id": request_id, "method": "tools/call",
                        "params": {"name": "ts__echo", "arguments": {"text": "twice"}, **second}})
        agent.send({"id": 7, "method": "ping"})  # any method: the id is what is refused
        agent.send({"id": "7", "method": "ping"})  # another id (JSON-RPC 2.0 §4): answered
        assert agent.answer("7")["result"] == {}
        for request_id in cases:
            refused = agent.answer(request_id)
            assert refused["error"] == {
                "code": -32600, "message": f"Invalid Request: id {json.dumps(request_id)} is already in flight "
                                           "on this session; send this request under a new id"}, \
                (request_id, refused)
        # At once, not behind the first calls: none of them has answered yet.
        assert not [a for a in agent.got if "slept" in json.dumps(a)], agent.got
        for request_id in cases:
            deadline = time.monotonic() + 30
            while len(agent.answers_to(request_id)) < (3 if request_id == 7 else 2) and time.monotonic() < deadline:
                time.sleep(0.05)
        time.sleep(0.3)  # nothing more comes
        for request_id in cases:
            *refusals, last = agent.answers_to(request_id)
            assert [r["error"]["code"] for r in refusals] == [-32600] * (2 if request_id == 7 else 1), agent.got
            assert _text(last) == "slept 8", (request_id, agent.got)
        # Answered, the id is free again.
        agent.send({"id": 7, "method": "tools/call", "params": {"name": "ts__echo", "arguments": {"text": "again"}}})
        deadline = time.monotonic() + 30
        while len(agent.answers_to(7)) < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _text(agent.answers_to(7)[-1]) == "again"
    finally:
        agent.close()
    calls = supervisor("journal", "--calls", "--json").json()
    assert [c["tool"] for c in calls].count("echo") == 1, calls  # only "again": no refused request ran


def test_over_http_a_request_whose_id_its_session_has_in_flight_is_refused(supervisor: Any, monad_home: Path,
                                                                          tmp_path: Path) -> None:
    """The same rule on `monad mcp serve --http` (gateway/http.py `OneRequestPerId`): the
    second POST under an id its session still has in flight is answered 400 with -32600 under
    that id and never run; the first gets its answer; another session may use the id."""
    import httpx2

    from tests.conftest import free_port, gateway_up

    _atom(monad_home, tmp_path)
    wait_state(supervisor, "ts", "connected", timeout=90)
    port = free_port()
    serve = subprocess.Popen([sys.executable, "-m", "monad_cli", "mcp", "serve", "--http", "--port", str(port)],
                             stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url, auth = gateway_up(monad_home, port)
        base = {**auth, "Accept": "application/json, text/event-stream", "Content-Type": "application/json"}

        def session() -> dict[str, str]:
            r = httpx2.post(url, headers=base, timeout=30,
                            json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": INIT})
            headers = {**base, "Mcp-Session-Id": r.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
            httpx2.post(url, headers=headers, timeout=30,
                        json={"jsonrpc": "2.0", "method": "notifications/initialized"})
            return headers

        def call(headers: dict[str, str], tool: str, arguments: dict[str, Any]) -> httpx2.Response:
            return httpx2.post(url, headers=headers, timeout=60, json={
                "jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": tool, "arguments": arguments}})

        mine, other = session(), session()
        first: list[httpx2.Response] = []
        slow = threading.Thread(target=lambda: first.append(call(mine, "ts__slow", {"seconds": 6})))
        slow.start()
        deadline = time.monotonic() + 30
        while not (tmp_path / "slow.started").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        refused = call(mine, "ts__echo", {"text": "twice"})
        assert refused.status_code == 400, refused.text
        assert refused.json() == {"jsonrpc": "2.0", "id": 7, "error": {
            "code": -32600, "message": "Invalid Request: id 7 is already in flight on this session; send this "
                                       "request under a new id"}}
        assert not first, "the refusal waited for the first call"
        assert "elsewhere" in call(other, "ts__echo", {"text": "elsewhere"}).text  # another session's 7
        slow.join(60)
        assert first and "slept 6" in first[0].text, first
        assert "again" in call(mine, "ts__echo", {"text": "again"}).text  # answered: the id is free again
    finally:
        serve.terminate()
        serve.wait(30)
    calls = supervisor("journal", "--calls", "--json").json()
    assert sorted(c["tool"] for c in calls if c["tool"] == "echo") == ["echo", "echo"], calls  # not "twice"
