"""Where a warm gateway call's time goes on a loaded machine: CPU work against waiting for a CPU.

    python bench/sched_gateway.py [--calls 300]

One published server (mcp-server-time, `always`) under a supervisor; `--calls` sequential
`tools/call`s through the gateway (`monad mcp serve`, one session) and as many on a direct SDK
session with the same server, interleaved. For each process on each path (this client, the
relay, the supervisor, the server) the kernel's per-thread scheduler statistics
(`/proc/PID/task/*/schedstat`: time on a CPU, time runnable but waiting for one) are read
before and after; printed per call beside the median wall time. Linux only. Not a timed test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from _util import BIN, monad_env
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from monad_cli.cli.control import ControlClient
from monad_cli.core.paths import Paths

TIME = [str(Path(BIN) / "mcp-server-time"), "--local-timezone", "UTC"]
ARGS = {"timezone": "UTC"}
DEVNULL = open(os.devnull, "w")  # noqa: SIM115 - for the whole run: the server's stderr


def sched(pid: int) -> tuple[int, int]:
    """(ns on a CPU, ns runnable but waiting for a CPU) summed over `pid`'s threads."""
    run = wait = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            fields = (task / "schedstat").read_text().split()
        except OSError:
            continue
        run, wait = run + int(fields[0]), wait + int(fields[1])
    return run, wait


def threads(pid: int) -> dict[str, tuple[int, int]]:
    """Thread name -> (ns on a CPU, ns waiting), threads of one name summed."""
    out: dict[str, tuple[int, int]] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            fields = (task / "schedstat").read_text().split()
            name = (task / "comm").read_text().strip()
        except OSError:
            continue
        run, wait = out.get(name, (0, 0))
        out[name] = (run + int(fields[0]), wait + int(fields[1]))
    return out


def children(ppid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == ppid:
                    out.append(int(entry.name))
            except OSError:
                continue
    return out


async def measure(home: Path, calls: int) -> None:
    control = ControlClient(Paths(home))
    rows = {r["name"]: r for r in control.get("/v1/settings/mcp-servers/status")["servers"]}
    supervisor = int((home / "run" / "monad.pid").read_text())
    server = int(rows["t"]["pid"])
    gateway = StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve"],
                                    env={**os.environ, "MONAD_HOME": str(home), "MONAD_NO_AUTOSTART": "1"})
    before_kids = set(children(os.getpid()))
    async with Client(gateway) as via:
        relay = next(iter(set(children(os.getpid())) - before_kids))
        params = StdioServerParameters(command=TIME[0], args=TIME[1:])
        async with Client(stdio_client(params, errlog=DEVNULL)) as direct:
            direct_server = next(iter(set(children(os.getpid())) - before_kids - {relay}))
            for _ in range(20):
                await via.call_tool("t__get_current_time", ARGS)
                await direct.call_tool("get_current_time", ARGS)
            sides = {"gateway": {"client": os.getpid(), "supervisor": supervisor, "server": server},
                     "direct": {"client": os.getpid(), "server": direct_server}}
            walls: dict[str, list[float]] = {"gateway": [], "direct": []}
            stats: dict[str, dict[str, tuple[int, int]]] = {s: {} for s in sides}
            for side, pids in sides.items():
                start_threads = threads(supervisor)
                start = {name: sched(pid) for name, pid in pids.items()}
                for _ in range(calls):
                    t = time.perf_counter()
                    if side == "gateway":
                        await via.call_tool("t__get_current_time", ARGS)
                    else:
                        await direct.call_tool("get_current_time", ARGS)
                    walls[side].append(time.perf_counter() - t)
                end = {name: sched(pid) for name, pid in pids.items()}
                if side == "gateway":
                    end_threads = threads(supervisor)
                    print("supervisor threads, per call: " + ", ".join(
                        f"{n} {(r - start_threads.get(n, (0, 0))[0]) / calls / 1e6:.2f} ms on a CPU + "
                        f"{(w - start_threads.get(n, (0, 0))[1]) / calls / 1e6:.2f} ms waiting"
                        for n, (r, w) in sorted(end_threads.items())
                        if r - start_threads.get(n, (0, 0))[0] > 0))
                stats[side] = {name: (end[name][0] - start[name][0], end[name][1] - start[name][1]) for name in pids}
    for side in sides:
        med = statistics.median(walls[side]) * 1000
        parts = ", ".join(f"{name} {run / calls / 1e6:.2f} ms on a CPU + {wait / calls / 1e6:.2f} ms waiting"
                          for name, (run, wait) in stats[side].items())
        total_wait = sum(w for _, w in stats[side].values()) / calls / 1e6
        total_run = sum(r for r, _ in stats[side].values()) / calls / 1e6
        print(f"{side}: median {med:.2f} ms per call (mean {statistics.fmean(walls[side]) * 1000:.2f}); per call: "
              f"{parts}; all processes {total_run:.2f} ms on a CPU, {total_wait:.2f} ms waiting for one")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=300)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="monad-bench-") as tmp:
        home = Path(tmp) / "home"
        atoms = home / "atoms" / "mcp"
        atoms.mkdir(parents=True)
        (atoms / "t.toml").write_text(f'command = "{TIME[0]}"\nargs = ["--local-timezone", "UTC"]\n'
                                      'trust = {autoApproveTools = ["t__get_current_time"]}\n')
        run = monad_env(str(home))
        run("daemon", "start")
        try:
            deadline = time.monotonic() + 120
            control = ControlClient(Paths(home))
            while time.monotonic() < deadline:
                rows = {r["name"]: r for r in control.get("/v1/settings/mcp-servers/status")["servers"]}
                if rows.get("t", {}).get("state") == "connected":
                    break
                time.sleep(0.2)
            print(f"load average before: {os.getloadavg()[0]:.2f}")
            anyio.run(measure, home, args.calls)
            print(f"load average after: {os.getloadavg()[0]:.2f}")
        finally:
            run("daemon", "stop")


if __name__ == "__main__":
    main()
