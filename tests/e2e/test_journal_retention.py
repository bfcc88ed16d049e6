"""The journal's growth (docs/supervisor.md "The journal's growth"): `[journal] keep` (default
90 days), `monad journal prune`, the supervisor's daily round, and the space given back."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from monad_cli.daemon.retention import prune_once
from monad_cli.journal import retention
from monad_cli.journal import tools as jt
from monad_cli.journal.db import Journal
from monad_cli.journal.settings import JournalSettings
from tests.conftest import wait_for, write_atom

DAY = 86400.0


def _fill(j: Journal, *, old: int, new: int, tag: str = "") -> None:
    """`old` calls and events 100 days old (one of the calls still `running`), `new` of today,
    an "always" approval from long ago, and a finished task of each age."""
    now = time.time()
    pad = "x" * 400  # rows of a realistic size, so freed pages are many
    for i in range(old + new):
        ts = now - 100 * DAY if i < old else now
        cid = jt.start_call(j, server="s", tool="t", exposed="s__t", arguments={"i": i}, via="test")
        j.write("UPDATE tool_calls SET ts = ?, outcome = ?, error = ? WHERE id = ?",
                (ts, "running" if i == 0 else "ok", pad, cid))
        j.write("INSERT INTO events (ts, server, kind, reason, rev) VALUES (?, 's', 'state', ?, 0)", (ts, pad))
    j.write("INSERT INTO approvals (server, definition_hash, tool, created, decided_by, rev) "
            "VALUES ('s', 'h', 't', ?, 'me', 0)", (now - 400 * DAY,))
    for name, ts in ((f"old{tag}", now - 100 * DAY), (f"new{tag}", now)):
        j.write("INSERT INTO tasks (id, server, tool, state, created_at, updated_at, terminal_at, delivery_pending, "
                "deliveries, cancel_requested, recoveries, retries, submitted, adopted) "
                "VALUES (?, 's', 't', 'completed', ?, ?, ?, 0, 0, 0, 0, 0, 1, 0)", (name, ts, ts, ts))


def _count(path: Path, sql: str) -> int:
    with sqlite3.connect(path) as conn:
        return int(conn.execute(sql).fetchone()[0])


def test_monad_journal_prune_deletes_what_is_older_than_keep_and_gives_the_space_back(
        monad: Any, monad_home: Path) -> None:
    db = monad_home / "journal.db"
    j = Journal(db)
    _fill(j, old=3000, new=20)
    j.close()
    size = db.stat().st_size
    r = monad("journal", "prune", "--json")
    assert r.code == 0, r
    done = r.json()
    assert done["deleted"] == {"events": 3000, "tool_calls": 2999, "tasks": 1}, done
    assert done["reclaimed"]["mode"] == "incremental" and done["reclaimed"]["bytes"] > 0, done
    assert db.stat().st_size < size / 2
    # What is kept: today's rows, the call still running, trust, the unfinished history.
    assert _count(db, "SELECT count(*) FROM tool_calls") == 21
    assert _count(db, "SELECT count(*) FROM tool_calls WHERE outcome = 'running'") == 1
    assert _count(db, "SELECT count(*) FROM events") == 20
    assert _count(db, "SELECT count(*) FROM approvals") == 1
    assert _count(db, "SELECT count(*) FROM tasks") == 1
    r = monad("journal", "--calls", "--json", "-n", "50")
    assert r.code == 0 and len(r.json()) == 21, r
    # A second prune finds nothing; the words say so.
    r = monad("journal", "prune")
    assert r.code == 0 and "0 events, 0 tool_calls, 0 tasks" in r.err + r.out, r


def test_keep_comes_from_settings_toml_and_a_bad_one_is_one_line(monad: Any, monad_home: Path) -> None:
    db = monad_home / "journal.db"
    j = Journal(db)
    _fill(j, old=10, new=10)
    j.close()
    (monad_home / "settings.toml").write_text('[journal]\nkeep = "forever"\n')
    r = monad("journal", "prune")
    assert r.code == 0 and "nothing to prune" in r.err + r.out, r
    assert _count(db, "SELECT count(*) FROM events") == 20
    (monad_home / "settings.toml").write_text('[journal]\nkeep = "200d"\n')
    r = monad("journal", "prune", "--json")
    assert r.code == 0 and r.json()["deleted"]["events"] == 0, r
    r = monad("journal", "prune", "--keep", "30d", "--json")
    assert r.code == 0 and r.json()["deleted"]["events"] == 10, r
    (monad_home / "settings.toml").write_text('[journal]\nkeep = "ninety days"\n')
    r = monad("journal", "prune")
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1, r
    assert "`settings.toml`: `journal.keep` must be a number of hours, days or weeks" in r.err, r
    # An absurd --keep (a new-user trial: "deleted rows older than -273788674-03-22") is refused.
    (monad_home / "settings.toml").write_text('[journal]\nkeep = "200d"\n')
    r = monad("journal", "prune", "--keep", "99999999999d")
    assert r.code == 2 and "`--keep` is more than 100 years ('99999999999d'); use 'forever'" in r.err, r
    assert len(r.err.strip().splitlines()) == 1, r
    assert _count(db, "SELECT count(*) FROM events") == 10


def test_an_older_journal_is_converted_once_then_vacuumed_incrementally(tmp_path: Path) -> None:
    db = tmp_path / "journal.db"
    j = Journal(db)
    _fill(j, old=500, new=5)
    j.close()
    with sqlite3.connect(db) as conn:  # as a journal made before auto_vacuum was set
        conn.execute("PRAGMA auto_vacuum = NONE")
        conn.execute("VACUUM")
        assert conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 0
    done = retention.prune_file(db, keep_s=90 * DAY)
    assert done["reclaimed"]["mode"] == "vacuum" and done["reclaimed"]["bytes"] > 0, done
    assert _count(db, "PRAGMA auto_vacuum") == 2
    j = Journal(db)
    _fill(j, old=500, new=0, tag="2")
    j.close()
    assert retention.prune_file(db, keep_s=90 * DAY)["reclaimed"]["mode"] == "incremental"


def test_the_supervisor_round_keeps_unshipped_fleet_rows_and_says_what_it_did(tmp_path: Path) -> None:
    db = tmp_path / "journal.db"
    j = Journal(db, settings=JournalSettings(home=str(tmp_path), host="here", keep_s=90 * DAY))
    try:
        _fill(j, old=50, new=5)
        done = prune_once(j)
        assert done is not None and done["deleted"]["tool_calls"] == 49, done
        [said] = [e for e in j.events() if e["kind"] == "journal"]
        assert said["state"] == "pruned" and "older than 90 days" in said["reason"], said
    finally:
        j.close()
    # In a fleet, rows above the link's cursor were not shipped yet: they stay, however old.
    j = Journal(tmp_path / "fleet.db")
    try:
        _fill(j, old=10, new=0)
        j.write("UPDATE tool_calls SET rev = id", ())
        deleted = retention.prune(j.pool, keep_s=90 * DAY, cursor={"tool_calls": 4})
        assert deleted["tool_calls"] == 3  # revs 2..4 (1 is the running one)
        assert _count(tmp_path / "fleet.db", "SELECT min(id) FROM tool_calls WHERE id > 1") == 5
    finally:
        j.close()
    # `forever`: the round does nothing.
    j = Journal(tmp_path / "forever.db", settings=JournalSettings(home=str(tmp_path), host="here", keep_s=None))
    try:
        assert prune_once(j) is None
    finally:
        j.close()


def test_the_supervisor_round_deletes_the_stderr_logs_of_servers_removed_longer_than_keep(
        supervisor_home: Path, monad: Any) -> None:
    """Found by a new-user trial: `logs/servers/NAME.stderr.log*` of removed servers were never
    deleted (10 MB and three rotations each). The round deletes them once their last line is older than `keep`,
    as it does their journal rows; a defined server's logs and a recent removal's stay."""
    logs = supervisor_home / "logs" / "servers"
    old = time.time() - 100 * DAY
    files = {"gone.stderr.log": old, "gone.stderr.log.1": old - DAY, "gone.stderr.log.3": old - 2 * DAY,
             "recent.stderr.log": time.time(), "time.stderr.log.2": old, "notes.txt": old}
    for name, mtime in files.items():
        (logs / name).write_text("x" * 1000 + "\n")
        os.utime(logs / name, (mtime, mtime))
    r = monad("daemon", "start")
    assert r.code == 0, r
    try:
        wait_for(lambda: not (logs / "gone.stderr.log").exists(), timeout=60)
        left = sorted(p.name for p in logs.iterdir())
        assert [n for n in left if n.startswith("gone.")] == [], left
        assert {"recent.stderr.log", "time.stderr.log.2", "notes.txt"} <= set(left), left
        r = monad("journal", "--json", "-n", "200")
        assert r.code == 0, r
        said = [e for e in r.json() if "stderr logs" in (e.get("reason") or "")]
        assert len(said) == 1 and "`gone` (3003 bytes)" in said[0]["reason"], said
        assert "removed more than 90 days ago" in said[0]["reason"], said
    finally:
        monad("daemon", "stop")


def test_keep_forever_keeps_removed_servers_logs_too(tmp_path: Path) -> None:
    from monad_cli.daemon.retention import prune_server_logs

    (tmp_path / "gone.stderr.log").write_text("x\n")
    os.utime(tmp_path / "gone.stderr.log", (0, 0))
    j = Journal(tmp_path / "forever.db", settings=JournalSettings(home=str(tmp_path), host="here", keep_s=None))
    try:
        assert prune_server_logs(j, tmp_path, defined=set()) is None
        assert (tmp_path / "gone.stderr.log").exists()
    finally:
        j.close()


@pytest.fixture
def supervisor_home(monad_home: Path) -> Path:
    """MONAD_HOME with one defined server, `time`, and its logs folder."""
    write_atom(monad_home, "time", 'command = "mcp-server-time"\n')
    (monad_home / "logs" / "servers").mkdir(parents=True, exist_ok=True)
    return monad_home
