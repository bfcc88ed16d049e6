"""`monad mcp call --detach`: the approval gate first, then the call runs as a task in the
supervisor; plain `monad mcp call` on a task-returning tool still prints the tool's result."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SERVERS, wait_for, wait_state, write_atom

pytestmark = pytest.mark.e2e


def test_detach_returns_a_task_id_and_the_result_arrives(monad_home: Path, supervisor: Any) -> None:
    args = json.dumps([str(SERVERS / "tasks_server.py")])
    write_atom(monad_home, "tk", f'command = {json.dumps(sys.executable)}\nargs = {args}\n')
    wait_state(supervisor, "tk", "connected")

    r = supervisor("mcp", "call", "tk__slow", "--arg", "seconds=1.5", "--arg", "label=bg", "--yes", "--detach")
    assert r.code == 0, r
    task_id = r.out.strip()
    assert task_id and "monad tasks show" in r.err
    shown = wait_for(lambda: (s := supervisor("tasks", "show", task_id, "--json").json())["state"] == "completed"
                     and s, timeout=60)
    assert shown["result"]["content"][0]["text"] == "slept 1.5 bg"
    calls = supervisor("journal", "--calls", "--json").json()
    assert any(c["outcome"] == "detached" and c["tool"] == "slow" for c in calls)

    # Without --detach the same tool's result is printed as a plain call's would be.
    r = supervisor("mcp", "call", "tk__slow", "--arg", "seconds=0.5", "--arg", "label=fg", "--yes")
    assert r.code == 0 and "slept 0.5 fg" in r.out, r

    # Not approved → nothing is started.
    r = supervisor("mcp", "call", "tk__slow", "--arg", "seconds=0.1", "--detach", "--approval-timeout", "0.5")
    assert r.code == 4, r
    assert len(supervisor("tasks", "--json").json()) == 2  # the detached one and the adopted plain call


def test_detach_of_a_tool_that_is_not_a_task_returns_once_the_call_is_sent(monad_home: Path,
                                                                            supervisor: Any) -> None:
    """A plain tool (tests/servers/lightserver.py `slow`: no task support, answered only at its
    end) detached: the command returns with the row to follow while the tool still runs,
    and the result arrives on the row. Without a connected server: refused at once."""
    from tests.conftest import light_cmd

    cmd = light_cmd("--name", "plain")
    write_atom(monad_home, "plain", f"command = {json.dumps(cmd[0])}\nargs = {json.dumps(cmd[1:])}\n")
    wait_state(supervisor, "plain", "connected")
    r = supervisor("mcp", "call", "plain__slow", "--arg", "seconds=8", "--yes", "--detach", "--json")
    assert r.code == 0, r
    row = r.json()
    assert row["state"] == "submitting", row  # sent, not waited out to `completed` (its 8 s)
    assert supervisor("tasks", "show", row["id"], "--json").json()["state"] != "completed"
    r = supervisor("tasks", "show", row["id"], "--wait", "--json", timeout=60)
    assert r.code == 0 and r.json()["state"] == "completed", r
    assert r.json()["result"]["content"][0]["text"] == "slept 8.0"

    write_atom(monad_home, "gone", 'command = "/nonexistent/server"\n')
    wait_for(lambda: supervisor("mcp", "status", "gone", "--json").json()["state"] in ("backoff", "failed"))
    r = supervisor("mcp", "call", "gone__slow", "--yes", "--detach")
    assert r.code != 0 and "gone" in r.err and len(r.err.strip().splitlines()) == 1, r
