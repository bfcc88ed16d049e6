"""The tasks journal table: 7-day cleanup with an injected clock, delivery taken once, and
every state change checked against the allowed transitions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from monad_cli.core.task_states import IllegalTransition, TaskState
from monad_cli.daemon.tasks.store import RETENTION_S, TaskStore
from monad_cli.journal.db import Journal


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def advance(store: TaskStore, row_id: str, state: str, **fields: Any) -> None:
    """A queued row sent and moved to `state`, as the manager would."""
    if state != "queued":
        store.update(row_id, state="submitting")
    if state not in ("queued", "submitting"):
        store.update(row_id, state=state, **fields)


def test_terminal_rows_are_removed_after_seven_days(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.db")
    clock = Clock(1_000_000.0)
    store = TaskStore(journal, clock=clock)
    for i, state in enumerate(["completed", "failed", "cancelled", "working", "queued"]):
        store.insert(id=f"t{i}", server="s", tool="slow", arguments={}, correlation=None, state="queued")
        advance(store, f"t{i}", state, **({"terminal_at": clock()} if state in ("completed", "failed", "cancelled")
                                           else {}))
    clock.t += RETENTION_S - 1  # one second short of 7 days: nothing goes
    assert store.cleanup() == 0
    assert len(store.rows()) == 5
    store.insert(id="late", server="s", tool="slow", arguments={}, correlation=None, state="queued")
    advance(store, "late", "completed", terminal_at=clock())
    clock.t += 2  # the first three ended 7 days + 1 s ago
    assert store.cleanup() == 3
    assert sorted(r.id for r in store.rows()) == ["late", "t3", "t4"]  # open rows are never removed
    clock.t += RETENTION_S
    assert store.cleanup() == 1
    assert sorted(r.id for r in store.rows()) == ["t3", "t4"]
    journal.close()


def test_a_pending_delivery_is_taken_once(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.db")
    store = TaskStore(journal, clock=Clock(5.0))
    store.insert(id="a", server="s", tool="slow", arguments={"x": 1}, correlation=None, state="queued")
    assert store.take_delivery("a") is False  # nothing pending yet
    advance(store, "a", "completed", delivery_pending=True, pending_kind="result", terminal_at=5.0)
    assert store.take_delivery("a") is True
    assert store.take_delivery("a") is False
    row = store.get("a")
    assert row is not None and row.deliveries == 1 and not row.delivery_pending
    journal.close()


def test_state_changes_follow_the_transitions(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.db")
    store = TaskStore(journal, clock=Clock(5.0))
    with pytest.raises(IllegalTransition):
        store.insert(id="w", server="s", tool="slow", arguments={}, correlation=None, state="working")
    assert store.get("w") is None
    store.insert(id="a", server="s", tool="slow", arguments={}, correlation=None, state="queued")
    with pytest.raises(IllegalTransition):  # not sent yet: the server cannot have a task
        store.update("a", state="working", status_message="nope")
    row = store.get("a")
    assert row is not None and row.state == "queued" and row.status_message is None  # nothing written
    for state in ("submitting", "working", "input_required", "working", "completed"):
        store.update("a", state=TaskState(state))
    row = store.get("a")
    assert row is not None and row.state == "completed" and type(row.state) is str
    for later in ("working", "failed", "cancelled", "completed", "queued"):  # terminal is sticky
        with pytest.raises(IllegalTransition):
            store.update("a", state=later)
    store.update("a", status_message="other columns still change")
    row = store.get("a")
    assert row is not None and row.state == "completed" and row.status_message == "other columns still change"
    journal.close()
