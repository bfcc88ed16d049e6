"""`[journal] keep` on a fleet's shared PostgreSQL journal (docs/fleet.md "Retention"): real
supervisors with their own MONAD_HOMEs on one real PostgreSQL (tests/pg.py; skipped without
it, failed where MONAD_REQUIRE_POSTGRES=1), real MCP servers, the real CLI."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import wait_for
from tests.e2e.test_fleet import fleet, start_all

pytestmark = pytest.mark.e2e
__all__ = ["fleet"]  # the fixture, imported for these tests
DAY = 86400.0


def _count(pg: Any, table: str, host: str, *, old: bool) -> int:
    import time

    cut = time.time() - 90 * DAY
    op = "<" if old else ">="
    return int(pg.query(f"SELECT count(*) FROM {table} WHERE host = %s AND ts {op} %s", host, cut)[0][0])


def test_prune_deletes_this_hosts_old_shared_rows_and_every_hosts_only_when_asked(fleet: Any, pg: Any) -> None:
    a, b = fleet("a"), fleet("b")
    for m in (a, b):
        m.add_toolserver()
    start_all(a, b)
    for m in (a, b):
        wait_for(lambda m=m: m.state("ts") == "connected", timeout=60)
        for n in range(3):
            assert m.call("ts__add", {"a": n, "b": 1})["content"][0]["text"] == str(n + 1)
    wait_for(lambda: a.drained() and b.drained(), timeout=60)
    assert _count(pg, "tool_calls", "host-a", old=False) == 3 and _count(pg, "tool_calls", "host-b", old=False) == 3
    # Everything so far, 100 days old; one call of a's still running (never pruned).
    pg.query("UPDATE tool_calls SET ts = ts - %s RETURNING id", 100 * DAY)
    pg.query("UPDATE events SET ts = ts - %s RETURNING id", 100 * DAY)
    pg.query("UPDATE tool_calls SET outcome = 'running' WHERE id = (SELECT min(id) FROM tool_calls "
             "WHERE host = 'host-a') RETURNING id")
    old_events_b = _count(pg, "events", "host-b", old=True)
    assert _count(pg, "events", "host-a", old=True) > 0 and old_events_b > 0

    # `monad journal prune` on a: a's old shared rows go, b's stay (a's keep is not b's).
    r = a("journal", "prune", "--json")
    assert r.code == 0, r
    shared = r.json()["shared"]
    assert shared["scope"] == "this host" and shared["deleted"]["tool_calls"] == 2, shared
    assert _count(pg, "tool_calls", "host-a", old=True) == 1  # the running one
    assert _count(pg, "events", "host-a", old=True) == 0
    assert _count(pg, "tool_calls", "host-b", old=True) == 3
    assert _count(pg, "events", "host-b", old=True) == old_events_b

    # A person's decision: every host's.
    r = a("journal", "prune", "--every-host")
    assert r.code == 0 and "deleted every host's rows older than" in r.err and "3 tool_calls" in r.err, r
    assert "pg-sentinel" not in r.err + r.out  # the password is `***`
    assert _count(pg, "tool_calls", "host-b", old=True) == 0 and _count(pg, "events", "host-b", old=True) == 0

    # The supervisor's own round (at its start, then daily) prunes its old shared rows too.
    for n in range(2):
        b.call("ts__add", {"a": n, "b": 0})
    wait_for(b.drained, timeout=60)
    pg.query("UPDATE tool_calls SET ts = ts - %s WHERE host = 'host-b' RETURNING id", 100 * DAY)
    assert _count(pg, "tool_calls", "host-b", old=True) == 2
    assert b("daemon", "stop").code == 0
    assert b("daemon", "start").code == 0
    wait_for(lambda: _count(pg, "tool_calls", "host-b", old=True) == 0, timeout=60)
    assert _count(pg, "tool_calls", "host-a", old=True) == 1  # not b's to prune
    rows = b("journal", "--json").json()
    assert any(e["kind"] == "journal" and "from the shared journal (2 tool_calls" in (e["reason"] or "")
               for e in rows), rows[-5:]


def test_every_host_without_a_fleet_is_refused_in_one_line(monad: Any, monad_home: Any) -> None:
    r = monad("journal", "prune", "--every-host")
    assert r.code != 0 and "--every-host is for a fleet's shared journal" in r.err and "Traceback" not in r.err, r
