"""Bench: the journal writes on every tool call's path (the intent row and its outcome), on
the SQLite journal alone, in a fleet (queued locally, shipped by the link's thread to a real
PostgreSQL), and written straight to PostgreSQL on the call's path (what the link avoids).
Also the lag from the outcome row to its arrival in the shared journal. Not a timed test.

    python bench/bench_journal.py [-n 2000]      (also run by `make bench`)

Target (issue 14): a fleet adds nothing measurable to the call path over SQLite alone (the
network round trips happen on the link's thread). Needs Debian's postgresql binaries
(`initdb`, `pg_ctl`); prints "skipped" without them.
"""

from __future__ import annotations

import argparse
import secrets
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from monad_cli.core.paths import Paths  # noqa: E402
from monad_cli.journal import tools as jt  # noqa: E402
from monad_cli.journal.db import Journal  # noqa: E402
from monad_cli.journal.settings import load_journal_settings  # noqa: E402
from tests.pg import Cluster, find_bindir  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def per_call(j: Journal, n: int) -> list[float]:
    """Seconds per call for start_call + finish_call, `n` calls."""
    samples = []
    for i in range(n):
        t = time.perf_counter()
        cid = jt.start_call(j, server="bench", tool="add", exposed="bench__add", arguments={"i": i}, via="api")
        jt.finish_call(j, cid, outcome="ok", decision="approved", decided_by="bench", duration_ms=0.1)
        samples.append(time.perf_counter() - t)
    return samples


def direct_pg(conninfo: str, n: int) -> list[float]:
    """The same two statements written to PostgreSQL on the call's path, one commit each."""
    import psycopg

    samples = []
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS bench_calls (id bigserial PRIMARY KEY, ts float8, server text, "
                     "tool text, outcome text)")
        for _ in range(n):
            t = time.perf_counter()
            (cid,) = conn.execute("INSERT INTO bench_calls (ts, server, tool, outcome) VALUES (%s, 'bench', 'add', "
                                  "'running') RETURNING id", (time.time(),)).fetchone() or (0,)
            conn.execute("UPDATE bench_calls SET outcome = 'ok' WHERE id = %s", (cid,))
            samples.append(time.perf_counter() - t)
    return samples


def lag(j: Journal, cluster: Cluster, db: str, n: int = 50) -> list[float]:
    """Seconds from an outcome row written locally to that row readable in the shared journal."""
    import psycopg

    out = []
    with psycopg.connect(cluster.conninfo(db), autocommit=True) as conn:
        for i in range(n):
            cid = jt.start_call(j, server="lag", tool="t", exposed="lag__t", arguments={"i": i}, via="api")
            jt.finish_call(j, cid, outcome="ok")
            t = time.perf_counter()
            ((uid,),) = j.pool.read("SELECT uid FROM tool_calls WHERE id = ?", (cid,))
            while not conn.execute("SELECT 1 FROM tool_calls WHERE uid = %s AND outcome = 'ok'", (uid,)).fetchone():
                time.sleep(0.0005)
            out.append(time.perf_counter() - t)
    return out


def ms(samples: list[float]) -> str:
    q = statistics.quantiles(samples, n=100)
    return f"median {statistics.median(samples) * 1000:6.3f} ms   p99 {q[98] * 1000:6.3f} ms"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=2000)
    n = ap.parse_args().n
    bindir = find_bindir()
    if bindir is None:
        print("skipped: PostgreSQL binaries not found (apt-get install postgresql)")
        return
    cluster = Cluster(bindir, free_port(), secrets.token_hex(12))
    cluster.init()
    cluster.start()
    try:
        cluster.create_database("bench")
        tmp = Path(tempfile.mkdtemp(prefix="monad-bench-journal-"))
        solo = Journal(tmp / "solo" / "journal.db")
        env = {"MONAD_JOURNAL_URL": cluster.url("bench", cluster.password), "MONAD_HOST": "bench"}
        fleet = Journal(tmp / "fleet" / "journal.db", settings=load_journal_settings(Paths(tmp / "fleet"), env))
        fleet.start_link()
        while fleet.status()["state"] != "ok":
            time.sleep(0.01)
        base = per_call(solo, n)
        shipped = per_call(fleet, n)
        straight = direct_pg(cluster.conninfo("bench"), n)
        print(f"{'SQLite journal alone (2 writes per call)':<52} {ms(base)}")
        print(f"{'fleet: queued locally, shipped by the link':<52} {ms(shipped)}   "
              f"{statistics.median(shipped) / statistics.median(base):4.2f}x")
        print(f"{'straight to PostgreSQL on the call path (avoided)':<52} {ms(straight)}   "
              f"{statistics.median(straight) / statistics.median(base):4.2f}x")
        print(f"{'outcome row -> readable in the shared journal':<52} {ms(lag(fleet, cluster, 'bench'))}")
        solo.close()
        fleet.close()
    finally:
        cluster.destroy()


if __name__ == "__main__":
    main()
