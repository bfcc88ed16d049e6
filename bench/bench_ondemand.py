"""Bench: on-demand servers (docs/supervisor.md "On demand") with real published servers.
Not a timed test.

    python bench/bench_ondemand.py [-n 10] [--runs 5]

1. Memory at rest: `n` instances each of @modelcontextprotocol/server-memory and
   server-everything (npm, Node) and mcp-server-time (PyPI, Python) under one supervisor:
   the RSS of its whole process tree (the supervisor and every descendant) once all are
   `connected` with `start = "always"`, against the same definitions with `start =
   "on-demand"` once all are `idle` (each was started once to learn its lists, then stopped).
2. The first `tools/call` on a stopped server, through the gateway (`monad mcp serve`, what an
   agent uses: an MCP client already connected to it), against a direct SDK client that
   spawns the same server, connects and calls once. Median of `--runs`, the server stopped
   (`idle`) before each.
3. The second call (the server now up) on the same gateway session, against the same call on
   an open direct SDK session, and against the same call to a copy of the server started
   `always` (interleaved on the same gateway session): what on demand adds to today's call.

Targets (issue 25): on-demand RSS <= 10 % of always; first call <= 1.2x direct; second call
<= +1 ms over direct. Needs `make everything-deps memory-deps` (a kind that is missing is
left out and said so).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import Any

import anyio
from _util import BIN, monad_env, target
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from monad_cli.cli.control import ControlClient
from monad_cli.core.paths import Paths

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache"
MEMORY_BIN = CACHE / "memory" / "node_modules" / ".bin" / "mcp-server-memory"
EVERYTHING_BIN = CACHE / "everything" / "node_modules" / ".bin" / "mcp-server-everything"
TIME_BIN = Path(BIN) / "mcp-server-time"
STOP_GRACE_S = 4.5  # stdin close → 2 s → SIGTERM → 2 s → SIGKILL (sessions/transports.py)
WARMUP = 5  # calls before the warm ones are timed, on both sides (a fresh server's first calls load code)
DEVNULL = open(os.devnull, "w")  # noqa: SIM115 - for the whole run: the servers' stderr banners


def kinds(data: Path) -> dict[str, tuple[list[str], dict[str, str], str, dict[str, Any]]]:
    """Kind → (argv, env, a tool to call, its arguments), for the kinds that are installed."""
    out: dict[str, tuple[list[str], dict[str, str], str, dict[str, Any]]] = {}
    if TIME_BIN.exists():
        out["time"] = ([str(TIME_BIN), "--local-timezone", "UTC"], {}, "get_current_time", {"timezone": "UTC"})
    else:
        print("mcp-server-time is not installed (pip install -e '.[test]'): left out")
    if MEMORY_BIN.exists():
        out["memory"] = ([str(MEMORY_BIN)], {"MEMORY_FILE_PATH": str(data / "memory-{i}.jsonl")}, "read_graph", {})
    else:
        print("@modelcontextprotocol/server-memory is not installed (make memory-deps): left out")
    if EVERYTHING_BIN.exists():
        out["everything"] = ([str(EVERYTHING_BIN), "stdio"], {}, "echo", {"message": "hello"})
    else:
        print("@modelcontextprotocol/server-everything is not installed (make everything-deps): left out")
    return out


def tree_rss_mib(root: int) -> tuple[float, int]:
    """(RSS of `root` and all its descendants in MiB, how many processes)."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            status = (entry / "status").read_text()
        except OSError:
            continue
        parents[int(entry.name)] = int(stat[1])
        rss[int(entry.name)] = next((int(line.split()[1]) for line in status.splitlines()
                                     if line.startswith("VmRSS:")), 0)
    tree = {root}
    grew = True
    while grew:
        grew = False
        for pid, ppid in parents.items():
            if ppid in tree and pid not in tree:
                tree.add(pid)
                grew = True
    return sum(rss.get(p, 0) for p in tree) / 1024, len(tree)


