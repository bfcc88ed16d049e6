"""Bench: resources/read and prompts/get through the gateway (`monad mcp serve`, stdio)
against the same requests on a direct SDK session (tests/servers/resourceserver.py). Prints
medians, p99s and the added time; not a timed test.

    python bench/bench_features.py [-n 300]

Target (issue 24): a resources/read and a prompts/get through the gateway add at most
1 ms over a direct session. Each read and get leaves a journal event on the way. A
tools/call (auto-approved `echo`, the direct lane on stdio) runs beside them as the
reference: on a loaded machine every number grows, the ratios less so.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from _util import load, monad_env, target
from bench_gateway import p99, sequential
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parent.parent
SERVER = str(ROOT / "tests" / "servers" / "resourceserver.py")
ARGS = {"text": "hello"}


def gateway_params(home: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve"],
                                 env={"MONAD_HOME": home, "MONAD_NO_AUTOSTART": "1", "PATH": os.environ["PATH"]})


async def bench(home: str, n: int) -> dict[str, list[float]]:
    results: dict[str, list[float]] = {}
    for mode in ("auto", "legacy"):
        async with Client(StdioServerParameters(command=sys.executable, args=[SERVER]), mode=mode) as direct:
            results[f"resources/read, direct ({mode})"] = await sequential(
                n, lambda: direct.read_resource("note://r/alpha"))
            results[f"prompts/get, direct ({mode})"] = await sequential(
                n, lambda: direct.get_prompt("greet", {"name": "Ada"}))
            results[f"tools/call, direct ({mode})"] = await sequential(n, lambda: direct.call_tool("echo", ARGS))
        async with Client(gateway_params(home), mode=mode) as gateway:
            results[f"resources/read, gateway ({mode})"] = await sequential(
                n, lambda: gateway.read_resource("note://r/alpha"))
            results[f"prompts/get, gateway ({mode})"] = await sequential(
                n, lambda: gateway.get_prompt("r__greet", {"name": "Ada"}))
            results[f"tools/call, gateway ({mode})"] = await sequential(n, lambda: gateway.call_tool("r__echo", ARGS))
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
            deadline = time.monotonic() + 60
            while json.loads(monad("mcp", "status", "r", "--json")).get("state") != "connected":
                if time.monotonic() > deadline:
                    raise SystemExit("server r did not connect within 60 s")
                time.sleep(0.2)
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


if __name__ == "__main__":
    main()
