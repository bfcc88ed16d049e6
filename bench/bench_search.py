"""Bench: tool search and the context budget in the gateway (issue 40). Not a timed test.

    python bench/bench_search.py [-n 300]

1. Recall of the ranker on bench/search/ (real servers' tools, queries as a person puts a
   task; the held-out part never tuned on): recall@1, @5, @20 per part.
2. `find_tool` through `monad mcp serve --tool-search` (stdio) over 1,000 real tools (the
   published tool lists of bench/search/catalog/, served by tests/servers/catalogserver.py),
   against a trivial `tools/call` through the same gateway session, interleaved; medians of
   `-n` each. Target: <= 3x.
3. List bytes at 300 tools: the two-tool list (find_tool, call_tool) against the full
   tools/list, as the JSON the agent reads. Target: <= 10 %.
4. The index's cost at 5,000 tools: the supervisor's RSS (VmRSS) after a plain tools/list,
   against after a --tool-search session's list and first find_tool built the index, and
   after 24 more. Target: <= 20 MB.
5. The supervisor's CPU at rest at 1,000 tools, with no agent and with one gateway session
   open (its watcher asks for the exposed tool set's signature twice a second). Target:
   <= +1 % of a core.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
from _util import load, monad_env, target, temp_home
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parent.parent
CATALOG = ROOT / "bench" / "search" / "catalog"
SERVER = ROOT / "tests" / "servers" / "catalogserver.py"
sys.path.insert(0, str(ROOT / "bench" / "search"))


def recall() -> None:
    r = subprocess.run([sys.executable, str(ROOT / "bench" / "search" / "evaluate.py"), "--json"],
                       capture_output=True, text=True, check=True)
    report = json.loads(r.stdout)
    print(f"recall: {report['tools']} tools of {report['servers']} servers, {report['queries']} queries")
    for part in ("tune", "held-out"):
        p = report[part]
        print(f"  {part:9} n={p['n']:3}  recall@1 {p['recall@1']:.3f}  recall@5 {p['recall@5']:.3f}  "
              f"recall@20 {p['recall@20']:.3f}")
    held = report["held-out"]
    target("held-out recall@5", f"{held['recall@5']:.3f}", "-", ">= 0.75 (goal 0.9)", held["recall@5"] >= 0.75)
    target("held-out recall@1", f"{held['recall@1']:.3f}", "-", ">= 0.50 (goal 0.7)", held["recall@1"] >= 0.50)


def define(home: Path, counts: list[int]) -> list[str]:
    """One catalog server per count, each serving that many of the catalog's tools; all
    auto-approved. Returns the servers' names."""
    files = [str(p) for p in sorted(CATALOG.glob("*.json"))]
    folder = home / "atoms" / "mcp"
    folder.mkdir(parents=True, exist_ok=True)
    names = []
    for i, n in enumerate(counts):
        name = f"c{i}"
        args = [str(SERVER), *files, "--limit", str(n)]
        (folder / f"{name}.toml").write_text(f"command = {json.dumps(sys.executable)}\nargs = {json.dumps(args)}\n"
                                             f'trust = {{autoApproveTools = ["{name}__git_git_status"]}}\n')
        names.append(name)
    return names


