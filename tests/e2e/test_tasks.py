"""Tasks end to end: the real supervisor, the SEP-2663 test server over stdio and HTTP."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests import conftest
from tests.conftest import SERVERS, wait_for, wait_state

TASKS_SERVER = str(SERVERS / "tasks_server.py")
pytestmark = pytest.mark.e2e


def write_atom(home: Path, name: str, body: str) -> Path:
    return conftest.write_atom(home, name, f"schema = 1\n{body}")


def stdio_atom(home: Path, name: str, *flags: str) -> None:
    args = json.dumps([TASKS_SERVER, *flags])
    write_atom(home, name, f'transport = "stdio"\ncommand = {json.dumps(sys.executable)}\nargs = {args}\n')


def http_atom(home: Path, name: str, url: str) -> None:
    write_atom(home, name, f'transport = "http"\nurl = "{url}"\n')


@pytest.fixture
def tasks_http(http_testserver: Any) -> Any:
    """Start tests/servers/tasks_server.py over streamable HTTP; returns its URL."""
    return lambda *flags: http_testserver(*flags, script=TASKS_SERVER)


def api() -> Any:
    from monad_cli.cli.control import ControlClient
    from monad_cli.core.paths import paths

    paths.cache_clear()
    return ControlClient(paths())


def log_events(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def start_task(tool: str, server: str, **arguments: Any) -> dict[str, Any]:
    return api().post("/v1/tasks", {"server": server, "tool": tool, "arguments": arguments})


def wait_task(task_id: str, pred: Any, timeout: float = 30.0) -> dict[str, Any]:
    return wait_for(lambda: (t := api().get(f"/v1/tasks/{task_id}?wait=2")) and pred(t) and t,
                    timeout=timeout, interval=0.01)


def test_over_stdio_notifications_input_cancel_errors(monad_home: Path, supervisor: Any, tmp_path: Path) -> None:
    """One supervisor and one stdio server for the checks that need no special setup."""
    log = tmp_path / "server.log"
    # pollIntervalMs of 60 s: only notifications/tasks can move these tasks in time.
    stdio_atom(monad_home, "ts", "--poll-ms", "60000", "--log", str(log))
    wait_state(supervisor, "ts", "connected")
    check_completion_by_notifications(supervisor, log)
    check_input_round_trip(supervisor, log)
    check_cancel_from_the_cli(supervisor, log)
    check_follow_and_ctrl_c(supervisor, log)
    check_errors_are_one_line(supervisor)


def check_completion_by_notifications(supervisor: Any, log: Path) -> None:
    task = start_task("slow", "ts", seconds=1.5, label="by-notification")
    assert task["state"] == "working" and task["taskId"], task
    started = time.monotonic()
    done = wait_task(task["id"], lambda t: t["state"] == "completed", timeout=20)
    assert time.monotonic() - started < 20
    assert done["deliveryPending"] is True and done["pendingKind"] == "result"
    listens = [e for e in log_events(log) if e["event"] == "listen"]
    assert any(task["taskId"] in e["taskIds"] for e in listens)
    gets = [e for e in log_events(log) if e["event"] == "get" and e["taskId"] == task["taskId"]]
    assert len(gets) <= 2  # the one poll after the listen ack, never the 60 s schedule

    # `monad tasks show` delivers it once, as the tool's own result with the task id in _meta.
    r = supervisor("tasks", "show", task["id"][:10], "--json")
    assert r.code == 0, r
    shown = r.json()
    assert shown["delivered"] is True and shown["deliveryPending"] is False and shown["deliveries"] == 1
    assert shown["result"]["content"][0]["text"] == "slept 1.5 by-notification"
    assert shown["result"]["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task["taskId"]}
    again = supervisor("tasks", "show", task["id"], "--json").json()
    assert again["delivered"] is False and again["deliveries"] == 1
    r = supervisor("tasks", "show", task["id"])
    assert r.code == 0 and "slept 1.5 by-notification" in r.out and "completed" in r.out


def test_over_http_a_tasks_end_comes_on_the_listen_stream(monad_home: Path, supervisor: Any, tasks_http: Any,
                                                          tmp_path: Path) -> None:
    """Over streamable HTTP too, `notifications/tasks` come on the listen stream monad opens on
    its own lane of the connection (sessions/direct.py: with the `taskIds` filter the SDK's
    `listen()` cannot send): with a 60 s poll schedule, only they end the task in time."""
    log = tmp_path / "server.log"
    http_atom(monad_home, "tn", tasks_http("--poll-ms", "60000", "--log", str(log)))
    wait_state(supervisor, "tn", "connected")
    task = start_task("slow", "tn", seconds=1.0, label="notified")
    done = wait_task(task["id"], lambda t: t["state"] == "completed", timeout=20)
    assert done["result"]["content"][0]["text"] == "slept 1.0 notified"
    assert any(task["taskId"] in e["taskIds"] for e in log_events(log) if e["event"] == "listen")


def test_over_http_polling_only_and_reconnect(monad_home: Path, supervisor: Any, tasks_http: Any,
                                             tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    url = tasks_http("--no-notify", "--poll-ms", "150", "--log", str(log))
    http_atom(monad_home, "th", url)
    wait_state(supervisor, "th", "connected")
    task = start_task("slow", "th", seconds=0.8, label="polled")
    done = wait_task(task["id"], lambda t: t["state"] == "completed")
    assert done["result"]["content"][0]["text"] == "slept 0.8 polled"
    events = log_events(log)
    assert all(e["taskIds"] == [] for e in events if e["event"] == "listen")  # nothing to notify
    assert len([e for e in events if e["event"] == "get" and e["taskId"] == task["taskId"]]) >= 2
    # The failing tool: a JSON-RPC error makes the task `failed`; a tool error is `completed` + isError.
    failed = start_task("fail", "th", message="disk on fire")
    failed = wait_task(failed["id"], lambda t: t["state"] == "failed")
    assert failed["error"] == {"code": -32603, "message": "disk on fire"}
    tool_err = start_task("fail", "th", kind="tool", message="bad input")
    tool_err = wait_task(tool_err["id"], lambda t: t["state"] == "completed")
    assert tool_err["result"]["isError"] is True
    r = supervisor("tasks", "show", failed["id"])
    assert r.code == 1 and "disk on fire" in r.out  # a failed task exits like a failed call
    # A tool the server answers at once is still a row, completed, without a server task id.
    quick = start_task("quick", "th", text="now")
    assert quick["state"] == "completed" and quick["taskId"] is None
    assert quick["result"]["content"][0]["text"] == "now"
    r = supervisor("tasks", "--server", "th", "--state", "done", "--json")
    assert {t["id"] for t in r.json()} == {task["id"], failed["id"], tool_err["id"], quick["id"]}
    # A rebuilt connection resumes the task: observed again, counted as a recovery.
    across = start_task("slow", "th", seconds=2, label="across")
    r = supervisor("mcp", "reconnect", "th")
    assert r.code == 0, r
    done = wait_task(across["id"], lambda t: t["state"] == "completed")
    assert done["result"]["content"][0]["text"] == "slept 2 across"
    assert done["recoveries"] >= 1


def check_input_round_trip(supervisor: Any, log: Path) -> None:
    task = start_task("ask", "ts")
    waiting = wait_task(task["id"], lambda t: t["state"] == "input_required")
    assert waiting["deliveryPending"] is True and waiting["pendingKind"] == "input"
    r = supervisor("tasks", "--state", "pending", "--json")
    assert task["id"] in [t["id"] for t in r.json()]

    # An unsafe property name in an answer is refused before anything reaches the server.
    r = supervisor("tasks", "input", task["id"][:8], "--set", "__proto__=x", "--set", "name=a", "--set", "age=1")
    assert r.code == 2, r
    assert "`__proto__` is not allowed" in r.err and "Traceback" not in r.err
    r = supervisor("tasks", "input", task["id"][:8], "--set", "name=Ada", "--set", "age=old")
    assert r.code == 2 and "`age` must be an integer" in r.err, r
    assert not [e for e in log_events(log) if e["event"] == "update"]
    # Without --set and without a terminal: a clear error, not a hang.
    r = supervisor("tasks", "input", task["id"][:8], input="")
    assert r.code == 2 and "--set NAME=VALUE" in r.err, r

    r = supervisor("tasks", "input", task["id"][:8], "--set", "name=Ada", "--set", "age=36",
                   "--set", "ratio=0.5", "--set", "subscribe=yes")
    assert r.code == 0, r
    done = wait_task(task["id"], lambda t: t["state"] == "completed")
    answer = json.loads(done["result"]["content"][0]["text"])
    assert answer == {"action": "accept", "content": {"name": "Ada", "age": 36, "ratio": 0.5, "subscribe": True}}
    updates = [e for e in log_events(log) if e["event"] == "update"]
    assert updates[0]["inputResponses"]["profile"]["content"]["age"] == 36  # typed on the wire

    # A form whose own schema names `__proto__` is never answered.
    unsafe = start_task("ask", "ts", unsafe=True)
    wait_task(unsafe["id"], lambda t: t["state"] == "input_required")
    r = supervisor("tasks", "input", unsafe["id"][:8], "--set", "name=a", "--set", "age=1")
    assert r.code == 2 and "`__proto__` is not allowed" in r.err, r


def check_cancel_from_the_cli(supervisor: Any, log: Path) -> None:
    task = start_task("slow", "ts", seconds=60)
    r = supervisor("tasks", "cancel", task["id"][:8])
    assert r.code == 0 and "cancel requested" in r.err, r
    done = wait_task(task["id"], lambda t: t["state"] == "cancelled")
    assert done["cancelRequested"] is True
    assert [e["taskId"] for e in log_events(log) if e["event"] == "cancel"] == [task["taskId"]]
    r = supervisor("tasks", "cancel", task["id"][:8])  # idempotent
    assert r.code == 0, r
    r = supervisor("tasks", "cancel", "beef0000")
    assert r.code == 1 and "task `beef0000` is not known" in r.err, r
    r = supervisor("tasks", "cancel", "nope")
    assert r.code == 2 and "not a valid id" in r.err, r


def test_ninth_active_task_is_queued_and_the_65th_queued_refused(monad_home: Path, supervisor: Any,
                                                                  tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    stdio_atom(monad_home, "ts", "--log", str(log), "--poll-ms", "5000")
    wait_state(supervisor, "ts", "connected")
    first = [start_task("slow", "ts", seconds=60, label=str(i)) for i in range(8)]
    assert {t["state"] for t in first} == {"working"}
    ninth = start_task("slow", "ts", seconds=60, label="8")
    assert ninth["state"] == "queued" and ninth["taskId"] is None
    queued = [start_task("slow", "ts", seconds=60, label=str(i)) for i in range(9, 8 + 64)]
    assert {t["state"] for t in queued} == {"queued"}
    from monad_cli.core.errors import QueueFull

    with pytest.raises(QueueFull) as refused:
        start_task("slow", "ts", seconds=60, label="refused")
    assert refused.value.http_status == 429 and refused.value.code == "queue_full"
    assert "8 active and 64 queued" in refused.value.message
    # The same refusal through a detached tools/call (it was a 502 `tool_call_failed` once).
    with pytest.raises(QueueFull) as detached:
        api().post("/v1/tools/call", {"name": "ts__slow", "arguments": {"seconds": 60, "label": "detached"},
                                      "approval": {"mode": "yes"}, "detach": True})
    assert "8 active and 64 queued" in detached.value.message
    r = supervisor("mcp", "call", "ts__slow", "--arg", "seconds=60", "--yes", "--detach")
    assert r.code == 1 and "8 active and 64 queued" in r.err and "Traceback" not in r.err, r
    refused_calls = [c for c in supervisor("journal", "--calls", "--json").json() if c["outcome"] == "error"]
    assert len(refused_calls) == 2 and all("8 active and 64 queued" in c["error"] for c in refused_calls)
    r = supervisor("tasks", "--server", "ts", "--state", "active", "--json")
    assert len(r.json()) == 72
    assert len([e for e in log_events(log) if e["event"] == "run"]) == 8  # nothing queued was sent
    # A freed slot goes to the oldest queued call.
    supervisor("tasks", "cancel", first[0]["id"])
    wait_task(ninth["id"], lambda t: t["state"] == "working")
    r = supervisor("tasks", "cancel", queued[-1]["id"], "--json")
    assert r.json()["state"] == "cancelled"  # a queued call is never sent


def test_kill_9_during_20_active_tasks(monad_home: Path, supervisor: Any, tasks_http: Any,
                                       tmp_path: Path) -> None:
    """The supervisor dies with 20 tasks running on 3 HTTP servers (8 active each at most);
    after a restart every task ends and is delivered once; no tool runs twice."""
    logs = [tmp_path / f"s{i}.log" for i in range(3)]
    for i, log in enumerate(logs):
        http_atom(monad_home, f"h{i}", tasks_http("--log", str(log), "--poll-ms", "300"))
    for i in range(3):
        wait_state(supervisor, f"h{i}", "connected")
    # 12 s each: starting 20 takes a few seconds on a loaded machine, and all must still run at the kill.
    tasks = [start_task("slow", f"h{i % 3}", seconds=12, label=f"job-{i}") for i in range(20)]
    assert {t["state"] for t in tasks} == {"working"}, [t["state"] for t in tasks]
    assert len(api().get("/v1/tasks?state=active")["tasks"]) == 20  # all still running at the kill

    pid = int((monad_home / "run" / "monad.pid").read_text())
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: subprocess.run(["kill", "-0", str(pid)], capture_output=True).returncode != 0, timeout=10)
    # Make one row look like a crash between sending tools/call and storing its answer: it is
    # resent with the same invocation id, and the server deduplicates instead of running it twice.
    import sqlite3

    with sqlite3.connect(monad_home / "journal.db") as db:
        db.execute("UPDATE tasks SET state = 'submitting', task_id = NULL WHERE id = ?", (tasks[0]["id"],))
    r = supervisor("daemon", "start")
    assert r.code == 0, r

    def all_done() -> bool:
        rows = supervisor("tasks", "--json").json()
        return len(rows) == 20 and all(t["state"] == "completed" for t in rows)

    wait_for(all_done, timeout=90, interval=0.3)
    for t in tasks:
        shown = api().get(f"/v1/tasks/{t['id']}?deliver=1")
        assert shown["delivered"] is True and shown["deliveries"] == 1
        assert shown["result"]["content"][0]["text"] == f"slept 12 {t['arguments']['label']}"
        assert shown["recoveries"] >= 1
    for t in tasks:
        assert api().get(f"/v1/tasks/{t['id']}?deliver=1")["delivered"] is False
    runs = [e["invocationId"] for log in logs for e in log_events(log) if e["event"] == "run"]
    assert sorted(runs) == sorted(t["id"] for t in tasks)  # each call ran exactly once
    dedupes = [e for log in logs for e in log_events(log) if e["event"] == "dedupe"]
    assert [(e["invocationId"], e["taskId"]) for e in dedupes] == [(tasks[0]["id"], tasks[0]["taskId"])]
    assert api().get(f"/v1/tasks/{tasks[0]['id']}")["retries"] >= 1
    journal = supervisor("journal", "-n", "2000")
    assert "resumed after (re)connect" in journal.out


def check_errors_are_one_line(supervisor: Any) -> None:
    from monad_cli.core.errors import NotFound

    with pytest.raises(NotFound) as e:
        start_task("slow", "missing")
    assert e.value.http_status == 404 and "server `missing` is not defined" in e.value.message
    r = supervisor("tasks", "--state", "weird")
    assert r.code == 2 and "--state must be active, pending or done" in r.err
    r = supervisor("tasks", "show", "0000")
    assert r.code == 1 and "task `0000` is not known" in r.err and "Traceback" not in r.err
    r = supervisor("tasks", "--server", "nobody")
    assert r.code == 0 and "no tasks match" in r.err


def check_follow_and_ctrl_c(supervisor: Any, log: Path) -> None:
    """`monad tasks show --wait` follows a task to its result; Ctrl-C there is `tasks/cancel`."""
    import select

    task = start_task("slow", "ts", seconds=1, label="followed")
    r = supervisor("tasks", "show", task["id"][:10], "--wait")
    assert r.code == 0 and "slept 1 followed" in r.out and "completed" in r.out, r
    long = start_task("slow", "ts", seconds=60, label="interrupted")
    proc = subprocess.Popen([sys.executable, "-m", "monad_cli", "tasks", "show", long["id"], "--wait"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ready, _, _ = select.select([proc.stderr], [], [], 30)
        assert ready, "no progress line from `monad tasks show --wait`"
        line = proc.stderr.readline()  # type: ignore[union-attr]
        assert "working" in line and "Ctrl-C cancels it" in line, line
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
    done = wait_task(long["id"], lambda t: t["state"] == "cancelled")
    assert done["cancelRequested"] is True
    assert long["taskId"] in [e["taskId"] for e in log_events(log) if e["event"] == "cancel"]
