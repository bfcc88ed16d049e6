"""A journal opens, and serves what a supervisor's start reads, without SQLAlchemy: a new
file gets `journal.fresh.SCHEMA` (what the migrations make, kept equal here), the writes
and the start's reads use the standard library's `sqlite3`, and the ORM comes with the
first query that needs it."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from monad_cli.journal import fresh
from monad_cli.journal.db import Journal
from monad_cli.journal.migrations import MIGRATIONS


def test_the_fresh_schema_is_what_the_migrations_make() -> None:
    # A new migration, or a changed model: regenerate SCHEMA with `python -m monad_cli.journal.fresh`.
    assert list(fresh.COVERS) == [name for name, _ in MIGRATIONS]
    assert sorted(fresh.SCHEMA) == sorted(fresh.made_by_migrations())


def test_a_fresh_file_gets_the_schema_and_every_migration_recorded(tmp_path: Path) -> None:
    db = tmp_path / "journal.db"
    j = Journal(db)
    assert j.applied == list(fresh.COVERS)
    j.close()
    with sqlite3.connect(db) as conn:
        assert [r[0] for r in conn.execute("SELECT name FROM migrations ORDER BY rowid")] == list(fresh.COVERS)
        made = {r[0] for r in conn.execute("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL")}
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert made == set(fresh.SCHEMA)
    assert Journal(db).applied == []  # opening again applies nothing


# What a supervisor's start does with its journal, in a fresh interpreter: none of it may
# load SQLAlchemy; a query through the ORM afterwards sees every row written before it.
START = """
import json, sys
from pathlib import Path
from monad_cli.journal import tools as jt
from monad_cli.journal.db import Journal
from monad_cli.daemon.tasks.store import TaskStore
from monad_cli.core.task_states import ACTIVE, TaskState

j = Journal(Path(sys.argv[1]))
store = TaskStore(j, clock=lambda: 1000.0)
out = {"applied": j.applied, "check": j.quick_check(), "always": jt.all_always(j), "vetted": jt.all_vetted(j),
       "interrupted": jt.interrupt_running(j), "open": store.open_rows(), "cleaned": store.cleanup(),
       "counts": store.count_by_state("s", ACTIVE | {TaskState.QUEUED}), "unseen": jt.tool_set(j, "s", "sha256:x")}
j.record("state", server="s", state="connecting")
jt.remember_tool_set(j, "s", "sha256:x", [{"name": "echo"}])
jt.add_vetted(j, "s", "def", "sha256:x", "its pin")
jt.add_vetted(j, "s", "def", "sha256:x", "its pin")  # once
out["seen"] = jt.tool_set(j, "s", "sha256:x")
out["vetted_after"] = jt.all_vetted(j)
out["orm_before"] = "sqlalchemy" in sys.modules or "sqlmodel" in sys.modules
out["events"] = [(e["kind"], e["server"], e["state"]) for e in j.events()]
out["orm_after"] = "sqlalchemy" in sys.modules
j.close()
print(json.dumps(out))
"""


def _start(db: Path) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-c", START, str(db)], capture_output=True, text=True, timeout=60,
                         check=True)
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def test_a_supervisors_start_needs_no_sqlalchemy_fresh_or_not(tmp_path: Path) -> None:
    db = tmp_path / "journal.db"
    first = _start(db)
    assert first["applied"] == list(fresh.COVERS) and first["check"] == "ok"
    assert first["always"] == [] and first["vetted"] == [] and first["interrupted"] == 0
    assert first["open"] == [] and first["cleaned"] == 0 and first["counts"] == {} and first["unseen"] is None
    assert first["seen"] == [{"name": "echo"}]
    vetted = first["vetted_after"]
    assert [v[:4] for v in vetted] == [["s", "def", "sha256:x", "its pin"]]  # once
    assert first["orm_before"] is False  # nothing above loaded it...
    assert first["events"] == [["state", "s", "connecting"]] and first["orm_after"] is True  # ...until this
    again = _start(db)  # a journal made before: opened without migrating, and without SQLAlchemy
    assert again["applied"] == [] and again["orm_before"] is False
    assert again["vetted_after"] == vetted


def test_the_starts_reads_see_rows_written_through_the_orm(tmp_path: Path) -> None:
    from monad_cli.core.task_states import TaskState
    from monad_cli.daemon.tasks.store import TaskStore
    from monad_cli.journal.tables import AlwaysApproval, ToolCall

    j = Journal(tmp_path / "journal.db")
    store = TaskStore(j, clock=lambda: 1000.0)
    store.insert(id="t1", server="s", tool="slow", arguments={}, correlation=None, state="queued")
    store.insert(id="t2", server="s", tool="slow", arguments={}, correlation=None, state="submitting")
    from sqlmodel import Session

    with Session(j.engine) as s:
        s.add(AlwaysApproval(server="s", definition_hash="d", tool="echo", created=1.0, decided_by="alice",
                             host="h", home="/m"))
        s.add(ToolCall(ts=1.0, server="s", tool="echo", exposed="s__echo", args_digest="x", via="cli"))
        s.commit()
    from monad_cli.journal import tools as jt

    assert [tuple(a) for a in jt.all_always(j)] == [("s", "d", "echo", "alice", "h", "/m", None)]
    assert jt.all_always(j)[0].decided_by == "alice"  # the attributes the gate reads
    assert store.count_by_state("s", {TaskState.QUEUED, TaskState.SUBMITTING}) == {"queued": 1, "submitting": 1}
    assert [r.id for r in store.open_rows()] == ["t1", "t2"]
    assert jt.interrupt_running(j) == 1
    assert [c["outcome"] for c in jt.calls(j)] == ["interrupted"]
    j.close()
