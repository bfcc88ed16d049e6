"""Tasks of a server removed from the config end `cancelled` (reason: server removed), with
`tasks/cancel` while the server is still reachable; the journal's rows for the server end
with its removal. Real supervisor, SEP-2663 test server."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SERVERS, wait_for, wait_state

pytestmark = pytest.mark.e2e


def atom(home: Path, name: str, *flags: str) -> Path:
    d = home / "atoms" / "mcp"
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{name}.toml"
    args = json.dumps([str(SERVERS / "tasks_server.py"), "--poll-ms", "200", *flags])
    path.write_text(f'schema = 1\ntransport = "stdio"\ncommand = {json.dumps(sys.executable)}\nargs = {args}\n')
    return path


def start(monad: Any, server: str, label: str) -> str:
    r = monad("mcp", "call", f"{server}__slow", "--arg", "seconds=120", "--arg", f"label={label}",
              "--detach", "--yes")
    assert r.code == 0, r
    return r.out.strip()


def tasks(monad: Any) -> dict[str, dict[str, Any]]:
    return {t["id"]: t for t in monad("tasks", "--json").json()}


def test_removing_a_server_cancels_its_tasks_there_and_here(monad_home: Path, supervisor: Any,
                                                           tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    path = atom(monad_home, "ts", "--log", str(log))
    atom(monad_home, "stays")
    wait_state(supervisor, "ts", "connected")
    wait_state(supervisor, "stays", "connected")
    ids = [start(supervisor, "ts", "a"), start(supervisor, "ts", "b")]
    kept = start(supervisor, "stays", "c")
    wait_for(lambda: all(tasks(supervisor)[i]["state"] == "working" for i in [*ids, kept]))
    path.unlink()
    rows = wait_for(lambda: (t := tasks(supervisor)) and all(t[i]["state"] == "cancelled" for i in ids) and t,
                    timeout=30)
    for i in ids:
        assert rows[i]["statusMessage"] == "server removed from the config; tasks/cancel sent to it", rows[i]
    assert rows[kept]["state"] == "working"  # another server's task is not touched
    cancelled = {json.loads(line)["taskId"] for line in log.read_text().splitlines()
                 if json.loads(line)["event"] == "cancel"}
    assert cancelled == {rows[i]["taskId"] for i in ids}
    # The server's journal rows end with its removal: the tasks' endings, then `stopped`.
    events = wait_for(lambda: (e := supervisor("journal", "--server", "ts", "--json").json())
                      and e[-1]["state"] == "stopped" and e, timeout=30)
    after = events[[(e["kind"], e["reason"]) for e in events].index(("config", "removed")) + 1:]
    assert {e["kind"] for e in after} <= {"task", "state"} and [e for e in after if e["kind"] == "state"] == \
        [after[-1]] and after[-1]["reason"] == "removed", after
    assert not any(e["state"] == "backoff" for e in after)
    assert sum(e["reason"].endswith("tasks/cancel acknowledged") for e in after) == 2, after


def test_a_server_removed_while_no_supervisor_ran(monad_home: Path, supervisor: Any) -> None:
    path = atom(monad_home, "ts")
    wait_state(supervisor, "ts", "connected")
    task_id = start(supervisor, "ts", "orphan")
    assert supervisor("daemon", "stop").code == 0
    path.unlink()
    assert supervisor("daemon", "start").code == 0
    row = wait_for(lambda: (t := tasks(supervisor)[task_id])["state"] == "cancelled" and t, timeout=30)
    assert row["statusMessage"] == "server removed from the config (while the supervisor was not running)"
