"""2025-11-25 tasks end to end: the real supervisor and CLI against the real
`@modelcontextprotocol/server-everything` from npm, over stdio and streamable HTTP."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import everything_bin, free_port, task_of, wait_for, wait_state

pytestmark = pytest.mark.e2e
TOOL = "everything__simulate-research-query"


def write_atom(home: Path, name: str, body: str) -> None:
    d = home / "atoms" / "mcp"
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{name}.toml").write_text(f"schema = 1\n{body}")


def test_detach_input_and_a_waiting_call_through_the_cli(monad_home: Path, supervisor: Any) -> None:
    write_atom(monad_home, "everything", f'transport = "stdio"\ncommand = {json.dumps(everything_bin())}\n'
                                         f'args = ["stdio"]\n')
    wait_state(supervisor, "everything", "connected", timeout=60)

    # --detach: the id on stdout, then `tasks show --wait` follows it to its end.
    r = supervisor("mcp", "call", TOOL, "--arg", "topic=tides", "--detach", "--yes")
    assert r.code == 0, r
    task_id = r.out.strip()
    assert "runs as task" in r.err
    r = supervisor("tasks", "show", task_id, "--wait", timeout=90)
    assert r.code == 0 and "# Research Report: tides" in r.out and "completed" in r.out, r
    assert f"task {task_id[:12]} working: Gathering sources..." in r.err  # progress while it runs

    # Without --detach the caller waits: a `required` task tool is not refused.
    r = supervisor("mcp", "call", TOOL, "--arg", "topic=reefs", "--yes", timeout=90)
    assert r.code == 0 and "# Research Report: reefs" in r.out, r

    # Its elicitation/create becomes the task's input request, shown and answered by the CLI.
    r = supervisor("mcp", "call", TOOL, "--arg", "topic=python", "--arg", "ambiguous=true", "--detach", "--yes")
    asked_id = r.out.strip()
    r = supervisor("tasks", "show", asked_id, "--wait", timeout=90)  # stdin is no TTY: it stops at the question
    assert r.code == 0 and "input_required" in r.out, r
    assert "needs input: The research query \"python\" could have multiple interpretations" in r.out
    assert f"(interpretation): run `monad tasks input {asked_id[:12]}`" in r.out
    r = supervisor("tasks", "input", asked_id, "--set", "interpretation=lizard")
    assert r.code != 0 and "must be one of programming, snake, comedy" in r.err and "Traceback" not in r.err, r
    r = supervisor("tasks", "input", asked_id, "--set", "interpretation=snake")
    assert r.code == 0, r
    r = supervisor("tasks", "show", asked_id, "--wait", timeout=90)
    assert r.code == 0 and "# Research Report: python (snake)" in r.out, r

    # Cancel: tasks/cancel answers the cancelled task.
    r = supervisor("mcp", "call", TOOL, "--arg", "topic=never", "--detach", "--yes")
    gone_id = r.out.strip()
    r = supervisor("tasks", "cancel", gone_id)
    assert r.code == 0 and "now cancelled" in r.err, r
    rows = {t["id"]: t for t in supervisor("tasks", "--json").json()}
    assert rows[gone_id]["state"] == "cancelled" and rows[task_id]["state"] == "completed"
    journal = supervisor("journal", "--server", "everything", "--json").json()
    assert any("(2025-11-25 tasks)" in (e["reason"] or "") for e in journal)


def _start_http_everything() -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    # server-everything listens on $PORT (all interfaces; it has no host option).
    proc = subprocess.Popen([everything_bin(), "streamableHttp"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env={**os.environ, "PORT": str(port)})

    def up() -> bool:
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    wait_for(up, timeout=30)
    return proc, f"http://127.0.0.1:{port}/mcp"


def test_over_http_and_after_a_killed_supervisor(monad_home: Path, supervisor: Any) -> None:
    everything_bin()
    proc, url = _start_http_everything()
    try:
        write_atom(monad_home, "everything", f'transport = "http"\nurl = "{url}"\n')
        wait_state(supervisor, "everything", "connected", timeout=60)
        r = supervisor("mcp", "call", TOOL, "--arg", "topic=currents", "--detach", "--yes")
        assert r.code == 0, r
        r = supervisor("tasks", "show", r.out.strip(), "--wait", timeout=90)
        assert r.code == 0 and "# Research Report: currents" in r.out, r

        r = supervisor("mcp", "call", TOOL, "--arg", "topic=eddies", "--detach", "--yes")
        task_id = r.out.strip()
        # --detach returns once the call is sent; the server's task handle follows at once.
        wait_for(lambda: task_of(supervisor, task_id)["state"] == "working")
        pid = int((monad_home / "run" / "monad.pid").read_text())
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: subprocess.run(["kill", "-0", str(pid)], capture_output=True).returncode != 0, timeout=10)
        assert supervisor("daemon", "start").code == 0
        # The row is resumed on the new session; server-everything keeps its tasks per session
        # (a new server per Mcp-Session-Id), so it no longer knows this one, and the row says so
        # instead of waiting forever.
        r = supervisor("tasks", "show", task_id, "--wait", timeout=90)
        shown = task_of(supervisor, task_id)
        assert r.code == 1 and shown["state"] == "failed" and shown["recoveries"] >= 1, shown
        assert shown["statusMessage"].startswith(f"the server no longer knows task {shown['taskId']}"), shown
        assert shown["error"]["code"] == -32602
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_an_agent_that_calls_a_required_task_tool_plainly_gets_its_result(monad_home: Path, supervisor: Any,
                                                                          mode: str) -> None:
    """An agent through `monad mcp serve` calls a tool whose `execution.taskSupport` is
    `required` with a plain `tools/call` (no task): the supervisor runs it as a task on the
    server, follows it, and answers the agent's call with the task's result; the row is
    taken (delivered), not left for `monad tasks` to show as undelivered."""
    from mcp import Client, StdioServerParameters

    write_atom(monad_home, "everything", f'transport = "stdio"\ncommand = {json.dumps(everything_bin())}\n'
                                         f'args = ["stdio"]\n'
                                         f'trust = {{autoApproveTools = ["{TOOL}"]}}\n')
    wait_state(supervisor, "everything", "connected", timeout=60)
    serve = StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve"],
                                  env={"MONAD_HOME": str(monad_home), "MONAD_NO_AUTOSTART": "1"})

    async def main() -> Any:
        async with Client(serve, mode=mode) as client:
            return await client.call_tool(TOOL, {"topic": "kelp"})

    result = anyio.run(main)
    assert not result.is_error, result
    assert "# Research Report: kelp" in result.content[0].text
    rows = [t for t in supervisor("tasks", "--json").json() if t["tool"] == "simulate-research-query"]
    assert [(t["state"], t["deliveryPending"], t["deliveries"]) for t in rows] == [("completed", False, 1)], rows
    assert rows[0]["correlation"]["via"] == "gateway"
