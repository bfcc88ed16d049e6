"""Bench: a journal with 1,000,000 tool-call rows costs what one with 1,000 does, for what a
person runs every day: `monad journal --calls -n 50`, `monad mcp status`, `monad daemon
status`; and what the size costs elsewhere: the supervisor's start, its `quick_check`
(off the start's path), a call's two rows, and `monad journal prune` of 7/8 of it. Runs
are interleaved between the two journals, so both see the same load. Not a timed test.

    python bench/bench_journal_size.py [--rows 1000000]     (also run by `make bench`)

Target (issue 26): each of the three commands at 1M rows within 1.25x of its cost at 1,000.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _util import BIN, target  # noqa: E402

from monad_cli.journal import tools as jt  # noqa: E402
from monad_cli.journal.db import Journal  # noqa: E402

TOOLSERVER = str(ROOT / "tests" / "servers" / "toolserver.py")
DAY = 86400.0


def make_journal(home: Path, rows: int, span_days: float = 80.0) -> None:
    """`rows` finished calls (and one event per 10), spread over the last `span_days` days
    (inside the default `keep`, so a supervisor's start prunes nothing)."""
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
                [(now - span_days * DAY * (1 - (start + i) / rows), f"s{(start + i) % 4}",
                  f"s{(start + i) % 4}__echo", os.urandom(16).hex(), str(home)) for i in range(n)])
            conn.executemany("INSERT INTO events (ts, server, kind, state, reason, rev) VALUES "
                             "(?, ?, 'state', 'connected', NULL, 0)",
                             [(now - span_days * DAY * (1 - (start + i) / rows), f"s{i % 4}")
                              for i in range(0, n, 10)])
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


def paired(homes: list[Path], fn: Callable[[Path], float], runs: int = 9) -> list[float]:
    """The median of `fn(home)` for each home, runs interleaved (home A, home B, A, B, ...), so
    both see the same load from whatever else shares the machine."""
    samples: list[list[float]] = [[] for _ in homes]
    for _ in range(runs):
        for i, home in enumerate(homes):
            samples[i].append(fn(home))
    return [statistics.median(s) for s in samples]


def checked(home: Path) -> bool:
    """The supervisor's start-up `quick_check` is done (it runs in a thread once serving)."""
    conn = sqlite3.connect(f"file:{home / 'journal.db'}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT 1 FROM events WHERE reason LIKE 'journal checked%' LIMIT 1").fetchone() is not None
    finally:
        conn.close()


def call_rows(home: Path) -> float:
    j = Journal(home / "journal.db")  # a second writer beside the supervisor: the call path's two rows
    t = time.perf_counter()
    for _ in range(200):
        jt.finish_call(j, jt.start_call(j, server="s0", tool="echo", exposed="s0__echo", arguments={}, via="bench"),
                       outcome="ok")
    took = (time.perf_counter() - t) / 200
    j.close()
    return took


def quick_check(home: Path) -> float:
    j = Journal(home / "journal.db")
    t = time.perf_counter()
    j.quick_check()
    took = time.perf_counter() - t
    j.close()
    return took


def measure(homes: list[Path]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    out["journal --calls -n 50"] = paired(homes, lambda h: cli(h, "journal", "--calls", "-n", "50"))
    out["journal --calls -n 50 --server s1"] = paired(
        homes, lambda h: cli(h, "journal", "--calls", "-n", "50", "--server", "s1"))
    out["PRAGMA quick_check (after the start)"] = paired(homes, quick_check, runs=3)
    out["daemon start (1 server)"] = [cli(h, "daemon", "start") for h in homes]
    try:
        for h in homes:
            cli(h, "mcp", "add", "s0", "--", sys.executable, TOOLSERVER)
        for h in homes:
            cli(h, "mcp", "wait", "s0")
            deadline = time.monotonic() + 120
            while not checked(h) and time.monotonic() < deadline:
                time.sleep(0.2)
        out["mcp status"] = paired(homes, lambda h: cli(h, "mcp", "status"))
        out["daemon status"] = paired(homes, lambda h: cli(h, "daemon", "status"))
        out["a call's two rows (per call)"] = paired(homes, call_rows, runs=3)
    finally:
        for h in homes:
            cli(h, "daemon", "stop")
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="monad-bench-") as tmp:
        homes = [Path(tmp) / f"home-{rows}" for rows in (1000, args.rows)]
        for rows, home in zip((1000, args.rows), homes, strict=True):
            t = time.perf_counter()
            make_journal(home, rows)
            print(f"{rows:,} rows written in {time.perf_counter() - t:.1f} s; journal.db "
                  f"{(home / 'journal.db').stat().st_size / 1048576:.1f} MiB")
        results = measure(homes)
        big = homes[1]  # keep 10 days of 80: prune 7/8 of it, and give the space back
        size = (big / "journal.db").stat().st_size
        took = cli(big, "journal", "prune", "--keep", "10d")
        after = (big / "journal.db").stat().st_size
        print(f"journal prune --keep 10d at {args.rows:,} rows: {took:.1f} s; journal.db {size / 1048576:.1f} MiB "
              f"-> {after / 1048576:.1f} MiB")
    print(f"{'':40} {'1,000 rows':>12} {f'{args.rows:,} rows':>16} {'ratio':>7}")
    for k, (small, large) in results.items():
        print(f"{k:40} {small * 1000:10.1f} ms {large * 1000:14.1f} ms {large / small:7.2f}")
    for k in ("journal --calls -n 50", "mcp status", "daemon status"):
        small, large = results[k]
        ratio = large / small
        target(f"journal at {args.rows:,} rows: `monad {k}`", f"{large * 1000:.0f} ms",
               f"{ratio:.2f}x at 1,000", "<= 1.25x", ratio <= 1.25)


if __name__ == "__main__":
    main()
