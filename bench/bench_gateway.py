"""Bench: tool calls through the gateway (`monad mcp serve`, stdio) against the same calls on
a direct SDK session. Prints medians, p99s and ratios; not a timed test.

    python bench/bench_gateway.py [-n 300] [--clients 8] [--per-client 100] [--before DIR]

Targets (issue 15, kept by issue 37): 300 sequential calls through the gateway within +1.0 ms
per call of a direct SDK session to the same server; 8 concurrent gateway clients × 100 calls
with a p99 at most 2× the direct p99 (8 concurrent callers, each on its own direct SDK session
to its own server: what 8 agents do without monad). The approval gate and the journal row stay
on every gateway call (the tool is auto-approved: the gate still decides, and says so in the
journal). The sequential calls are taken in turns, one on each path (the direct session, the
gateway, and with `--before DIR` a second supervisor running monad from the tree in DIR
through PYTHONPATH), so the load of a shared machine weighs on every path alike; "added" is
the median of each call's time minus the direct call's beside it, and the supervisors' CPU
per call is printed too. Also printed, for reference: one direct session shared by the 8
callers, and the control API (`POST /v1/tools/call`, what `monad mcp call` uses).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import anyio
from _util import load, monad_env, target, wait_tools
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


def cpu_ms(pid: int) -> tuple[float, float]:
    """CPU process `pid` has used, in ms: all its threads (user + system, /proc/PID/stat's
    ticks) and its main thread's, the event loop's (the scheduler's ns, /proc/PID/schedstat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    loop = int(Path(f"/proc/{pid}/schedstat").read_text().split()[0]) / 1e6
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK"), loop


async def in_turns(paths: Mapping[str, Callable[[], Awaitable[Any]]], n: int) -> dict[str, list[float]]:
    """`n` calls on each path, one on each in turn (then again): ms per call by path."""
    for once in paths.values():
        for _ in range(min(30, n)):  # warm up
            await once()
    out: dict[str, list[float]] = {label: [] for label in paths}
    for _ in range(n):
        for label, once in paths.items():
            t = time.perf_counter()
            await once()
            out[label].append((time.perf_counter() - t) * 1000)
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


def gateway_params(home: str, tree: str | None = None) -> StdioServerParameters:
    tree = tree or os.environ.get("PYTHONPATH")  # `monad mcp serve` from the supervisor's own tree
    return StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve"],
                                 env={"MONAD_HOME": home, "MONAD_NO_AUTOSTART": "1", "PATH": os.environ["PATH"],
                                      **({"PYTHONPATH": tree} if tree else {})})


GATEWAY = "gateway (stdio relay)"
BEFORE = "gateway, before (stdio relay)"


async def bench(home: str, n: int, clients: int, per_client: int,
                before: tuple[str, str | None] | None) -> tuple[dict[str, list[float]], dict[str, float]]:
    from contextlib import AsyncExitStack

    results: dict[str, list[float]] = {}
    cpu: dict[str, float] = {}
    async with AsyncExitStack() as stack:
        direct = await stack.enter_async_context(Client(direct_params()))
        gateway = await stack.enter_async_context(Client(gateway_params(home)))
        paths = {"direct SDK session": lambda: direct.call_tool("echo", ARGS),
                 GATEWAY: lambda: gateway.call_tool("b__echo", ARGS)}
        pids = {GATEWAY: supervisor_pid(home)}
        if before is not None:
            old = await stack.enter_async_context(Client(gateway_params(*before)))
            paths[BEFORE] = lambda: old.call_tool("b__echo", ARGS)
            pids[BEFORE] = supervisor_pid(before[0])
        started = {label: cpu_ms(pid) for label, pid in pids.items()}
        results.update(await in_turns(paths, n))
        calls = n + min(30, n)
        for label, pid in pids.items():
            (whole, loop), (whole0, loop0) = cpu_ms(pid), started[label]
            cpu[label], cpu[f"{label} loop"] = (whole - whole0) / calls, (loop - loop0) / calls

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
    return results, cpu


def supervisor_pid(home: str) -> int:
    return int((Path(home) / "run" / "monad.pid").read_text().split()[0])


def started_home(tmp: str, name: str, tree: str | None = None) -> str:
    """A MONAD_HOME under `tmp` with a supervisor (monad from `tree`, else this one) serving
    server `b` (tests/servers/toolserver.py) with `echo` auto-approved."""
    home = str(Path(tmp) / name)
    with pythonpath(tree):
        monad = monad_env(home)
        monad("daemon", "start")
        monad("mcp", "add", "b", "--", sys.executable, TOOLSERVER)
        monad("mcp", "trust", "b", "--auto-approve", "echo")
        wait_tools(home, "b__echo", auto_approved=True)
    return home


@contextlib.contextmanager
def pythonpath(tree: str | None) -> Iterator[None]:
    """PYTHONPATH is `tree` meanwhile (the CLI, and the supervisor it starts), if given."""
    saved = os.environ.get("PYTHONPATH")
    if tree:
        os.environ["PYTHONPATH"] = tree
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=300)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--per-client", type=int, default=100)
    ap.add_argument("--before", metavar="DIR", help="also a supervisor running monad from the tree in DIR")
    args = ap.parse_args()
    tree = str(Path(args.before).resolve()) if args.before else None
    with tempfile.TemporaryDirectory(prefix="monad-bench-") as tmp:
        homes: list[tuple[str, str | None]] = []
        try:
            homes.append((started_home(tmp, "home"), None))
            if tree:
                homes.append((started_home(tmp, "before", tree), tree))
            print(f"load average: {load()}")
            results, cpu = anyio.run(bench, homes[0][0], args.n, args.clients, args.per_client,
                                     homes[1] if tree else None)
            print(f"load average: {load()}")
        finally:
            for home, home_tree in homes:
                with pythonpath(home_tree):
                    monad_env(home)("daemon", "stop")
    print(f"{'path':42} {'calls':>6} {'median ms':>10} {'p99 ms':>8}")
    for k, v in results.items():
        shown = f"  (supervisor CPU {cpu[k]:.3f} ms/call, its event loop {cpu[k + ' loop']:.3f})" if k in cpu else ""
        print(f"{k:42} {len(v):6d} {statistics.median(v):10.3f} {p99(v):8.3f}{shown}")
    direct = results["direct SDK session"]
    base = statistics.median(direct)
    for label in (GATEWAY, BEFORE):
        if label in results:
            added = statistics.median(g - d for g, d in zip(results[label], direct, strict=True))
            print(f"{label + ', added per call (paired median)':62} {added:+8.3f} ms")
    gw = results[GATEWAY]
    added = statistics.median(g - d for g, d in zip(gw, direct, strict=True))
    target(f"gateway: {args.n} sequential calls, added per call", f"{added:+.2f} ms",
           f"{statistics.median(gw) / base:.2f}x direct", "<= +1.0 ms", added <= 1.0)
    d99 = p99(results[f"direct, {args.clients} sessions x {args.per_client}"])
    g99 = p99(results[f"gateway, {args.clients} clients x {args.per_client}"])
    target(f"gateway: {args.clients} clients x {args.per_client} calls, p99", f"{g99:.2f} ms",
           f"{g99 / d99:.2f}x direct p99", "<= 2x", g99 <= 2 * d99)


if __name__ == "__main__":
    main()
