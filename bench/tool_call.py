"""Bench: one tool call through the supervisor's control API and through the gateway, against
the same call on a direct SDK session. Prints medians and ratios; not a timed test.

    python bench/tool_call.py [-n 300]

Targets (issue 3): control API ≤ 1.3× direct, or < 2 ms added; gateway adds < 3 ms per call
over the control API. Runs in a temporary MONAD_HOME with tests/servers/toolserver.py.
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
from typing import Any

import anyio
import httpx2
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parent.parent
TOOLSERVER = str(ROOT / "tests" / "servers" / "toolserver.py")


def monad(home: str, *argv: str) -> None:
    r = subprocess.run([sys.executable, "-m", "monad_cli", *argv], capture_output=True, text=True,
                       env={**os.environ, "MONAD_HOME": home})
    if r.returncode != 0:
        raise SystemExit(f"monad {' '.join(argv)} failed: {r.stderr.strip()}")


async def timed(n: int, once: Any) -> list[float]:
    for _ in range(min(20, n)):  # warm up
        await once()
    out = []
    for _ in range(n):
        t = time.perf_counter()
        await once()
        out.append((time.perf_counter() - t) * 1000)
    return out


async def bench(home: str, n: int) -> dict[str, list[float]]:
    results: dict[str, list[float]] = {}
    args = {"text": "hello"}
    async with Client(StdioServerParameters(command=sys.executable, args=[TOOLSERVER])) as direct:
        results["direct SDK session"] = await timed(n, lambda: direct.call_tool("echo", args))

    sock = str(Path(home) / "run" / "monad.sock")
    body = {"name": "b__echo", "arguments": args, "via": "bench", "approval": {"mode": "wait"}}
    async with httpx2.AsyncClient(transport=httpx2.AsyncHTTPTransport(uds=sock), base_url="http://monad") as api:
        async def via_api() -> None:
            r = await api.post("/v1/tools/call", json=body)
            assert r.status_code == 200, r.text

        results["control API (keep-alive)"] = await timed(n, via_api)

    def stdlib_call() -> None:  # what the CLI does: a new unix-socket connection per request
        from monad_cli.control.client import ControlClient
        from monad_cli.paths import Paths

        ControlClient(Paths(Path(home))).post("/v1/tools/call", body)

    results["control API (CLI client)"] = await timed(n, lambda: anyio.to_thread.run_sync(stdlib_call))

    gw = StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve"],
                               env={"MONAD_HOME": home, "MONAD_NO_AUTOSTART": "1"})
    async with Client(gw) as gateway:
        results["gateway (stdio)"] = await timed(n, lambda: gateway.call_tool("b__echo", args))
    return results


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=300)
    n = ap.parse_args().n
    with tempfile.TemporaryDirectory() as tmp:
        home = os.environ.get("BENCH_MONAD_HOME") or tmp
        monad(home, "daemon", "start")
        try:
            monad(home, "mcp", "add", "b", "--", sys.executable, TOOLSERVER)
            monad(home, "mcp", "trust", "b", "--auto-approve", "echo")
            monad(home, "mcp", "wait", "b")
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:  # the trust edit reconnects the server
                out = subprocess.run([sys.executable, "-m", "monad_cli", "mcp", "tools", "b", "--json"],
                                     capture_output=True, text=True, env={**os.environ, "MONAD_HOME": home}).stdout
                if '"autoApproved": true' in out:
                    break
                time.sleep(0.2)
            results = anyio.run(bench, home, n)
        finally:
            monad(home, "daemon", "stop")
    med = {k: statistics.median(v) for k, v in results.items()}
    base = med["direct SDK session"]
    print(f"{'path':28} {'median ms':>10} {'p90 ms':>8} {'ratio':>7} {'added ms':>9}")
    for k, v in results.items():
        p90 = statistics.quantiles(v, n=10)[-1]
        print(f"{k:28} {med[k]:10.3f} {p90:8.3f} {med[k] / base:7.2f} {med[k] - base:9.3f}")
    api = med["control API (keep-alive)"]
    print(f"\ncontrol API vs direct: {api / base:.2f}x, {api - base:+.3f} ms "
          f"(target: <= 1.3x or < 2 ms added)")
    print(f"gateway added over the control API: {med['gateway (stdio)'] - api:+.3f} ms (target: < 3 ms)")


if __name__ == "__main__":
    main()
