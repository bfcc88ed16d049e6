"""Folding a task snapshot into its row (`tasks.snapshot.fold_snapshot`, a pure function),
and the task state machine (`tasks.states`): table tests."""

from __future__ import annotations

from typing import Any

import pytest

from monad_cli.core.task_states import (
    ACTIVE,
    INITIAL,
    MCP_STATUSES,
    OPEN,
    TERMINAL,
    TRANSITIONS,
    IllegalTransition,
    TaskState,
    can_transition,
    check_transition,
)
from monad_cli.daemon.tasks.snapshot import Fold, RowView, fold_snapshot

NOW = 1_700_000_000.0
FORM = {"method": "elicitation/create", "params": {"message": "who?", "requestedSchema": {
    "type": "object", "properties": {"name": {"type": "string"}}}}}
RESULT = {"content": [{"type": "text", "text": "done"}], "isError": False}
ERROR = {"code": -32603, "message": "boom"}


def row(state: str = "working", **kw: Any) -> RowView:
    return RowView(id="0123456789abcdef", tool="slow", state=state, **kw)


def task(status: str, **kw: Any) -> dict[str, Any]:
    return {"taskId": "srv-1", "status": status, **kw}


J = "task 0123456789ab (slow) {} via tasks/get"
CASES: list[tuple[str, RowView, dict[str, Any], dict[str, Any], str | None, bool, str | None]] = [
    # name, row, snapshot -> changes, journal text, ended, deliver
    ("created: submitting -> working", row("submitting"),
     task("working", ttlMs=60000, pollIntervalMs=100, createdAt="2026-01-01T00:00:00Z"),
     {"state": "working", "status_message": None, "ttl_ms": 60000, "poll_interval_ms": 100,
      "input_requests": None}, J.format("working"), False, None),
    ("working again: a new message, no journal row", row("working"),
     task("working", statusMessage="50%"),
     {"state": "working", "status_message": "50%", "input_requests": None}, None, False, None),
    ("ttlMs null is recorded, a non-integer pollIntervalMs is not", row("working"),
     task("working", ttlMs=None, pollIntervalMs="fast"),
     {"state": "working", "status_message": None, "ttl_ms": None, "input_requests": None}, None, False, None),
    ("completed with its result", row("working"), task("completed", result=RESULT),
     {"state": "completed", "status_message": None, "result": RESULT, "error": None, "terminal_at": NOW,
      "input_requests": None, "delivery_pending": True, "pending_kind": "result"},
     J.format("completed"), True, "result"),
    ("a tool error is completed too", row("working"),
     task("completed", result={**RESULT, "isError": True}),
     {"state": "completed", "status_message": None, "result": {**RESULT, "isError": True}, "error": None,
      "terminal_at": NOW, "input_requests": None, "delivery_pending": True, "pending_kind": "result"},
     J.format("completed"), True, "result"),
    ("failed with its error", row("input_required", input_requests={"a": FORM}, pending_kind="input"),
     task("failed", error=ERROR, statusMessage="gave up"),
     {"state": "failed", "status_message": "gave up", "result": None, "error": ERROR, "terminal_at": NOW,
      "input_requests": None, "delivery_pending": True, "pending_kind": "result"},
     J.format("failed"), True, "result"),
    ("cancelled carries no payload", row("working"), task("cancelled"),
     {"state": "cancelled", "status_message": None, "result": None, "error": None, "terminal_at": NOW,
      "input_requests": None, "delivery_pending": True, "pending_kind": "result"},
     J.format("cancelled"), True, "result"),
    ("new input request: an input delivery", row("working"), task("input_required", inputRequests={"a": FORM}),
     {"state": "input_required", "status_message": None, "input_requests": {"a": FORM},
      "delivery_pending": True, "pending_kind": "input"}, J.format("input_required"), False, "input"),
    ("the same request again: nothing new to deliver",
     row("input_required", input_requests={"a": FORM}, pending_kind="input"),
     task("input_required", inputRequests={"a": FORM}),
     {"state": "input_required", "status_message": None, "input_requests": {"a": FORM}}, None, False, None),
    ("a second request besides the outstanding one", row("input_required", input_requests={"a": FORM}),
     task("input_required", inputRequests={"a": FORM, "b": FORM}),
     {"state": "input_required", "status_message": None, "input_requests": {"a": FORM, "b": FORM},
      "delivery_pending": True, "pending_kind": "input"}, None, False, "input"),
    ("an answered request listed again is not outstanding",
     row("input_required", input_requests={"b": FORM}, answered_keys=frozenset({"a"}), pending_kind="input"),
     task("input_required", inputRequests={"a": FORM, "b": FORM}),
     {"state": "input_required", "status_message": None, "input_requests": {"b": FORM}}, None, False, None),
    ("all requests answered: the input delivery is withdrawn",
     row("input_required", input_requests={}, answered_keys=frozenset({"a"}), pending_kind="input"),
     task("input_required", inputRequests={"a": FORM}),
     {"state": "input_required", "status_message": None, "input_requests": {},
      "delivery_pending": False, "pending_kind": None}, None, False, None),
    ("malformed inputRequests count as none", row("working"), task("input_required", inputRequests=["a"]),
     {"state": "input_required", "status_message": None, "input_requests": {}}, J.format("input_required"),
     False, None),
    ("back to working: requests gone, the input delivery withdrawn",
     row("input_required", input_requests={"a": FORM}, pending_kind="input"), task("working"),
     {"state": "working", "status_message": None, "input_requests": None, "delivery_pending": False,
      "pending_kind": None}, J.format("working"), False, None),
]