def wait_tools(run: Any, count: int, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while len(json.loads(run("mcp", "tools", "--json"))) < count:
        if time.monotonic() > deadline:
            raise SystemExit(f"fewer than {count} tools after {timeout} s")
        time.sleep(1)


@contextlib.contextmanager
def supervised(counts: list[int], tools: int, timeout: float = 300) -> Iterator[Path]:
    """A supervisor on a new MONAD_HOME serving one catalog server per count (`define`),
    once `tools` tools are listed; stopped after the block. Yields the home."""
    home = temp_home()
    run = monad_env(str(home))
    define(home, counts)
    run("daemon", "start")
    try:
        wait_tools(run, tools, timeout=timeout)
        yield home
    finally:
        run("daemon", "stop")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def serve(home: Path, *flags: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve", *flags],
                                 env={"MONAD_HOME": str(home), "MONAD_NO_AUTOSTART": "1"})


QUERIES = ["what changed in my working tree", "post a message to the general channel", "take a screenshot",
           "list the pods in the default namespace", "create a jira ticket", "search the web for rust news",
           "run a SQL query", "merge the pull request"]


def speed(n: int) -> None:
    with supervised([690, 310], 1000) as home:

        async def main() -> tuple[list[float], list[float]]:
            finds: list[float] = []
            calls: list[float] = []
            async with Client(serve(home, "--tool-search")) as client:
                await client.call_tool("find_tool", {"query": "warm up"})
                for _ in range(5):
                    await client.call_tool("c0__git_git_status", {"repo_path": "/"})
                for i in range(n):
                    t = time.perf_counter()
                    found = await client.call_tool("find_tool", {"query": QUERIES[i % len(QUERIES)]})
                    finds.append(time.perf_counter() - t)
                    assert not found.is_error
                    t = time.perf_counter()
                    called = await client.call_tool("c0__git_git_status", {"repo_path": "/"})
                    calls.append(time.perf_counter() - t)
                    assert not called.is_error, called
            return finds, calls

        finds, calls = anyio.run(main)
        f, c = statistics.median(finds), statistics.median(calls)
        print(f"find_tool over 1,000 tools: median {f * 1000:.2f} ms; a trivial tools/call through the same "
              f"gateway {c * 1000:.2f} ms (n={n} each, interleaved; load {load()})")
        target("find_tool / trivial call at 1,000 tools", f"{f * 1000:.2f} ms", f"{f / c:.2f}x", "<= 3x",
               f / c <= 3)


def list_bytes() -> None:
    with supervised([300], 300) as home:

        async def sizes() -> tuple[int, int]:
            out = []
            for flags in ((), ("--tool-search",)):
                async with Client(serve(home, *flags)) as client:
                    listed = await client.list_tools()
                    out.append(len(json.dumps(listed.model_dump(by_alias=True, mode="json", exclude_none=True)[
                        "tools"], separators=(",", ":")).encode()))
            return out[0], out[1]

        full, two = anyio.run(sizes)
        print(f"tools/list at 300 tools: {full:,} bytes (~{full // 4:,} tokens); with --tool-search {two:,} bytes")
        target("two-tool list / full list at 300 tools", f"{two:,} B", f"{two / full:.1%}", "<= 10 %",
               two / full <= 0.10)


def memory() -> None:
    with supervised([690] * 7 + [170], 5000, timeout=600) as home:
        pid = int((home / "run" / "monad.pid").read_text().split()[0])

        async def main() -> tuple[float, float, float, float]:
            async with Client(serve(home)) as plain:  # a plain list first: its rows' peak is not the index's
                await plain.list_tools()
                await plain.list_tools()
            before = rss_mib(pid)
            async with Client(serve(home, "--tool-search")) as client:
                t = time.perf_counter()
                await client.list_tools()  # starts building the index
                await client.call_tool("find_tool", {"query": "what changed in my working tree"})
                build = time.perf_counter() - t
                first = rss_mib(pid)
                for q in QUERIES * 3:
                    await client.call_tool("find_tool", {"query": q})
                return before, first, rss_mib(pid), build

        before, first, after, build = anyio.run(main)
        print(f"supervisor RSS at 5,000 tools: {before:.1f} MiB before the index, {first:.1f} MiB once built "
              f"(list and first find_tool {build * 1000:.0f} ms, the build included), {after:.1f} MiB after 24 more")
        grown = max(first, after) - before
        target("index RSS at 5,000 tools", f"{grown:.1f} MiB", "-", "<= 20 MB", grown * 1.048576 <= 20)


def cpu_s(pid: int) -> float:
    """User + system CPU seconds process `pid` has used (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def at_rest(seconds: float = 20.0) -> None:
    with supervised([690, 310], 1000) as home:
        pid = int((home / "run" / "monad.pid").read_text().split()[0])
        time.sleep(3)
        start = cpu_s(pid)
        time.sleep(seconds)
        alone = (cpu_s(pid) - start) / seconds

        async def main() -> float:
            async with Client(serve(home)) as client:
                await client.list_tools()
                await anyio.sleep(3)
                start = cpu_s(pid)
                await anyio.sleep(seconds)
                return (cpu_s(pid) - start) / seconds

        served = anyio.run(main)
        print(f"supervisor CPU at rest with 1,000 tools: {alone:.1%} of a core with no agent, {served:.1%} with one "
              f"gateway session open ({seconds:g} s each; load {load()})")
        target("CPU at rest, one gateway session open, 1,000 tools", f"{served:.1%} of a core",
               f"{served - alone:+.1%} over none", "<= +1 % of a core", served - alone <= 0.01)


def main() -> None:
    # The SDK's client warns that a tool it did not list has no schema to check: called blind here.
    logging.getLogger("client").setLevel(logging.ERROR)
    parser = argparse.ArgumentParser()
    parser.add_argument("-n", type=int, default=300)
    parser.add_argument("--only", choices=["recall", "speed", "bytes", "memory", "rest"])
    a = parser.parse_args()
    if a.only in (None, "recall"):
        recall()
    if a.only in (None, "speed"):
        speed(a.n)
    if a.only in (None, "bytes"):
        list_bytes()
    if a.only in (None, "memory"):
        memory()
    if a.only in (None, "rest"):
        at_rest()


if __name__ == "__main__":
    main()
