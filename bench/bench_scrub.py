"""Bench: the supervisor's scrubber (daemon/scrubber.py) with a few hundred stored secrets, on
its own and on a gateway `tools/call` whose result is 1 MB. Prints ms and the target; not a
timed test.

    python bench/bench_scrub.py [--secrets 300] [--kib 1024] [-n 100] [--before DIR]

Target (issue 38): the scrubber on every answer keeps a gateway `tools/call` within +1 ms of
the same call without it. The end-to-end part runs two supervisors: one with `--secrets`
random values in MONAD_HOME/env (every value of that file is a secret), one with none, and
calls a server answering `--kib` KiB through each one's `monad mcp serve` and on a direct SDK
session, the three in turn; the added cost is the difference of the two supervisors' CPU per
call (wall time on a shared machine moves more than the target). The first part times the
engine alone on a 1 MB line against the candidates it was chosen over (a loop of `in` over the values,
core/redact.py's reference; one compiled regex alternation; Aho-Corasick where installed).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import string
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from _util import load, monad_env, target, wait_tools
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parent.parent
TOOLSERVER = str(ROOT / "tests" / "servers" / "toolserver.py")


def secrets_of(n: int) -> list[str]:
    rng = random.Random(38)
    alphabet = string.ascii_letters + string.digits
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(16, 64))) for _ in range(n)]


def timed(fn: Callable[[], Any], repeat: int) -> float:
    """Median ms of `repeat` runs of `fn` (one warm-up run first)."""
    fn()
    samples = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1000)
    return statistics.median(samples)


def engine(secrets: list[str], kib: int) -> None:
    from monad_cli.core.redact import Scrubber
    from monad_cli.daemon.scrubber import SecretScrubber

    words = ["plain", "answer", "result", "value", "server", "tool", "data", "12345", "the", "quick", "brown", "fox"]
    rng = random.Random(1)
    text = " ".join(rng.choice(words) for _ in range(kib * 1024 // 6))[:kib * 1024]
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": text}]}}).encode()
    hit = line.replace(b"plain answer", secrets[7].encode(), 1)
    fast = SecretScrubber(secrets)
    t = time.perf_counter()
    SecretScrubber(secrets)
    build = (time.perf_counter() - t) * 1000
    rows = [("SecretScrubber.line, clean 1 MB line", timed(lambda: fast.line(line), 30)),
            ("SecretScrubber.line, a secret in it", timed(lambda: fast.line(hit), 10)),
            ("SecretScrubber.data, the parsed result", timed(lambda: fast.data(json.loads(line)["result"]), 10)),
            ("SecretScrubber(), building it", build),
            ("reference: a loop of `in` (core Scrubber)", timed(lambda: Scrubber(secrets)(text), 3))]
    alternation = re.compile("|".join(map(re.escape, sorted(secrets, key=len, reverse=True))))
    rows.append(("one compiled regex alternation", timed(lambda: alternation.search(text), 1)))
    try:
        import ahocorasick_rs

        automaton = ahocorasick_rs.BytesAhoCorasick([s.encode() for s in secrets])
        rows.append(("Aho-Corasick (ahocorasick_rs, bytes)", timed(lambda: automaton.find_matches_as_indexes(line), 5)))
    except ImportError:
        pass
    print(f"{len(secrets)} secrets, a {len(line) / 1e6:.2f} MB line")
    print(f"{'scan':46} {'median ms':>10}")
    for label, ms in rows:
        print(f"{label:46} {ms:10.3f}")


def cpu_ms(pid: int) -> float:
    """CPU time (user + system) process `pid` has used, in ms (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


async def interleaved(paths: dict[str, tuple[StdioServerParameters, str, int | None]], kib: int,
                      n: int) -> tuple[dict[str, list[float]], dict[str, float]]:
    """`n` calls on each path, taken in turn (one on each, then again), so that the load of a
    shared machine weighs on every path alike: ms per call by path, and the CPU ms per call
    of each path's supervisor (`pid`), which the load hardly moves."""
    from contextlib import AsyncExitStack

    out: dict[str, list[float]] = {label: [] for label in paths}
    cpu: dict[str, float] = {}
    async with AsyncExitStack() as stack:
        clients = {label: (await stack.enter_async_context(Client(params)), tool)
                   for label, (params, tool, _pid) in paths.items()}
        for i in range(n + 5):
            if i == 5:
                cpu = {label: cpu_ms(pid) for label, (_p, _t, pid) in paths.items() if pid is not None}
            for label, (client, tool) in clients.items():
                t = time.perf_counter()
                result = await client.call_tool(tool, {"kib": kib})
                if i >= 5:
                    out[label].append((time.perf_counter() - t) * 1000)
                assert not result.is_error, result
        cpu = {label: (cpu_ms(paths[label][2] or 0) - before) / n for label, before in cpu.items()}
    return out, cpu


def end_to_end(secrets: list[str], kib: int, n: int,
               before: str | None = None) -> tuple[dict[str, list[float]], dict[str, float]]:
    from contextlib import ExitStack

    paths: dict[str, tuple[StdioServerParameters, str, int | None]] = {
        "direct SDK session": (StdioServerParameters(command=sys.executable, args=[TOOLSERVER, "--big"]), "big", None)}
    runs: list[tuple[str, list[str], str | None]] = [(f"gateway, {len(secrets)} secrets", secrets, None),
                                                    ("gateway, no secrets", [], None)]
    if before:
        runs.append((f"gateway, {len(secrets)} secrets, before", secrets, before))
    with ExitStack() as stack:
        for label, values, tree in runs:
            home = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="monad-bench-"))) / "home"
            home.mkdir(mode=0o700)
            env = home / "env"
            env.write_text("".join(f"BENCH_{i}={v}\n" for i, v in enumerate(values)))
            env.chmod(0o600)
            tree = tree or os.environ.get("PYTHONPATH")
            python_path = {"PYTHONPATH": tree} if tree else {}
            monad = monad_env(str(home), python_path)
            monad("daemon", "start")
            stack.callback(monad, "daemon", "stop")
            monad("mcp", "add", "b", "--", sys.executable, TOOLSERVER, "--big")
            monad("mcp", "trust", "b", "--auto-approve", "big")
            wait_tools(str(home), "b__big", auto_approved=True)
            paths[label] = (StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve"],
                                                  env={"MONAD_HOME": str(home), "MONAD_NO_AUTOSTART": "1",
                                                       "PATH": os.environ["PATH"], **python_path}), "b__big",
                           int((home / "run" / "monad.pid").read_text().split()[0]))
        return anyio.run(interleaved, paths, kib, n)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--secrets", type=int, default=300)
    ap.add_argument("--kib", type=int, default=1024)
    ap.add_argument("-n", type=int, default=100)
    ap.add_argument("--before", metavar="DIR", help="also a supervisor (with the secrets) running monad from DIR")
    args = ap.parse_args()
    secrets = secrets_of(args.secrets)
    engine(secrets, args.kib)
    results, cpu = end_to_end(secrets, args.kib, args.n, str(Path(args.before).resolve()) if args.before else None)
    print(f"\n{'tools/call of a ' + str(args.kib) + ' KiB result (load ' + load() + ')':46} {'median ms':>10}")
    for label, samples in results.items():
        shown = f"  (supervisor CPU {cpu[label]:.3f} ms/call)" if label in cpu else ""
        print(f"{label:46} {statistics.median(samples):10.3f}{shown}")
    with_, without = results[f"gateway, {args.secrets} secrets"], results["gateway, no secrets"]
    # Wall time on a shared machine moves by more than the target; the supervisors' CPU per
    # call does not: the scrubber's cost is the difference of the two.
    added = cpu[f"gateway, {args.secrets} secrets"] - cpu["gateway, no secrets"]
    paired = statistics.median(a - b for a, b in zip(with_, without, strict=True))
    print(f"{'wall time added (median of paired calls)':46} {paired:+10.3f}")
    for label, samples in results.items():
        if label.startswith("gateway"):
            over = statistics.median(a - b for a, b in zip(samples, results["direct SDK session"], strict=True))
            print(f"{label + ' over direct (paired median)':46} {over:+10.3f}")
    direct = statistics.median(results["direct SDK session"])
    target(f"scrubber: {args.secrets} secrets, {args.kib} KiB result, supervisor CPU added per call",
           f"{added:+.2f} ms", f"gateway {statistics.median(with_) / direct:.2f}x direct", "<= +1.0 ms", added <= 1.0)


if __name__ == "__main__":
    main()
