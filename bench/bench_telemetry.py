"""Bench: what telemetry costs a gateway call. Prints the supervisor's CPU per call (from
/proc, robust to other work on the machine) and the wall median per call; not a timed test.

    python bench/bench_telemetry.py [-n 1000]

Three supervisors in turn, each serving `n` sequential tool calls of one gateway client
(`monad mcp serve`, stdio, the direct lanes) to the same auto-approved server:
- off: no `[telemetry]` (the default; the OpenTelemetry SDK is not imported);
- on: `[telemetry] enabled = true`: spans and metrics recorded, `/metrics` served, no export;
- on + OTLP: also exported in batches over OTLP/HTTP to a receiver on loopback.
Target (issue 27): telemetry on adds at most 0.1 ms of supervisor CPU per gateway call.
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
from _util import monad_env, target, wait_tools
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parent.parent
TOOLSERVER = str(ROOT / "tests" / "servers" / "toolserver.py")
ARGS = {"text": "hello"}
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of `pid` (its threads included: the exporter's too)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


async def calls(home: str, n: int) -> tuple[list[float], float]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve"],
                                   env={"MONAD_HOME": home, "MONAD_NO_AUTOSTART": "1", "PATH": os.environ["PATH"]})
    pid = int((Path(home) / "run" / "monad.pid").read_text())
    async with Client(params) as client:
        for _ in range(50):  # warm up
            await client.call_tool("b__echo", ARGS)
        samples = []
        cpu = cpu_seconds(pid)
        for _ in range(n):
            t = time.perf_counter()
            await client.call_tool("b__echo", ARGS)
            samples.append((time.perf_counter() - t) * 1000)
        return samples, (cpu_seconds(pid) - cpu) / n * 1000


def run(mode: str, n: int, endpoint: str | None) -> tuple[list[float], float]:
    with tempfile.TemporaryDirectory(prefix="monad-bench-") as tmp:
        home = str(Path(tmp) / "home")
        Path(home).mkdir()
        if mode != "off":
            (Path(home) / "settings.toml").write_text("[telemetry]\nenabled = true\n" + (
                f'endpoint = "{endpoint}"\n' if endpoint else ""))
        monad = monad_env(home)
        monad("daemon", "start")
        try:
            monad("mcp", "add", "b", "--", sys.executable, TOOLSERVER)
            monad("mcp", "trust", "b", "--auto-approve", "echo")
            wait_tools(home, "b__echo", auto_approved=True)
            return anyio.run(calls, home, n)
        finally:
            monad("daemon", "stop")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=1000)
    ap.add_argument("--modes", default="off,on,on + OTLP",
                    help="comma-separated; `--modes off` under another checkout's Python compares that checkout")
    args = ap.parse_args()
    modes = [m.strip() for m in args.modes.split(",")]
    sys.path.insert(0, str(ROOT))
    from tests.otlp import OtlpReceiver

    results: dict[str, tuple[list[float], float]] = {}
    with OtlpReceiver() as otlp:
        for mode, endpoint in (("off", None), ("on", None), ("on + OTLP", otlp.endpoint)):
            if mode in modes:
                results[mode] = run(mode, args.n, endpoint)
        exported = len(otlp.spans())
    print(f"{'telemetry':12} {'calls':>6} {'median ms':>10} {'supervisor CPU ms/call':>23}")
    for mode, (samples, cpu) in results.items():
        print(f"{mode:12} {len(samples):6d} {statistics.median(samples):10.3f} {cpu:23.3f}")
    print(f"spans the OTLP receiver got: {exported}")
    if "off" not in results:
        return
    off = results["off"][1]
    for mode in [m for m in ("on", "on + OTLP") if m in results]:
        added = results[mode][1] - off
        target(f"telemetry {mode}: supervisor CPU added per gateway call", f"{added:+.3f} ms",
               f"{results[mode][1] / off:.2f}x off", "<= +0.1 ms", added <= 0.1)


if __name__ == "__main__":
    main()
