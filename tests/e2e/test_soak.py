"""The soak, short (bench/soak.py runs the long one): two servers, four gateway clients and a
few hundred calls through the real supervisor, while one server is killed and one atom is
edited. Every call is answered or fails with a reason, none hangs, every call has its
intent and outcome rows, and no process is left behind."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"


def test_a_short_soak_with_one_kill_and_one_edit() -> None:
    sys.path.insert(0, str(BENCH))
    try:
        import soak
    finally:
        sys.path.remove(str(BENCH))
    r = soak.soak(servers=2, clients=4, calls=300, max_seconds=240, kill_every=1.0, edit_every=2.0, max_kills=1,
                  max_edits=1)
    assert r.kills == 1 and r.edits == 1, r.as_dict()
    assert r.calls >= 300 and r.hung == 0 and r.no_reason == 0, r.as_dict()
    assert r.ok + sum(r.failed.values()) == r.calls, r.as_dict()
    assert r.rows_missing == 0 and r.rows_running == 0, r.as_dict()
    assert r.orphans == [], r.as_dict()
