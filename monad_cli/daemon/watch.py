"""Watching the definitions: the atoms and features/*.toml (watchfiles); agents.json, the env
file, settings.toml (`[servers]`) and the modes and owners of the definitions' folders (their
stats, every `AGENTS_POLL_MS`). Every change batch reconciles (dotfiles, temp files ignored).

agents.json is not watched through its directory: the home holds `journal.db` and its WAL,
which every tool call writes, and inotify reported each write (~0.3 ms of supervisor CPU per
gateway call, bench/README.md). The stats are read when the Rust side returns empty-handed.

At rest the watcher costs its wakeups, not the stats: each return is a hand-off from a worker
thread to the loop, and the Rust side wakes every `step` to look at the stop event under the
GIL. At 0.1 s and 10 ms a supervisor with no server used 1.7 % of a core at rest; at 0.5 s
and 25 ms, 0.7 % (bench/README.md).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from monad_cli.config.settings import SETTINGS_FILE
from monad_cli.core.paths import Paths, link_stamp

log = logging.getLogger("monad.supervisor")
AGENTS_POLL_MS = 500


def _stamp(path: str, *, folder: bool = False) -> tuple[int, int, int, int, int] | None:
    """(inode, size, mtime in ns, mode, owner) of `path`, or None when it does not exist: an
    atomic replace changes the inode, an edit in place the size or the mtime, a `chmod` or
    `chown` who may write it (which decides whether it is read: `config/loader.py`). Of a
    `folder`, the mode and owner only: its mtime moves with every entry."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (0, 0, 0, st.st_mode, st.st_uid) if folder else (st.st_ino, st.st_size, st.st_mtime_ns, st.st_mode,
                                                           st.st_uid)


def _linked(atoms: os.PathLike[str]) -> list[tuple[str, int, int, int, int]]:
    """The modes and owners of the folders above each linked atom's file (`link_stamp`): a
    `chmod` there decides whether the atom is read, and is no event in `atoms/mcp/`. A
    scandir of the folder (~50-65 µs for 50 atoms), and ~11 µs a link (50 links into one
    folder: 0.6 ms a poll, 0.12 % of a core)."""
    out: list[tuple[str, int, int, int, int]] = []
    seen: set[str] = set()
    try:
        with os.scandir(atoms) as it:
            for e in it:
                if e.name.endswith(".toml") and not e.name.startswith(".") and e.is_symlink():
                    out += link_stamp(e.path, seen)
    except OSError:
        pass
    return out


async def watch_definitions(paths: Paths, stop_event: anyio.Event, reconcile: Callable[[], Awaitable[None]]) -> None:
    """Run `reconcile()` once the watcher watches, then after each batch of changes, until
    `stop_event` is set."""
    import watchfiles

    atoms = paths.atoms_dir
    features = paths.features_dir
    polled = (str(paths.agents_json), str(paths.env_file), str(paths.home / SETTINGS_FILE))
    # The folders the definitions are read from: a `chmod` of one is no event the watch passes on.
    folders = (str(paths.home), str(atoms.parent), str(atoms), str(features))

    def stamps() -> tuple[Any, ...]:
        return (tuple(_stamp(p) for p in polled) + tuple(_stamp(p, folder=True) for p in folders)
                + tuple(_linked(atoms)))

    seen = stamps()
    first = True

    def wanted(change: Any, path: str) -> bool:
        name = os.path.basename(path)
        if name.startswith(".") or name.endswith(".tmp"):
            return False
        parent = os.path.dirname(path)
        return (parent == str(atoms) or parent == str(features)) and name.endswith(".toml")

    features.mkdir(mode=0o700, parents=True, exist_ok=True)  # as every folder of the home
    # Short debounce: the hot-reload budget is 150 ms over a direct connect (an edit is
    # yielded 25–50 ms after it). The Rust side returns at least every AGENTS_POLL_MS (an
    # empty batch then), for agents.json's stat.
    async for changes in watchfiles.awatch(atoms, features, watch_filter=wanted, debounce=25, step=25,
                                           recursive=False, stop_event=stop_event, rust_timeout=AGENTS_POLL_MS,
                                           yield_on_timeout=True):
        stamp = stamps()
        # The first batch, changes or not, comes once the watcher watches: one reconcile then
        # applies an edit made between the supervisor's first read and that moment (a script's
        # `daemon start` and then a hand edit), which no event will ever announce.
        if not changes and stamp == seen and not first:
            continue
        seen, first = stamp, False
        try:
            await reconcile()
        except Exception:
            log.exception("reload failed")
