"""A detached call (`monad mcp call --detach`) that was sent and whose answer was lost (the
supervisor stopped or was killed, the server exited under it) is not sent again unless its
tool says that is safe, and then at most twice; `monad tasks cancel` of a call that is sent
tells the server and frees its slot (docs/tasks.md "Resume after failures", "Cancellation").

The server is tests/servers/runsserver.py: each run of a tool appends a line to a file, so
the tests count how many times a call reached it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SERVERS, end_test_server, free_port, pid_alive, wait_for, wait_state, write_atom

pytestmark = pytest.mark.e2e


def runs_atom(home: Path, name: str, runs: Path) -> None:
    args = [str(SERVERS / "runsserver.py"), "--runs", str(runs)]
    write_atom(home, name, f"command = {json.dumps(sys.executable)}\nargs = {json.dumps(args)}\n")


def runs(path: Path, event: str, tool: str) -> list[str]:
    """The invocation ids of the `event` lines of `tool` in the runs file."""
    if not path.exists():
        return []
    return [line.split()[2] for line in path.read_text().splitlines() if line.split()[:2] == [event, tool]]


def detach(supervisor: Any, name: str, *args: str) -> dict[str, Any]:
    r = supervisor("mcp", "call", name, *args, "--detach", "--yes", "--json")
    assert r.code == 0, r
    row: dict[str, Any] = r.json()
    return row


def show(supervisor: Any, row_id: str) -> dict[str, Any]:
    shown: dict[str, Any] = supervisor("tasks", "show", row_id, "--json").json()
    return shown


def ended(supervisor: Any, row_id: str, timeout: float = 60) -> dict[str, Any]:
    return wait_for(lambda: (t := show(supervisor, row_id))["state"] in ("completed", "failed", "cancelled") and t,
                    timeout=timeout, interval=0.3)


def sent_events(supervisor: Any, row_id: str) -> int:
    """How many times the journal says the row's `tools/call` was sent."""
    journal = supervisor("journal", "-n", "2000").out
    return sum(1 for line in journal.splitlines() if f"task {row_id[:12]} " in line and "sent (tools/call)" in line)


@pytest.mark.parametrize("how", ["stop", "kill-9"])
def test_a_sent_call_is_not_sent_again_after_the_supervisor_restarts(monad_home: Path, supervisor: Any,
                                                                     tmp_path: Path, how: str) -> None:
    """`charge` (no annotations) is cut by `monad daemon stop` or `kill -9` of the supervisor
    while it runs: after the restart it is not sent again, and its row says so."""
    log = tmp_path / "runs.log"
    runs_atom(monad_home, "counter", log)
    wait_state(supervisor, "counter", "connected")
    row = detach(supervisor, "counter__charge", "--arg", "seconds=8")
    wait_for(lambda: runs(log, "start", "charge") == [row["id"]])
    if how == "stop":
        assert supervisor("daemon", "stop").code == 0
    else:
        pid = int((monad_home / "run" / "monad.pid").read_text())
        os.kill(pid, signal.SIGKILL)
        wait_for(lambda: not pid_alive(pid), timeout=10)
    assert supervisor("daemon", "start").code == 0
    wait_state(supervisor, "counter", "connected")

    shown = ended(supervisor, row["id"])
    assert shown["state"] == "failed", shown
    message = shown["statusMessage"]
    assert message.startswith("sent, and its answer was lost: the supervisor stopped"), message
    assert "whether the server acted on it is unknown, so it is not sent again" in message
    assert "call it again if that is safe" in message
    assert runs(log, "start", "charge") == [row["id"]]  # it ran once
    journal = supervisor("journal", "-n", "2000").out
    assert f"task {row['id'][:12]} (charge) failed: sent, and its answer was lost" in journal


