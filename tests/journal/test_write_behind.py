"""The journal's write-behind queue (`Journal.defer`) with writers on several threads: the
event loop defers gateway outcome rows while the fleet link's thread journals its state and
the Studio's worker threads read calls (every read flushes). Each deferred statement must be
written exactly once."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from monad_cli.journal.db import Journal

N = 2000
DEFERRED = "INSERT INTO events (ts, kind, reason, rev) VALUES (?, 'deferred', ?, 0)"


@pytest.fixture
def often_switching() -> Iterator[None]:
    """Threads switch every microsecond (not every 5 ms): a race between a transaction's
    COMMIT and its taking the statements off the queue shows up within a couple of thousand rows
    (measured: 2000 deferred rows, ~100 written twice and ~20 dropped before the queue's lock)."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


@pytest.mark.usefixtures("often_switching")
def test_deferred_statements_land_once_while_other_threads_write(tmp_path: Path) -> None:
    j = Journal(tmp_path / "journal.db")
    stop = threading.Event()
    errors: list[BaseException] = []

    def writer(k: int) -> None:
        try:
            while not stop.is_set():
                j.flush()
                j.record("daemon", reason=f"thread {k}")
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    try:
        for i in range(N):
            j.defer(DEFERRED, (time.time(), str(i)))
            if i % 10 == 0:
                time.sleep(0.0005)  # let the writers take turns with the queue
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    try:
        assert errors == []
        j.flush()
        assert j.deferred == []
        reasons = [e["reason"] for e in j.events(kinds=["deferred"], limit=10 * N)]
        assert sorted(reasons, key=int) == [str(i) for i in range(N)]  # none dropped, none twice
    finally:
        j.close()


def test_a_failed_transaction_keeps_its_deferred_statements_for_the_next(tmp_path: Path) -> None:
    j = Journal(tmp_path / "journal.db")
    try:
        j.defer(DEFERRED, (time.time(), "kept"))
        try:
            j.write("INSERT INTO no_such_table (x) VALUES (?)", (1,))
        except Exception:  # the statement is meant to fail
            pass
        else:
            raise AssertionError("the bad statement was written")
        assert len(j.deferred) == 1  # rolled back with the bad statement, still queued
        assert j.flush() == 1
        assert [e["reason"] for e in j.events(kinds=["deferred"])] == ["kept"]
    finally:
        j.close()


def test_a_batch_of_events_is_one_transaction(tmp_path: Path) -> None:
    """`record(later=True)` queues an event for the next write: the gateway's reads and gets
    that pile up are written with the last of them, in one transaction, in order."""
    j = Journal(tmp_path / "journal.db")
    transactions: list[float] = []
    j.on_write = transactions.append
    try:
        for i, uri in enumerate(("note://a", "note://b", "note://c")):
            j.record("resource.read", server="r", detail={"uri": uri}, later=i < 2)
        assert len(transactions) == 1 and not j.deferred
        rows = j.events(kinds=["resource.read"])
        assert [e["detail"]["uri"] for e in rows] == ["note://a", "note://b", "note://c"]
    finally:
        j.close()