def write_atoms(home: Path, specs: dict[str, tuple[list[str], dict[str, str], str, dict[str, Any]]], n: int,
                start: str, idle: str = "1s", suffix: str = "") -> list[str]:
    atoms = home / "atoms" / "mcp"
    atoms.mkdir(parents=True, exist_ok=True)
    names = []
    for kind, (argv, env, tool, _args) in specs.items():
        for i in range(n):
            name = f"{kind}{suffix or i}"
            env_i = {k: v.format(i=suffix or i) for k, v in env.items()}
            lines = [f"command = {json.dumps(argv[0])}", f"args = {json.dumps(argv[1:])}", f'start = "{start}"',
                     f'idleStop = "{idle}"', "timeout = 120", f"trust = {{autoApproveTools = [\"{name}__{tool}\"]}}"]
            if env_i:
                lines.append("env = {" + ", ".join(f"{k} = {json.dumps(v)}" for k, v in env_i.items()) + "}")
            (atoms / f"{name}.toml").write_text("\n".join(lines) + "\n")
            names.append(name)
    return names


def wait_all(client: ControlClient, names: list[str], state: str, limit: float = 300.0) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        rows = {r["name"]: r for r in client.get("/v1/settings/mcp-servers/status")["servers"]}
        if all(rows.get(n, {}).get("state") == state for n in names):
            return
        time.sleep(0.2)
    bad = {n: rows.get(n, {}).get("state") for n in names if rows.get(n, {}).get("state") != state}
    raise SystemExit(f"not all servers {state} within {limit:g} s: {bad}")


def memory_at_rest(specs: dict[str, Any], n: int, start: str) -> tuple[float, int]:
    with tempfile.TemporaryDirectory(prefix="monad-bench-") as tmp:
        home = Path(tmp) / "home"
        names = write_atoms(home, specs, n, start)
        run = monad_env(str(home))
        run("daemon", "start")
        try:
            client = ControlClient(Paths(home))
            wait_all(client, names, "connected" if start == "always" else "idle")
            time.sleep(3.0)  # settle: what the servers hold at rest, not their start's peak
            pid = int((home / "run" / "monad.pid").read_text())
            deadline = time.monotonic() + 30
            # On demand, at rest means the learning starts' processes are gone too (a stop
            # that takes the stdin grace and SIGTERM is `idle` before its process exits).
            while start != "always" and tree_rss_mib(pid)[1] > 1 and time.monotonic() < deadline:
                time.sleep(0.5)
            return tree_rss_mib(pid)
        finally:
            run("daemon", "stop")


async def timed(samples: list[float], call: Awaitable[Any]) -> Any:
    t = time.perf_counter()
    result = await call
    samples.append(time.perf_counter() - t)
    return result


async def measure_kind(client: Client, control: ControlClient, kind: str, spec: Any, runs: int,
                       warm_runs: int) -> dict[str, list[float]]:
    """One kind's samples (seconds): `first` (a call on the stopped on-demand server through the
    gateway), `direct_first` (spawn, connect and call once with the SDK, timed to the answer),
    `warm`, `always`, `direct_warm` (a call on the now live on-demand server, on its
    always-started copy, on an open direct SDK session). Each run takes one sample of each,
    interleaved, so a change in the machine's load (shared cores) hits every side alike."""
    argv, env, tool, args = spec
    samples: dict[str, list[float]] = {k: [] for k in ("first", "direct_first", "warm", "always", "direct_warm")}
    params = StdioServerParameters(command=argv[0], args=argv[1:],
                                   env={**os.environ, **{k: v.format(i="direct") for k, v in env.items()}})
    async with Client(stdio_client(params, errlog=DEVNULL)) as direct:
        for _ in range(WARMUP):
            await client.call_tool(f"{kind}A__{tool}", args)
            await direct.call_tool(tool, args)
        for _ in range(runs):
            await anyio.to_thread.run_sync(wait_all, control, [f"{kind}0"], "idle")
            # `idle` is said as the stop begins; the old process may take the stdin grace to
            # exit, and a start waits for that. A call minutes later (idleStop is 10 min by
            # default) finds it long gone: so does this one.
            await anyio.sleep(STOP_GRACE_S)
            result = await timed(samples["first"], client.call_tool(f"{kind}0__{tool}", args))
            if result.is_error:
                raise SystemExit(f"{kind}0__{tool} failed: {result.content}")
            t = time.perf_counter()
            async with Client(stdio_client(params, errlog=DEVNULL)) as fresh:
                await fresh.call_tool(tool, args)
                samples["direct_first"].append(time.perf_counter() - t)
            for _ in range(WARMUP - 1):  # the first call was one
                await client.call_tool(f"{kind}0__{tool}", args)
            for _ in range(warm_runs):
                await timed(samples["warm"], client.call_tool(f"{kind}0__{tool}", args))
                await timed(samples["always"], client.call_tool(f"{kind}A__{tool}", args))
                await timed(samples["direct_warm"], direct.call_tool(tool, args))
    return samples


