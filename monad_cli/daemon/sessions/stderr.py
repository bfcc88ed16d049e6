"""Continuous draining of a stdio server's stderr (a full pipe would block the server).

The server writes into a real pipe; a task drains it into `logs/servers/<name>.stderr.log`
(size-capped, rotated) and an in-memory tail, so megabytes, with or without newlines, never
block it.

The tail leaves out noise monad causes: a server on the Python SDK 1.x answers the
`server/discover` probe of `mode="auto"` with a root-logger warning quoting pydantic's
errors, one per request type (31, ~90 lines), which would push its own lines out. Such a
block (its first line and continuation lines, naming `server/discover`) goes to the log file
only (`probe_noise` counts its lines).
"""

from __future__ import annotations

import os
import re
import select
import time
from collections import deque
from collections.abc import Callable, Collection
from pathlib import Path
from typing import BinaryIO

import anyio

LOG_CAP_BYTES = 10 * 1024 * 1024
LOG_BACKUPS = 3
TAIL_LINES = 20
MAX_LINE_CHARS = 500
# The first line of a validation warning (`WARNING:root:Failed to validate request: …`), and
# the lines pydantic continues it with: an error's location (`PingRequest.method`), its text
# and its help link, both indented.
_VALIDATION_START = re.compile(r"Failed to validate (request|notification)\b|\d+ validation errors? for ")
_VALIDATION_MORE = re.compile(r"\s|[A-Za-z_][\w-]*(\.[\w-]+|\[[^\]]*\])+\Z")
PROBE_METHOD = "server/discover"
# `NAME.stderr.log` and its rotations `NAME.stderr.log.1` … `.LOG_BACKUPS`.
_LOG_FILE = re.compile(r"(?P<name>.+)\.stderr\.log(\.\d+)?")


def prune_logs(folder: Path, *, defined: Collection[str], older_than_s: float,
               now: float | None = None) -> dict[str, int]:
    """Delete the stderr logs (`NAME.stderr.log` and its rotations) of servers not in `defined`
    whose newest file was last written more than `older_than_s` seconds ago; returns the bytes
    deleted per server name. A defined server's logs are never touched (they are size-capped);
    a file that cannot be read or deleted is left for the next round."""
    now = time.time() if now is None else now
    groups: dict[str, list[os.DirEntry[str]]] = {}
    try:
        entries = list(os.scandir(folder))
    except OSError:  # no folder yet (no stdio server ever ran), or unreadable
        return {}
    for entry in entries:
        m = _LOG_FILE.fullmatch(entry.name)
        if m and m["name"] not in defined and entry.is_file(follow_symlinks=False):
            groups.setdefault(m["name"], []).append(entry)
    deleted: dict[str, int] = {}
    for name, files in sorted(groups.items()):
        try:
            sizes = {f.path: f.stat(follow_symlinks=False) for f in files}
        except OSError:
            continue
        if now - max(st.st_mtime for st in sizes.values()) < older_than_s:
            continue
        for path, st in sizes.items():
            try:
                os.unlink(path)
            except OSError:
                continue
            deleted[name] = deleted.get(name, 0) + st.st_size
    return deleted


KEPT_CHARS = 8192
"""What a line that never ends keeps back from each piece it is written in: more than any
secret is long (a 4096-bit PEM key is ~3.3 kB), so one across a cut is whole in the next."""


