"""Profile the supervisor and the `monad mcp serve` process under a gateway call loop (py-spy).

    python bench/profile_gateway.py [--seconds 10] [--clients 1] [--out DIR]

Runs tools/call `b__echo` in a loop through `monad mcp serve` (stdio) for `--seconds`, while
`py-spy record --format raw` samples the supervisor and the gateway process. Prints, per
process, where the samples fall (the innermost frame that belongs to a known package), and
leaves the raw collapsed stacks in `--out` (flamegraph.pl or speedscope read them). Needs
`pip install py-spy` and permission to ptrace the processes (same uid; root in containers).
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parent.parent
TOOLSERVER = str(ROOT / "tests" / "servers" / "toolserver.py")

# Checked in order, innermost frame first: the first bucket whose marker is in a frame wins.
IDLE_LEAVES = ("EpollSelector.select", "Condition.wait", "WorkerThread.run", "Thread.join", "Event.wait")
BUCKETS = [
    ("journal (sqlite3)", ("monad_cli/journal", "sqlite3")),
    ("HTTP server (uvicorn, h11, starlette)", ("uvicorn/", "h11/", "starlette/", "sse_starlette")),
    ("HTTP client (httpx2, httpcore)", ("httpx2/", "httpcore/", "http/client")),
    ("pydantic validation / serialization", ("pydantic", "mcp_types/")),
    ("MCP SDK server side", ("mcp/server/",)),
    ("MCP SDK client side", ("mcp/client/",)),
    ("MCP SDK dispatcher", ("mcp/shared/",)),
    ("monad gateway / relay", ("monad_cli/daemon/gateway",)),
    ("monad tool service, gate", ("monad_cli/daemon/trust",)),
    ("monad transports, actor", ("monad_cli/daemon",)),
    ("monad other", ("monad_cli/",)),
    ("event loop (asyncio, anyio)", ("asyncio/", "anyio/", "selectors")),
]


def monad(home: str, *argv: str) -> str:
    r = subprocess.run([sys.executable, "-m", "monad_cli", *argv], capture_output=True, text=True,
                       env={**os.environ, "MONAD_HOME": home})
    if r.returncode != 0:
        raise SystemExit(f"monad {' '.join(argv)} failed: {r.stderr.strip()}")
    return r.stdout


def gateway_pid(home: str) -> int | None:
    """The `monad mcp serve` process of this MONAD_HOME (found through /proc)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().split(b"\0")
            env = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"serve" in cmd and b"monad_cli" in cmd and f"MONAD_HOME={home}".encode() in env:
            return int(entry.name)
    return None


def summarize(raw: Path) -> list[tuple[str, float]]:
    counts: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not n.isdigit():
            continue
        frames = stack.split(";")
        total += int(n)
        bucket = "other (interpreter, stdlib)"
        for frame in reversed(frames):
            hit = next((name for name, marks in BUCKETS if any(m in frame for m in marks)), None)
            if hit:
                bucket = hit
                break
        if any(frames[-1].startswith(leaf) for leaf in IDLE_LEAVES):
            total -= int(n)  # waiting, not working: py-spy cannot tell a blocked epoll from work
            continue
        counts[bucket] += int(n)
    return [(k, 100.0 * v / total) for k, v in counts.most_common()] if total else []


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of `pid` so far (/proc/PID/stat fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def loop_calls(home: str, seconds: float, clients: int) -> int:
    from contextlib import AsyncExitStack

    params = StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve"],
                                   env={"MONAD_HOME": home, "MONAD_NO_AUTOSTART": "1", "PATH": os.environ["PATH"]})
    count = [0]
    async with AsyncExitStack() as stack:
        gateways = [await stack.enter_async_context(Client(params)) for _ in range(clients)]
        for gw in gateways:
            for _ in range(20):
                await gw.call_tool("b__echo", {"text": "warm"})
        pids = {"supervisor": int(Path(home, "run", "monad.pid").read_text()), "gateway relay": gateway_pid(home)}
        procs = []
        for label, pid in pids.items():
            if pid is None:
                continue
            out = Path(OUT) / f"{label.replace(' ', '-')}.txt"
            procs.append((label, out, subprocess.Popen(
                [PYSPY, "record", "--format", "raw", "--rate", "250", "--duration", str(int(seconds)),
                 "--pid", str(pid), "--output", str(out), "--nonblocking"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)))
        await anyio.sleep(0.5)  # py-spy attaches
        t = time.monotonic()
        cpu = {label: cpu_seconds(pid) for label, pid in pids.items() if pid is not None}

        async def run(gw: Any) -> None:
            while time.monotonic() - t < seconds:
                await gw.call_tool("b__echo", {"text": "hello"})
                count[0] += 1

        async with anyio.create_task_group() as tg:
            for gw in gateways:
                tg.start_soon(run, gw)
        cpu = {label: cpu_seconds(pid) - cpu[label] for label, pid in pids.items() if pid is not None}
        for _label, _out, proc in procs:
            await anyio.to_thread.run_sync(proc.wait)
    n = count[0]
    for label, out, _proc in procs:
        print(f"\n{label}: {1000 * cpu[label] / max(n, 1):.2f} ms CPU per call (raw stacks: {out}); "
              f"busy samples:")
        for bucket, pct in summarize(out):
            print(f"  {pct:5.1f} %  {bucket}")
    return n


def main() -> None:
    global OUT, PYSPY
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--out", default=None)
    ap.add_argument("--clients", type=int, default=1, help="gateway clients calling at once")
    args = ap.parse_args()
    PYSPY = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not os.path.exists(PYSPY):
        raise SystemExit("py-spy is not installed: pip install py-spy")
    OUT = args.out or tempfile.mkdtemp(prefix="monad-profile-")
    os.makedirs(OUT, exist_ok=True)
    with tempfile.TemporaryDirectory() as home:
        monad(home, "daemon", "start")
        try:
            monad(home, "mcp", "add", "b", "--", sys.executable, TOOLSERVER)
            monad(home, "mcp", "trust", "b", "--auto-approve", "echo")
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and '"autoApproved": true' not in subprocess.run(
                    [sys.executable, "-m", "monad_cli", "mcp", "tools", "b", "--json"], capture_output=True,
                    text=True, env={**os.environ, "MONAD_HOME": home}).stdout:
                time.sleep(0.2)
            n = anyio.run(loop_calls, home, args.seconds, args.clients)
        finally:
            monad(home, "daemon", "stop")
    print(f"\n{n} calls by {args.clients} client(s) in {args.seconds:g} s ({1000 * args.seconds / max(n, 1):.2f} ms "
          f"per call, py-spy attached)")


OUT = ""
PYSPY = ""

if __name__ == "__main__":
    main()
