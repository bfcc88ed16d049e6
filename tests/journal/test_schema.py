"""The journal's schema, written once (journal/schema.py): a new file gets it from the
migrations themselves, on the standard library's `sqlite3` (nothing heavy on a supervisor's
start, fresh file or not), and the tasks' row type is the table's columns."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from monad_cli.journal.db import Journal
from monad_cli.journal.schema import MIGRATIONS, TaskRow

NAMES = [name for name, _ in MIGRATIONS]


def test_a_fresh_file_gets_the_schema_and_every_migration_recorded(tmp_path: Path) -> None:
    db = tmp_path / "journal.db"
    j = Journal(db)
    assert j.applied == NAMES
    j.close()
    with sqlite3.connect(db) as conn:
        assert [r[0] for r in conn.execute("SELECT name FROM migrations ORDER BY rowid")] == NAMES
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2  # incremental: set before the first table
        tasks = [r[1] for r in conn.execute("PRAGMA table_info(tasks)")]
    assert tasks == [f.name for f in dataclasses.fields(TaskRow)]  # the row type is the table, in order
    assert Journal(db).applied == []  # opening again applies nothing


# What a supervisor's start does with its journal, in a fresh interpreter: none of it loads
# SQLAlchemy or SQLModel (the journal has no ORM), fresh file or not.
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
out["events"] = [(e["kind"], e["server"], e["state"]) for e in j.events()]
out["orm"] = "sqlalchemy" in sys.modules or "sqlmodel" in sys.modules
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
    assert first["applied"] == NAMES and first["check"] == "ok"
    assert first["always"] == [] and first["vetted"] == [] and first["interrupted"] == 0
    assert first["open"] == [] and first["cleaned"] == 0 and first["counts"] == {} and first["unseen"] is None
    assert first["seen"] == [{"name": "echo"}]
    vetted = first["vetted_after"]
    assert [v[:4] for v in vetted] == [["s", "def", "sha256:x", "its pin"]]  # once
    assert first["events"] == [["state", "s", "connecting"]] and first["orm"] is False
    again = _start(db)  # a journal made before: opened without migrating
    assert again["applied"] == [] and again["orm"] is False
    assert again["vetted_after"] == vetted


def test_task_rows_read_back_as_written(tmp_path: Path) -> None:
    from monad_cli.core.task_states import TaskState
    from monad_cli.daemon.tasks.store import TaskStore
    from monad_cli.journal import tools as jt

    j = Journal(tmp_path / "journal.db")
    store = TaskStore(j, clock=lambda: 1000.0)
    written = store.insert(id="t1", server="s", tool="slow", arguments={"n": 1}, correlation=None, state="queued")
    store.insert(id="t2", server="s", tool="slow", arguments={}, correlation=None, state="submitting",
                 task_id="srv-2")
    assert store.get("t1") == written and written.submitted is False  # booleans come back as booleans
    assert store.by_task_id("s", "srv-2").submitted is True  # type: ignore[union-attr]
    assert [r.id for r in store.find("t")] == ["t1", "t2"] and [r.id for r in store.find("srv")] == ["t2"]
    jt.add_always(j, "s", "d", "echo", "alice")
    assert [(a.server, a.definition_hash, a.tool, a.decided_by, a.tool_hash) for a in jt.all_always(j)] == [
        ("s", "d", "echo", "alice", None)]
    assert store.count_by_state("s", {TaskState.QUEUED, TaskState.SUBMITTING}) == {"queued": 1, "submitting": 1}
    assert [r.id for r in store.open_rows()] == ["t1", "t2"]
    j.write("INSERT INTO tool_calls (ts, server, tool, exposed, args_digest, via, outcome, rev) "
            "VALUES (1.0, 's', 'echo', 's__echo', 'x', 'cli', 'running', 0)", ())
    assert jt.interrupt_running(j) == 1
    assert [c["outcome"] for c in jt.calls(j)] == ["interrupted"]
    j.close()


def test_a_rows_uid_is_a_random_version_4_uuid() -> None:
    import uuid

    from monad_cli.journal.db import new_uid

    uids = [new_uid() for _ in range(2000)]
    assert len(set(uids)) == len(uids)
    for uid in uids:
        parsed = uuid.UUID(uid)
        assert parsed.hex == uid and parsed.version == 4 and parsed.variant == uuid.RFC_4122


def test_a_calls_args_digest_is_of_its_canonical_json() -> None:
    import hashlib
    import json

    from monad_cli.journal.tools import args_digest

    arguments = {"b": [1, 2.5, None], "a": {"z": "é", "y": True}, "when": object()}
    canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=str)
    assert args_digest(arguments) == "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()[:16]
    assert args_digest(None) == args_digest({})
