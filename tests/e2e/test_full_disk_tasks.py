"""A full disk under MONAD_HOME, for what the journal's rows do not cover (docs/supervisor.md
"A full disk"): the tasks store's writes and `daemon.log`. A real 4 MiB tmpfs, filled to the
last byte (tests/e2e/test_full_disk.py's fixtures: it needs root, else it is skipped), the
real supervisor and a real task server (tests/servers/tasks_server.py)."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

from monad_cli.core.errors import MonadError
from tests.conftest import wait_for, wait_state
from tests.e2e.test_full_disk import fill, home_on, small_disk
from tests.e2e.test_tasks import TASKS_SERVER

pytestmark = pytest.mark.e2e
__all__ = ["home_on", "small_disk"]  # the fixtures, imported for these tests


def test_a_task_ends_and_the_log_goes_on_while_the_disk_is_full_and_both_are_written_after(
        home_on: Path, monad: Any) -> None:
    from monad_cli.cli.control import ControlClient
    from monad_cli.core.paths import Paths

    r = monad("mcp", "add", "tk", "--", sys.executable, TASKS_SERVER)
    assert r.code == 0, r
    wait_state(monad, "tk", "connected", timeout=60)
    api = ControlClient(Paths(home_on))
    running = api.post("/v1/tasks", {"server": "tk", "tool": "slow", "arguments": {"seconds": 6, "label": "a"}})
    filler = fill(home_on.parent)
    # Calls until the journal's file takes no writes (its WAL needs new blocks within a few commits).
    for n in range(400):
        api.post("/v1/tools/call", {"name": "tk__quick", "arguments": {"text": f"q{n}"}, "via": "test",
                                    "approval": {"mode": "yes"}})
        if api.get("/v1/health")["journal"]["state"] == "degraded":
            break
    assert api.get("/v1/health")["journal"]["state"] == "degraded"

    # The running task ends while nothing can be written: its end is held, and shown.
    done = wait_for(lambda: (t := api.get(f"/v1/tasks/{running['id']}"))["state"] == "completed" and t, timeout=60)
    assert done["result"]["content"][0]["text"] == "slept 6 a", done
    # A new one cannot be held (nothing could find it): refused in one line naming the disk.
    with pytest.raises(MonadError) as refused:
        api.post("/v1/tasks", {"server": "tk", "tool": "slow", "arguments": {"seconds": 1, "label": "b"}})
    assert refused.value.code == "disk_full" and "\n" not in refused.value.message, refused.value
    assert "the journal's disk takes no writes" in refused.value.message and "journal.db" in refused.value.message
    # The log's last page may have room for a few lines: reconnects log lines until it has none.
    for _ in range(50):
        if api.get("/v1/health")["journal"]["log"]["state"] == "degraded":
            break
        assert monad("mcp", "reconnect", "tk").code == 0
        wait_state(monad, "tk", "connected", timeout=60)  # a stdio server restarts on a full disk
    health = api.get("/v1/health")["journal"]
    tasks, log = health["tasks"], health["log"]
    assert tasks["state"] == "degraded" and tasks["heldRows"] >= 1 and tasks["refused"] == 1, tasks
    assert tasks["lost"] == 0 and "journal.db" in tasks["reason"], tasks
    assert log["state"] == "degraded" and log["held"] >= 1 and log["lost"] == 0, log
    assert "daemon.log" in log["reason"] and "No space left on device" in log["reason"], log
    r = monad("mcp", "status")
    assert r.code == 0 and "tasks store degraded:" in r.err and "1 new task(s) refused" in r.err, r
    assert "daemon log degraded:" in r.err and "line(s) held in memory" in r.err, r
    r = monad("daemon", "status")
    assert r.code == 0 and "tasks store degraded:" in r.err and "daemon log degraded:" in r.err, r

    # Space returns: the held task row and the held log lines are written.
    filler.unlink()
    wait_for(lambda: (h := api.get("/v1/health")["journal"])["tasks"]["state"] == "ok"
             and h["log"]["state"] == "ok", timeout=60)
    db = sqlite3.connect(home_on / "journal.db")
    try:
        state, result = db.execute("SELECT state, result FROM tasks WHERE id = ?", (running["id"],)).fetchone()
    finally:
        db.close()
    assert state == "completed" and "slept 6 a" in result, (state, result)
    text = (home_on / "logs" / "daemon.log").read_text()
    assert "tasks store: cannot write the journal" in text, text[-2000:]
    assert "held line(s) written" in text and "tasks store: writable again; 1 held task row(s) written" in text
    # And tasks start again.
    again = api.post("/v1/tasks", {"server": "tk", "tool": "slow", "arguments": {"seconds": 0, "label": "c"}})
    wait_for(lambda: api.get(f"/v1/tasks/{again['id']}")["state"] == "completed", timeout=60)
