"""`daemon.log` on a real full disk (monad_cli/daemon/logfile.py): lines the file cannot take
are held in order, bounded, counted past the bound, and written before the next line once
space returns. A real 4 MiB tmpfs filled to the last byte (root only, else skipped)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from monad_cli.daemon import logfile
from tests.e2e.test_full_disk import fill, small_disk

__all__ = ["small_disk"]  # the fixture, imported for this test


def _record(text: str) -> logging.LogRecord:
    return logging.LogRecord("monad.test", logging.INFO, __file__, 0, text, None, None)


def test_lines_are_held_bounded_and_written_in_order_when_space_returns(
        small_disk: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logfile, "HOLD_LINES", 5)
    monkeypatch.setattr(logfile, "RETRY_S", 0.0)
    path = small_disk / "daemon.log"
    handler = logfile.HeldLogHandler(path, maxBytes=10 * 1024 * 1024, backupCount=3)
    handler.setFormatter(logging.Formatter("%(message)s"))
    try:
        handler.emit(_record("before"))
        filler = fill(small_disk)
        n = 0
        while handler.status()["state"] == "ok":  # the file's last page may take a few lines
            handler.emit(_record(f"filler line {n} " + "x" * 200))
            n += 1
        for i in range(10):
            handler.emit(_record(f"full {i}"))
        status = handler.status()
        assert status["held"] == 5 and status["lost"] >= 6, status
        assert "No space left on device" in status["reason"] and str(path) in status["reason"], status

        filler.unlink()
        handler.emit(_record("after"))
        assert handler.status()["state"] == "ok" and handler.status()["held"] == 0
    finally:
        handler.close()
    lines = path.read_text().splitlines()
    assert lines[0] == "before" and lines[-1] == "after", lines[-8:]
    note = lines[-2]
    assert note.startswith("daemon.log could not be written for") and "5 held line(s) written" in note, note
    assert "line(s) did not fit in memory and are lost" in note
    # The held lines, in the order they came, each once: the first that failed, then the
    # `full` ones up to the bound (the rest were counted).
    held = lines[-7:-2]
    fulls = [line for line in held if line.startswith("full ")]
    assert fulls == [f"full {i}" for i in range(len(fulls))], held
    assert len(lines) == len(set(lines)), lines
