"""One ordered migration list, run once when the journal opens.

`tests/data/journal-0100.sql` is the schema the code before the ordered migrations made
(migrations registered at import time by the modules that defined the tables)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

from monad_cli.journal.db import Journal
from monad_cli.journal.schema import MIGRATIONS

OLD_SCHEMA = Path(__file__).resolve().parents[1] / "data" / "journal-0100.sql"
OLD = ["0001_events", "0002_tool_calls_approvals_tool_sets", "0100_tasks"]  # what journal-0100.sql holds
RELEASED = [*OLD, "0200_origin_columns", "0201_vetted_tool_sets", "0300_running_calls_index", "0301_server_lists",
            "0302_server_lists_items", "0303_approvals_tool_hash", "0304_local_origin_indexes"]


def schema(db: Path) -> set[str]:
    with sqlite3.connect(db) as conn:
        return {row[0] for row in conn.execute("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL")}


def shape(db: Path) -> dict[str, object]:
    """Tables → columns (name, type, not null) and indexes (name, unique, columns, partial):
    what a query sees, whatever the CREATE text looks like after ALTER TABLE."""
    out: dict[str, object] = {}
    with sqlite3.connect(db) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                              "AND name NOT LIKE 'sqlite_%'")]
        for t in sorted(tables):
            cols = sorted((r[1], r[2], r[3]) for r in conn.execute(f"PRAGMA table_info({t})"))
            idx = sorted((r[1], r[2], tuple(c[2] for c in conn.execute(f"PRAGMA index_info({r[1]})")), r[4])
                         for r in conn.execute(f"PRAGMA index_list({t})"))
            out[t] = (cols, idx)
    return out


def fresh_shape(tmp_path: Path) -> dict[str, object]:
    db = tmp_path / "fresh" / "journal.db"
    Journal(db).close()
    return shape(db)


def recorded(db: Path) -> list[tuple[str, float]]:
    with sqlite3.connect(db) as conn:
        return list(conn.execute("SELECT name, applied_at FROM migrations ORDER BY rowid"))


def old_schema_statements() -> list[str]:
    body = "\n".join(line for line in OLD_SCHEMA.read_text().splitlines() if not line.startswith("--"))
    return [s.strip() for s in body.split(";") if s.strip()]


def test_the_released_names_stay_first_in_their_order() -> None:
    assert [name for name, _ in MIGRATIONS][:len(RELEASED)] == RELEASED
    assert len({name for name, _ in MIGRATIONS}) == len(MIGRATIONS)


def test_a_fresh_journal_gets_every_table_from_the_journal_module_alone(tmp_path: Path) -> None:
    db = tmp_path / "journal.db"
    # A fresh interpreter that imports nothing but the journal: the schema must not depend
    # on which feature modules happen to be loaded.
    code = ("import sys; from pathlib import Path; from monad_cli.journal.db import Journal; "
            "j = Journal(Path(sys.argv[1])); print(','.join(j.applied)); j.close(); "
            "print(sorted(m for m in sys.modules if m.startswith('monad_cli.') and 'journal' not in m))")
    out = subprocess.run([sys.executable, "-c", code, str(db)], capture_output=True, text=True, check=True)
    applied, loaded = out.stdout.strip().splitlines()
    assert applied.split(",") == [name for name, _ in MIGRATIONS]  # in the list's order
    assert loaded == "[]"
    assert [name for name, _ in recorded(db)] == [name for name, _ in MIGRATIONS]
    # Every index the old code made, and its tables' columns first, in the same order.
    made = schema(db)
    old = old_schema_statements()
    assert {s for s in old if s.startswith("CREATE INDEX")} <= made
    with sqlite3.connect(db) as conn:
        for statement in old:
            if statement.startswith("CREATE TABLE"):
                table = statement.split()[2]
                old_cols = [line.split()[0] for line in statement.split("(", 1)[1].splitlines()
                            if line.strip() and not line.strip().startswith(("PRIMARY", "FOREIGN", ")"))]
                cols = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
                assert cols[:len(old_cols)] == old_cols, table


def test_an_existing_journal_is_not_migrated_again(tmp_path: Path) -> None:
    db = tmp_path / "journal.db"
    with sqlite3.connect(db) as conn:  # a journal the old code made, with one event in it
        for statement in old_schema_statements():
            conn.execute(statement)
        conn.executemany("INSERT INTO migrations (name, applied_at) VALUES (?, ?)",
                         [(name, 1000.0 + i) for i, name in enumerate(OLD)])
        conn.execute("INSERT INTO events (ts, kind, reason) VALUES (1.0, 'daemon', 'old row')")
    before = recorded(db)
    j = Journal(db)
    assert j.applied == RELEASED[len(OLD):]  # only what came after
    assert [e["reason"] for e in j.events()] == ["old row"]
    j.record("daemon", reason="new row")
    j.close()
    assert Journal(db).applied == []  # opening again applies nothing
    assert recorded(db)[:len(OLD)] == before
    assert shape(db) == fresh_shape(tmp_path)  # upgraded = made fresh
    with sqlite3.connect(db) as conn:
        rows = list(conn.execute("SELECT reason, uid IS NOT NULL, host IS NOT NULL, rev FROM events "
                                 "ORDER BY id"))
    # The old row has no uid and rev 0 (never shipped): history stays local (docs/fleet.md).
    assert rows == [("old row", 0, 0, 0), ("new row", 1, 1, 0)]


def indexes(db: Path, table: str) -> set[str]:
    with sqlite3.connect(db) as conn:
        return {row[1] for row in conn.execute(f"PRAGMA index_list({table})")}


def test_the_local_file_has_only_the_origin_indexes_it_reads(tmp_path: Path) -> None:
    """A call's intent row is written to `tool_calls` and its indexes before the call: the
    uid, rev and host indexes of the rows a fleet only ships are the shared journal's
    (a lone supervisor reads none of them), a fleet member's file gets the `rev` ones."""
    from monad_cli.journal.settings import JournalSettings

    lone = tmp_path / "lone" / "journal.db"
    Journal(lone).close()
    for table in ("tool_calls", "events"):
        assert not {f"ix_{table}_uid", f"ix_{table}_rev", f"ix_{table}_host"} & indexes(lone, table)
    # approvals and vetted tool sets are pulled back from the shared journal by uid.
    assert {"ix_approvals_uid", "ix_vetted_tool_sets_uid"} <= indexes(lone, "approvals") | indexes(
        lone, "vetted_tool_sets")
    member = tmp_path / "member" / "journal.db"
    settings = JournalSettings(home=str(member.parent), host="h", url="postgresql+psycopg://u@db.example/monad")
    Journal(member, settings=settings).close()  # the link is never started: no database needed
    for table in ("tool_calls", "events"):
        assert f"ix_{table}_rev" in indexes(member, table)
        assert not {f"ix_{table}_uid", f"ix_{table}_host"} & indexes(member, table)
    with sqlite3.connect(member) as conn:
        plan = " ".join(str(r) for r in conn.execute("EXPLAIN QUERY PLAN SELECT coalesce(max(rev), 0) + 1 "
                                                       "FROM tool_calls"))
    assert "ix_tool_calls_rev" in plan  # a fleet's every write reads it


