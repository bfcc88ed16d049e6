"""The supervisor's journal copies its WAL back into the file from a worker thread
(`daemon/retention.py` `checkpoints`), never inside a write: `Journal(checkpoints=False)`
turns SQLite's autocheckpoint off on its connections, which would otherwise run (fsync
included) inside the write that grows the WAL past 1000 pages, on a tool call's path."""

from __future__ import annotations

from pathlib import Path

import anyio

from monad_cli.daemon.retention import checkpoint_due, checkpoints
from monad_cli.journal.db import Journal

ROW = "INSERT INTO events (ts, kind, reason, rev) VALUES (?, 'bench', ?, 0)"


def wal_frames(j: Journal) -> int:
    """The frames in the WAL now (SQLite's `wal_checkpoint` reports them)."""
    return j.pool.checkpoint()[1]


def fill(j: Journal, rows: int) -> None:
    for i in range(rows):
        j.write(ROW, (float(i), "x" * 2000))  # a page or more a row: past 1000 pages in a few hundred


def test_no_write_checkpoints_the_journal_of_a_supervisor(tmp_path: Path) -> None:
    own = Journal(tmp_path / "own.db")
    fill(own, 1500)
    handed_off = Journal(tmp_path / "handed-off.db", checkpoints=False)
    fill(handed_off, 1500)
    # SQLite's default restarts the WAL after the checkpoint inside a write: it never holds them all.
    assert wal_frames(own) < 1000
    assert wal_frames(handed_off) >= 1500
    handed_off.close()
    own.close()


def test_the_supervisors_checkpoints_copy_the_wal_back_after_writes(tmp_path: Path) -> None:
    j = Journal(tmp_path / "journal.db", checkpoints=False)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: checkpoints(j, every_s=0.01))
            fill(j, 1500)
            await anyio.sleep(0.5)  # a few rounds: the last one copies every frame back
            tg.cancel_scope.cancel()

    anyio.run(main)
    j.write(ROW, (0.0, "after"))  # the WAL was copied back whole: this write starts it again
    assert wal_frames(j) < 10
    j.close()


def test_a_steady_run_of_writes_is_checkpointed_every_so_many_commits_and_a_pause_at_once() -> None:
    # Writes going on (a commit since the last look): not before `every` commits piled up.
    assert not checkpoint_due(120, at_tick=100, at_checkpoint=0, every=250)
    assert checkpoint_due(250, at_tick=240, at_checkpoint=0, every=250)
    # The writes paused for a look: what they wrote is copied back at once, however little.
    assert checkpoint_due(3, at_tick=3, at_checkpoint=0, every=250)
    # Nothing new since the last checkpoint: nothing to do.
    assert not checkpoint_due(7, at_tick=7, at_checkpoint=7, every=250)


def test_the_checkpoints_wait_for_a_pause_while_writes_go_on(tmp_path: Path) -> None:
    j = Journal(tmp_path / "journal.db", checkpoints=False)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: checkpoints(j, every_s=0.05, every_commits=10_000))
            for i in range(100):  # a write every ~5 ms, a look every 50 ms: commits between any two looks
                j.write(ROW, (float(i), "y"))
                await anyio.sleep(0.005)
            frames_while_writing = wal_frames(j)
            await anyio.sleep(0.3)  # a pause of a few looks: copied back
            tg.cancel_scope.cancel()
        assert frames_while_writing >= 100  # never copied back while the writes went on

    anyio.run(main)
    j.write(ROW, (0.0, "after"))
    assert wal_frames(j) < 10
    j.close()