@pytest.mark.parametrize(("view", "snap", "changes", "journal", "ended", "deliver"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_fold(view: RowView, snap: dict[str, Any], changes: dict[str, Any], journal: str | None, ended: bool,
              deliver: str | None) -> None:
    out = fold_snapshot(view, snap, NOW)
    assert out.changes == changes
    assert out.journal == journal
    assert out.ended is ended
    assert out.deliver == deliver
    assert out.poll_now is False
    assert out.state == snap["status"]


@pytest.mark.parametrize("snap", [task("completed"), task("failed", statusMessage="x"),
                                  task("completed", error=ERROR), task("failed", result=RESULT)],
                         ids=["completed", "failed", "completed-with-error-only", "failed-with-result-only"])
@pytest.mark.parametrize("state", ["submitting", "working", "input_required"])
def test_a_bare_terminal_task_is_fetched_not_recorded(snap: dict[str, Any], state: str) -> None:
    # A CreateTaskResult, or a notification with the status alone, carries no payload.
    assert fold_snapshot(row(state), snap, NOW) == Fold(poll_now=True)


@pytest.mark.parametrize("state", ["completed", "failed", "cancelled"])
@pytest.mark.parametrize("snap", [task("working"), task("input_required", inputRequests={"a": FORM}),
                                  task("completed", result=RESULT), task("failed", error=ERROR),
                                  task("cancelled"), task("completed")])
def test_terminal_is_sticky(state: str, snap: dict[str, Any]) -> None:
    out = fold_snapshot(row(state, pending_kind="result"), snap, NOW)
    assert out == Fold() and not out.changes and out.journal is None and not out.poll_now


@pytest.mark.parametrize("snap", [{"taskId": "srv-1"}, task("running"), task("COMPLETED", result=RESULT),
                                  {"taskId": "srv-1", "status": 3}, task("queued"), task("submitting")],
                         ids=["no-status", "unknown", "wrong-case", "not-a-string", "monads-own-queued",
                              "monads-own-submitting"])
def test_a_status_that_is_not_an_mcp_task_status_changes_nothing(snap: dict[str, Any]) -> None:
    assert fold_snapshot(row("working"), snap, NOW) == Fold()


def test_a_row_not_sent_yet_ignores_snapshots() -> None:
    # Only a row that went out can have a server task; a snapshot cannot skip `submitting`.
    assert fold_snapshot(row("queued"), task("working"), NOW) == Fold()


def test_the_source_is_named_in_the_journal_text() -> None:
    out = fold_snapshot(row("submitting"), task("working"), NOW, source="notification")
    assert out.journal == "task 0123456789ab (slow) working via notification"


def test_the_row_view_decodes_the_json_columns() -> None:
    class Row:
        id, tool, state, pending_kind = "r1", "ask", "input_required", "input"
        input_requests, answered_keys = '{"a": {"method": "elicitation/create"}}', '["b"]'

    view = RowView.of(Row())
    assert view.input_requests == {"a": {"method": "elicitation/create"}}
    assert view.answered_keys == frozenset({"b"})
    Row.input_requests, Row.answered_keys = None, None
    assert RowView.of(Row()).input_requests == {} and RowView.of(Row()).answered_keys == frozenset()


# -- the state machine ---------------------------------------------------------------------
def test_the_sets_partition_the_states() -> None:
    assert ACTIVE | {TaskState.QUEUED} == OPEN
    assert set(TaskState) == OPEN | TERMINAL and not OPEN & TERMINAL
    assert set(TaskState) - {TaskState.QUEUED, TaskState.SUBMITTING} == MCP_STATUSES
    assert {TaskState.QUEUED, TaskState.SUBMITTING} == INITIAL
    assert [str(s) for s in TaskState] == ["queued", "submitting", "working", "input_required", "completed",
                                           "failed", "cancelled"]


ALLOWED = {
    ("queued", "submitting"), ("queued", "cancelled"),
    ("submitting", "queued"), ("submitting", "working"), ("submitting", "input_required"),
    ("submitting", "completed"), ("submitting", "failed"), ("submitting", "cancelled"),
    ("working", "working"), ("working", "input_required"), ("working", "completed"), ("working", "failed"),
    ("working", "cancelled"),
    ("input_required", "input_required"), ("input_required", "working"), ("input_required", "completed"),
    ("input_required", "failed"), ("input_required", "cancelled"),
}


@pytest.mark.parametrize("old", list(TaskState))
@pytest.mark.parametrize("new", list(TaskState))
def test_every_transition_is_listed(old: TaskState, new: TaskState) -> None:
    allowed = (str(old), str(new)) in ALLOWED
    assert (new in TRANSITIONS[old]) is allowed
    assert can_transition(str(old), str(new)) is allowed
    if allowed:
        check_transition(old, new)
    else:
        with pytest.raises(IllegalTransition, match=f"{old} -> {new}"):
            check_transition(old, new)


def test_unknown_states_never_transition() -> None:
    assert not can_transition("working", "running")
    assert not can_transition("running", "working")
