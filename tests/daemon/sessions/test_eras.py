"""What connecting showed, remembered (daemon/sessions/eras.py): per connection fingerprint,
in a 0600 file, for a day, written only when something changes, and a full disk costs the
memory only."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from monad_cli.daemon.sessions import eras
from monad_cli.daemon.sessions.eras import RECHECK_AFTER_S, EraStore


def test_an_era_is_recalled_by_a_new_store_from_a_0600_file(tmp_path: Path) -> None:
    store = EraStore(tmp_path / "run" / "eras.json")
    assert store.recall("fp-a") is None
    store.remember("fp-a", legacy=True, sse=False)
    store.remember("fp-b", legacy=True, sse=True)
    assert store.path.stat().st_mode & 0o777 == 0o600
    again = EraStore(store.path)
    assert again.recall("fp-a") == (True, False) and again.recall("fp-b") == (True, True)
    assert again.recall("fp-changed-definition") is None


def test_an_entry_older_than_a_day_is_probed_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = EraStore(tmp_path / "eras.json")
    store.remember("fp", legacy=True, sse=False)
    later = time.time() + RECHECK_AFTER_S + 1
    monkeypatch.setattr(eras.time, "time", lambda: later)
    assert store.recall("fp") is None


def test_the_same_answer_is_not_written_again(tmp_path: Path) -> None:
    store = EraStore(tmp_path / "eras.json")
    store.remember("fp", legacy=True, sse=False)
    os.utime(store.path, (1_000_000, 1_000_000))  # a write would show as a new mtime
    store.remember("fp", legacy=True, sse=False)  # unchanged and fresh: no write
    assert store.path.stat().st_mtime == 1_000_000
    store.remember("fp", legacy=False, sse=False)  # the server moved on to 2026-07-28
    assert json.loads(store.path.read_text())["fp"]["legacy"] is False


def test_an_unreadable_file_is_an_empty_memory(tmp_path: Path) -> None:
    path = tmp_path / "eras.json"
    path.write_text("{not json")
    assert EraStore(path).recall("fp") is None
    path.write_text(json.dumps(["a", "list"]))
    assert EraStore(path).recall("fp") is None


def test_a_write_that_fails_keeps_the_era_in_memory(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    blocker = tmp_path / "run"
    blocker.write_text("a file where the run directory should be")
    store = EraStore(blocker / "eras.json")
    store.remember("fp", legacy=True, sse=False)
    assert store.recall("fp") == (True, False)
    assert "the era is remembered in memory only" in caplog.text


def test_one_store_per_run_directory(tmp_path: Path) -> None:
    assert EraStore.at(tmp_path) is EraStore.at(tmp_path)
    assert EraStore.at(tmp_path) is not EraStore.at(tmp_path / "other")
