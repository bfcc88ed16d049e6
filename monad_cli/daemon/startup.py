"""What `monad daemon run` does before it imports the SDK: take the daemon lock, read the
definitions, and spawn the stdio servers (`daemon/sessions/spawn.py`), so they start while the
supervisor imports the rest; and what waits until every server had its first attempt
(`after_start`). Standard library, anyio and the config code only."""

from __future__ import annotations

import fcntl
import logging
import os
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import anyio

from monad_cli.config.features import load_mcp_filter
from monad_cli.config.loader import load_definitions
from monad_cli.config.settings import load_settings
from monad_cli.config.workdir import default_workdir
from monad_cli.core.errors import ConfigError, Conflict
from monad_cli.core.filters import combine
from monad_cli.core.paths import Paths
from monad_cli.daemon.sessions.processes import SpawnRecords, kill_leftovers
from monad_cli.daemon.sessions.spawn import EarlySpawns, SpawnError, stdio_command

if TYPE_CHECKING:
    from monad_cli.daemon.sessions.actor import ServerActor

log = logging.getLogger("monad.supervisor")


def acquire_daemon_lock(paths: Paths) -> int:
    """One supervisor per MONAD_HOME: an flock on run/daemon.lock, held for life (the fd is
    returned and never closed). Raises Conflict naming the holder's pid."""
    paths.ensure()
    fd = os.open(paths.daemon_lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
        os.close(fd)
        raise Conflict(f"a supervisor is already running for `{paths.home}` (pid {holder})") from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, str(os.getpid()).encode(), 0)
    return fd


async def spawn_early(paths: Paths, environ: Mapping[str, str], early: EarlySpawns, *, include: list[str] | None,
                      exclude: list[str] | None) -> int:
    """Spawn every enabled, unfiltered, unsandboxed stdio server that starts `always` as its
    transport would, into `early` (recorded in `run/servers/`); returns how many. A dead
    supervisor's leftovers are killed first (their lines in `early.leftovers_killed`, for the
    journal). What fails here (a bad file, a missing command) the supervisor meets again and
    reports."""
    started = time.monotonic()
    records = SpawnRecords(paths.run_dir)
    early.leftovers_killed += kill_leftovers(records)
    try:
        defs = load_definitions(paths, environ)
        enabled, disabled = load_mcp_filter(paths)
        defaults = load_settings(paths).servers
    except (ConfigError, OSError):
        return 0
    server_filter = combine(flag_include=include, flag_exclude=exclude, file_enabled=enabled, file_disabled=disabled)
    n = 0
    for name, spec in defs.specs.items():
        # A sandboxed server is prepared per attempt (its scratch dir); it starts with its actor.
        if spec.transport != "stdio" or not spec.enabled or spec.sandbox or not server_filter.allows(name):
            continue
        if spec.start_mode(defaults) == "on-demand":  # started by a call, or once to learn its lists
            continue
        try:
            cmd = stdio_command(spec, str(default_workdir(paths, name)))
        except (SpawnError, OSError):
            continue
        await early.spawn(name, cmd, records)
        n += 1
    if n:
        log.info("spawned %d stdio server(s) before loading the SDK (%.0f ms)", n,
                 (time.monotonic() - started) * 1000)
    return n


async def after_start(actors: Sequence[ServerActor], early: EarlySpawns, *, limit: float = 60.0) -> None:
    """Once every actor made its first attempt (and so adopted its early process, if it had
    one), or after `limit` seconds: stop the early processes nobody adopted."""
    with anyio.move_on_after(limit):
        for actor in actors:
            await actor.first_attempt.wait()
    await early.discard()
