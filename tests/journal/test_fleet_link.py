"""The fleet link in-process, against a real PostgreSQL (tests/pg.py): queued rows reach
the shared journal once, in order, also when a batch is shipped twice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from monad_cli.core.paths import Paths
from monad_cli.journal import tools as jt
from monad_cli.journal.db import Journal
from monad_cli.journal.settings import load_journal_settings
from tests.conftest import wait_for


def open_journal(home: Path, pg: Any, host: str) -> Journal:
    env = {"MONAD_JOURNAL_URL": pg.url, "MONAD_TEST_PG_PASSWORD": pg.password, "MONAD_HOST": host}
    settings = load_journal_settings(Paths(home), env)
    j = Journal(home / "journal.db", settings=settings)
    link = j.start_link()
    assert link is not None
    link.interval = 0.2
    return j


def drained(j: Journal) -> bool:
    st = j.status()
    return st["state"] == "ok" and st["queued"] == 0


def test_rows_reach_the_shared_journal_once_with_their_origin(pg: Any, tmp_path: Path) -> None:
    j = open_journal(tmp_path / "a", pg, "host-a")
    try:
        for i in range(30):
            j.record("daemon", reason=f"row {i}")
        cid = jt.start_call(j, server="s", tool="t", exposed="s__t", arguments={"x": 1}, via="api")
        jt.finish_call(j, cid, outcome="ok", decision="approved", decided_by="test", duration_ms=1.5)
        wait_for(lambda: drained(j))
    finally:
        j.close()
    rows = pg.query("SELECT reason, host, home FROM events WHERE kind = 'daemon' ORDER BY id")
    assert [r[0] for r in rows] == [f"row {i}" for i in range(30)]  # in the order written
    assert {(r[1], r[2]) for r in rows} == {("host-a", str(tmp_path / "a"))}
    calls = pg.query("SELECT outcome, decided_by FROM tool_calls")
    assert calls == [("ok", "test")]  # the finished revision, one row
    assert pg.query("SELECT count(*) FROM migrations") == [(len(__import__("monad_cli.journal.schema",
                                                                             fromlist=["MIGRATIONS"]).MIGRATIONS),)]


def test_a_write_behind_outcome_takes_its_rev_when_it_commits_and_close_ships_it(pg: Any, tmp_path: Path) -> None:
    """A gateway call's outcome row waits in `Journal.defer`; its `rev` is the table's next
    when it commits (so the link's cursor cannot pass it), and `close` writes it before the
    link's last round."""
    import sqlite3

    j = open_journal(tmp_path / "a", pg, "host-a")
    try:
        first = jt.start_call(j, server="s", tool="t", exposed="s__t", arguments={"i": 1}, via="gateway")
        wait_for(lambda: drained(j))  # the intent row is shipped: the link's cursor is past it
        jt.finish_call(j, first, outcome="ok", decided_by="test", defer=True)
        second = jt.start_call(j, server="s", tool="t", exposed="s__t", arguments={"i": 2}, via="gateway")
        with sqlite3.connect(tmp_path / "a" / "journal.db") as db:
            revs = dict(db.execute("SELECT id, rev FROM tool_calls").fetchall())
        assert revs == {first: 2, second: 3}  # the outcome committed first, in the second intent's transaction
        jt.finish_call(j, second, outcome="tool-error", decided_by="test", defer=True)
    finally:
        j.close()  # no flush before it: close writes the deferred outcome, then the link ships it
    assert pg.query("SELECT outcome FROM tool_calls ORDER BY id") == [("ok",), ("tool-error",)]


def test_a_batch_shipped_twice_is_written_once(pg: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The link dies between the shared commit and moving its cursor: the same rows go again."""
    j = open_journal(tmp_path / "a", pg, "host-a")
    link = j.link
    assert link is not None
    real = link._save_cursor
    failures = {"left": 1}

    def flaky(cursor: dict[str, int]) -> None:
        if cursor["tool_calls"] > 0 and failures["left"]:
            failures["left"] -= 1
            raise OSError("the link died after the shared commit")
        real(cursor)

    try:
        wait_for(lambda: drained(j))
        monkeypatch.setattr(link, "_save_cursor", flaky)
        cids = [jt.start_call(j, server="s", tool="t", exposed="s__t", arguments={"i": i}, via="api")
                for i in range(10)]
        wait_for(lambda: failures["left"] == 0)
        for cid in cids:
            jt.finish_call(j, cid, outcome="ok")
        wait_for(lambda: drained(j))
    finally:
        j.close()
    rows = pg.query("SELECT count(*), count(DISTINCT uid), count(*) FILTER (WHERE outcome = 'ok') FROM tool_calls")
    assert rows == [(10, 10, 10)]
    # The degraded spell is journaled, then its end.
    states = [r[0] for r in pg.query("SELECT state FROM events WHERE kind = 'journal' ORDER BY id")]
    assert states[-2:] == ["degraded", "ok"]


def test_a_restarted_link_resumes_at_its_cursor_and_a_lost_cursor_ships_again(pg: Any, tmp_path: Path) -> None:
    j = open_journal(tmp_path / "a", pg, "host-a")
    for i in range(5):
        j.record("daemon", reason=f"first {i}")
    wait_for(lambda: drained(j))
    j.close()
    j = open_journal(tmp_path / "a", pg, "host-a")  # resumes: nothing queued, nothing shipped again
    assert j.link is not None and j.link.cursor["events"] > 0
    j.record("daemon", reason="second")
    wait_for(lambda: drained(j))
    j.close()
    (tmp_path / "a" / "journal.cursor.json").unlink()
    j = open_journal(tmp_path / "a", pg, "host-a")  # every row again: idempotent by uid
    wait_for(lambda: drained(j))
    j.close()
    reasons = [r for (r,) in pg.query("SELECT reason FROM events WHERE kind = 'daemon' ORDER BY ts")]
    assert reasons == [f"first {i}" for i in range(5)] + ["second"]


def test_three_links_migrating_at_the_same_instant_apply_each_migration_once(pg: Any, tmp_path: Path) -> None:
    import threading

    from monad_cli.journal.fleet import FleetLink
    from monad_cli.journal.schema import MIGRATIONS

    journals = []
    for n in "abc":
        env = {"MONAD_JOURNAL_URL": pg.url, "MONAD_TEST_PG_PASSWORD": pg.password, "MONAD_HOST": f"host-{n}"}
        settings = load_journal_settings(Paths(tmp_path / n), env)
        journals.append(Journal(tmp_path / n / "journal.db", settings=settings))
    links = [FleetLink(j, j.settings) for j in journals]
    barrier = threading.Barrier(3)
    errors: list[BaseException] = []

    def connect(link: FleetLink) -> None:
        barrier.wait()
        try:
            link._connect()
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=connect, args=(link,)) for link in links]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    try:
        assert errors == []
        applied = sorted((link.applied or [] for link in links), key=len)
        assert applied == [[], [], [name for name, _ in MIGRATIONS]]  # one migrated, two found it done
        assert pg.query("SELECT count(*), count(DISTINCT name) FROM migrations") == [(len(MIGRATIONS),) * 2]
    finally:
        for link in links:
            link.stop()
        for j in journals:
            j.close()
