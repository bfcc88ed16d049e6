"""The gateway inside the supervisor, through the real `monad mcp serve` relay and the real
HTTP listener: progress passed through in both eras, JSON-RPC errors for what is not
JSON-RPC, the same `tools.listChanged` truth on stdio and HTTP, a client that goes away
cancelling its calls, and `monad mcp call` showing progress."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import LIGHTTOOLSERVER, free_port, gateway_up, wait_for, wait_state

pytestmark = pytest.mark.e2e


def _atom(home: Path, name: str, *flags: str, auto: tuple[str, ...] = ()) -> None:
    path = home / "atoms" / "mcp" / f"{name}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join([f"command = {json.dumps(sys.executable)}",
                               f"args = {json.dumps([LIGHTTOOLSERVER, *flags])}", "timeout = 60",
                               f"trust = {{autoApproveTools = {json.dumps([f'{name}__{t}' for t in auto])}}}"])
                    + "\n")


def _serve(home: Path, *flags: str) -> Any:
    from mcp import StdioServerParameters

    return StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve", *flags],
                                 env={"MONAD_HOME": str(home), "MONAD_NO_AUTOSTART": "1"})


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_progress_passes_through_the_gateway(supervisor: Any, monad_home: Path, mode: str) -> None:
    from mcp import Client

    _atom(monad_home, "p", "--progress", auto=("steps",))
    wait_state(supervisor, "p", "connected", timeout=90)
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async def main() -> None:
        async with Client(_serve(monad_home), mode=mode) as client:
            assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
            result = await client.call_tool("p__steps", {"n": 3}, progress_callback=on_progress)
            assert result.content[0].text == "did 3 steps" and not result.is_error
            # Without a progressToken nothing is asked of the server, and the call still answers.
            quiet = await client.call_tool("p__steps", {"n": 2})
            assert quiet.content[0].text == "did 2 steps"

    anyio.run(main)
    assert seen == [(1.0, 3.0, "step 1"), (2.0, 3.0, "step 2"), (3.0, 3.0, "step 3")]


def test_monad_mcp_call_shows_progress_on_stderr(supervisor: Any, monad_home: Path) -> None:
    _atom(monad_home, "p", "--progress")
    wait_state(supervisor, "p", "connected", timeout=90)
    r = supervisor("mcp", "call", "p__steps", "--arg", "n=3", "--yes")
    assert r.code == 0 and r.out == "did 3 steps\n", r
    assert [line for line in r.err.splitlines() if line.startswith("p__steps:")] == [
        f"p__steps: step {i} ({i}/3; Ctrl-C cancels it)" for i in (1, 2, 3)], r
    # --json: the same result object; the progress still goes to stderr only.
    r = supervisor("mcp", "call", "p__steps", "--arg", "n=1", "--yes", "--json")
    assert r.code == 0 and r.json()["content"][0]["text"] == "did 1 steps" and "step 1 (1/1" in r.err, r
    # An error kind still comes back as itself through the progress stream.
    r = supervisor("mcp", "call", "p__nope", "--yes")
    assert r.code == 1 and r.err == "error: no tool `p__nope` is exposed (see `monad mcp tools`)\n", r
    # A new-user trial typed one `_` for the separator: the closest exposed name is offered.
    r = supervisor("mcp", "call", "p_steps", "--yes")
    assert r.code == 1 and r.err == ("error: no tool `p_steps` is exposed (did you mean `p__steps`?) "
                                     "(see `monad mcp tools`)\n"), r
    r = supervisor("mcp", "status", "P")  # and a server name in the wrong case is said to be one
    assert r.code == 1 and r.err == ("error: server `P` is not defined (names are case-sensitive: `p` is) "
                                     "(see `monad mcp list`)\n"), r
    # A caller that leaves after its answer cancelled nothing (the log said so for every call).
    assert "disconnected: cancelling" not in (monad_home / "logs" / "daemon.log").read_text()


def test_what_is_not_json_rpc_is_answered_and_the_session_goes_on(supervisor: Any, monad_home: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "monad_cli", "mcp", "serve"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "MONAD_HOME": str(monad_home), "MONAD_NO_AUTOSTART": "1"})
    assert proc.stdin is not None and proc.stdout is not None
    try:
        deep = b"[" * 100_000 + b"]" * 100_000  # past Python's parser: a RecursionError, not JSON it reads
        huge = b'{"jsonrpc": "2.0", "id": 11, "method": "ping", "params": {"pad": "' + b"x" * (17 << 20) + b'"}}'
        for line in (b"this is not json\n", b"[1, 2]\n", b'{"id": 7, "method": 3}\n',
                     b'{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": ' + deep + b"}\n",
                     b'{"id": 10, "method": "x", "params": {"a": "\\ud800"}}\n', huge + b"\n",
                     b'{"jsonrpc": "2.0", "id": 8, "method": "ping"}\n'):
            proc.stdin.write(line)
        proc.stdin.flush()
        answers = [json.loads(proc.stdout.readline()) for _ in range(7)]
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    assert answers[0] == {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
    assert answers[1]["id"] is None and answers[1]["error"]["code"] == -32600
    assert answers[2]["id"] == 7 and answers[2]["error"]["code"] == -32600  # JSON-RPC 2.0 §5: the id, if any
    # Found by a new-user trial: these three were a RecursionError in the relay, and a request
    # over the size limit was answered under no id, so the agent waited for its answer forever.
    assert answers[3]["id"] == 9
    assert answers[3]["error"] == {"code": -32700, "message": "Parse error: nested too deeply"}
    assert answers[4]["id"] == 10 and answers[4]["error"] == {
        "code": -32600, "message": "Invalid Request: `params.a` holds text that is not Unicode (a lone surrogate: "
                                   "bytes that are not UTF-8?)"}
    assert answers[5]["id"] == 11 and answers[5]["error"]["code"] == -32600
    assert "a message over" in answers[5]["error"]["message"]
    assert answers[6] == {"jsonrpc": "2.0", "id": 8, "result": {}}  # the session went on
    assert proc.returncode == 0


def test_stdio_and_http_advertise_the_same_list_changed(supervisor: Any, monad_home: Path) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    _atom(monad_home, "ts", auto=("echo",))
    wait_state(supervisor, "ts", "connected", timeout=90)
    port = free_port()
    http = subprocess.Popen([sys.executable, "-m", "monad_cli", "mcp", "serve", "--http", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen: dict[tuple[str, str], Any] = {}
    try:
        url, headers = gateway_up(monad_home, port)

        async def main() -> None:
            for mode in ("auto", "legacy"):
                async with Client(_serve(monad_home), mode=mode) as client:
                    seen[("stdio", mode)] = client.server_capabilities.tools
                async with (httpx2.AsyncClient(headers=headers) as h,
                            Client(streamable_http_client(url, http_client=h), mode=mode) as client):
                    seen[("http", mode)] = client.server_capabilities.tools
                    assert (await client.call_tool("ts__echo", {"text": mode})).content[0].text == mode

        anyio.run(main)
    finally:
        http.send_signal(signal.SIGINT)
        try:
            http.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            http.kill()
    assert {key: caps.list_changed for key, caps in seen.items()} == {
        ("stdio", "auto"): True, ("http", "auto"): True, ("stdio", "legacy"): True, ("http", "legacy"): True}
    assert http.returncode == 130  # Ctrl-C ended the command

    def closed() -> bool:  # the supervisor closes the listener once that relay's connection ends
        try:
            httpx2.get(f"http://127.0.0.1:{port}/mcp", timeout=2)
        except httpx2.HTTPError:
            return True
        return False

    wait_for(closed, timeout=30)


def test_a_gateway_client_that_goes_away_cancels_its_call(supervisor: Any, monad_home: Path,
                                                          tmp_path: Path) -> None:
    _atom(monad_home, "ts", "--marker-dir", str(tmp_path), auto=("slow",))
    wait_state(supervisor, "ts", "connected", timeout=90)
    proc = subprocess.Popen([sys.executable, "-m", "monad_cli", "mcp", "serve"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "MONAD_HOME": str(monad_home), "MONAD_NO_AUTOSTART": "1"})
    assert proc.stdin is not None
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"}}
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "ts__slow", "arguments": {"seconds": 300}, "_meta": meta}}
    proc.stdin.write(json.dumps(call).encode() + b"\n")
    proc.stdin.flush()
    wait_for(lambda: (tmp_path / "slow.started").exists(), timeout=60)
    proc.kill()  # the relay dies: its connection to the supervisor closes
    proc.wait(timeout=10)
    wait_for(lambda: (tmp_path / "slow.cancelled").exists(), timeout=60)  # the server was told

    def journaled() -> bool:
        r = supervisor("journal", "--calls", "--json")
        return any(c["tool"] == "slow" and c["outcome"] == "cancelled" and c["via"] == "gateway" for c in r.json())

    wait_for(journaled, timeout=30)


def test_a_relay_whose_stdin_is_a_file_copies_bytes(supervisor: Any, monad_home: Path, tmp_path: Path) -> None:
    # A file cannot be polled by the supervisor: the relay copies bytes itself (`stdio: bytes`).
    given = tmp_path / "in.jsonl"
    given.write_text("not json\n")
    with given.open("rb") as stdin:
        r = subprocess.run([sys.executable, "-m", "monad_cli", "mcp", "serve"], stdin=stdin, capture_output=True,
                           env={**os.environ, "MONAD_HOME": str(monad_home), "MONAD_NO_AUTOSTART": "1"},
                           timeout=60)
    assert r.returncode == 0, r
    assert json.loads(r.stdout) == {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}
