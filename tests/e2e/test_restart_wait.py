"""Calls to a server that is restarting wait for it, bounded by its connect timeout, and every
call has its journal rows, refused ones too (docs/tools.md "The journal of calls"). The real
supervisor, a real stdio server (the standard library's lightserver.py) killed with SIGKILL, the control API
and the CLI."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from monad_cli.core.errors import NotConnected
from tests.conftest import LIGHTSERVER, status_of, wait_for, wait_state, write_atom


def _atom(home: Path, *flags: str, timeout: int = 10) -> None:
    args = ", ".join(f'"{a}"' for a in (LIGHTSERVER, *flags))
    write_atom(home, "s", f'schema = 1\ntransport = "stdio"\ncommand = "{sys.executable}"\nargs = [{args}]\n'
                          f'timeout = {timeout}\n\n[trust]\nautoApproveTools = ["s__echo"]\n')


def _call(api: Any, text: str) -> dict[str, Any]:
    return dict(api.post("/v1/tools/call", {"name": "s__echo", "arguments": {"text": text}, "via": "test",
                                            "approval": {"mode": "yes"}}))


def _calls(monad: Any) -> list[dict[str, Any]]:
    r = monad("journal", "--calls", "--json")
    assert r.code == 0, r
    return list(r.json())


@pytest.fixture
def slow_backoff(monad: Any, monad_home: Path) -> Any:
    """The real supervisor, retrying after 2 s (not the tests' 0.2 s), so a killed server is
    seen in `backoff` before it is back."""
    r = monad("daemon", "start", env={"MONAD_BACKOFF_INITIAL": "2"})
    assert r.code == 0, r
    yield monad
    monad("daemon", "stop")


def test_a_call_to_a_killed_server_waits_for_it_and_one_that_does_not_come_back_fails_naming_why(
        slow_backoff: Any, monad_home: Path) -> None:
    from monad_cli.cli.control import ControlClient
    from monad_cli.core.paths import Paths

    monad = slow_backoff
    _atom(monad_home)
    row = wait_state(monad, "s", "connected")
    api = ControlClient(Paths(monad_home))
    assert _call(api, "before")["content"][0]["text"] == "before"

    os.kill(row["pid"], signal.SIGKILL)
    wait_for(lambda: status_of(monad, "s")["state"] in ("backoff", "connecting"), timeout=10)
    out = _call(api, "while it restarts")  # waits for the restart instead of failing at once
    assert out["content"][0]["text"] == "while it restarts" and not out["isError"], out
    assert status_of(monad, "s")["pid"] != row["pid"]

    # Now it cannot come back: its command hangs before answering, its connect timeout is 2 s.
    _atom(monad_home, "--hang", timeout=2)
    wait_for(lambda: status_of(monad, "s")["state"] in ("backoff", "connecting"), timeout=15)
    with pytest.raises(NotConnected) as failed:
        _call(api, "never")
    assert "server `s` did not come back within its connect timeout (2 s)" in failed.value.message, failed.value

    rows = [(r["exposed"], r["outcome"]) for r in _calls(monad)]
    assert rows == [("s__echo", "ok"), ("s__echo", "ok"), ("s__echo", "error")], rows
    assert "did not come back" in _calls(monad)[-1]["error"]


def test_calls_refused_by_the_cli_or_the_supervisor_have_their_rows(supervisor: Any, monad_home: Path) -> None:
    monad = supervisor
    _atom(monad_home)
    wait_state(monad, "s", "connected")
    r = monad("mcp", "call", "s__nope", "--yes")
    assert r.code == 1 and "s__nope" in r.err, r
    r = monad("mcp", "call", "s__echo", "--args-json", '{"text": 5}', "--yes")
    assert r.code == 2, r
    r = monad("mcp", "disable", "s")
    assert r.code == 0, r
    wait_state(monad, "s", "disabled")
    r = monad("mcp", "call", "s__echo", "--arg", "text=hi", "--yes")
    assert r.code == 1 and "disabled" in r.err and len(r.err.strip().splitlines()) == 1, r
    rows = [(r["exposed"], r["outcome"], r["decidedBy"]) for r in _calls(monad)]
    assert rows == [("s__nope", "refused", "monad (not_found)"), ("s__echo", "refused", "monad (invalid_input)"),
                    ("s__echo", "refused", "monad (not_found)")], rows
