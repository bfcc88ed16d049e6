"""Bench: a journal with 1,000,000 tool-call rows costs what one with 1,000 does, for what a
person runs every day: `monad journal --calls -n 50`, `monad mcp status`, `monad daemon
status`; and what the size costs elsewhere: the supervisor's start (quick_check, the calls
left running), a call's two rows, and `monad journal prune` of 90 % of it. Not a timed test.

    python bench/bench_journal_size.py [--rows 1000000]     (also run by `make bench`)

Target (issue 26): each of the three commands at 1M rows within 1.25x of its cost at 1,000.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import BIN, target  # noqa: E402

from monad_cli.journal import tools as jt  # noqa: E402
from monad_cli.journal.db import Journal  # noqa: E402

TOOLSERVER = str(ROOT / "tests" / "servers" / "toolserver.py")
DAY = 86400.0


def make_journal(home: Path, rows: int) -> None:
    """`rows` finished calls (and one event per 10), spread over the last 100 days."""
    home.mkdir(parents=True, exist_ok=True)
    j = Journal(home / "journal.db")
    now = time.time()
    batch = 50_000
    with j.pool.connection() as conn:
        for start in range(0, rows, batch):
            n = min(batch, rows - start)
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(
                "INSERT INTO tool_calls (ts, server, tool, exposed, args_digest, via, decision, decided_by, outcome, "
                "duration_ms, error, uid, host, home, rev) VALUES (?, ?, 'echo', ?, 'sha256:0123456789abcdef', "
                "'gateway', 'approved', 'trust.autoApproveTools', 'ok', 0.4, NULL, ?, 'bench', ?, 0)",
                [(now - 100 * DAY * (1 - (start + i) / rows), f"s{(start + i) % 4}", f"s{(start + i) % 4}__echo",
                  os.urandom(16).hex(), str(home)) for i in range(n)])
            conn.executemany("INSERT INTO events (ts, server, kind, state, reason, rev) VALUES "
                             "(?, ?, 'state', 'connected', NULL, 0)",
                             [(now - 100 * DAY * (1 - (start + i) / rows), f"s{i % 4}") for i in range(0, n, 10)])
            conn.execute("COMMIT")
    j.close()


def cli(home: Path, *argv: str) -> float:
    env = {**os.environ, "MONAD_HOME": str(home), "MONAD_NO_AUTOSTART": "1"}
    t = time.perf_counter()
    r = subprocess.run([os.path.join(BIN, "monad"), *argv], capture_output=True, text=True, env=env)
    took = time.perf_counter() - t
    if r.returncode != 0:
        raise SystemExit(f"monad {' '.join(argv)} failed: {r.stderr.strip()}")
    return took


def median(fn: object, runs: int = 9) -> float:
    samples = [fn() for _ in range(runs)]  # type: ignore[operator]
    return statistics.median(samples)


def measure(home: Path) -> dict[str, float]:
    out: dict[str, float] = {}
    out["journal --calls -n 50"] = median(lambda: cli(home, "journal", "--calls", "-n", "50"))
    out["journal --calls -n 50 --server s1"] = median(lambda: cli(home, "journal", "--calls", "-n", "50",
                                                                  "--server", "s1"))
    t = time.perf_counter()
    cli(home, "daemon", "start")
    out["daemon start (1 server)"] = time.perf_counter() - t
    try:
        cli(home, "mcp", "add", "s0", "--", sys.executable, TOOLSERVER)
        cli(home, "mcp", "wait", "s0")
        out["mcp status"] = median(lambda: cli(home, "mcp", "status"))
        out["daemon status"] = median(lambda: cli(home, "daemon", "status"))
        j = Journal(home / "journal.db")  # a second writer beside the supervisor: the call path's two rows
        t = time.perf_counter()
        for _ in range(500):
            jt.finish_call(j, jt.start_call(j, server="s0", tool="echo", exposed="s0__echo", arguments={},
                                            via="bench"), outcome="ok")
        out["a call's two rows (per call)"] = (time.perf_counter() - t) / 500
        j.close()
    finally:
        cli(home, "daemon", "stop")
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    args = ap.parse_args()
    results: dict[int, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="monad-bench-") as tmp:
        for rows in (1000, args.rows):
            home = Path(tmp) / f"home-{rows}"
            t = time.perf_counter()
            make_journal(home, rows)
            print(f"{rows} rows written in {time.perf_counter() - t:.1f} s; journal.db "
                  f"{(home / 'journal.db').stat().st_size / 1048576:.1f} MiB")
            results[rows] = measure(home)
            if rows == args.rows:  # keep 10 days of 100: prune 90 %, and give the space back
                size = (home / "journal.db").stat().st_size
                t = time.perf_counter()
                cli(home, "journal", "prune", "--keep", "10d")
                took = time.perf_counter() - t
                after = (home / "journal.db").stat().st_size
                print(f"journal prune --keep 10d: {took:.1f} s; journal.db {size / 1048576:.1f} MiB -> "
                      f"{after / 1048576:.1f} MiB")
    small, big = results[1000], results[args.rows]
    print(f"{'':40} {'1,000 rows':>12} {f'{args.rows:,} rows':>16} {'ratio':>7}")
    for k in small:
        print(f"{k:40} {small[k] * 1000:10.1f} ms {big[k] * 1000:14.1f} ms {big[k] / small[k]:7.2f}")
    for k in ("journal --calls -n 50", "mcp status", "daemon status"):
        ratio = big[k] / small[k]
        target(f"journal at {args.rows:,} rows: `monad {k}`", f"{big[k] * 1000:.0f} ms",
               f"{ratio:.2f}x at 1,000", "<= 1.25x", ratio <= 1.25)


if __name__ == "__main__":
    main()
