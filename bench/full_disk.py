"""The full-disk figures (issue 26): MONAD_HOME on a small tmpfs, filled to the last byte, while
gateway clients make calls through the real supervisor; then space returns.

    sudo python bench/full_disk.py [--calls 400] [--clients 4] [--size-mib 8]
    python bench/run.py full_disk       (optional target; needs root to mount the tmpfs)

Prints: calls answered / failed while the disk was full, the journal's state and held rows
at the end of the full stretch, how long the held rows took to be written once space
returned, and whether every call has its two rows (by its unique argument digest). Also
`monad mcp add` on the full disk. Bounded: one tmpfs, a few hundred calls, 127.0.0.1 and
unix sockets only.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from soak import TOOLSERVER, Report, _atom, _check_rows, _monad


def fill(disk: Path) -> Path:
    path = disk / "fill"
    with open(path, "wb", buffering=0) as f:
        for size in (1 << 16, 512):
            try:
                while f.write(b"\0" * size):
                    pass
            except OSError:
                continue
    return path


async def calls(home: Path, n: int, clients: int, digests: set[str], out: dict[str, Any]) -> None:
    from contextlib import AsyncExitStack

    from mcp import Client, StdioServerParameters

    from monad_cli.journal.tools import args_digest

    params = StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve"],
                                   env={"MONAD_HOME": str(home), "MONAD_NO_AUTOSTART": "1",
                                        "PATH": os.environ.get("PATH", "")})
    issued = 0

    async def client(i: int, session: Any) -> None:
        nonlocal issued
        while issued < n:
            k = issued
            issued += 1
            arguments = {"text": f"full {i} {k}"}
            digests.add(args_digest(arguments))
            try:
                with anyio.fail_after(60):
                    r = await session.call_tool("s0__echo", arguments)
                out["error" if r.is_error else "ok"] += 1
            except Exception:  # noqa: BLE001 - counted: a failed call
                out["error"] += 1

    async with AsyncExitStack() as stack:
        sessions = [await stack.enter_async_context(Client(params)) for _ in range(clients)]
        async with anyio.create_task_group() as tg:
            for i, s in enumerate(sessions):
                tg.start_soon(client, i, s)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=400)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--size-mib", type=int, default=8)
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("skipped: mounting a tmpfs needs root")
        return
    with tempfile.TemporaryDirectory(prefix="monad-full-") as tmp:
        disk = Path(tmp) / "disk"
        disk.mkdir()
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={args.size_mib}m,mode=0700", "tmpfs", str(disk)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(f"skipped: cannot mount a tmpfs: {r.stderr.strip()}")
            return
        home = disk / "home"
        try:
            _atom(home, "s0", f"full-{os.urandom(4).hex()}")
            _monad(home, "daemon", "start")
            _monad(home, "mcp", "wait", "s0")
            filler = fill(disk)
            t = time.perf_counter()
            add = _monad(home, "mcp", "add", "two", "--", sys.executable, TOOLSERVER, check=False)
            print(f"mcp add on the full disk: exit {add.returncode} in {time.perf_counter() - t:.2f} s: "
                  f"{add.stderr.strip()}")
            print(f"atoms after it: {sorted(p.name for p in (home / 'atoms' / 'mcp').iterdir())}")
            digests: set[str] = set()
            out = {"ok": 0, "error": 0}
            t = time.perf_counter()
            anyio.run(calls, home, args.calls, args.clients, digests, out)
            took = time.perf_counter() - t
            health = json.loads(_monad(home, "daemon", "status", "--json").stdout)["journal"]
            print(f"{args.calls} gateway calls on the full disk ({args.clients} clients): {out['ok']} ok, "
                  f"{out['error']} failed, in {took:.1f} s; journal {health['state']}, {health['held']} rows held, "
                  f"{health['lost']} lost")
            status = _monad(home, "mcp", "status")
            print(f"mcp status says: {status.stderr.strip()}")
            filler.unlink()
            t = time.perf_counter()
            while json.loads(_monad(home, "daemon", "status", "--json").stdout)["journal"]["state"] != "ok":
                if time.perf_counter() - t > 60:
                    break
                time.sleep(0.1)
            print(f"space back: held rows written within {time.perf_counter() - t:.1f} s (polled by the CLI)")
        finally:
            _monad(home, "daemon", "stop", check=False)
        report = Report()
        _check_rows(home, digests, report)
        print(f"rows: {report.rows_missing} of {len(digests)} calls without rows, {report.rows_running} without "
              f"an outcome")
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)


if __name__ == "__main__":
    main()
