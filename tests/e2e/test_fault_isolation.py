"""A fault costs only what it touches (issue 26's principles), end to end, with servers of our
own that break them in ways other than the named cases: one bad item costs that item; no call
waits forever; transient failures of a remote are never final (tests/servers/toolfaultserver.py,
edgeserver.py)."""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any

import pytest

from tests.conftest import LIGHTSERVER, free_port, status_of, wait_for, wait_reconnected, wait_state
from tests.e2e.test_reported_server_bugs import add_tool_faults, call, edge, start_edge, tool_names

pytestmark = pytest.mark.e2e
__all__ = ["edge"]  # the fixture, imported for these tests


def test_a_tool_with_an_unusable_schema_costs_that_tool_only(supervisor: Any) -> None:
    add_tool_faults(supervisor, "bad", "--bad-tool")
    row = wait_state(supervisor, "bad", "degraded", timeout=60)
    assert "tool `broken` left out: inputSchema: Input should be a valid dictionary" in row["reason"], row
    assert "tool #11 in the list left out: name: Field required" in row["reason"], row
    assert "tool #12 in the list left out: name: empty" in row["reason"], row  # was exposed as `bad__`
    assert row["leftOut"] == row["reason"].split("; "), row
    assert "bad__broken" not in tool_names(supervisor, "bad") and "bad__echo" in tool_names(supervisor, "bad")
    r = supervisor("mcp", "tools", "bad")
    assert "server `bad`: tool `broken` left out" in r.err, r
    assert call(supervisor, "bad__echo", "text=still usable").out.strip() == "still usable"
    # Found by a new-user trial: `wait` timed out on a degraded server, which serves calls.
    r = supervisor("mcp", "wait", "bad", "--timeout", "5")
    assert r.code == 0 and r.out == "", r
    assert r.err.startswith("warning: server `bad` is degraded: tool `broken` left out"), r
    assert "degraded (it serves calls): bad" in r.err, r


def test_a_server_whose_output_ended_is_seen_as_gone_and_its_call_fails(supervisor: Any) -> None:
    # The supervisor runs on uvloop when it is installed; its spawned servers must not hold
    # a second copy of their own stdout, or closing it would never reach the supervisor.
    add_tool_faults(supervisor, "mute")
    row = wait_state(supervisor, "mute", "connected", timeout=60)
    r = call(supervisor, "mute__close_stdout")
    # It lives on until monad closes its stdin at the session's end; the call says how it ended.
    assert r.code == 1 and "Traceback" not in r.err, r
    assert "failed `close_stdout`: its session ended during the request: server process exited with status 0;" \
        in r.err, r
    after = wait_for(lambda: (s := status_of(supervisor, "mute"))["pid"] not in (None, row["pid"])
                     and s["state"] == "connected" and s, timeout=60)
    assert call(supervisor, "mute__echo", "text=back").out.strip() == "back", after