def test_a_call_marked_idempotent_is_sent_again_with_its_invocation_id(monad_home: Path, supervisor: Any,
                                                                      tmp_path: Path) -> None:
    """`charge_safe` (`idempotentHint: true`) cut by a restart goes out again, once, with the
    same invocation id, and completes; the journal says why it was sent again."""
    log = tmp_path / "runs.log"
    runs_atom(monad_home, "counter", log)
    wait_state(supervisor, "counter", "connected")
    row = detach(supervisor, "counter__charge_safe", "--arg", "seconds=3")
    wait_for(lambda: runs(log, "start", "charge_safe") == [row["id"]])
    assert supervisor("daemon", "stop").code == 0
    assert supervisor("daemon", "start").code == 0

    shown = ended(supervisor, row["id"])
    assert shown["state"] == "completed", shown
    assert runs(log, "start", "charge_safe") == [row["id"], row["id"]]
    assert shown["retries"] == 1
    journal = supervisor("journal", "-n", "2000").out
    assert f"task {row['id'][:12]} `charge_safe` answer lost (the supervisor stopped" in journal
    assert "sent again (1 of at most 2): the tool declares idempotentHint" in journal


def test_a_call_that_makes_its_server_exit_is_sent_once(monad_home: Path, supervisor: Any, tmp_path: Path) -> None:
    """`crash` exits the server under the call: the row fails at once saying the answer was
    lost and why, the call is never sent again, and the server comes back."""
    log = tmp_path / "runs.log"
    runs_atom(monad_home, "evil", log)
    wait_state(supervisor, "evil", "connected")
    row = detach(supervisor, "evil__crash")

    shown = ended(supervisor, row["id"])
    assert shown["state"] == "failed", shown
    message = shown["statusMessage"]
    # Why, in the words of `monad mcp status` (the exit status and the server's last stderr line).
    assert message.startswith("sent, and its answer was lost: the server's session ended: server process exited "
                              "with status 3; stderr: runsserver: exiting in the middle of a call; "), message
    assert "whether the server acted on it is unknown, so it is not sent again" in message
    wait_state(supervisor, "evil", "connected")
    assert runs(log, "start", "crash") == [row["id"]]
    assert sent_events(supervisor, row["id"]) == 1
    assert supervisor("mcp", "call", "evil__charge", "--arg", "seconds=0", "--yes").code == 0  # it serves again


def test_a_read_only_call_that_kills_its_server_every_time_is_a_poison_call(monad_home: Path, supervisor: Any,
                                                                            tmp_path: Path) -> None:
    """`crash_safe` (`readOnlyHint: true`) is sent again after each crash, at most twice: then
    the row fails as a poison call and the server stays up."""
    log = tmp_path / "runs.log"
    runs_atom(monad_home, "evil", log)
    wait_state(supervisor, "evil", "connected")
    row = detach(supervisor, "evil__crash_safe")

    shown = ended(supervisor, row["id"], timeout=90)
    assert shown["state"] == "failed", shown
    message = shown["statusMessage"]
    assert message.startswith("sent 3 times, and each time its answer was lost (last: the server's session ended: "
                              "server process exited with status 3"), message
    assert "poison call" in message and "whether the server acted on it is unknown" in message
    assert runs(log, "start", "crash_safe") == [row["id"]] * 3
    assert sent_events(supervisor, row["id"]) == 3
    wait_state(supervisor, "evil", "connected")


def test_cancel_of_a_sent_call_tells_the_server_and_frees_its_slot(monad_home: Path, supervisor: Any,
                                                                  tmp_path: Path) -> None:
    """`hang` never answers: `monad tasks cancel` ends its row at once, the server gets
    `notifications/cancelled` (the tool sees it), and the slot is free."""
    log = tmp_path / "runs.log"
    runs_atom(monad_home, "counter", log)
    wait_state(supervisor, "counter", "connected")
    row = detach(supervisor, "counter__hang")
    assert row["state"] == "submitting", row
    wait_for(lambda: runs(log, "start", "hang") == [row["id"]])

    r = supervisor("tasks", "cancel", row["id"], "--json")
    assert r.code == 0, r
    assert r.json()["state"] == "cancelled", r
    assert r.json()["statusMessage"] == ("cancelled after it was sent; the server was told "
                                         "(notifications/cancelled); whether it acted on it is unknown")
    wait_for(lambda: runs(log, "cancelled", "hang") == [row["id"]])
    assert supervisor("tasks", "--server", "counter", "--state", "active", "--json").json() == []


