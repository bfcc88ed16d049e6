"""Every call attempt has its intent and outcome rows (issue 26), also the ones that end
before a server sees them: a call whose first step is `approval: check` (the CLI's, before it
asks the person), followed up or not, and an MCP App's call of a tool that does not exist.
The real supervisor, the control API, and a server of our own (tests/servers/listfaultserver.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import wait_state
from tests.e2e.test_list_faults import add_list_faults

pytestmark = pytest.mark.e2e


def _rows(monad: Any, exposed: str) -> list[dict[str, Any]]:
    r = monad("journal", "--calls", "--json")
    assert r.code == 0, r
    return [c for c in r.json() if c["exposed"] == exposed]


def test_a_checked_call_has_one_pair_of_rows_followed_up_withdrawn_or_not(supervisor: Any) -> None:
    from monad_cli.cli.control import ControlClient
    from monad_cli.core.paths import paths

    add_list_faults(supervisor, "gate")
    wait_state(supervisor, "gate", "connected", timeout=60)
    api = ControlClient(paths())
    body: dict[str, Any] = {"name": "gate__echo", "arguments": {"text": "one"}, "via": "cli",
                            "approval": {"mode": "check"}}

    # The first step alone: the intent row is there while the person is asked.
    first = api.post("/v1/tools/call", body)["approvalRequired"]
    [row] = _rows(supervisor, "gate__echo")
    assert row["outcome"] == "running" and row["via"] == "cli", row
    # The caller gave up at the prompt: the same row, finished.
    api.post(f"/v1/approvals/{first['id']}", {"decision": "withdraw"})
    [row] = _rows(supervisor, "gate__echo")
    assert row["outcome"] == "cancelled" and row["decidedBy"] == "the caller withdrew it", row

    # Checked, then allowed once: one call, one pair of rows, with the decision.
    second = api.post("/v1/tools/call", body)["approvalRequired"]
    answer = api.post("/v1/tools/call", {**body, "approval": {"mode": "decided", "approvalId": second["id"],
                                                              "grant": "once"}})
    assert answer["content"][0]["text"] == "one", answer
    rows = _rows(supervisor, "gate__echo")
    assert len(rows) == 2, rows
    done = next(r for r in rows if r["id"] == answer["callId"])
    assert done["outcome"] == "ok" and done["decision"] == "approved", done
    assert done["decidedBy"].startswith("cli prompt"), done

    # Checked, then denied: the same.
    third = api.post("/v1/tools/call", body)["approvalRequired"]
    with pytest.raises(Exception, match="denied"):
        api.post("/v1/tools/call", {**body, "approval": {"mode": "decided", "approvalId": third["id"],
                                                         "grant": "deny"}})
    rows = _rows(supervisor, "gate__echo")
    assert len(rows) == 3 and sorted(r["outcome"] for r in rows) == ["cancelled", "ok", "refused"], rows
    assert not [r for r in rows if r["outcome"] == "running"], rows