def test_a_refused_remote_is_retried_past_the_give_up_count_and_connects_when_it_comes(
        monad: Any, edge: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # Retries 50 ms apart at first (MONAD_BACKOFF_INITIAL, doubling): 7 failed attempts then
    # take ~3 s of waiting and the one after the server comes ~6 s, not 13 s and 13 s.
    monkeypatch.setenv("MONAD_BACKOFF_INITIAL", "0.05")
    supervisor = monad
    assert supervisor("daemon", "start").code == 0
    port = free_port()
    assert supervisor("mcp", "add", "later", "--url", f"http://127.0.0.1:{port}/mcp").code == 0
    # A stdio server would be given up after 5 failures in 60 s; a remote one never is.
    row = wait_for(lambda: (s := status_of(supervisor, "later"))["state"] == "backoff"
                   and (s["attempt"] or 0) >= 7 and s, timeout=90)
    assert "cannot connect to" in row["reason"] and row["nextAttemptAt"] >= row["since"], row
    r = supervisor("mcp", "status", "later")
    assert "next attempt" in r.out, r
    edge(port)
    wait_state(supervisor, "later", "connected", timeout=120)
    assert call(supervisor, "later__echo", "text=came back").out.strip() == "came back"


def test_a_remote_that_went_away_is_not_shown_connected(monad: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # An idle remote that went away is found by the next ping: every 1 s here, not 30 s (the
    # default), which this test waited out whole.
    monkeypatch.setenv("MONAD_PING_INTERVAL", "1")
    # A backoff of 4-6 s, long enough for the status row to be read while it says why.
    monkeypatch.setenv("MONAD_BACKOFF_INITIAL", "5")
    supervisor = monad
    port = free_port()
    server = start_edge(port)
    try:
        assert supervisor("daemon", "start").code == 0
        assert supervisor("mcp", "add", "away", "--url", f"http://127.0.0.1:{port}/mcp").code == 0
        wait_state(supervisor, "away", "connected", timeout=60)
        server.kill()
        server.wait(timeout=10)
        row = wait_state(supervisor, "away", "backoff", timeout=90)
        assert row["reason"] and row["nextAttemptAt"] is not None, row
    finally:
        server.kill()
        supervisor("daemon", "stop")


def test_a_stdio_crash_loop_gives_up_and_says_so(supervisor: Any) -> None:
    r = supervisor("mcp", "add", "crashy", "--", sys.executable, LIGHTSERVER, "--exit-at-start", "3")
    assert r.code == 0, r
    row = wait_state(supervisor, "crashy", "failed", timeout=90)
    assert "gave up after 5 failures in 60 s, run `monad mcp reconnect crashy`" in row["reason"], row
    assert "exited with status 3" in row["reason"], row


def test_a_call_waiting_on_a_remote_that_dies_fails_instead_of_waiting(supervisor: Any) -> None:
    port = free_port()
    server = start_edge(port)
    try:
        assert supervisor("mcp", "add", "dies", "--url", f"http://127.0.0.1:{port}/mcp").code == 0
        wait_state(supervisor, "dies", "connected", timeout=60)
        cmd = [sys.executable, "-m", "monad_cli", "mcp", "call", "dies__slow", "--arg", "seconds=3600", "--yes"]
        waiting = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for(lambda: any(c["tool"] == "slow" for c in supervisor("journal", "--calls", "--json").json()),
                 timeout=30)
        server.kill()
        out, err = waiting.communicate(timeout=120)  # a call of an hour: it must end with the server
        assert waiting.returncode == 1 and "Traceback" not in err, (out, err)
    finally:
        server.kill()


def test_an_answer_of_the_wrong_shape_fails_its_call_at_once_in_one_line(supervisor: Any) -> None:
    add_tool_faults(supervisor, "odd")
    row = wait_state(supervisor, "odd", "connected", timeout=60)
    r = call(supervisor, "odd__odd_shape")
    assert r.code == 1 and len(r.err.strip().splitlines()) == 1, r
    assert ("the server's CallToolResult is not of the shape the protocol defines: CallToolResult.content: "
            "Input should be a valid list") in r.err, r  # not pydantic's `union[CallToolResult,…]`
    calls = supervisor("journal", "--calls", "--json").json()
    assert [c["outcome"] for c in calls if c["tool"] == "odd_shape"] == ["error"], calls
    # The session goes on.
    assert call(supervisor, "odd__echo", "text=on").out.strip() == "on"
    assert status_of(supervisor, "odd")["pid"] == row["pid"]


def test_a_server_that_stops_answering_while_a_call_waits_fails_that_call(
        monad: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Liveness is watched while calls wait, not only when idle: a frozen server (alive,
    reading, answering nothing) is found dead, and the call waiting on it fails."""
    monkeypatch.setenv("MONAD_PING_INTERVAL", "1")  # while calls wait: 30 × 1 s
    try:
        assert monad("daemon", "start").code == 0
        add_tool_faults(monad, "frozen")
        row = wait_state(monad, "frozen", "connected", timeout=60)
        r = monad("mcp", "call", "frozen__hang", "--yes", timeout=120)
        assert r.code == 1 and "Traceback" not in r.err, r
        assert "failed `hang`: its session ended during the request: it stopped answering: no answer to a ping " \
               "within" in r.err, r
        def hung_row() -> bool:
            reasons = [x.get("reason") or "" for x in monad("journal", "--server", "frozen", "--json").json()]
            return any("it stopped answering: no answer to a ping within" in x and "while calls waited" in x
                       for x in reasons)

        wait_for(hung_row, timeout=30)
        wait_reconnected(monad, "frozen", row["pid"])
    finally:
        monad("daemon", "stop")


def test_a_cli_call_to_a_server_waiting_to_retry_waits_only_its_connect_timeout(supervisor: Any) -> None:
    """Found by a new-user trial: `monad mcp call` to a remote that went away waited ~130 s
    (until its next attempt, a minute away, and more); it waits the server's connect
    `timeout`, as a gateway call does, then says why it cannot go through."""
    port = free_port()  # nothing listens there
    assert supervisor("mcp", "add", "gone", "--url", f"http://127.0.0.1:{port}/mcp", "--timeout", "3").code == 0
    row = wait_state(supervisor, "gone", "backoff")
    assert row["timeout"] == 3, row
    started = time.monotonic()
    r = supervisor("mcp", "call", "gone__anything", "--arg", "x=1", "--yes", timeout=100)
    waited = time.monotonic() - started
    assert r.code != 0 and "Traceback" not in r.err, r
    said = r.err.splitlines()  # it may be between two attempts (backoff) or in one (connecting) when asked
    assert said[0].startswith("waiting for server `gone` to connect ("), r
    assert said[1].startswith(f"error: server `gone` is waiting to retry: cannot connect to "
                              f"http://127.0.0.1:{port}/mcp: connection to 127.0.0.1:{port} refused "
                              f"(nothing listens there)"), r
    assert 3 <= waited < 60, waited
