"""Bench: resources/read and prompts/get through the gateway (`monad mcp serve`, stdio)
against the same requests on a direct SDK session (tests/servers/resourceserver.py). Prints
medians, p99s and the added time; not a timed test. The paths run interleaved, request by
request, so a load that drifts meanwhile weighs on each alike.

    python bench/bench_features.py [-n 300]

Target (issue 24): a resources/read and a prompts/get through the gateway add at most
1 ms over a direct session. Each read and get leaves a journal event on the way. A
tools/call (auto-approved `echo`, the direct lane on stdio) runs beside them as the
reference: on a loaded machine every number grows, the ratios less so.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from _util import load, monad_env, target, wait_connected
from bench_gateway import p99
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parent.parent
SERVER = str(ROOT / "tests" / "servers" / "resourceserver.py")
ARGS = {"text": "hello"}


def gateway_params(home: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve"],
                                 env={"MONAD_HOME": home, "MONAD_NO_AUTOSTART": "1", "PATH": os.environ["PATH"]})


async def bench(home: str, n: int) -> dict[str, list[float]]:
    """Every path's latencies (ms), the paths interleaved request by request: on a loaded
    machine the load drifts during a run, and each path sees the same drift."""
    import contextlib

    async with contextlib.AsyncExitStack() as stack:
        sessions = {}
        for mode in ("auto", "legacy"):
            sessions[f"direct ({mode})"] = await stack.enter_async_context(
                Client(StdioServerParameters(command=sys.executable, args=[SERVER]), mode=mode))
            sessions[f"gateway ({mode})"] = await stack.enter_async_context(Client(gateway_params(home), mode=mode))

        def requests(where: str, c: Client) -> dict[str, Callable[[], Awaitable[Any]]]:
            prefix = "r__" if where.startswith("gateway") else ""
            return {"resources/read": lambda: c.read_resource("note://r/alpha"),
                    "prompts/get": lambda: c.get_prompt(f"{prefix}greet", {"name": "Ada"}),
                    "tools/call": lambda: c.call_tool(f"{prefix}echo", ARGS)}

        paths = {f"{what}, {where}": once for where, c in sessions.items() for what, once in requests(where, c).items()}
        results: dict[str, list[float]] = {k: [] for k in paths}
        for i in range(n + 30):  # the first 30 rounds warm up
            for key, once in paths.items():
                t = time.perf_counter()
                await once()
                if i >= 30:
                    results[key].append((time.perf_counter() - t) * 1000)
    return results


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=300)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="monad-bench-") as tmp:
        home = str(Path(tmp) / "home")
        monad = monad_env(home)
        monad("daemon", "start")
        try:
            monad("mcp", "add", "r", "--", sys.executable, SERVER)
            monad("mcp", "trust", "r", "--auto-approve", "echo")
            wait_connected(home, "r")
            results = anyio.run(bench, home, args.n)
        finally:
            monad("daemon", "stop")
    print(f"load average: {load()}")
    print(f"{'path':42} {'requests':>8} {'median ms':>10} {'p99 ms':>8}")
    for k, v in results.items():
        print(f"{k:42} {len(v):8d} {statistics.median(v):10.3f} {p99(v):8.3f}")
    for what in ("resources/read", "prompts/get", "tools/call"):
        for mode in ("auto", "legacy"):
            base = statistics.median(results[f"{what}, direct ({mode})"])
            gw = statistics.median(results[f"{what}, gateway ({mode})"])
            target(f"gateway: {what} ({mode}), added per request", f"{gw - base:+.2f} ms",
                   f"{gw / base:.2f}x direct", "<= +1.0 ms", gw - base <= 1.0)
        # monad speaks 2026-07-28 to this server whatever the agent's era: against a direct
        # session of that era, what a 2025-11-25 agent's request adds is the gateway's own part.
        upstream = statistics.median(results[f"{what}, direct (auto)"])
        gw = statistics.median(results[f"{what}, gateway (legacy)"])
        print(f"{what} (legacy agent) over a direct 2026-07-28 session (monad's upstream era): {gw - upstream:+.2f} ms")

if __name__ == "__main__":
    main()
