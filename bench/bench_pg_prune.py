"""Bench: `[journal] keep` on a fleet's shared PostgreSQL journal (issue 26): how long
`journal.retention.prune_shared` takes to delete this host's old rows, then every host's,
from a real PostgreSQL holding `--rows` calls and as many events, and what reading the
newest calls costs before and after. Not a timed test.

    python bench/bench_pg_prune.py [--rows 200000]

Needs Debian's postgresql binaries (`initdb`, `pg_ctl`); prints "skipped" without them.
The rows: three quarters older than 100 days (over 300 days; two thirds of them this host's,
one third another's, interleaved), a quarter of today (this host's); one old call still
`running` (never pruned).
"""

from __future__ import annotations

import argparse
import secrets
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.bench_journal import free_port  # noqa: E402
from monad_cli.core.paths import Paths  # noqa: E402
from monad_cli.journal import reader  # noqa: E402
from monad_cli.journal.pg import PgDatabase  # noqa: E402
from monad_cli.journal.retention import prune_shared  # noqa: E402
from monad_cli.journal.schema import migrate  # noqa: E402
from monad_cli.journal.settings import load_journal_settings  # noqa: E402
from tests.pg import Cluster, find_bindir  # noqa: E402

DAY = 86400.0


def fill(conninfo: str, rows: int, home: str) -> None:
    import psycopg

    now = time.time()
    with psycopg.connect(conninfo) as conn, conn.cursor() as cur:
        def gen(i: int) -> tuple[float, str, str]:
            # Old rows spread over 300 days before the cutoff, the two hosts' interleaved.
            old = now - 100 * DAY - (i % (rows * 3 // 4)) * (300 * DAY / rows)
            if i < rows * 3 // 4:
                return (old, "bench", home) if i % 3 else (old, "other", "/elsewhere")
            return now - (i % 1000), "bench", home

        with cur.copy("COPY tool_calls (ts, server, tool, exposed, args_digest, via, outcome, uid, host, home, rev) "
                      "FROM STDIN") as copy:
            for i in range(rows):
                ts, host, where = gen(i)
                copy.write_row((ts, "s", "t", "s__t", "sha256:0", "gateway", "running" if i == 0 else "ok",
                                f"c{i}", host, where, 0))
        with cur.copy("COPY events (ts, server, kind, reason, uid, host, home, rev) FROM STDIN") as copy:
            for i in range(rows):
                ts, host, where = gen(i)
                copy.write_row((ts, "s", "state", "connected", f"e{i}", host, where, 0))
        conn.commit()
        cur.execute("ANALYZE")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200_000)
    args = ap.parse_args()
    bindir = find_bindir()
    if bindir is None:
        print("skipped: PostgreSQL binaries not found (apt-get install postgresql)")
        return
    cluster = Cluster(bindir, free_port(), secrets.token_hex(12))
    cluster.init()
    cluster.start()
    try:
        cluster.create_database("bench")
        tmp = Path(tempfile.mkdtemp(prefix="monad-bench-pg-prune-"))
        env = {"MONAD_JOURNAL_URL": cluster.url("bench", cluster.password), "MONAD_HOST": "bench"}
        settings = load_journal_settings(Paths(tmp), env)
        shared = PgDatabase(settings)
        with shared.transaction() as cur:
            migrate(cur, "postgresql")
        shared.close()
        started = time.perf_counter()
        fill(cluster.conninfo("bench"), args.rows, settings.home)
        print(f"writing {args.rows:,} calls and {args.rows:,} events: {time.perf_counter() - started:.1f} s")

        def read() -> float:
            t = time.perf_counter()
            reader.from_shared(settings, lambda db: reader.calls(db, limit=50))
            return (time.perf_counter() - t) * 1000

        before = min(read() for _ in range(5))
        t = time.perf_counter()
        own = prune_shared(settings, keep_s=90 * DAY)
        print(f"prune this host's old rows: {own['deleted']} in {time.perf_counter() - t:.1f} s")
        t = time.perf_counter()
        every = prune_shared(settings, keep_s=90 * DAY, every_host=True)
        print(f"prune every host's old rows: {every['deleted']} in {time.perf_counter() - t:.1f} s")
        after = min(read() for _ in range(5))
        import psycopg

        with psycopg.connect(cluster.conninfo("bench"), autocommit=True) as conn:
            conn.execute("VACUUM (ANALYZE) tool_calls")  # what autovacuum does on its own, later
        vacuumed = min(read() for _ in range(5))
        print(f"`monad journal --calls -n 50` (connect + query): {before:.1f} ms before, {after:.1f} ms just "
              f"after, {vacuumed:.1f} ms once vacuumed")
    finally:
        cluster.destroy()


if __name__ == "__main__":
    main()
