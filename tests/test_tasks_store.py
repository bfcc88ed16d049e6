"""The tasks journal table: 7-day cleanup with an injected clock, delivery taken once."""

from __future__ import annotations

from pathlib import Path

from monad_cli.journal.db import Journal
from monad_cli.tasks.store import RETENTION_S, TaskStore


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def test_terminal_rows_are_removed_after_seven_days(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.db")
    clock = Clock(1_000_000.0)
    store = TaskStore(journal, clock=clock)
    for i, state in enumerate(["completed", "failed", "cancelled", "working", "queued"]):
        store.insert(id=f"t{i}", server="s", tool="slow", arguments={}, correlation=None, state="queued")
        if state in ("completed", "failed", "cancelled"):
            store.update(f"t{i}", state=state, terminal_at=clock())
        else:
            store.update(f"t{i}", state=state)
    clock.t += RETENTION_S - 1  # one second short of 7 days: nothing goes
    assert store.cleanup() == 0
    assert len(store.rows()) == 5
    store.insert(id="late", server="s", tool="slow", arguments={}, correlation=None, state="queued")
    store.update("late", state="completed", terminal_at=clock())
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
    store.update("a", state="completed", delivery_pending=True, pending_kind="result", terminal_at=5.0)
    assert store.take_delivery("a") is True
    assert store.take_delivery("a") is False
    row = store.get("a")
    assert row is not None and row.deliveries == 1 and not row.delivery_pending
    journal.close()
