"""`monad daemon run`: the supervisor's process entry (no typer here).

`python -m monad_cli.daemon` (what `monad daemon start` runs) and `monad daemon run` both
end in `run`: the daemon lock, the definitions and the stdio servers' processes come before
the SDK and the HTTP stack are imported (`daemon/startup.py`); this module imports neither.
"""

from __future__ import annotations

import gc
import importlib.util
import logging
import logging.handlers
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

import anyio

from monad_cli.core.envelope import encode_line
from monad_cli.core.errors import Conflict, MonadError, Unavailable
from monad_cli.core.paths import Paths
from monad_cli.daemon.logfile import HeldLogHandler

if TYPE_CHECKING:
    from monad_cli.daemon.supervisor import Supervisor

LOG_CAP_BYTES = 10 * 1024 * 1024


class _ScrubFormatter(logging.Formatter):
    """Every log line passes the supervisor's redaction function as a whole: the message,
    and the traceback and stack a record carries (a library's `log.exception` quotes what
    failed to parse: the SDK's "Error parsing JSON response" once wrote a server's echo of
    its token to daemon.log through the traceback, which a filter of the message missed)."""

    def __init__(self, fmt: str, scrub: Callable[[str], str]) -> None:
        super().__init__(fmt)
        self.scrub = scrub

    def format(self, record: logging.LogRecord) -> str:
        return self.scrub(super().format(record))


class _CutAtStop(logging.Filter):
    """uvicorn logs "Exception in ASGI application" with a traceback for a request still
    running when the supervisor's loop, or the listener serving it, stops and cancels it (a
    call waiting on a server, a Studio or gateway event stream). That is the stop, not a
    fault: one line at info instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        import asyncio

        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, asyncio.CancelledError | anyio.get_cancelled_exc_class()):
            record.levelno, record.levelname = logging.INFO, "INFO"
            record.msg, record.args, record.exc_info, record.exc_text = \
                "a request still open was cut by its listener's stop", (), None, None
        return True


class _OneLineFromTheSDK(logging.Filter):
    """The SDK logs what a server sent wrong with its traceback (`Error parsing SSE message`:
    a pydantic error of 20 lines, once per message, every retry: a trial saw 437 KB of them in
    23 minutes from two bad servers). The server's status reason says what failed; the log
    keeps one line, the exception's type and first line. `MONAD_DEBUG=1` keeps tracebacks."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None and record.name.split(".")[0] == "mcp":
            exc = record.exc_info[1]
            first = (str(exc).splitlines() or [""])[0][:200]
            record.msg, record.args = f"{record.getMessage()} ({type(exc).__name__}: {first})", ()
            record.exc_info, record.exc_text = None, None
        return True


