"""Profile the supervisor (cProfile, inside it) under a loop of `prompts/get` or
`resources/read` through `monad mcp serve`, to see what a request costs there on a loaded
machine, where wall times say little: CPU seconds, not milliseconds of waiting.

    python bench/profile_features.py [--method prompts/get] [--mode legacy] [-n 2000] [--top 30] [--out FILE]
    python bench/profile_features.py --cpu [-n 2000]
    python bench/profile_features.py --method tools/call --telemetry [--filter telemetry]

Runs the supervisor as `python -m cProfile -m monad_cli.daemon` on a temporary MONAD_HOME
with tests/servers/resourceserver.py, sends `-n` requests from one agent of `--mode`
(`legacy`: 2025-11-25, `auto`: 2026-07-28), stops the supervisor (cProfile writes its
stats on a clean exit) and prints the supervisor's CPU per request (from /proc, whole
process) and the functions with the most own time. `--cpu`: no profiler; the supervisor's
CPU per request for each request (resources/read, prompts/get, tools/call `echo` as the
reference) and each agent era, the requests of each kind in one run. `--telemetry`: the
supervisor runs with `[telemetry] enabled = true` (spans and metrics, no export); `--filter
REGEX`: only the functions whose file and name match. Not a bench: no target.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import pstats
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
from _util import load, monad_env, wait_tools
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parent.parent
SERVER = str(ROOT / "tests" / "servers" / "resourceserver.py")
# `--method tools/call` calls this server's `echo` (no output schema: the gateway's direct lanes).
TOOLSERVER = str(ROOT / "tests" / "servers" / "toolserver.py")
TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime + stime


async def loop(home: str, method: str, mode: str, n: int, pid: int, tool: str = "r__echo") -> tuple[float, float]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve"],
                                   env={"MONAD_HOME": home, "MONAD_NO_AUTOSTART": "1", "PATH": os.environ["PATH"]})
    async with Client(params, mode=mode) as agent:

        async def one() -> None:
            if method == "prompts/get":
                await agent.get_prompt("r__greet", {"name": "Ada"})
            elif method == "tools/call":
                await agent.call_tool(tool, {"text": "hello"})
            else:
                await agent.read_resource("note://r/alpha")

        for _ in range(50):
            await one()
        before, started = cpu_s(pid), time.monotonic()
        for _ in range(n):
            await one()
        return cpu_s(pid) - before, time.monotonic() - started


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--method", choices=("prompts/get", "resources/read", "tools/call"), default="prompts/get")
    ap.add_argument("--mode", choices=("legacy", "auto"), default="legacy")
    ap.add_argument("-n", type=int, default=2000)
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--out", help="keep the cProfile stats in this file")
    ap.add_argument("--cpu", action="store_true", help="no profiler: CPU per request, every request and era")
    ap.add_argument("--telemetry", action="store_true", help="the supervisor runs with telemetry on (no export)")
    ap.add_argument("--filter", help="print only the functions matching this regular expression")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="monad-profile-") as tmp:
        home = str(Path(tmp) / "home")
        out = args.out or str(Path(tmp) / "supervisor.prof")
        monad = monad_env(home)
        if args.telemetry:
            Path(home).mkdir(parents=True, exist_ok=True)
            (Path(home) / "settings.toml").write_text("[telemetry]\nenabled = true\n")
        env = {**os.environ, "MONAD_HOME": home}
        with open(Path(tmp) / "daemon.out", "wb") as log:
            profiler = [] if args.cpu else ["-m", "cProfile", "-o", out]
            proc = subprocess.Popen([sys.executable, *profiler, "-m", "monad_cli.daemon"],
                                    stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env)
        try:
            deadline = time.monotonic() + 60
            while subprocess.run([sys.executable, "-m", "monad_cli", "daemon", "status"], env=env,
                                 capture_output=True).returncode != 0:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise SystemExit("the supervisor did not start")
                time.sleep(0.2)
            monad("mcp", "add", "r", "--", sys.executable, SERVER)
            monad("mcp", "trust", "r", "--auto-approve", "echo")
            while json.loads(monad("mcp", "status", "r", "--json")).get("state") != "connected":
                if time.monotonic() > deadline:
                    raise SystemExit("server r did not connect within 60 s")
                time.sleep(0.2)
            wait_tools(home, "r__echo", auto_approved=True)
            if args.method == "tools/call" and not args.cpu:
                monad("mcp", "add", "t", "--", sys.executable, TOOLSERVER)
                monad("mcp", "trust", "t", "--auto-approve", "echo")
                wait_tools(home, "t__echo", auto_approved=True)
            if args.cpu:
                rows = [(method, mode, *anyio.run(loop, home, method, mode, args.n, proc.pid))
                        for mode in ("legacy", "auto") for method in ("resources/read", "prompts/get", "tools/call")]
            else:
                cpu, wall = anyio.run(loop, home, args.method, args.mode, args.n, proc.pid, "t__echo")
        finally:
            monad("daemon", "stop")
            proc.wait(timeout=60)
        print(f"load average: {load()}")
        if args.cpu:
            for method, mode, cpu, wall in rows:
                print(f"{method:15} {mode:7} supervisor CPU {cpu / args.n * 1000:.3f} ms per request, "
                      f"wall {wall / args.n * 1000:.3f} ms")
            return
        print(f"{args.method} ({args.mode}), {args.n} requests: supervisor CPU {cpu / args.n * 1000:.3f} ms per "
              f"request (under cProfile), wall {wall / args.n * 1000:.3f} ms per request")
        text = io.StringIO()
        stats = pstats.Stats(out, stream=text)
        stats.sort_stats("tottime").print_stats(*([args.filter] if args.filter else []), args.top)
        print(text.getvalue()[-12000:])


if __name__ == "__main__":
    main()
