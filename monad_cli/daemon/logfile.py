"""`logs/daemon.log` on a disk that takes no writes (docs/supervisor.md "A full disk").

`HeldLogHandler` is the supervisor's rotating log file handler. A line the file cannot take
(ENOSPC, EDQUOT, an I/O error) is held in memory, in order, up to `HOLD_LINES`; lines past
that are counted (`lost`), never silent. The file is tried again with the next line, at most
once per `RETRY_S`, and every `RETRY_S` by `keep_trying` when no line comes; the held lines
go out first, then one line saying what happened. The logging module's own fallback (a
traceback on stderr per failed line) is not used: stderr may be the same full disk, and a
supervisor must never stop for its log.
"""

from __future__ import annotations

import contextlib
import logging
import logging.handlers
import os
import sys
import time
from collections import deque
from typing import Any

HOLD_LINES = 2000  # formatted lines, ~200 bytes each
RETRY_S = 1.0


def _private(path: str | os.PathLike[str]) -> None:
    """`path` made (or kept) 0600: the log names servers, tools and errors, and logging
    opens files with the umask's mode (0644)."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
        os.chmod(path, 0o600)
    except OSError:
        pass  # the handler's own open says what is wrong


class HeldLogHandler(logging.handlers.RotatingFileHandler):
    """A `RotatingFileHandler` that holds the lines its file cannot take (module docstring)."""

    def __init__(self, filename: str | os.PathLike[str], *args: Any, **kwargs: Any) -> None:
        _private(filename)
        super().__init__(filename, *args, **kwargs)
        self.held: deque[logging.LogRecord] = deque()
        self.lost = 0
        self.fault: str | None = None
        self.fault_since: float | None = None
        self._last_try = -float("inf")

    def doRollover(self) -> None:
        """The standard rotation, and the new file 0600 like the first."""
        super().doRollover()
        _private(self.baseFilename)

    def status(self) -> dict[str, Any]:
        """`{state: ok|degraded, reason, held, lost, heldSince, path}`; `lost` counts lines since the start."""
        return {"state": "degraded" if self.fault else "ok", "reason": self.fault, "held": len(self.held),
                "lost": self.lost, "heldSince": self.fault_since, "path": self.baseFilename}

    def emit(self, record: logging.LogRecord) -> None:
        if self.fault is not None:
            now = time.monotonic()
            if now - self._last_try < RETRY_S or not self._write_held(now):
                self._hold(record)
                return
        try:
            super().emit(record)
        except OSError as exc:
            self._failed(exc)
            self._hold(record)

    def handleError(self, record: logging.LogRecord) -> None:
        # The handlers' `emit` catch their own errors and land here: raise them to ours.
        exc = sys.exc_info()[1]
        if isinstance(exc, OSError):
            raise exc
        super().handleError(record)

    def _hold(self, record: logging.LogRecord) -> None:
        if len(self.held) < HOLD_LINES:
            self.held.append(record)
        else:
            self.lost += 1

    def _failed(self, exc: OSError) -> None:
        """The file took no write: drop the stream (and what its buffer kept, which is held
        as its record), so the next try reopens it and writes each line once."""
        stream, self.stream = self.stream, None
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()  # its flush fails too; the file is closed all the same
        self._last_try = time.monotonic()
        if self.fault is None:
            self.fault_since = time.time()
        self.fault = f"cannot write `{self.baseFilename}`: {exc.strerror or exc}"

    def _write_held(self, now: float) -> bool:
        """Try the file again: the held lines, then a line saying so. Whether it took them."""
        self._last_try = now
        held = len(self.held)
        try:
            while self.held:
                logging.FileHandler.emit(self, self.held[0])
                self.held.popleft()
            since = time.time() - (self.fault_since or time.time())
            lost = f"; {self.lost} line(s) did not fit in memory and are lost" if self.lost else ""
            note = logging.LogRecord("monad.log", logging.WARNING, __file__, 0,
                                     f"daemon.log could not be written for {since:.0f} s; {held} held line(s) "
                                     f"written{lost}", None, None)
            logging.FileHandler.emit(self, note)
        except OSError as exc:
            self._failed(exc)
            return False
        self.fault = self.fault_since = None
        return True


def _handler() -> HeldLogHandler | None:
    for handler in logging.getLogger().handlers:
        if isinstance(handler, HeldLogHandler):
            return handler
    return None


async def keep_trying() -> None:
    """While the log holds lines, try its file every `RETRY_S` even when no new line comes:
    a quiet supervisor would otherwise keep them in memory (and `status` degraded) until it
    next logs something. Never returns (cancel it)."""
    import anyio

    while True:
        await anyio.sleep(RETRY_S)
        handler = _handler()
        if handler is not None and handler.fault is not None:
            handler.acquire()  # the lock `Handler.handle` takes around `emit`
            try:
                if handler.fault is not None:
                    handler._write_held(time.monotonic())
            finally:
                handler.release()


def log_status() -> dict[str, Any] | None:
    """The supervisor's log file's `HeldLogHandler.status()` (None: not this process's log)."""
    handler = _handler()
    return handler.status() if handler is not None else None