def _setup_logging(paths: Paths, scrub: Callable[[str], str], *, to_stderr: bool) -> None:
    paths.ensure()
    root = logging.getLogger()
    root.setLevel(logging.DEBUG if os.environ.get("MONAD_DEBUG") == "1" else logging.INFO)
    fmt = _ScrubFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s", scrub)
    handlers: list[logging.Handler] = [
        HeldLogHandler(paths.daemon_log, maxBytes=LOG_CAP_BYTES, backupCount=3)]  # holds lines on a full disk
    if to_stderr:
        handlers.append(logging.StreamHandler(sys.stderr))
    for h in handlers:
        h.setFormatter(fmt)
        if os.environ.get("MONAD_DEBUG") != "1":
            h.addFilter(_OneLineFromTheSDK())
        root.addHandler(h)
    for noisy in ("uvicorn", "uvicorn.error", "httpx2", "httpcore", "mcp", "watchfiles"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    logging.getLogger("uvicorn.error").addFilter(_CutAtStop())


def use_uvloop() -> bool:
    """Whether the supervisor runs on uvloop: installed (a dependency on POSIX) and
    `MONAD_EVENT_LOOP` is not `asyncio` (the way back, to rule the loop out when debugging).
    libuv's loop costs ~10-15 % less supervisor CPU per gateway call than the standard
    library's selector loop (bench/README.md)."""
    if os.environ.get("MONAD_EVENT_LOOP", "").lower() == "asyncio":
        return False
    return importlib.util.find_spec("uvloop") is not None


def run(paths: Paths, *, include: list[str] | None = None, exclude: list[str] | None = None) -> int:
    """Run the supervisor in this process until SIGTERM/SIGINT or `daemon stop`.
    `include`/`exclude`: validated server-name globs of `--include-mcps`/`--exclude-mcps`
    (None: not given, `features/mcp.toml` decides). Returns the exit status: 0 after a clean
    stop, 1 when it could not start (another supervisor owns this MONAD_HOME, a `required`
    server failed)."""
    ready_fd = int(os.environ.pop("MONAD_READY_FD", "-1"))
    check_required = os.environ.pop("MONAD_SKIP_REQUIRED", "") != "1"
    holder: list[Supervisor] = []  # the supervisor, once the SDK is imported and it exists

    def scrub(text: str) -> str:
        return holder[0].scrub(text) if holder else text  # before it exists no secret is known

    def notify(error: MonadError | None) -> None:
        # The ready pipe speaks the API's error envelope, so the starter branches on the
        # kind (`Conflict`: another supervisor won the start race), never on the text.
        nonlocal ready_fd
        if ready_fd >= 0:
            msg = "ok\n" if error is None else encode_line(type(error)(scrub(error.message)))
            try:
                os.write(ready_fd, msg.encode())
            finally:
                os.close(ready_fd)
                ready_fd = -1

    try:
        # First, before a log line or a socket is made there: a home another account can
        # write to would have this process run what that account planted.
        paths.check_owner()
    except MonadError as e:
        notify(e)
        print(f"error: the supervisor did not start: {e.message}", file=sys.stderr)
        return 1
    _setup_logging(paths, scrub, to_stderr=ready_fd < 0)
    log = logging.getLogger("monad.supervisor")
    from monad_cli.daemon.bounds import BUDGET, log_accept_errors, raise_nofile

    def on_ready(reason: str | None) -> None:
        # `reason`: a required server failed, so this supervisor cannot offer what was asked.
        notify(None if reason is None else Unavailable(reason))

    async def main() -> None:
        # No cyclic collection while the imports below make ~1.2e5 long-lived objects: the
        # collector would walk them again and again (~0.1 s of the start's CPU, measured) to
        # find a few hundred cycles. Frozen and enabled again once they are in (below).
        gc.disable()
        import asyncio

        log_accept_errors(asyncio.get_running_loop())
        from monad_cli.daemon.sessions.spawn import EarlySpawns
        from monad_cli.daemon.startup import acquire_daemon_lock, spawn_early

        lock = acquire_daemon_lock(paths)
        # Once this process owns the home: a second `daemon run` says only why it stops.
        before, now = raise_nofile()
        log.info("open files: limit %d%s; the listeners may hold %s connections", now,
                 f" (raised from {before})" if now != before else "", BUDGET.limit)
        from monad_cli.config.envfile import LayeredEnviron, read_env_file

        early = EarlySpawns()
        # What the supervisor will expand from (MONAD_HOME/env first), so the early processes
        # are the ones its actors would start and adopt.
        await spawn_early(paths, LayeredEnviron(read_env_file(paths).values, os.environ), early,
                          include=include, exclude=exclude)
        # Only now the SDK and the HTTP stack (~0.55 s of CPU): the servers start meanwhile.
        import monad_cli.daemon.api.server  # noqa: F401 - imported here, not mid-connect
        from monad_cli.daemon.supervisor import Supervisor

        # The imports made ~1e5 long-lived objects (pydantic schemas above all); a full
        # collection walking them takes 0.1-0.2 s, a pause in the middle of some call. Freeze
        # them out of the collector's generations (Python docs, `gc.freeze`): later
        # collections walk only what the supervisor made since.
        gc.freeze()
        gc.enable()

        sup = Supervisor(paths, include=include, exclude=exclude, early=early)
        sup.check_required = check_required
        sup._lock_fd = lock
        holder.append(sup)
        await sup.run(on_ready=on_ready)

    try:
        anyio.run(main, backend_options={"use_uvloop": use_uvloop()})
    except Conflict as e:  # another supervisor holds this MONAD_HOME's daemon lock
        notify(e)
        print(f"error: {e}", file=sys.stderr)
        return 1
    except MonadError as e:  # e.g. the journal's settings (docs/fleet.md): nothing started yet
        notify(e)
        log.error("not started: %s", scrub(e.message))
        print(f"error: the supervisor did not start: {scrub(e.message)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BaseException as e:
        from monad_cli.daemon.supervisor import StartupFailed

        if isinstance(e, StartupFailed):
            log.error("not started: %s", e)
            print(f"error: the supervisor did not start: {scrub(str(e))}", file=sys.stderr)
            return 1
        log.exception("supervisor crashed")
        notify(MonadError(f"crashed: {type(e).__name__}: {e}"))
        raise
    return 0
