"""A stdio server whose process ends under a call in flight (it exits, it is killed) fails
that call with what happened to it, in the words its status row gives (its exit status or
signal, its last stderr lines, scrubbed) and where to look, not the SDK's bare "Connection
closed" (docs/tools.md "Exit codes", docs/gateway.md "A call monad cuts"). Real supervisor,
tests/servers/lighttoolserver.py's `exit` (`--crash`) and `slow` tools; `monad mcp call`, and the
SDK's client over `monad mcp serve` (stdio: the direct lane; `--http`: the SDK's path)."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import LIGHTTOOLSERVER, wait_state
from tests.e2e.test_gateway_approval_wait import _agent

pytestmark = pytest.mark.e2e
SECRET = "SENTINEL-crash-5e2a"
TODO = "whether the server acted on it is unknown; `monad mcp status ts` says whether it is back (MCP error -32000)"


def _atom(home: Path, tmp_path: Path) -> None:
    (home / "atoms" / "mcp").mkdir(parents=True, exist_ok=True)
    (home / "atoms" / "mcp" / "ts.toml").write_text(
        f"command = {json.dumps(sys.executable)}\n"
        f"args = {json.dumps([LIGHTTOOLSERVER, '--crash', '--marker-dir', str(tmp_path)])}\ntimeout = 60\n"
        f'env = {{API_KEY = "{SECRET}"}}\n'
        'trust = {autoApproveTools = ["ts__slow", "ts__exit"]}\n')


def test_a_server_that_exits_under_a_call_fails_it_with_its_exit_and_stderr(supervisor: Any, monad_home: Path,
                                                                          tmp_path: Path) -> None:
    _atom(monad_home, tmp_path)
    wait_state(supervisor, "ts", "connected", timeout=90)
    r = supervisor("mcp", "call", "ts__exit", "--arg", "status=3", "--arg", f"log=cannot open the index {SECRET}")
    first = r.err.splitlines()[0]
    assert r.code == 1 and first == (
        "error: server `ts` failed `exit`: its session ended during the request: server process exited with "
        f"status 3; stderr: cannot open the index ***; {TODO}"), r
    assert SECRET not in r.err, r
    row = supervisor("journal", "--calls", "--json").json()[-1]
    assert row["outcome"] == "error" and row["error"].startswith(
        "its session ended during the request: server process exited with status 3; stderr: cannot open the "
        "index ***;"), row
    # Its status said the same of the session's end (journaled: it moves on at once), and it is back.
    wait_state(supervisor, "ts", "connected", timeout=60)
    reasons = [e.get("reason") or "" for e in supervisor("journal", "--server", "ts", "--json").json()]
    assert any(r.startswith("server process exited with status 3; stderr: cannot open the index ***; retrying")
               for r in reasons), reasons


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_server_killed_under_a_gateway_call_fails_it_with_the_signal(supervisor: Any, monad_home: Path,
                                                                      tmp_path: Path, transport: str) -> None:
    _atom(monad_home, tmp_path)
    pid = wait_state(supervisor, "ts", "connected", timeout=90)["pid"]
    out: dict[str, Any] = {}

    async def main() -> None:
        async with _agent(monad_home, transport, "legacy", 60) as client, anyio.create_task_group() as tg:
            async def kill() -> None:
                with anyio.fail_after(30):
                    while not (tmp_path / "slow.started").exists():
                        await anyio.sleep(0.05)
                os.kill(pid, signal.SIGKILL)

            tg.start_soon(kill)
            with anyio.fail_after(30):
                result = await client.call_tool("ts__slow", {"seconds": 60})
            out.update(error=result.is_error, text=result.content[0].text)

    anyio.run(main)
    assert out["error"] and out["text"] == (
        "server `ts` failed `slow`: its session ended during the request: server process was killed by signal 9 "
        f"(SIGKILL); {TODO}"), out


def test_a_server_killed_under_a_read_fails_it_with_the_signal(supervisor: Any, monad_home: Path) -> None:
    """A `resources/read` held by the server's question to the agent (askserver's `ask://name`),
    the server killed meanwhile: -32000 with the same words, over the stdio relay."""
    from mcp.shared.exceptions import MCPError

    askserver = str(Path(__file__).resolve().parents[1] / "servers" / "askserver.py")
    (monad_home / "atoms" / "mcp").mkdir(parents=True, exist_ok=True)
    (monad_home / "atoms" / "mcp" / "ask.toml").write_text(
        f"command = {json.dumps(sys.executable)}\nargs = {json.dumps([askserver])}\ntimeout = 60\n")
    pid = wait_state(supervisor, "ask", "connected", timeout=90)["pid"]
    asked = anyio.Event()
    out: dict[str, Any] = {}

    async def person(context: Any, params: Any) -> Any:
        asked.set()
        await anyio.sleep_forever()

    async def main() -> None:
        async with _agent(monad_home, "stdio", "legacy", 60, elicitation_callback=person) as client, \
                anyio.create_task_group() as tg:
            async def kill() -> None:
                with anyio.fail_after(30):
                    await asked.wait()
                os.kill(pid, signal.SIGKILL)

            tg.start_soon(kill)
            with anyio.fail_after(30), pytest.raises(MCPError) as failed:
                await client.read_resource("ask://name")
            out.update(code=failed.value.error.code, text=failed.value.error.message)

    anyio.run(main)
    # askserver notes each request on stderr: the last lines are quoted after the signal.
    assert out["code"] == -32000 and out["text"].startswith(
        "server `ask`: its session ended during the request: server process was killed by signal 9 (SIGKILL); "
        "stderr: askserver: ") and out["text"].endswith(
        "; whether the server acted on it is unknown; `monad mcp status ask` says whether it is back"), out


def test_a_remote_server_killed_under_a_call_fails_it_as_a_lost_connection(supervisor: Any, monad_home: Path,
                                                                          tmp_path: Path) -> None:
    """A streamable HTTP server (tests/servers/testserver.py --http) killed during `slow`: the
    CLI and an agent through the gateway are told the connection to the server was lost, with
    the structure of the stdio case (what happened; whether the server acted is unknown; where
    to look), not the HTTP client's or the SDK's bare text."""
    import subprocess

    from tests.conftest import end_test_server, free_port, server_cmd, wait_for

    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    (monad_home / "atoms" / "mcp").mkdir(parents=True, exist_ok=True)
    (monad_home / "atoms" / "mcp" / "h.toml").write_text(
        f'url = "{url}"\ntimeout = 60\ntrust = {{autoApproveTools = ["h__slow"]}}\n')
    lost = (f"server `h` failed `slow`: its connection to the server was lost during the request (`{url}`, before "
            "the answer); whether the server acted on it is unknown; `monad mcp status h` says whether it is back")

    def start() -> subprocess.Popen[bytes]:
        (tmp_path / "slow.started").unlink(missing_ok=True)
        proc = subprocess.Popen(server_cmd("--http", str(port), "--marker-dir", str(tmp_path)),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        supervisor("mcp", "reconnect", "h")
        wait_state(supervisor, "h", "connected", timeout=90)
        return proc

    def kill_when_started(proc: subprocess.Popen[bytes]) -> None:
        wait_for(lambda: (tmp_path / "slow.started").exists(), timeout=30)
        end_test_server(proc)  # SIGKILL: no goodbye on the wire

    # The CLI.
    server = start()
    try:
        call = subprocess.Popen([sys.executable, "-m", "monad_cli", "mcp", "call", "h__slow", "--arg", "seconds=60"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, "MONAD_HOME": str(monad_home)})
        kill_when_started(server)
        _, err = call.communicate(timeout=60)
    finally:
        end_test_server(server)
    assert call.returncode == 1 and err.splitlines()[0] == f"error: {lost} (MCP error -32000)", err
    row = supervisor("journal", "--calls", "--json").json()[-1]
    assert row["outcome"] == "error" and row["error"].startswith(
        f"its connection to the server was lost during the request (`{url}`, before the answer);"), row

    # An agent through the gateway (stdio relay: the direct lane).
    server = start()
    out: dict[str, Any] = {}

    async def main() -> None:
        async with _agent(monad_home, "stdio", "legacy", 60) as client, anyio.create_task_group() as tg:
            tg.start_soon(anyio.to_thread.run_sync, kill_when_started, server)
            with anyio.fail_after(60):
                result = await client.call_tool("h__slow", {"seconds": 60})
            out.update(error=result.is_error, text=result.content[0].text)

    try:
        anyio.run(main)
    finally:
        end_test_server(server)
    assert out == {"error": True, "text": f"{lost} (MCP error -32000)"}, out  # as the stdio case words it
