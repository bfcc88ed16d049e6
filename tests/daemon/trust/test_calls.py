"""The call log's write-behind outcome rows (`CallLog.write_outcomes`): a gateway call's
outcome is committed behind its answer, within ~20 ms, by the next call's intent row or by a
flush of its own."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from monad_cli.daemon.trust import calls
from monad_cli.daemon.trust.calls import CallLog
from monad_cli.journal.db import Journal


def _rows(j: Journal) -> list[tuple[int, str]]:
    return [(int(r[0]), str(r[1])) for r in j.pool.read("SELECT id, outcome FROM tool_calls ORDER BY id")]


def test_a_steady_run_of_calls_commits_only_its_intent_rows_and_a_pause_flushes_the_last(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # 0.1 s between a call and its outcome's flush, calls ~5 ms apart: the run lasts ~0.5 s.
    monkeypatch.setattr(calls, "OUTCOME_DELAY_S", 0.1)
    j = Journal(tmp_path / "journal.db")
    log = CallLog(j)
    n = 100

    async def main() -> tuple[int, int]:
        async with anyio.create_task_group() as tg:
            tg.start_soon(log.write_outcomes)
            before = j.commits
            for _ in range(n):
                call_id = log.start(server="s", tool="t", exposed="s__t", arguments={}, via="gateway")
                log.finish(call_id, outcome="ok", duration_ms=1.0, defer=True)
                await anyio.sleep(0.005)
            during = j.commits - before
            await anyio.sleep(0.5)  # a pause: the last outcome is flushed on its own
            tg.cancel_scope.cancel()
        return during, j.commits - before

    during, after = anyio.run(main)
    assert during == n  # one commit a call: its intent row, carrying the outcome before it
    assert after == n + 1
    assert _rows(j) == [(i, "ok") for i in range(1, n + 1)]
    j.close()
