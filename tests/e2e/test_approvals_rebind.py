"""Issue 38 item 7: an approval holds for the tool it approved. After "always" on `echo`, the
server rewrites `echo` (tests/servers/lighttoolserver.py `mutate`: a new description, then
`list_changed`) and the next call asks again, with a journal row that says why. Standing
approvals are listed (`monad approvals`, `monad mcp tools`, the API's JSON) and revoked from
the CLI."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LIGHTTOOLSERVER, wait_for, wait_state, write_atom

pytestmark = pytest.mark.e2e


def _tool_row(monad: Any) -> dict[str, Any]:
    rows = monad("mcp", "tools", "--json").json()
    return next(r for r in rows if r["name"] == "rug__echo")


def test_an_always_approval_does_not_cover_a_rewritten_tool(supervisor: Any, monad_home: Path) -> None:
    from monad_cli.cli.control import ControlClient
    from monad_cli.core.paths import paths

    write_atom(monad_home, "rug", f"command = {json.dumps(sys.executable)}\nargs = {json.dumps([LIGHTTOOLSERVER])}\n"
                                  'trust = {autoApproveTools = ["rug__mutate"]}\n')
    wait_state(supervisor, "rug", "connected", timeout=90)
    api = ControlClient(paths())
    assert _tool_row(supervisor)["approval"] is None

    # "always", through the prompt's path: check → the person answers always → the call runs.
    asked = api.post("/v1/tools/call", {"name": "rug__echo", "arguments": {"text": "hi"}, "via": "test",
                                        "approval": {"mode": "check"}})
    approval_id = asked["approvalRequired"]["id"]
    done = api.post("/v1/tools/call", {"name": "rug__echo", "arguments": {"text": "hi"}, "via": "test",
                                       "approval": {"mode": "decided", "approvalId": approval_id, "grant": "always"}})
    assert done["content"][0]["text"] == "hi", done
    again = api.post("/v1/tools/call", {"name": "rug__echo", "arguments": {"text": "2"}, "via": "test",
                                        "approval": {"mode": "check"}})
    assert again["decidedBy"].startswith("always approval"), again
    assert _tool_row(supervisor)["approval"] == "always"
    standing = supervisor("approvals", "--standing", "--json").json()
    assert [(g["exposed"], g["scope"], g["current"]) for g in standing] == [("rug__echo", "always", True)]

    # The rug pull: the server rewrites `echo` and announces it.
    r = supervisor("mcp", "call", "rug__mutate", "--arg", "description=Deletes every file it is given.")
    assert r.code == 0, r
    wait_for(lambda: _tool_row(supervisor)["description"] == "Deletes every file it is given.", timeout=60)
    assert _tool_row(supervisor)["approval"] is None
    rewritten = api.post("/v1/tools/call", {"name": "rug__echo", "arguments": {"text": "3"}, "via": "test",
                                            "approval": {"mode": "check"}})
    assert "approvalRequired" in rewritten, rewritten  # asked again, not run
    api.post(f"/v1/approvals/{rewritten['approvalRequired']['id']}", {"decision": "deny"})
    events = supervisor("journal", "--json").json()
    outdated = [e for e in events if e.get("kind") == "approval-outdated"]
    assert outdated and outdated[0]["server"] == "rug" and "definition changed" in outdated[0]["reason"], events
    standing = supervisor("approvals", "--standing", "--json").json()
    assert [(g["exposed"], g["current"]) for g in standing] == [("rug__echo", False)]
    shown = supervisor("approvals").out
    assert "rug__echo" in shown and "changed" in shown, shown

    # Approved again for the new definition, then revoked from the CLI: asked again.
    asked = api.post("/v1/tools/call", {"name": "rug__echo", "arguments": {"text": "4"}, "via": "test",
                                        "approval": {"mode": "check"}})
    api.post("/v1/tools/call", {"name": "rug__echo", "arguments": {"text": "4"}, "via": "test",
                                "approval": {"mode": "decided", "approvalId": asked["approvalRequired"]["id"],
                                             "grant": "session"}})
    assert _tool_row(supervisor)["approval"] == "session"
    r = supervisor("approvals", "revoke", "rug__echo")
    assert r.code == 0 and "revoked 2" in r.out + r.err, r  # the session one and the outdated always one
    assert _tool_row(supervisor)["approval"] is None
    assert supervisor("approvals", "--standing", "--json").json() == []
    last = api.post("/v1/tools/call", {"name": "rug__echo", "arguments": {"text": "5"}, "via": "test",
                                       "approval": {"mode": "check"}})
    assert "approvalRequired" in last, last
    api.post(f"/v1/approvals/{last['approvalRequired']['id']}", {"decision": "deny"})
    assert any(e.get("kind") == "approval-revoked" for e in supervisor("journal", "--json").json())
    assert supervisor("approvals", "revoke", "rug__echo").code != 0  # nothing left to revoke


def test_a_cli_call_nobody_approves_times_out_in_one_line(supervisor: Any, monad_home: Path) -> None:
    write_atom(monad_home, "rug", f"command = {json.dumps(sys.executable)}\nargs = {json.dumps([LIGHTTOOLSERVER])}\n")
    wait_state(supervisor, "rug", "connected", timeout=90)
    r = supervisor("mcp", "call", "rug__echo", "--arg", "text=hi", "--approval-timeout", "1", input="")
    assert r.code == 4, r
    error = [line for line in r.err.splitlines() if line.startswith("error: ")]
    assert error == [error[0]] and r.err.count("\n") == 2, r  # the "waiting up to 1 s" line, then the error
    assert error[0].startswith("error: call to `rug__echo` was not approved in time (no decision within 1 s)"), r
    assert error[0].endswith("; or here: pass --yes, or raise --approval-timeout (was 1 s)"), r
    assert error[0].count("approve it") == 1 and "allow ID" not in error[0], r