class StderrSink:
    """One pipe per connection attempt; `tail` keeps the lines across attempts. `scrub` is
    applied to each line as it is read, before the log or the tail: nothing here holds a
    secret the server printed (stderr's ingress choke point, as `SecretScrubber.line` is
    stdout's; docs/atoms.md "Secrets")."""

    def __init__(self, log_path: Path, scrub: Callable[[str], str] = lambda s: s) -> None:
        self.log_path = log_path
        self.scrub = scrub
        self.tail: deque[str] = deque(maxlen=TAIL_LINES)
        self.probe_noise = 0  # lines of `server/discover` validation noise left out of the tail
        self.count = 0  # lines ever put in the tail: `since(mark)` finds those of one call
        self._block: list[str] = []  # a validation warning being read, not yet in the tail
        self._partial = ""
        self._log_pending = ""
        self.read_fd: int | None = None
        self.write_fd: int | None = None

    def open_pipe(self) -> int:
        """Make a new pipe; returns the write end for the child."""
        self.read_fd, self.write_fd = os.pipe()
        # The reason of a failed attempt must quote that attempt's stderr, not an older one's.
        self.tail.clear()
        self._block = []
        self._partial = ""
        self._log_pending = ""
        os.set_blocking(self.read_fd, False)
        return self.write_fd

    def adopt(self, read_fd: int) -> None:
        """Drain `read_fd` (the stderr pipe of a process spawned before this attempt) instead
        of the pipe `open_pipe` made."""
        self.close()
        self.read_fd = read_fd

    def close_write_end(self) -> None:
        # The parent must drop its copy, or EOF never comes when the child exits.
        if self.write_fd is not None:
            os.close(self.write_fd)
            self.write_fd = None

    def close(self) -> None:
        self.close_write_end()
        if self.read_fd is not None:
            os.close(self.read_fd)
            self.read_fd = None

    async def drain(self) -> None:
        """Read until EOF (every holder of the write end has exited)."""
        fd = self.read_fd
        assert fd is not None
        with self._open_log() as log:
            while True:
                try:
                    chunk = os.read(fd, 65536)
                except BlockingIOError:
                    await anyio.wait_readable(fd)
                    continue
                except OSError:
                    return
                if not chunk:
                    if self._log_pending:
                        rest = self.scrub(self._log_pending)
                        self._log_pending = ""
                        log.write(rest.encode())
                        self._feed(rest)
                    self._flush_partial()
                    log.flush()
                    return
                done = self._scrubbed_lines(chunk.decode("utf-8", errors="replace"))
                log.write(done.encode())
                log.flush()
                self._feed(done)
                if log.tell() > LOG_CAP_BYTES:
                    log.close()
                    self._rotate()
                    log = self._open_log()
                await anyio.lowlevel.checkpoint()

    def _scrubbed_lines(self, text: str) -> str:
        """Complete lines, scrubbed of known secrets (a secret split across two reads is
        still whole in a line); a line that never ends is written in 64 KiB pieces, each
        scrubbed before it is cut and the last `KEPT_CHARS` of it kept for the next piece:
        a secret across a cut would otherwise leave each half in the log."""
        pending = self._log_pending + text
        cut = pending.rfind("\n") + 1
        if cut == 0 and len(pending) > 65536:
            scrubbed = self.scrub(pending)
            self._log_pending = scrubbed[-KEPT_CHARS:]
            return scrubbed[:-KEPT_CHARS]
        self._log_pending = pending[cut:]
        return self.scrub(pending[:cut])

    def _feed(self, text: str) -> None:
        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()[-MAX_LINE_CHARS * 4:]
        for line in lines:
            line = line.rstrip("\r")
            if line:
                self._append(line[:MAX_LINE_CHARS])

    def _append(self, line: str) -> None:
        """Into the tail, except the lines of a validation warning about the probe."""
        if self._block and _VALIDATION_MORE.match(line) and not _VALIDATION_START.search(line):
            self._block.append(line)
            return
        self._end_block()
        if _VALIDATION_START.search(line):
            self._block = [line]
        else:
            self.tail.append(line)
            self.count += 1

    def _end_block(self) -> None:
        block, self._block = self._block, []
        if any(PROBE_METHOD in line for line in block):
            self.probe_noise += len(block)
        else:
            self.tail.extend(block)
            self.count += len(block)

    def _unfinished(self) -> list[str]:
        """The line still being written (no newline yet), scrubbed, if any."""
        text = (self._partial + self._log_pending).strip()
        return [self.scrub(text[:MAX_LINE_CHARS * 4])[:MAX_LINE_CHARS]] if text else []

    def since(self, mark: int) -> list[str]:
        """The tail's lines put there after `count` was `mark` (at most the tail's length),
        and a line still being written."""
        n = min(self.count - mark, len(self.tail))
        out = list(self.tail)[-n:] if n > 0 else []
        return out + self._unfinished()

    async def settle(self, timeout: float = 0.2) -> None:
        """Wait (at most `timeout` s) until what the server already wrote to stderr is read:
        a server writes its stderr before its answer, but the two pipes are drained apart."""
        fd = self.read_fd
        with anyio.move_on_after(timeout):
            while fd is not None and fd == self.read_fd:
                try:
                    readable, _, _ = select.select([fd], [], [], 0)
                except (OSError, ValueError):
                    return
                if not readable:
                    return
                await anyio.sleep(0.005)

    def _flush_partial(self) -> None:
        if self._partial.strip():
            self._append(self._partial[:MAX_LINE_CHARS])
        self._partial = ""
        self._end_block()

    def _open_log(self) -> BinaryIO:
        """The log file, appended to, 0600 when it is created."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        return os.fdopen(os.open(self.log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "ab")

    def _rotate(self) -> None:
        for i in range(LOG_BACKUPS - 1, 0, -1):
            src = self.log_path.with_name(f"{self.log_path.name}.{i}")
            if src.exists():
                os.replace(src, self.log_path.with_name(f"{self.log_path.name}.{i + 1}"))
        os.replace(self.log_path, self.log_path.with_name(f"{self.log_path.name}.1"))

    def note(self, line: str) -> None:
        """Append one line of ours (a log message the server sent over MCP) to the log file,
        scrubbed; not to the tail, which quotes the server's stderr in failure reasons."""
        try:
            with self._open_log() as log:
                log.write(self.scrub(line.replace("\n", " ")[:MAX_LINE_CHARS * 8] + "\n").encode())
        except OSError:
            pass  # a log line that cannot be written must not fail the session

    def lines(self) -> list[str]:
        out = list(self.tail)
        if not any(PROBE_METHOD in line for line in self._block):  # still being read: shown unless noise
            out.extend(self._block[-TAIL_LINES:])
        return out + self._unfinished()
