"""`monad journal`'s read-only way into the journal on the standard library's sqlite3
(monad_cli/journal/reader.py `open_local`): the same answers as the supervisor's own
connections, no writes, nothing heavy on its import path."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from monad_cli.journal import reader
from monad_cli.journal import tools as jt
from monad_cli.journal.db import Journal
from tests.cli.test_cli_weight import HEAVY, imported_modules


def ro(path: Path) -> reader.Database:
    return reader.open_local(path)


def fill(path: Path) -> Journal:
    j = Journal(path)
    j.record("daemon", reason="supervisor started", detail={"quick_check": "ok"})
    for i in range(5):
        j.record("state", server="a" if i % 2 else "b", state="connected", reason=f"round {i}")
    j.record("config", server="a", reason="removed")
    cid = jt.start_call(j, server="a", tool="get_time", exposed="a__get_time", arguments={"tz": "UTC"}, via="cli")
    jt.finish_call(j, cid, outcome="ok", decision="approved", decided_by="cli --yes", duration_ms=3.5)
    cid = jt.start_call(j, server="b", tool="echo", exposed="b__echo", arguments={}, via="gateway")
    jt.finish_call(j, cid, outcome="tool-error", decision="approved", decided_by="trust.autoApproveTools",
                   error="no")
    return j


@pytest.mark.parametrize("query", [{}, {"server": "a"}, {"kinds": ["state"]}, {"limit": 2},
                                   {"server": "b", "kinds": ["state", "config"], "limit": 1}, {"since": "mid"}])
def test_events_read_as_the_journal_reads_them(tmp_path: Path, query: dict[str, Any]) -> None:
    j = fill(tmp_path / "journal.db")
    try:
        if query.get("since") == "mid":
            query = {"since": j.events()[3]["ts"]}
        assert reader.events(ro(tmp_path / "journal.db"), **query) == j.events(**query)
        assert reader.events(ro(tmp_path / "journal.db"), **query)  # not vacuous
    finally:
        j.close()


def test_calls_read_as_the_journal_reads_them(tmp_path: Path) -> None:
    j = fill(tmp_path / "journal.db")
    try:
        for query in ({}, {"server": "b"}, {"limit": 1}, {"since": time.time() + 60}):
            assert reader.calls(ro(tmp_path / "journal.db"), **query) == jt.calls(j, **query)
        assert [c["via"] for c in reader.calls(ro(tmp_path / "journal.db"))] == ["cli", "gateway"]
    finally:
        j.close()


def test_the_reader_never_writes_and_a_missing_table_reads_empty(tmp_path: Path) -> None:
    path = tmp_path / "journal.db"
    fill(path).close()
    before = path.read_bytes()
    db = reader.open_local(path)
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        db.change("DELETE FROM events")
    reader.events(db)
    db.close()
    assert path.read_bytes() == before
    bare = tmp_path / "bare.db"
    sqlite3.connect(bare).close()  # a file with no tables yet
    assert reader.events(ro(bare)) == [] and reader.calls(ro(bare)) == []


def test_monad_journal_loads_no_sqlalchemy(tmp_path: Path, monad_home: Path) -> None:
    fill(monad_home / "journal.db").close()
    for argv in (("journal", "--json"), ("journal", "--calls")):
        mods = imported_modules(*argv)
        assert "sqlite3" in mods and "typer" in mods  # the measurement works
        assert not (mods & set(HEAVY)), (argv, sorted(mods & set(HEAVY)))


def test_the_calls_table_shows_how_each_call_came_and_as_what(monad_home: Path) -> None:
    fill(monad_home / "journal.db").close()
    proc = subprocess.run([sys.executable, "-m", "monad_cli", "journal", "--calls"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc
    header, first, second = proc.stdout.splitlines()[:3]
    assert header.split()[:4] == ["TIME", "VIA", "EXPOSED", "AS"]
    assert "cli" in first and "a__get_time" in first and "gateway" in second and "b__echo" in second


def test_rows_name_their_host_and_home_and_host_filters(tmp_path: Path) -> None:
    from monad_cli.journal.settings import JournalSettings

    path = tmp_path / "journal.db"
    j = Journal(path, settings=JournalSettings(home=str(tmp_path), host="runner-7"))
    j.record("daemon", reason="started")
    cid = jt.start_call(j, server="a", tool="t", exposed="a__t", arguments={}, via="cli")
    jt.finish_call(j, cid, outcome="ok")
    try:
        assert [(r["host"], r["home"]) for r in reader.events(ro(path))] == [("runner-7", str(tmp_path))]
        assert reader.events(ro(path), host="runner-7") == j.events(host="runner-7") != []
        assert reader.calls(ro(path), host="runner-7") == jt.calls(j, host="runner-7") != []
        assert reader.events(ro(path), host="elsewhere") == reader.calls(ro(path), host="elsewhere") == []
    finally:
        j.close()


def test_a_damaged_file_is_named_with_what_to_do(tmp_path: Path) -> None:
    """A journal.db that is not a database (a disk fault, a stray copy) stops the supervisor's
    start and `monad journal` with one line naming the file and the fix, never a traceback."""
    from monad_cli.core.errors import MonadError

    path = tmp_path / "journal.db"
    path.write_bytes(b"\x17not sqlite at all\x00" * 512)
    with pytest.raises(MonadError) as caught:
        Journal(path)
    assert str(path) in caught.value.message and "mv " in caught.value.message and "\n" not in caught.value.message
    r = subprocess.run([sys.executable, "-m", "monad_cli", "journal", "-n", "3"], capture_output=True, text=True,
                       env={**os.environ, "MONAD_HOME": str(tmp_path)}, timeout=60)
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "is damaged" in r.stderr, r
    assert "Traceback" not in r.stderr
    locked = sqlite3.OperationalError("database is locked")  # not the file's fault: no "move it aside"
    assert reader.damaged(path, locked) is None
