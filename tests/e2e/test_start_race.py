"""`monad daemon start` that loses the start race: another start holds `run/daemon.lock`
(cli/control.py `start_or_join`). When that start dies without serving, the loser does not
give up: its lock is free, so it starts the supervisor itself."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import wait_for


def _children(pid: int) -> list[str] | None:
    try:
        return Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return None


def test_a_start_that_lost_to_one_that_died_starts_the_supervisor_itself(monad: Any, monad_home: Path) -> None:
    (monad_home / "run").mkdir(parents=True, mode=0o700, exist_ok=True)
    lock = os.open(monad_home / "run" / "daemon.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)  # the "winner": holds the lock, never serves
    try:
        proc = subprocess.Popen([sys.executable, "-m", "monad_cli", "daemon", "start", "--json"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # The loser's own supervisor child finds the lock held, says so and exits: the loser
        # then waits for the winner.
        wait_for(lambda: _children(proc.pid), timeout=30, interval=0.01)
        wait_for(lambda: not _children(proc.pid), timeout=60, interval=0.01)
    finally:
        os.close(lock)  # the winner dies
    out, err = proc.communicate(timeout=90)
    assert proc.returncode == 0, (out, err)
    said = json.loads(out)
    assert said["started"] is True and said["pid"] == monad("daemon", "status", "--json").json()["pid"], out
