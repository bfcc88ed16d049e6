"""Bench: a gateway client that does not read its answers, at full size. 60 `tools/call` of
4 MiB each (auto-approved `echo` of tests/servers/toolserver.py) written into `monad mcp
serve` while nothing reads its stdout for 8 s; then the client reads. Prints how many
requests the supervisor took before it stopped reading, its RSS growth meanwhile, and the
time to drain every answer. Not a timed test: the short version (24 calls, the writer seen
stuck) is tests/e2e/test_gateway_direct.py.

    python bench/bench_backpressure.py [-n 60]

Target: the supervisor's RSS grows < 300 MiB while the client reads nothing (it grew by
~525 MiB for these 60 calls before `BACKLOG_BYTES`), and every call is answered once it reads.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from _util import load, monad_env, target, wait_connected

ROOT = Path(__file__).resolve().parent.parent
SERVER = str(ROOT / "tests" / "servers" / "toolserver.py")
MODERN = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
          "io.modelcontextprotocol/clientCapabilities": {},
          "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"}}


def rss_mib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    return int(next(line for line in status if line.startswith("VmRSS")).split()[1]) // 1024


def soak(home: str, n: int) -> None:
    pid = int((Path(home) / "run" / "monad.pid").read_text())
    proc = subprocess.Popen([sys.executable, "-m", "monad_cli", "mcp", "serve"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            env={**os.environ, "MONAD_HOME": home, "MONAD_NO_AUTOSTART": "1"})
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout
    reading = threading.Event()
    answers: queue.Queue[dict[str, Any]] = queue.Queue()
    big = "x" * (4 * 1024 * 1024)
    sent = [0]

    def read() -> None:
        reading.wait()
        while raw := stdout.readline():
            answers.put(json.loads(raw))

    def write() -> None:
        for i in range(n):
            stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                                    "params": {"name": "ts__echo", "arguments": {"text": big},
                                               "_meta": MODERN}}).encode() + b"\n")
            stdin.flush()
            sent[0] = i + 1

    threading.Thread(target=read, daemon=True).start()
    writer = threading.Thread(target=write, daemon=True)
    before = peak = rss_mib(pid)
    writer.start()
    for _ in range(16):
        time.sleep(0.5)
        peak = max(peak, rss_mib(pid))
    stuck_at = sent[0]
    t = time.perf_counter()
    reading.set()
    got = []
    try:
        for _ in range(n):
            message = answers.get(timeout=120)
            if "id" in message:
                got.append(message)
    except queue.Empty:
        pass
    drained = time.perf_counter() - t
    writer.join(timeout=30)
    stdin.close()
    proc.wait(timeout=30)
    ok = sorted(a["id"] for a in got) == list(range(n)) and all(
        a["result"]["content"][0]["text"] == big for a in got)
    print(f"load average: {load()}")
    print(f"requests written before the supervisor stopped reading: {stuck_at} of {n}")
    print(f"answers drained once the client read: {len(got)} in {drained:.1f} s")
    target(f"back-pressure: supervisor RSS growth, {n} x 4 MiB unread", f"{peak - before} MiB",
           f"stuck after {stuck_at}", "< 300 MiB", peak - before < 300 and stuck_at < n)
    target(f"back-pressure: all {n} answered once read", f"{len(got)}", "all" if ok else "missing",
           f"{n}", ok)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", type=int, default=60)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="monad-bench-") as tmp:
        home = str(Path(tmp) / "home")
        monad = monad_env(home)
        monad("daemon", "start")
        try:
            monad("mcp", "add", "ts", "--", sys.executable, SERVER)
            monad("mcp", "trust", "ts", "--auto-approve", "echo")
            wait_connected(home, "ts")
            soak(home, args.n)
        finally:
            monad("daemon", "stop")


if __name__ == "__main__":
    main()
