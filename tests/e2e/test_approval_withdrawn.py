"""A call waiting for approval whose server goes away (`monad mcp remove`, `disable`) ends at
once with what happened and what to do, not after the approval timeout; the approval leaves
`monad approvals`, and deciding its id afterwards says it is gone (nothing is granted for a
server that is no longer there). Real supervisor, tests/servers/lighttoolserver.py."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from monad_cli.core.errors import MonadError
from tests.conftest import LIGHTTOOLSERVER, wait_for, wait_state, write_atom
from tests.e2e.test_tools import add, calls, pending, popen_monad

pytestmark = pytest.mark.e2e

EXPECTED = {
    "remove": "the call to `ts__echo` was not sent: server `ts` was removed (`monad mcp remove`, or its definition "
              "deleted) while it waited for approval; it is no longer defined (see `monad mcp status`)",
    "disable": "the call to `ts__echo` was not sent: server `ts` was disabled while it waited for approval; "
               "`monad mcp enable ts` turns it on again",
}


@pytest.mark.parametrize("what", ["remove", "disable"])
def test_a_waiting_call_ends_when_its_server_goes_away(supervisor: Any, what: str) -> None:
    monad = supervisor
    add(monad, "ts")
    wait_state(monad, "ts", "connected")
    proc = popen_monad("mcp", "call", "ts__echo", "--arg", "text=pending", "--approval-timeout", "60")
    p = wait_for(lambda: pending(monad))[0]
    assert p["exposed"] == "ts__echo"

    r = monad("mcp", what, "ts")
    assert r.code == 0, r
    started = time.monotonic()
    out, err = proc.communicate(timeout=30)
    assert time.monotonic() - started < 10  # at once, not after the 60 s approval timeout
    assert (proc.returncode, out) == (1, ""), err
    assert err.strip().splitlines()[-1] == f"error: {EXPECTED[what]}", err
    assert pending(monad) == []

    r = monad("approvals", "allow", p["id"])
    assert r.code != 0 and f"approval `{p['id']}` is gone: server `ts` was" in r.err, r
    row = [c for c in calls(monad) if c["tool"] == "echo"]
    assert [(c["outcome"], c["decision"]) for c in row] == [("refused", "withdrawn")], row


def test_a_waiting_call_ends_when_its_tool_is_no_longer_listed(supervisor: Any, monad_home: Path) -> None:
    """The same when the server's tools change so the tool is gone (its definition edited: the
    reconnected server lists no `steps`); a caller at the prompt (`approval: check`, then
    `decided`) is told the same once it answers."""
    from monad_cli.cli.control import ControlClient
    from monad_cli.core.paths import paths

    monad = supervisor
    atom = f"command = {json.dumps(sys.executable)}\nargs = {json.dumps([LIGHTTOOLSERVER, '--progress'])}\n"
    write_atom(monad_home, "ts", atom)
    wait_state(monad, "ts", "connected")
    proc = popen_monad("mcp", "call", "ts__steps", "--arg", "n=1", "--approval-timeout", "60")
    wait_for(lambda: pending(monad))
    api = ControlClient(paths())
    asked = api.post("/v1/tools/call", {"name": "ts__steps", "arguments": {"n": 2}, "via": "test",
                                        "approval": {"mode": "check"}})["approvalRequired"]

    write_atom(monad_home, "ts", atom.replace(", \"--progress\"", ""))
    out, err = proc.communicate(timeout=30)
    assert out == "", out
    why = ("server `ts` no longer lists tool `steps` (its tools changed while the call waited for approval; see "
           "`monad mcp tools ts`)")
    assert (proc.returncode, err.strip().splitlines()[-1]) == (1, f"error: the call to `ts__steps` was not sent: {why}")
    assert pending(monad) == []
    with pytest.raises(MonadError) as gone:
        api.post("/v1/tools/call", {"name": "ts__steps", "arguments": {"n": 2}, "via": "test",
                                    "approval": {"mode": "decided", "approvalId": asked["id"], "grant": "once"}})
    assert gone.value.message == f"the call to `ts__steps` was not sent: {why}"
    rows = [(c["outcome"], c["decision"]) for c in calls(monad) if c["tool"] == "steps"]
    assert rows.count(("refused", "withdrawn")) == 2, rows
