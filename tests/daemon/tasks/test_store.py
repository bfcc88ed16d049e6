"""The tasks journal table: 7-day cleanup with an injected clock, delivery taken once, and
every state change checked against the allowed transitions."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from monad_cli.core.task_states import IllegalTransition, TaskState
from monad_cli.daemon.tasks.store import RETENTION_S, TaskStore
from monad_cli.journal.db import Journal
from tests.e2e.test_full_disk import small_disk

__all__ = ["small_disk"]  # the fixture, imported for the full-disk test


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


def test_on_a_full_disk_changes_are_held_bounded_read_back_and_written_when_space_returns(
        small_disk: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real 4 MiB tmpfs filled to the last byte (tests/e2e/test_full_disk.py; root only)."""
    import sqlite3

    from monad_cli.core.errors import DiskFull
    from monad_cli.daemon.tasks import store as store_module
    from tests.e2e.test_full_disk import fill

    monkeypatch.setattr(store_module, "HOLD_ROWS", 3)
    journal = Journal(small_disk / "journal.db")
    store = TaskStore(journal, clock=Clock(1_000_000.0))
    for i in range(5):
        store.insert(id=f"t{i}", server="s", tool="slow", arguments={}, correlation=None, state="queued")
        advance(store, f"t{i}", "working")
    store.update("t0", delivery_pending=True)
    filler = fill(small_disk)
    # Enough changes that the file needs new pages; each one is held, not raised.
    for i in range(5):
        store.update(f"t{i}", state="completed", terminal_at=1.0, result={"text": "x" * 3000})
    assert store.status()["state"] == "degraded" and len(store.held) == 3 and store.lost >= 1, store.status()
    # Reads see the held values: a task ended meanwhile is no longer open, nor listed as working.
    assert store.get("t0").state == "completed"  # type: ignore[union-attr]
    assert "t0" not in [r.id for r in store.open_rows()]
    assert "t0" not in [r.id for r in store.rows(states=["working"])]
    # Taken once, while held too.
    assert store.take_delivery("t0") is True and store.take_delivery("t0") is False
    with pytest.raises(DiskFull, match="the journal's disk takes no writes"):
        store.insert(id="new", server="s", tool="slow", arguments={}, correlation=None, state="queued")
    assert store.status()["refused"] == 1

    filler.unlink()
    assert store.retry() is True and store.status()["state"] == "ok" and store.held == {}
    journal.close()
    with sqlite3.connect(small_disk / "journal.db") as conn:
        states = dict(conn.execute("SELECT id, state FROM tasks").fetchall())
        delivered = conn.execute("SELECT delivery_pending, deliveries FROM tasks WHERE id = 't0'").fetchone()
    assert sum(1 for s in states.values() if s == "completed") >= 3 and "new" not in states, states
    assert delivered == (0, 1)
