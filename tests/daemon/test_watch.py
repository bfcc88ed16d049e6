"""The definition watcher (supervisor/watch.py) on real files with the real watchfiles: an
atom, a features file and agents.json each reconcile; the journal's writes in the same home
directory never do, and the home directory itself holds no inotify watch (the journal's WAL
is written on every tool call: a watch there woke the watcher on every call)."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

import anyio

from monad_cli.core.paths import Paths
from monad_cli.daemon.watch import watch_definitions


def _watched_inodes() -> set[int]:
    """The inodes this process's inotify instances watch (/proc/self/fdinfo, "inotify wd:..
    ino:<hex>" lines; Linux)."""
    inodes: set[int] = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") != "anon_inode:inotify":
                continue
            info = Path(f"/proc/self/fdinfo/{fd}").read_text()
        except OSError:
            continue
        for line in info.splitlines():
            if line.startswith("inotify "):
                fields = dict(f.split(":", 1) for f in line.split()[1:] if ":" in f)
                inodes.add(int(fields["ino"], 16))
    return inodes


async def _count_reconciles(home: Path) -> tuple[list[str], set[int]]:
    paths = Paths(home)
    paths.atoms_dir.mkdir(parents=True)
    stop = anyio.Event()
    seen: list[str] = []
    what = ["start"]

    async def reconcile() -> None:
        seen.append(what[0])

    async def until(label: str, timeout: float = 5.0) -> None:
        with anyio.fail_after(timeout):
            while label not in seen:
                await anyio.sleep(0.01)

    async with anyio.create_task_group() as tg:
        tg.start_soon(watch_definitions, paths, stop, reconcile)
        await until("start")  # the watcher is up: its first batch reconciles once
        watched = _watched_inodes()

        what[0] = "journal"  # what a tool call does: commits to journal.db in WAL mode
        db = sqlite3.connect(home / "journal.db", isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("CREATE TABLE t (x)")
        deadline = time.monotonic() + 0.6
        while time.monotonic() < deadline:
            db.execute("INSERT INTO t VALUES (1)")
            await anyio.sleep(0.003)
        db.close()
        (home / ".lock").write_text("")  # every CLI edit touches the lock file too
        await anyio.sleep(0.4)

        what[0] = "atom"
        (paths.atoms_dir / "a.toml").write_text('command = "echo"\n')
        await until("atom")
        what[0] = "features"
        (paths.features_dir / "tools.toml").write_text("")
        await until("features")
        what[0] = "agents.json created"
        paths.agents_json.write_text('{"mcpServers": []}')
        await until("agents.json created")
        what[0] = "agents.json replaced"
        tmp = home / ".agents.json.tmp"
        tmp.write_text('{"mcpServers": [ ]}')
        os.replace(tmp, paths.agents_json)  # how monad's own edits land: an atomic rename
        await until("agents.json replaced")
        what[0] = "agents.json removed"
        paths.agents_json.unlink()
        await until("agents.json removed")
        stop.set()
    return seen, watched


def test_definitions_reconcile_and_journal_writes_do_not(tmp_path: Path) -> None:
    home = tmp_path / "home"
    seen, watched = anyio.run(_count_reconciles, home)
    assert Paths(home).atoms_dir.stat().st_ino in watched, watched
    assert Paths(home).features_dir.stat().st_ino in watched, watched
    assert home.stat().st_ino not in watched, "the home directory (journal.db, its WAL) is watched"
    assert "journal" not in seen, seen
    # Once when the watcher first watches (an edit made before that is applied then), never again.
    assert seen.count("start") == 1, seen
    for label in ("atom", "features", "agents.json created", "agents.json replaced", "agents.json removed"):
        assert label in seen, (label, seen)
