"""The soak (issue 26): N servers and M gateway clients make many calls through the real
supervisor while a server is killed every K seconds and an atom is edited every E seconds.

    python bench/soak.py [--servers 4] [--clients 8] [--calls 20000] [--max-seconds 300]
                         [--kill-every 30] [--edit-every 10]
    python bench/run.py soak          (the optional target; `make bench` leaves it out)

What it checks, and prints:
- every call is answered or fails with a reason; none hangs (each is bounded by `HANG_S`);
- every call has its intent and outcome rows (each call's arguments are unique, so its
  journal row is found by its argument digest; none is left `running`);
- after warm-up (the first `warmup` fraction of the calls) the supervisor's RSS grows by at
  most 10 MiB and its open file descriptors stay flat;
- no orphan process is left (each server's command line carries this run's token).

Everything listens on 127.0.0.1 or a unix socket under a temporary MONAD_HOME; the run is
bounded in calls and in time. `tests/e2e/test_soak.py` runs a short one (`soak()`).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
TOOLSERVER = str(ROOT / "tests" / "servers" / "toolserver.py")
HANG_S = 60.0  # a call still unanswered after this long counts as hung


@dataclass
class Report:
    calls: int = 0
    ok: int = 0
    failed: dict[str, int] = field(default_factory=dict)  # reason (first 100 characters) → count
    no_reason: int = 0
    hung: int = 0
    seconds: float = 0.0
    kills: int = 0
    edits: int = 0
    rows_missing: int = 0
    rows_running: int = 0
    rss_kib: list[tuple[float, int, int]] = field(default_factory=list)  # (t, RSS KiB, open fds)
    warm_at: float = 0.0
    orphans: list[str] = field(default_factory=list)

    def rss_growth_mib(self) -> float:
        warm = [r for t, r, _ in self.rss_kib if t >= self.warm_at]
        return (warm[-1] - warm[0]) / 1024 if len(warm) >= 2 else 0.0

    def fds(self) -> tuple[int, int, int]:
        """(at warm-up, lowest after, highest after)."""
        warm = [f for t, _, f in self.rss_kib if t >= self.warm_at]
        return (warm[0], min(warm), max(warm)) if warm else (0, 0, 0)

    def as_dict(self) -> dict[str, Any]:
        return {"calls": self.calls, "ok": self.ok, "failed": self.failed, "noReason": self.no_reason,
                "hung": self.hung, "seconds": round(self.seconds, 1), "kills": self.kills, "edits": self.edits,
                "rowsMissing": self.rows_missing, "rowsRunning": self.rows_running,
                "rssGrowthMiB": round(self.rss_growth_mib(), 2), "fds": self.fds(), "orphans": self.orphans}


def _monad(home: Path, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    r = subprocess.run([sys.executable, "-m", "monad_cli", *argv], capture_output=True, text=True,
                       env={**os.environ, "MONAD_HOME": str(home)})
    if check and r.returncode != 0:
        raise SystemExit(f"monad {' '.join(argv)} failed: {r.stderr.strip()}")
    return r


def _atom(home: Path, name: str, token: str, timeout: int = 10) -> None:
    folder = home / "atoms" / "mcp"
    folder.mkdir(parents=True, exist_ok=True)
    body = (f'schema = 1\ntransport = "stdio"\ncommand = {json.dumps(sys.executable)}\n'
            f'args = [{json.dumps(TOOLSERVER)}, "--name", "{name}", "--token", "{token}"]\n'
            f'timeout = {timeout}\n\n[trust]\nautoApproveTools = ["{name}__echo"]\n')
    tmp = folder / f".{name}.toml.tmp"
    tmp.write_text(body)
    os.replace(tmp, folder / f"{name}.toml")  # as an editor saves: the watcher sees one change


def _status(home: Path) -> list[dict[str, Any]]:
    return list(json.loads(_monad(home, "mcp", "status", "--json").stdout))


def _proc_sample(pid: int) -> tuple[int, int]:
    rss = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1])
    return rss, len(os.listdir(f"/proc/{pid}/fd"))


def _orphans(token: str) -> list[str]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if token in cmd:
            found.append(f"{entry}: {cmd[:120]}")
    return found


async def _drive(home: Path, names: list[str], clients: int, calls: int, max_s: float, kill_every: float,
                 edit_every: float, max_kills: int | None, max_edits: int | None, token: str,
                 report: Report, digests: set[str], warmup: float) -> None:
    from contextlib import AsyncExitStack

    from mcp import Client, MCPError, StdioServerParameters

    from monad_cli.journal.tools import args_digest

    params = StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve"],
                                   env={"MONAD_HOME": str(home), "MONAD_NO_AUTOSTART": "1",
                                        "PATH": os.environ.get("PATH", "")})
    sup_pid = int((home / "run" / "monad.pid").read_text())
    started = time.monotonic()
    deadline = started + max_s
    issued = 0
    done = anyio.Event()

    def reason_of(text: str) -> str:
        return " ".join(text.split())[:100] or "(empty)"

    def more() -> bool:
        """Calls go on until `calls` were made and every bounded fault happened (or time is up)."""
        faults_left = ((max_kills is not None and report.kills < max_kills)
                       or (max_edits is not None and report.edits < max_edits))
        return time.monotonic() < deadline and (issued < calls or faults_left)

    async def client(i: int, session: Any) -> None:
        nonlocal issued
        while more():
            n = issued
            issued += 1
            server = names[n % len(names)]
            arguments = {"text": f"soak {i} {n}"}
            digests.add(args_digest(arguments))
            report.calls += 1
            try:
                with anyio.fail_after(HANG_S):
                    result = await session.call_tool(f"{server}__echo", arguments)
                if result.is_error:
                    text = " ".join(getattr(c, "text", "") for c in result.content).strip()
                    if text:
                        report.failed[reason_of(text)] = report.failed.get(reason_of(text), 0) + 1
                    else:
                        report.no_reason += 1
                else:
                    report.ok += 1
            except TimeoutError:
                report.hung += 1
            except MCPError as e:
                text = e.error.message
                if text:
                    report.failed[reason_of(text)] = report.failed.get(reason_of(text), 0) + 1
                else:
                    report.no_reason += 1
            if report.calls >= warmup * calls and not report.warm_at:
                report.warm_at = time.monotonic() - started

    async def killer() -> None:
        k = 0
        while not done.is_set() and (max_kills is None or report.kills < max_kills):
            with anyio.move_on_after(kill_every):
                await done.wait()
            if done.is_set():
                return
            name = names[k % len(names)]
            k += 1
            row = next((r for r in await anyio.to_thread.run_sync(_status, home) if r["name"] == name), None)
            if row and row.get("pid"):
                try:
                    os.kill(row["pid"], signal.SIGKILL)  # as a crash would
                except ProcessLookupError:
                    continue
                report.kills += 1

    async def editor() -> None:
        e = 0
        while not done.is_set() and (max_edits is None or report.edits < max_edits):
            with anyio.move_on_after(edit_every):
                await done.wait()
            if done.is_set():
                return
            name = names[(e + 1) % len(names)]
            e += 1
            _atom(home, name, token, timeout=10 + e % 2)  # a changed definition: that server reconnects
            report.edits += 1

    async def sampler() -> None:
        while not done.is_set():
            try:
                rss, fds = _proc_sample(sup_pid)
            except OSError:
                return
            report.rss_kib.append((time.monotonic() - started, rss, fds))
            with anyio.move_on_after(1.0):
                await done.wait()

    async with AsyncExitStack() as stack:
        sessions = [await stack.enter_async_context(Client(params)) for _ in range(clients)]
        async with anyio.create_task_group() as side:
            side.start_soon(killer)
            side.start_soon(editor)
            side.start_soon(sampler)
            async with anyio.create_task_group() as tg:
                for i, s in enumerate(sessions):
                    tg.start_soon(client, i, s)
            report.seconds = time.monotonic() - started
            done.set()
    try:  # one last sample, after every client's session is closed
        rss, fds = _proc_sample(sup_pid)
        report.rss_kib.append((time.monotonic() - started, rss, fds))
    except OSError:
        pass


def _check_rows(home: Path, digests: set[str], report: Report) -> None:
    """Every call's rows: its digest is in `tool_calls` (written before the call) with an
    outcome (written after it). Read after the supervisor stopped, so every row is flushed."""
    conn = sqlite3.connect(f"file:{home / 'journal.db'}?mode=ro", uri=True)
    try:
        rows = dict(conn.execute("SELECT args_digest, outcome FROM tool_calls WHERE via = 'gateway'").fetchall())
    finally:
        conn.close()
    report.rows_missing = sum(1 for d in digests if d not in rows)
    report.rows_running = sum(1 for d in digests if rows.get(d) in ("running", "interrupted"))


def soak(*, servers: int = 4, clients: int = 8, calls: int = 20_000, max_seconds: float = 300.0,
         kill_every: float = 30.0, edit_every: float = 10.0, max_kills: int | None = None,
         max_edits: int | None = None, warmup: float = 0.2, home: Path | None = None) -> Report:
    """Run one soak on a fresh MONAD_HOME (a temporary one unless `home`); returns its report.
    The supervisor is stopped, and its servers with it, before the rows and orphans are checked."""
    token = f"soak-{os.urandom(4).hex()}"
    report = Report()
    digests: set[str] = set()
    with tempfile.TemporaryDirectory(prefix="monad-soak-") as tmp:
        home = home or Path(tmp) / "home"
        names = [f"s{i}" for i in range(servers)]
        for name in names:
            _atom(home, name, token)
        _monad(home, "daemon", "start")
        try:
            for name in names:
                _monad(home, "mcp", "wait", name)
            anyio.run(_drive, home, names, clients, calls, max_seconds, kill_every, edit_every, max_kills, max_edits,
                      token, report, digests, warmup)
        finally:
            _monad(home, "daemon", "stop", check=False)
        deadline = time.monotonic() + 10
        while (left := _orphans(token)) and time.monotonic() < deadline:
            time.sleep(0.2)
        report.orphans = left
        _check_rows(home, digests, report)
    return report


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--servers", type=int, default=4)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--calls", type=int, default=20_000)
    ap.add_argument("--max-seconds", type=float, default=300.0)
    ap.add_argument("--kill-every", type=float, default=30.0)
    ap.add_argument("--edit-every", type=float, default=10.0)
    args = ap.parse_args()
    random.seed(0)
    r = soak(servers=args.servers, clients=args.clients, calls=args.calls, max_seconds=args.max_seconds,
             kill_every=args.kill_every, edit_every=args.edit_every)
    print(json.dumps(r.as_dict(), indent=2))
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _util import target

    fd0, fd_lo, fd_hi = r.fds()
    target(f"soak: {r.calls} calls, {args.servers} servers, {args.clients} clients", f"{r.seconds:.0f} s",
           f"{r.calls / max(r.seconds, 0.001):.0f} calls/s", f"{args.calls} calls in <= {args.max_seconds:.0f} s",
           r.calls >= args.calls and r.seconds <= args.max_seconds)
    target("soak: every call answered or failed with a reason", f"{r.hung} hung, {r.no_reason} without reason",
           f"{r.ok} ok, {sum(r.failed.values())} failed", "0 and 0", r.hung == 0 and r.no_reason == 0)
    target("soak: every call has its intent and outcome rows", f"{r.rows_missing} missing, "
           f"{r.rows_running} without outcome", f"of {r.calls}", "0 and 0", not r.rows_missing and not r.rows_running)
    target("soak: supervisor RSS growth after warm-up", f"{r.rss_growth_mib():+.1f} MiB", f"fds {fd0} -> "
           f"{fd_lo}..{fd_hi}", "<= 10 MiB", r.rss_growth_mib() <= 10)
    target("soak: orphan processes after stop", str(len(r.orphans)), f"{r.kills} kills, {r.edits} edits", "0",
           not r.orphans)


if __name__ == "__main__":
    main()
