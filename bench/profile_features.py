"""Profile the supervisor (cProfile, inside it) under a loop of `prompts/get` or
`resources/read` through `monad mcp serve`, to see what a request costs there on a loaded
machine, where wall times say little: CPU seconds, not milliseconds of waiting.

    python bench/profile_features.py [--method prompts/get] [--mode legacy] [-n 2000] [--top 30] [--out FILE]
    python bench/profile_features.py --cpu [-n 2000]
    python bench/profile_features.py --method tools/call --telemetry [--filter telemetry]
    python bench/profile_features.py --method tools/call --kib 1024 --secrets 300 --timer cpu

Runs the supervisor as `python -m cProfile -m monad_cli.daemon` on a temporary MONAD_HOME
with tests/servers/resourceserver.py, sends `-n` requests from one agent of `--mode`
(`legacy`: 2025-11-25, `auto`: 2026-07-28), stops the supervisor (cProfile writes its
stats on a clean exit) and prints the supervisor's CPU per request (from /proc, whole
process) and the functions with the most own time. `--cpu`: no profiler; the supervisor's
CPU per request for each request (resources/read, prompts/get, tools/call `echo` as the
reference) and each agent era, the requests of each kind in one run. `--telemetry`: the
supervisor runs with `[telemetry] enabled = true` (metrics, no export; `--otlp`: spans and
metrics exported to an OTLP receiver on loopback); `--filter
REGEX`: only the functions whose file and name match. `--kib N`: the tool call is toolserver's
`big`, answering N KiB; `--secrets N`: N random values in MONAD_HOME/env (the scrubber's
set); `--timer cpu`: cProfile counts the event loop thread's CPU time, not wall time (on a
loaded machine, wall time charges a function for the time its process waited for a core).
Not a bench: no target.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import pstats
import random
import string
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


def callgrind(pid: int, on: bool) -> None:
    """Turn the supervisor's instruction counting (valgrind's callgrind) on or off."""
    subprocess.run(["callgrind_control", "-i", "on" if on else "off", str(pid)], check=True, capture_output=True)


def instructions(out: str) -> tuple[int, int]:
    """The instructions callgrind counted: the main thread's (the event loop's; its output
    file `OUT-01`) and all threads' (each file's `totals:` line)."""
    counts = {}
    for path in sorted(Path(out).parent.glob(Path(out).name + "-*")):
        for line in path.read_text().splitlines():
            if line.startswith("totals:"):
                counts[path.name.rsplit("-", 1)[1]] = int(line.split()[1])
    if not counts:
        raise SystemExit(f"no totals in {out}-*")
    return counts.get("01", 0), sum(counts.values())


async def loop(home: str, method: str, mode: str, n: int, pid: int, tool: str = "r__echo",
               kib: int = 0, counted: bool = False) -> tuple[float, float]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve"],
                                   env={"MONAD_HOME": home, "MONAD_NO_AUTOSTART": "1", "PATH": os.environ["PATH"]})
    async with Client(params, mode=mode) as agent:

        async def one() -> None:
            if method == "prompts/get":
                await agent.get_prompt("r__greet", {"name": "Ada"})
            elif method == "tools/call":
                await agent.call_tool(tool, {"kib": kib} if kib else {"text": "hello"})
            else:
                await agent.read_resource("note://r/alpha")

        for _ in range(50):
            await one()
        if counted:
            callgrind(pid, True)
        before, started = cpu_s(pid), time.monotonic()
        for _ in range(n):
            await one()
        cpu, wall = cpu_s(pid) - before, time.monotonic() - started
        if counted:
            callgrind(pid, False)
        return cpu, wall


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--method", choices=("prompts/get", "resources/read", "tools/call"), default="prompts/get")
    ap.add_argument("--mode", choices=("legacy", "auto"), default="legacy")
    ap.add_argument("-n", type=int, default=2000)
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--out", help="keep the cProfile stats in this file")
    ap.add_argument("--cpu", action="store_true", help="no profiler: CPU per request, every request and era")
    ap.add_argument("--telemetry", action="store_true", help="the supervisor runs with telemetry on (no export)")
    ap.add_argument("--otlp", action="store_true", help="with --telemetry: spans and metrics exported (OTLP/HTTP) "
                                                        "to a receiver on loopback")
    ap.add_argument("--filter", help="print only the functions matching this regular expression")
    ap.add_argument("--kib", type=int, default=0, help="call toolserver's `big` for a result of this many KiB")
    ap.add_argument("--secrets", type=int, default=0, help="this many random secrets in MONAD_HOME/env")
    ap.add_argument("--timer", choices=("wall", "cpu"), default="wall", help="what cProfile counts")
    ap.add_argument("--callgrind", action="store_true",
                    help="no profiler: the supervisor under valgrind's callgrind, instructions per request")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="monad-profile-") as tmp, contextlib.ExitStack() as stack:
        home = str(Path(tmp) / "home")
        out = args.out or str(Path(tmp) / "supervisor.prof")
        monad = monad_env(home)
        Path(home).mkdir(mode=0o700, parents=True, exist_ok=True)
        if args.telemetry:
            endpoint = ""
            if args.otlp:
                sys.path.insert(0, str(ROOT))
                from tests.otlp import OtlpReceiver

                endpoint = f'endpoint = "{stack.enter_context(OtlpReceiver()).endpoint}"\n'
            (Path(home) / "settings.toml").write_text(f"[telemetry]\nenabled = true\n{endpoint}")
        if args.secrets:
            rng = random.Random(38)
            alphabet = string.ascii_letters + string.digits
            values = ("".join(rng.choice(alphabet) for _ in range(rng.randint(16, 64))) for _ in range(args.secrets))
            (Path(home) / "env").write_text("".join(f"BENCH_{i}={v}\n" for i, v in enumerate(values)))
            (Path(home) / "env").chmod(0o600)
        env = {**os.environ, "MONAD_HOME": home}
        wrap: list[str] = []
        with open(Path(tmp) / "daemon.out", "wb") as log:
            daemon = ["-m", "monad_cli.daemon"]
            if args.callgrind:  # counting starts with the measured requests
                argv = daemon
                wrap = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--separate-threads=yes",
                        f"--callgrind-out-file={out}.cg"]
            elif args.cpu:
                argv = daemon
            elif args.timer == "wall":
                argv = ["-m", "cProfile", "-o", out, *daemon]
            else:  # the event loop thread's CPU time (`time.thread_time`), not the clock's
                argv = ["-c", "import cProfile, runpy, time\np = cProfile.Profile(time.thread_time)\np.enable()\n"
                              "try:\n    runpy.run_module('monad_cli.daemon', run_name='__main__')\n"
                              f"finally:\n    p.disable()\n    p.dump_stats({out!r})\n"]
            proc = subprocess.Popen([*wrap, sys.executable, *argv], stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                    env=env)
        try:
            deadline = time.monotonic() + (900 if args.callgrind else 60)
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
                monad("mcp", "add", "t", "--", sys.executable, TOOLSERVER, *(["--big"] if args.kib else []))
                monad("mcp", "trust", "t", "--auto-approve", "big" if args.kib else "echo")
                wait_tools(home, "t__big" if args.kib else "t__echo", auto_approved=True)
            if args.cpu:
                rows = [(method, mode, *anyio.run(loop, home, method, mode, args.n, proc.pid))
                        for mode in ("legacy", "auto") for method in ("resources/read", "prompts/get", "tools/call")]
            else:
                cpu, wall = anyio.run(loop, home, args.method, args.mode, args.n, proc.pid,
                                      "t__big" if args.kib else "t__echo", args.kib, args.callgrind)
        finally:
            monad("daemon", "stop")
            proc.wait(timeout=600 if args.callgrind else 60)
        print(f"load average: {load()}")
        if args.cpu:
            for method, mode, cpu, wall in rows:
                print(f"{method:15} {mode:7} supervisor CPU {cpu / args.n * 1000:.3f} ms per request, "
                      f"wall {wall / args.n * 1000:.3f} ms")
            return
        if args.callgrind:
            loop_ir, all_ir = instructions(out + ".cg")
            print(f"{args.method} ({args.mode}{f', {args.kib} KiB' if args.kib else ''}"
                  f"{f', {args.secrets} secrets' if args.secrets else ''}), {args.n} requests: supervisor "
                  f"{loop_ir / args.n / 1e6:.3f} M instructions per request on its event loop, "
                  f"{all_ir / args.n / 1e6:.3f} M in all its threads (callgrind)")
            return
        print(f"{args.method} ({args.mode}), {args.n} requests: supervisor CPU {cpu / args.n * 1000:.3f} ms per "
              f"request (under cProfile), wall {wall / args.n * 1000:.3f} ms per request")
        text = io.StringIO()
        stats = pstats.Stats(out, stream=text)
        stats.sort_stats("tottime").print_stats(*([args.filter] if args.filter else []), args.top)
        print(text.getvalue()[-12000:])


if __name__ == "__main__":
    main()
