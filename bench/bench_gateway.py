"""Bench: tool calls through the gateway (`monad mcp serve`, stdio) against the same calls on
a direct SDK session. Prints medians, p99s and ratios; not a timed test.

    python bench/bench_gateway.py [-n 300] [--clients 8] [--per-client 100]

Targets (issue 15): 300 sequential calls through the gateway within +1.0 ms per call of a
direct SDK session to the same server; 8 concurrent gateway clients × 100 calls with a p99
at most 2× the direct p99 (8 concurrent callers, each on its own direct SDK session to its
own server: what 8 agents do without monad). The approval gate and the journal row stay on
every gateway call (the tool is auto-approved: the gate still decides, and says so in the
journal). Also printed, for reference: one direct session shared by the 8 callers, and the
control API (`POST /v1/tools/call`, what `monad mcp call` uses).
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
from _util import monad_env, target, wait_tools
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parent.parent
TOOLSERVER = str(ROOT / "tests" / "servers" / "toolserver.py")
ARGS = {"text": "hello"}


def p99(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=100, method="inclusive")[98]


async def sequential(n: int, once: Callable[[], Awaitable[Any]]) -> list[float]:
    for _ in range(min(30, n)):  # warm up
        await once()
    out = []
    for _ in range(n):
        t = time.perf_counter()
        await once()
        out.append((time.perf_counter() - t) * 1000)
    return out


async def concurrent(callers: list[Callable[[], Awaitable[Any]]], per_client: int) -> list[float]:
    """Every caller makes `per_client` calls, all callers at once; every call's latency (ms)."""
    samples: list[float] = []
    for once in callers:  # warm up each session
        for _ in range(5):
            await once()

    async def run(once: Callable[[], Awaitable[Any]]) -> None:
        for _ in range(per_client):
            t = time.perf_counter()
            await once()
            samples.append((time.perf_counter() - t) * 1000)

    async with anyio.create_task_group() as tg:
        for once in callers:
            tg.start_soon(run, once)
    return samples


def direct_params() -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=[TOOLSERVER])


def gateway_params(home: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve"],
                                 env={"MONAD_HOME": home, "MONAD_NO_AUTOSTART": "1", "PATH": os.environ["PATH"]})


async def bench(home: str, n: int, clients: int, per_client: int) -> dict[str, list[float]]:
    from contextlib import AsyncExitStack

    results: dict[str, list[float]] = {}
    async with Client(direct_params()) as direct:
        results["direct SDK session"] = await sequential(n, lambda: direct.call_tool("echo", ARGS))
    async with Client(gateway_params(home)) as gateway:
        results["gateway (stdio relay)"] = await sequential(n, lambda: gateway.call_tool("b__echo", ARGS))

    from monad_cli.cli.control import ControlClient
    from monad_cli.core.paths import Paths

    api = ControlClient(Paths(Path(home)))
    body = {"name": "b__echo", "arguments": ARGS, "via": "bench", "approval": {"mode": "wait"}}
    results["control API (CLI client)"] = await sequential(
        min(n, 100), lambda: anyio.to_thread.run_sync(lambda: api.post("/v1/tools/call", body)))

    async with AsyncExitStack() as stack:
        sessions = [await stack.enter_async_context(Client(direct_params())) for _ in range(clients)]
        results[f"direct, {clients} sessions x {per_client}"] = await concurrent(
            [lambda s=s: s.call_tool("echo", ARGS) for s in sessions], per_client)
    async with Client(direct_params()) as shared:
        results[f"direct, 1 session, {clients} callers x {per_client}"] = await concurrent(
            [lambda: shared.call_tool("echo", ARGS) for _ in range(clients)], per_client)
    async with AsyncExitStack() as stack:
        gateways = [await stack.enter_async_context(Client(gateway_params(home))) for _ in range(clients)]
        results[f"gateway, {clients} clients x {per_client}"] = await concurrent(
            [lambda g=g: g.call_tool("b__echo", ARGS) for g in gateways], per_client)
    return results


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=300)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--per-client", type=int, default=100)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="monad-bench-") as tmp:
        home = str(Path(tmp) / "home")
        monad = monad_env(home)
        monad("daemon", "start")
        try:
            monad("mcp", "add", "b", "--", sys.executable, TOOLSERVER)
            monad("mcp", "trust", "b", "--auto-approve", "echo")
            wait_tools(home, "b__echo", auto_approved=True)
            results = anyio.run(bench, home, args.n, args.clients, args.per_client)
        finally:
            monad("daemon", "stop")
    print(f"{'path':42} {'calls':>6} {'median ms':>10} {'p99 ms':>8}")
    for k, v in results.items():
        print(f"{k:42} {len(v):6d} {statistics.median(v):10.3f} {p99(v):8.3f}")
    base = statistics.median(results["direct SDK session"])
    gw = statistics.median(results["gateway (stdio relay)"])
    target(f"gateway: {args.n} sequential calls, added per call", f"{gw - base:+.2f} ms",
           f"{gw / base:.2f}x direct", "<= +1.0 ms", gw - base <= 1.0)
    d99 = p99(results[f"direct, {args.clients} sessions x {args.per_client}"])
    g99 = p99(results[f"gateway, {args.clients} clients x {args.per_client}"])
    target(f"gateway: {args.clients} clients x {args.per_client} calls, p99", f"{g99:.2f} ms",
           f"{g99 / d99:.2f}x direct p99", "<= 2x", g99 <= 2 * d99)


if __name__ == "__main__":
    main()
