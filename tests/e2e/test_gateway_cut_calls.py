"""A call in flight through the gateway that monad itself cuts (`monad mcp reconnect NAME`,
`monad mcp remove NAME`, the supervisor stopping) answers the agent with what happened and
what to do, not a bare "Connection closed (-32000)" (docs/gateway.md "A call monad cuts").
Real supervisor, `monad mcp serve` over stdio (the direct lane) and `--http` (the SDK's
path), the SDK's client, tests/servers/lighttoolserver.py's `slow` tool."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import LIGHTTOOLSERVER, wait_state
from tests.e2e.test_gateway_approval_wait import _agent

pytestmark = pytest.mark.e2e

EXPECTED = {
    "reconnect": "the call to `ts__slow` was cut: server `ts` was reconnected (`monad mcp reconnect ts`) while it "
                 "ran; whether the server acted on it is unknown; call it again once it is back (`monad mcp wait ts`)",
    "remove": "the call to `ts__slow` was cut: server `ts` was removed (`monad mcp remove`, or its definition "
              "deleted) while it ran; whether the server acted on it is unknown; it is no longer defined (see "
              "`monad mcp status`)",
    "disable": "the call to `ts__slow` was cut: server `ts` was disabled while it ran; whether the server acted on "
               "it is unknown; `monad mcp enable ts` turns it on again",
    "stop": "the call to `ts__slow` was cut: the supervisor stopped (`monad daemon stop` or a signal) while it "
            "ran; whether the server acted on it is unknown; call it again once the supervisor is back "
            "(`monad daemon start`)",
}


@pytest.mark.parametrize(("what", "transport"), [
    ("reconnect", "stdio"), ("reconnect", "http"), ("remove", "stdio"), ("disable", "http"),
    ("stop", "stdio"), ("stop", "http")])
def test_a_call_monad_cuts_says_what_happened(supervisor: Any, monad_home: Path, tmp_path: Path,
                                             what: str, transport: str) -> None:
    (monad_home / "atoms" / "mcp").mkdir(parents=True, exist_ok=True)
    (monad_home / "atoms" / "mcp" / "ts.toml").write_text(
        f"command = {json.dumps(sys.executable)}\n"
        f"args = {json.dumps([LIGHTTOOLSERVER, '--marker-dir', str(tmp_path)])}\ntimeout = 60\n"
        'trust = {autoApproveTools = ["ts__slow"]}\n')
    wait_state(supervisor, "ts", "connected", timeout=90)
    argv = {"reconnect": ("mcp", "reconnect", "ts"), "remove": ("mcp", "remove", "ts"),
            "disable": ("mcp", "disable", "ts"), "stop": ("daemon", "stop")}[what]
    out: dict[str, Any] = {}

    async def main() -> None:
        async with _agent(monad_home, transport, "legacy", 60) as client, anyio.create_task_group() as tg:
            async def cut() -> None:
                with anyio.fail_after(30):
                    while not (tmp_path / "slow.started").exists():
                        await anyio.sleep(0.05)
                r = await anyio.to_thread.run_sync(lambda: supervisor(*argv))
                assert r.code == 0, r

            tg.start_soon(cut)
            started = time.monotonic()
            result = await client.call_tool("ts__slow", {"seconds": 60})
            out.update(seconds=time.monotonic() - started, error=result.is_error, text=result.content[0].text)

    anyio.run(main)
    assert out["error"] and out["text"] == EXPECTED[what], out
    assert out["seconds"] < 30, out
    if what != "stop":
        r = supervisor("journal", "--calls", "--json")
        rows = [c for c in r.json() if c.get("tool") == "slow"]
        assert [c["outcome"] for c in rows] == ["interrupted"], rows


READ_CUT = {
    "reconnect tool": "the call to `ask__sample` was cut: server `ask` was reconnected (`monad mcp reconnect ask`) "
                      "while it ran; whether the server acted on it is unknown; call it again once it is back "
                      "(`monad mcp wait ask`)",
    "reconnect read": "server `ask`: the request was cut: server `ask` was reconnected (`monad mcp reconnect ask`) "
                      "while it ran; call it again once it is back (`monad mcp wait ask`)",
    "stop read": "server `ask`: the request was cut: the supervisor stopped (`monad daemon stop` or a signal) while "
                 "it ran; call it again once the supervisor is back (`monad daemon start`)",
    "remove read": "server `ask`: the request was cut: server `ask` was removed (`monad mcp remove`, or its "
                   "definition deleted) while it ran; it is no longer defined (see `monad mcp status`)",
    "disable tool": "the call to `ask__sample` was cut: server `ask` was disabled while it ran; whether the server "
                    "acted on it is unknown; `monad mcp enable ask` turns it on again",
}


@pytest.mark.parametrize(("what", "request_", "transport"), [
    ("reconnect", "read", "stdio"), ("stop", "read", "stdio"), ("reconnect", "tool", "stdio"),
    ("remove", "read", "http"), ("disable", "tool", "http")])
def test_a_read_monad_cuts_says_what_happened(supervisor: Any, monad_home: Path, what: str, request_: str,
                                              transport: str) -> None:
    """The same for a resources/read in flight (askserver's `ask://name` waits for the agent's
    answer to its question, a 2026-07-28 `input_required` round between monad and the
    server), and a tools/call held the same way (its `sample` tool): `monad mcp reconnect` or
    `monad daemon stop` cuts it at once, not when the question runs out of time
    (`--approval-timeout`, 60 s), and the agent's error says so; the question is withdrawn
    from the agent. `monad mcp remove` and `disable` too, over `--http` (the SDK's path)."""
    from mcp.shared.exceptions import MCPError

    askserver = str(Path(__file__).resolve().parents[1] / "servers" / "askserver.py")
    (monad_home / "atoms" / "mcp").mkdir(parents=True, exist_ok=True)
    (monad_home / "atoms" / "mcp" / "ask.toml").write_text(
        f"command = {json.dumps(sys.executable)}\nargs = {json.dumps([askserver])}\ntimeout = 60\n"
        'trust = {autoApproveTools = ["ask__sample"]}\n')
    wait_state(supervisor, "ask", "connected", timeout=90)
    argv = {"reconnect": ("mcp", "reconnect", "ask"), "remove": ("mcp", "remove", "ask"),
            "disable": ("mcp", "disable", "ask"), "stop": ("daemon", "stop")}[what]
    asked, withdrawn = anyio.Event(), anyio.Event()
    out: dict[str, Any] = {}

    async def person(context: Any, params: Any) -> Any:
        asked.set()
        try:
            await anyio.sleep_forever()
        finally:
            withdrawn.set()

    async def main() -> None:
        async with _agent(monad_home, transport, "legacy", 60, elicitation_callback=person) as client, \
                anyio.create_task_group() as tg:
            async def cut() -> None:
                with anyio.fail_after(30):
                    await asked.wait()
                out["cut"] = time.monotonic()
                r = await anyio.to_thread.run_sync(lambda: supervisor(*argv))
                assert r.code == 0, r

            tg.start_soon(cut)
            if request_ == "tool":
                result = await client.call_tool("ask__sample", {})
                out.update(error=result.is_error, text=result.content[0].text)
            else:
                with pytest.raises(MCPError) as failed:
                    await client.read_resource("ask://name")
                out.update(error=failed.value.error.code, text=failed.value.error.message)
            out.update(seconds=time.monotonic() - out["cut"], withdrawn=withdrawn.is_set())

    anyio.run(main)
    assert out["text"] == READ_CUT[f"{what} {request_}"], out
    assert out["error"] == (True if request_ == "tool" else -32000), out
    assert out["seconds"] < 20 and out["withdrawn"], out
    if what != "stop":  # the question ended with its request: its journal event says so
        events = supervisor("journal", "--server", "ask", "--json").json()
        details = [e["detail"] if isinstance(e["detail"], dict) else json.loads(e["detail"])
                   for e in events if e.get("kind") == "question"]
        assert [d["outcome"] for d in details] == ["cancelled"], details