async def through_gateway(home: Path, specs: dict[str, Any], runs: int, warm_runs: int
                          ) -> dict[str, dict[str, list[float]]]:
    """Kind → its samples (`measure_kind`), on one gateway session (`monad mcp serve`)."""
    control = ControlClient(Paths(home))
    params = StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve"],
                                   env={**os.environ, "MONAD_HOME": str(home), "MONAD_NO_AUTOSTART": "1"})
    async with Client(params) as client:
        await client.list_tools()
        return {kind: await measure_kind(client, control, kind, spec, runs, warm_runs)
                for kind, spec in specs.items()}


def first_calls(specs: dict[str, Any], runs: int) -> None:
    with tempfile.TemporaryDirectory(prefix="monad-bench-") as tmp:
        home = Path(tmp) / "home"
        names = write_atoms(home, specs, 1, "on-demand", idle="1s")
        kept = write_atoms(home, specs, 1, "always", suffix="A")
        run = monad_env(str(home))
        run("daemon", "start")
        try:
            wait_all(ControlClient(Paths(home)), names, "idle")
            wait_all(ControlClient(Paths(home)), kept, "connected")
            measured = anyio.run(through_gateway, home, specs, runs, 20)
        finally:
            run("daemon", "stop")
    for kind, samples in measured.items():
        med = {k: statistics.median(v) for k, v in samples.items()}
        m, d = med["first"], med["direct_first"]
        print(f"{kind}: first call, stopped server via the gateway: "
              + ", ".join(f"{x * 1000:.0f}" for x in samples["first"]) + " ms; direct SDK spawn+connect+call: "
              + ", ".join(f"{x * 1000:.0f}" for x in samples["direct_first"]) + " ms")
        target(f"on demand: first call on a stopped {kind} server", f"{m * 1000:.0f} ms",
               f"{m / d:.2f}x direct", "<= 1.2x", m <= 1.2 * d)
        print(f"{kind}: warm call, medians: on-demand via the gateway {med['warm'] * 1000:.2f} ms, always via the "
              f"gateway {med['always'] * 1000:.2f} ms, direct SDK session {med['direct_warm'] * 1000:.2f} ms")
        extra = (med["warm"] - med["direct_warm"]) * 1000
        target(f"on demand: second call ({kind}), gateway vs direct", f"{med['warm'] * 1000:.2f} ms",
               f"{extra:+.2f} ms over direct", "<= +1 ms", extra <= 1.0)
        added = (med["warm"] - med["always"]) * 1000
        target(f"on demand: second call ({kind}), on-demand vs always", f"{added:+.2f} ms",
               "what on demand adds to today's call", "<= +1 ms", added <= 1.0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=10, help="instances of each kind (3 kinds)")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    os.environ["PATH"] = BIN + os.pathsep + os.environ.get("PATH", "")
    if not shutil.which("node"):
        print("node is not on PATH: the npm servers are left out")
    data = Path(tempfile.mkdtemp(prefix="monad-bench-data-"))
    specs = kinds(data)
    if not specs:
        raise SystemExit("no published server is installed; see the docstring")
    always, procs_a = memory_at_rest(specs, args.n, "always")
    lazy, procs_l = memory_at_rest(specs, args.n, "on-demand")
    total = args.n * len(specs)
    print(f"process tree RSS at rest, {total} servers ({', '.join(specs)}): always {always:.0f} MiB "
          f"({procs_a} processes), on-demand {lazy:.0f} MiB ({procs_l} processes)")
    target(f"on demand: tree RSS at rest, {total} published servers", f"{lazy:.0f} MiB",
           f"{lazy / always * 100:.1f} % of always ({always:.0f} MiB)", "<= 10 %", lazy <= 0.10 * always)
    first_calls(specs, args.runs)
    shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