def test_a_journal_from_before_tools_and_tasks_gets_the_rest_in_order(tmp_path: Path) -> None:
    db = tmp_path / "journal.db"
    with sqlite3.connect(db) as conn:
        for statement in old_schema_statements():
            if "migrations" in statement or " events " in statement or "ON events" in statement:
                conn.execute(statement)
        conn.execute("INSERT INTO migrations (name, applied_at) VALUES ('0001_events', 1.0)")
    j = Journal(db)
    assert j.applied == RELEASED[1:]
    j.close()
    assert [name for name, _ in recorded(db)] == RELEASED
    assert shape(db) == fresh_shape(tmp_path)


def test_cached_lists_from_before_prompts_and_resources_are_kept_and_learned_again(tmp_path: Path) -> None:
    """A journal at 0301 (tools only) gets the item columns; its row is incomplete (the
    server is started once to learn the rest) until its items are saved."""
    from monad_cli.journal import tools as jt

    db = tmp_path / "journal.db"
    Journal(db).close()
    with sqlite3.connect(db) as conn:
        conn.execute("DROP TABLE server_lists")
        conn.execute("CREATE TABLE server_lists (server VARCHAR NOT NULL, definition_hash VARCHAR NOT NULL, "
                     "tool_hash VARCHAR NOT NULL, tools VARCHAR NOT NULL, listed_at FLOAT NOT NULL, "
                     "PRIMARY KEY (server))")
        conn.execute("INSERT INTO server_lists VALUES ('x', 'def1', 'sha256:1', '[]', 1.0)")
        conn.execute("DELETE FROM migrations WHERE name = '0302_server_lists_items'")
    j = Journal(db)
    assert j.applied == ["0302_server_lists_items"]
    old = jt.cached_lists(j, "x")
    assert old is not None and old.tools == [] and old.items == {} and not old.complete
    jt.save_items(j, "x", {"prompts": [{"name": "p"}], "resources": [], "templates": []})
    new = jt.cached_lists(j, "x")
    assert new is not None and new.complete and new.items["prompts"] == [{"name": "p"}]
    # The same definition listing its tools again keeps the items; another definition drops them.
    jt.save_lists(j, "x", "def1", "sha256:2", [])
    assert jt.cached_lists(j, "x").complete  # type: ignore[union-attr]
    jt.save_lists(j, "x", "def2", "sha256:2", [])
    assert jt.cached_lists(j, "x").items == {}  # type: ignore[union-attr]
    j.close()
