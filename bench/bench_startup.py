"""Bench: `monad daemon start` with 50 light stdio servers defined, until all 50 are
`connected`, against a direct SDK client connecting the same 50 at once; and the
supervisor's memory with those 50 sessions. Not a timed test.

    python bench/bench_startup.py [-n 50] [--runs 3]

Both sides are timed from the moment their process is started (so both pay Python's start
and the SDK import) to all servers connected with their tools listed: the direct client
prints a line then; monad's time ends when `GET /v1/settings/mcp-servers/status` (polled
every 20 ms) first shows all of them connected. The servers are tests/servers/lightserver.py
(standard library only, ~20 ms to start), so monad's own cost shows.

Targets (issue 15): ≤ 1.5× the direct client; supervisor RSS ≤ 150 MiB (servers excluded).
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

from _util import BIN, target

from monad_cli.cli.control import ControlClient
from monad_cli.core.paths import Paths

HERE = Path(__file__).resolve().parent
LIGHT = str(HERE.parent / "tests" / "servers" / "lightserver.py")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of `pid` so far (/proc/PID/stat fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


CPU: dict[str, list[float]] = {"direct": [], "supervisor": []}


def direct(n: int) -> float:
    t = time.perf_counter()
    proc = subprocess.Popen([sys.executable, str(HERE / "_direct_connect.py"), str(n), sys.executable, LIGHT],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdin is not None
    line = proc.stdout.readline()
    elapsed = time.perf_counter() - t
    CPU["direct"].append(cpu_seconds(proc.pid))
    proc.stdin.close()
    proc.wait(timeout=60)
    if line.strip() != "connected":
        raise SystemExit("the direct client did not connect its servers")
    return elapsed


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def monad(n: int) -> tuple[float, float, float]:
    """(seconds to all connected, seconds `daemon start` took, supervisor RSS in MiB)."""
    with tempfile.TemporaryDirectory(prefix="monad-bench-") as tmp:
        home = Path(tmp) / "home"
        atoms = home / "atoms" / "mcp"
        atoms.mkdir(parents=True)
        for i in range(n):
            (atoms / f"s{i}.toml").write_text(f'command = "{sys.executable}"\nargs = ["{LIGHT}", "--name", "s{i}"]\n')
        env = {**os.environ, "MONAD_HOME": str(home), "PATH": BIN + os.pathsep + os.environ.get("PATH", "")}
        client = ControlClient(Paths(home))
        t = time.perf_counter()
        subprocess.run([os.path.join(BIN, "monad"), "daemon", "start"], env=env, check=True, capture_output=True)
        started = time.perf_counter() - t
        try:
            while True:
                rows = client.get("/v1/settings/mcp-servers/status")["servers"]
                if sum(r["state"] == "connected" for r in rows) == n:
                    elapsed = time.perf_counter() - t
                    CPU["supervisor"].append(cpu_seconds(int((home / "run" / "monad.pid").read_text())))
                    break
                if time.perf_counter() - t > 120:
                    raise SystemExit(f"not all {n} servers connected within 120 s")
                time.sleep(0.02)
            time.sleep(0.5)  # settle: what the 50 sessions hold, not the start's transient peak
            pid = int((home / "run" / "monad.pid").read_text())
            rss = rss_mib(pid)
        finally:
            subprocess.run([os.path.join(BIN, "monad"), "daemon", "stop"], env=env, capture_output=True)
    return elapsed, started, rss


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=50)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    directs, monads, starts, rsss = [], [], [], []
    for _ in range(args.runs):  # interleaved, so a change in load hits both sides alike
        directs.append(direct(args.n))
        m, s, r = monad(args.n)
        monads.append(m)
        starts.append(s)
        rsss.append(r)
    d, m = statistics.median(directs), statistics.median(monads)
    print(f"direct SDK client, {args.n} servers connected: " + ", ".join(f"{x:.2f}" for x in directs) + " s")
    print(f"monad daemon start -> {args.n} connected:       " + ", ".join(f"{x:.2f}" for x in monads) + " s"
          " (of which `daemon start` returned after " + ", ".join(f"{x:.2f}" for x in starts) + " s)")
    print("CPU seconds until then: direct client " + ", ".join(f"{x:.2f}" for x in CPU["direct"])
          + "; supervisor " + ", ".join(f"{x:.2f}" for x in CPU["supervisor"]))
    target(f"startup: `daemon start` -> {args.n} light servers connected", f"{m:.2f} s", f"{m / d:.2f}x direct",
           "<= 1.5x", m <= 1.5 * d)
    r = max(rsss)
    target(f"supervisor RSS with {args.n} sessions", f"{r:.0f} MiB", "largest of the runs", "<= 150 MiB", r <= 150)


if __name__ == "__main__":
    main()
