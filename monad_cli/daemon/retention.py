"""The supervisor's upkeep of its journal, once it is serving: `PRAGMA quick_check` (journaled
as a `daemon` row; it reads the whole file, ~2 s at a million calls, so it is not on the
start's path), then `[journal] keep` (default 90 days): now and every `EVERY_S` it prunes
older rows and gives their space back (`journal.retention`), and in a fleet deletes this
supervisor's older rows from the shared journal too (`journal.retention.prune_shared`),
in a worker thread, in batches, so calls never wait on it. A journal made before
incremental vacuum keeps the freed pages for new rows until `monad journal prune` converts
it (a full VACUUM is for a person to start, not for a supervisor under load). The same round
deletes the stderr logs of servers removed longer than `keep` ago (`prune_server_logs`).

`checkpoints` copies the journal's WAL back into the file from a worker thread, a moment after
writes pause (or every ~1000 pages while they go on): the supervisor's journal never does it
inside a write (`Journal(checkpoints=False)`), where SQLite's autocheckpoint would, fsync
included, every ~150 tool calls inside one of them (bench/README.md, issue 37)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from monad_cli.core.errors import MonadError
from monad_cli.daemon.sessions.stderr import prune_logs
from monad_cli.journal import retention

if TYPE_CHECKING:
    from monad_cli.journal.db import Journal

log = logging.getLogger("monad.journal")
EVERY_S = 24 * 3600.0
# How often the WAL is looked at: a moment after writes pause, what they wrote is copied back.
CHECKPOINT_EVERY_S = 0.25
# While writes go on without a pause, a checkpoint waits for this many commits: a gateway call
# commits one transaction of ~4 pages (its intent row, the last call's outcome), so about
# SQLite's own 1000-page mark. Each checkpoint costs two fsyncs and a worker thread's hand-off
# whatever it copies, and the pages a run of calls rewrites (the table's and its indexes' last
# leaves) are copied once: a checkpoint every 0.25 s under a steady call loop was ~2 % of the
# supervisor's CPU (bench/README.md, 2026-12-07 evening).
CHECKPOINT_COMMITS = 250


def checkpoint_due(commits: int, *, at_tick: int, at_checkpoint: int, every: int = CHECKPOINT_COMMITS) -> bool:
    """Whether to copy the WAL back now: `commits` (the journal's count now) differ from
    `at_checkpoint` (the count the last checkpoint saw) and either no commit came since the
    last look (`at_tick`: the writes paused) or `every` or more piled up since the last
    checkpoint."""
    if commits == at_checkpoint:
        return False
    return commits == at_tick or commits - at_checkpoint >= every


async def checkpoints(journal: Journal, *, every_s: float = CHECKPOINT_EVERY_S,
                      every_commits: int = CHECKPOINT_COMMITS) -> None:
    """`Journal.checkpoint` in a worker thread, looked at every `every_s` seconds
    (`checkpoint_due`). Never returns (cancel it); a failed checkpoint (a full disk) is logged
    once and tried again after the next write. None while the journal holds rows it could not
    write (`Journal.fault`): the WAL would start again over its own blocks, and the journal
    say `degraded` and `ok` by turns; its state changes when space returns."""
    seen = -1  # what was written before it started (the journal's open) is copied back in its first round
    tick = -1
    failing = False
    while True:
        await anyio.sleep(every_s)
        commits, last_tick, tick = journal.commits, tick, journal.commits
        if journal.fault is not None or not checkpoint_due(commits, at_tick=last_tick, at_checkpoint=seen,
                                                           every=every_commits):
            continue
        seen = commits
        try:
            await anyio.to_thread.run_sync(journal.checkpoint)
            failing = False
        except Exception as e:  # noqa: BLE001 - the journal's writes go on; the WAL waits
            if not failing:
                log.warning("journal %s: checkpoint failed (%s); the WAL grows until one succeeds", journal.path, e)
            failing = True


def prune_once(journal: Journal) -> dict[str, Any] | None:
    """One round (blocking): the counts deleted and the bytes reclaimed, journaled as one
    `journal` event when anything was deleted; None when rows are kept forever."""
    keep_s = journal.settings.keep_s
    if keep_s is None:
        return None
    # In a fleet, only what the link shipped (no cursor yet: nothing shipped, nothing pruned).
    cursor = (dict(journal.link.cursor) if journal.link is not None else {}) if journal.settings.fleet else None
    deleted = retention.prune(journal.pool, keep_s=keep_s, cursor=cursor)
    reclaimed = None
    if sum(deleted.values()):
        with journal.pool.connection() as conn:
            reclaimed = retention.reclaim(conn, convert=False)
    shared = None
    if journal.settings.fleet:  # this host's rows of the shared journal
        try:
            shared = retention.prune_shared(journal.settings, keep_s=keep_s)
        except MonadError as e:  # the database cannot be reached: the next round tries again
            log.warning("%s; the next round tries again", e.message)
    days = keep_s / 86400
    if reclaimed is not None:
        what = ", ".join(f"{n} {table}" for table, n in deleted.items() if n)
        journal.record("journal", state="pruned", reason=f"pruned rows older than {days:g} days ({what}); "
                                                         f"{reclaimed['bytes']} bytes given back",
                       detail={"deleted": deleted, "reclaimed": reclaimed})
    if shared is not None and sum(shared["deleted"].values()):
        what = ", ".join(f"{n} {table}" for table, n in shared["deleted"].items() if n)
        journal.record("journal", state="pruned", reason=f"pruned this host's rows older than {days:g} days "
                                                         f"from the shared journal ({what})",
                       detail={"shared": shared["deleted"]})
    return {"deleted": deleted, "reclaimed": reclaimed, "shared": shared}


def prune_server_logs(journal: Journal, folder: Path, defined: Collection[str]) -> dict[str, int] | None:
    """One round (blocking) over `logs/servers/`: the stderr logs of servers not in `defined`,
    last written longer than `[journal] keep` ago, are deleted (their journal rows go at the same
    age); returns the bytes deleted per server, journaled as one `daemon` event when any were.
    None when rows are kept forever: then the logs are kept too."""
    keep_s = journal.settings.keep_s
    if keep_s is None:
        return None
    deleted = prune_logs(folder, defined=defined, older_than_s=keep_s)
    if deleted:
        names = ", ".join(f"`{name}`" for name in deleted)
        journal.record("daemon", reason=f"deleted the stderr logs of servers removed more than {keep_s / 86400:g} days "
                                        f"ago: {names} ({sum(deleted.values())} bytes)",
                       detail={"serverLogs": deleted})
    return deleted


async def keep_journal(journal: Journal, *, every_s: float = EVERY_S, server_logs: Path | None = None,
                       defined: Callable[[], Collection[str]] = frozenset) -> None:
    """Check the file, then prune now and every `every_s` seconds; never returns (cancel it).
    With `server_logs` (the `logs/servers/` folder), each round also deletes the old stderr
    logs of servers no longer `defined()` (the names taken on the event loop, not in the
    worker thread). A failed round is logged and tried again at the next."""
    try:
        verdict = await anyio.to_thread.run_sync(journal.quick_check)
        journal.record("daemon", reason=f"journal checked (PRAGMA quick_check): {verdict}",
                       detail={"quick_check": verdict})
    except Exception:
        log.exception("journal check failed")
    while True:
        try:
            await anyio.to_thread.run_sync(prune_once, journal)
        except Exception:
            log.exception("journal prune failed")
        if server_logs is not None:
            try:
                await anyio.to_thread.run_sync(prune_server_logs, journal, server_logs, frozenset(defined()))
            except Exception:
                log.exception("server log prune failed")
        await anyio.sleep(every_s)