def test_a_detached_call_queued_behind_hung_calls_says_why_and_a_cancel_sends_it(
        monad_home: Path, supervisor: Any, tmp_path: Path) -> None:
    """Eight hung calls hold every active slot of the server (no `requestTimeoutMs`): the ninth
    `--detach` call is queued and says why and what frees a slot; cancelling one sends it."""
    log = tmp_path / "runs.log"
    runs_atom(monad_home, "counter", log)
    wait_state(supervisor, "counter", "connected")
    hung = [detach(supervisor, "counter__hang") for _ in range(8)]
    wait_for(lambda: len(runs(log, "start", "hang")) == 8)

    r = supervisor("mcp", "call", "counter__charge", "--arg", "seconds=0", "--detach", "--yes")
    assert r.code == 0, r
    queued = r.out.strip()
    assert r.err.strip() == (
        f"`counter__charge` is queued as task {queued}: every active slot of server `counter` holds a call that "
        f"has not ended, and it is sent once one does (`monad tasks --server counter --state active` lists them; "
        f"`monad tasks cancel ID` ends one; `requestTimeoutMs` bounds each call); follow it with "
        f"`monad tasks show {queued} --wait`"), r
    assert show(supervisor, queued)["state"] == "queued"

    assert supervisor("tasks", "cancel", hung[0]["id"]).code == 0
    assert ended(supervisor, queued)["state"] == "completed"
    assert runs(log, "done", "charge") == [queued]


def test_a_remote_server_that_dies_under_a_call_is_sent_it_once(monad_home: Path, supervisor: Any, tmp_path: Path,
                                                                 http_testserver: Any) -> None:
    """The same rule for a streamable-HTTP server: `crash` ends the server's process while
    the POST waits for its answer; the row fails saying the answer was lost, and it is not
    sent again when the server is back."""
    log = tmp_path / "runs.log"
    url = http_testserver("--runs", str(log), script=str(SERVERS / "runsserver.py"))
    write_atom(monad_home, "remote", f"url = {json.dumps(url)}\n")
    wait_state(supervisor, "remote", "connected")
    row = detach(supervisor, "remote__crash")

    shown = ended(supervisor, row["id"])
    assert shown["state"] == "failed", shown
    message = shown["statusMessage"]
    assert message.startswith("sent, and its answer was lost: "), message
    assert "whether the server acted on it is unknown, so it is not sent again" in message
    assert runs(log, "start", "crash") == [row["id"]]
    assert sent_events(supervisor, row["id"]) == 1


def test_a_read_only_call_that_kills_a_remote_server_every_time_is_a_poison_call(
        monad_home: Path, supervisor: Any, tmp_path: Path) -> None:
    """Over streamable HTTP too: `crash_safe` (`readOnlyHint: true`) goes out again each time
    the server is back (the test starts it again on its port whenever it exits), at most
    twice; then the row fails as a poison call."""
    log = tmp_path / "runs.log"
    port = free_port()
    argv = [sys.executable, str(SERVERS / "runsserver.py"), "--runs", str(log), "--http", str(port)]
    done = threading.Event()
    procs: list[subprocess.Popen[bytes]] = []

    def keep_serving() -> None:
        while not done.is_set():
            proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            procs.append(proc)
            while proc.poll() is None and not done.is_set():
                time.sleep(0.05)

    restarter = threading.Thread(target=keep_serving, daemon=True)
    restarter.start()
    try:
        write_atom(monad_home, "remote", f'url = "http://127.0.0.1:{port}/mcp"\n')
        wait_state(supervisor, "remote", "connected")
        row = detach(supervisor, "remote__crash_safe")

        shown = ended(supervisor, row["id"], timeout=120)
        assert shown["state"] == "failed", shown
        message = shown["statusMessage"]
        assert message.startswith("sent 3 times, and each time its answer was lost"), message
        assert "poison call" in message
        assert runs(log, "start", "crash_safe") == [row["id"]] * 3
        assert sent_events(supervisor, row["id"]) == 3
    finally:
        done.set()
        restarter.join(timeout=10)
        for proc in procs:
            end_test_server(proc)
