"""Spawn first, import while they start: the supervisor's stdio servers start before the SDK.

Importing the MCP SDK (~0.75 s) and SQLModel (~0.45 s) takes about as long as a server's own
start. So `monad daemon run` reads the definitions (stdlib and tomlkit), spawns every enabled,
unfiltered stdio server as its transport would, and then imports the rest while they start.
An actor's first connect adopts its early process (`EarlySpawns.take`: the same argv,
environment and cwd, the spawn marker aside); what nobody adopted is stopped once every actor
had its first attempt. Each is recorded in `run/servers/` (processes.py), so a supervisor that
dies before adopting it leaves nothing unnamed.

`stdio_command` (the command on the definition's PATH, the SDK's environment allowlist, the
spawn marker, the cwd rule) is here so both start a server the same way. Stdlib and anyio
only: nothing here may pull in the SDK.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.abc

from monad_cli.config.schema import ServerSpec
from monad_cli.core.paths import make_private_dir
from monad_cli.daemon.sessions.popen import open_process
from monad_cli.daemon.sessions.processes import (
    MARKER_ENV,
    SpawnRecord,
    SpawnRecords,
    members,
    new_marker,
    signal_group,
    signal_pids,
    spawn_record,
)

log = logging.getLogger("monad.transport")

# The SDK's own allowlist for a stdio server's environment (`mcp.client.stdio.
# get_default_environment` on POSIX), here so spawning needs no SDK import; a test keeps
# the two equal.
DEFAULT_INHERITED_ENV_VARS = ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER")
# Beyond the SDK's list: how to reach the network behind a company proxy or a custom CA.
# Without them `npx -y …` and `uvx …` servers retry a certificate error until the connect
# times out (docs/atoms.md "What a server inherits"). Both spellings: curl, Python and Node
# read the lowercase ones, others the uppercase.
NETWORK_ENV_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
                    "http_proxy", "https_proxy", "no_proxy", "all_proxy",
                    "SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE",
                    "CURL_CA_BUNDLE", "PIP_CERT", "NPM_CONFIG_CAFILE", "npm_config_cafile",
                    "UV_NATIVE_TLS", "GIT_SSL_CAINFO")

Key = tuple[tuple[str, ...], str | None, tuple[tuple[str, str], ...]]


def default_environment() -> dict[str, str]:
    """The variables a stdio server inherits from the supervisor: the SDK's allowlist and the
    proxy and CA variables (`NETWORK_ENV_VARS`), minus values that start with `()` (exported
    shell functions)."""
    return {key: value for key in (*DEFAULT_INHERITED_ENV_VARS, *NETWORK_ENV_VARS)
            if (value := os.environ.get(key)) is not None and not value.startswith("()")}


class SpawnError(Exception):
    """The server could not be started at all (command missing, bad cwd...)."""


@dataclass(frozen=True)
class StdioCommand:
    """How to start one stdio server: `argv`, `env` (with the spawn's `MONAD_SERVER_ID`
    marker), `cwd`, and that marker."""

    argv: list[str]
    env: dict[str, str]
    cwd: str | None
    marker: str

    def key(self) -> Key:
        """What an early process and a transport's attempt must agree on (not the marker,
        which is new per spawn)."""
        env = tuple(sorted((k, v) for k, v in self.env.items() if k != MARKER_ENV))
        return tuple(self.argv), self.cwd, env


def resolve_command(spec: ServerSpec, env: dict[str, str]) -> str:
    """The executable `spec.command` names: a path (relative ones need `cwd`) or a name found
    on the definition's PATH. Raises SpawnError saying what to fix."""
    assert spec.command is not None
    if os.sep in spec.command:
        if not os.path.isabs(spec.command) and not spec.cwd:
            raise SpawnError(f"command `{spec.command}` is a relative path but the server has no `cwd`; set "
                             f"`cwd` in `{spec.source}` to the directory it is relative to")
        path = spec.command if os.path.isabs(spec.command) else \
            os.path.normpath(os.path.join(spec.cwd or "", spec.command))
        if not os.path.exists(path):
            raise SpawnError(f"command `{spec.command}` does not exist; install it, or fix `command` in "
                             f"`{spec.source}`")
        if not os.access(path, os.X_OK):
            raise SpawnError(f"command `{spec.command}` is not executable; `chmod +x` it, or fix `command` in "
                             f"`{spec.source}`")
        return path
    found = shutil.which(spec.command, path=env.get("PATH"))
    if not found:
        raise SpawnError(f"command `{spec.command}` not found on PATH; install it, or set `command` in "
                         f"`{spec.source}` to its full path")
    return found


def stdio_command(spec: ServerSpec, workdir: str | None) -> StdioCommand:
    """How `spec` starts: its resolved command, environment and cwd (`workdir`, made 0700
    if missing, when the definition sets none; the Landlock launcher for `sandbox = true`).
    Raises SpawnError."""
    # The SDK's allowlist, the proxy and CA variables, then the definition's env: never the
    # supervisor's other variables, which may hold tokens.
    env = default_environment() | spec.env
    command = resolve_command(spec, env)
    if spec.cwd and not os.path.isdir(spec.cwd):
        raise SpawnError(f"cwd `{spec.cwd}` is not a directory")
    marker = new_marker(spec.name)
    env[MARKER_ENV] = marker
    argv, cwd = [command, *spec.args], spec.cwd or workdir
    if spec.sandbox:
        argv, cwd, env = _sandboxed(spec, command, env)
    elif cwd and not spec.cwd:
        make_private_dir(Path(cwd))
    return StdioCommand(argv, env, cwd, marker)


def _sandboxed(spec: ServerSpec, command: str, env: dict[str, str]) -> tuple[list[str], str, dict[str, str]]:
    """The Landlock launcher's argv, cwd and env for `sandbox = true` (monad_cli/daemon/sandbox)."""
    from monad_cli.core.paths import paths
    from monad_cli.daemon.sandbox import SandboxError, prepare

    try:
        return prepare(scratch=paths().sandbox_dir(spec.name), command=command, args=spec.args, cwd=spec.cwd,
                       writable=spec.sandbox_writable, env=env)
    except SandboxError as e:
        raise SpawnError(str(e)) from None  # fatal: never retried unconfined


@dataclass
class EarlyProcess:
    """A server process started before the SDK was imported, the read end of its stderr
    pipe (the adopting actor's `StderrSink` drains it), its spawn marker and record, and
    the directory that record was written to (None: not written)."""

    process: anyio.abc.Process
    stderr_fd: int
    marker: str
    record: SpawnRecord
    recorded_in: Path | None = None


class EarlySpawns:
    """The processes spawned at supervisor start, until their actors adopt them."""

    def __init__(self) -> None:
        self.waiting: dict[Key, EarlyProcess] = {}
        self.records: SpawnRecords | None = None
        self.leftovers_killed: list[str] = []  # `kill_leftovers` lines, for the journal

    async def spawn(self, server: str, cmd: StdioCommand, records: SpawnRecords | None) -> None:
        """Start one server now (its own process group, stdin/stdout pipes, stderr to a
        pipe), recorded in `records`. A failure is left for the actor to meet again, and
        report."""
        read_fd, write_fd = os.pipe()
        try:
            process = await open_process(cmd.argv, stderr=write_fd, env=cmd.env, cwd=cmd.cwd)
        except OSError:
            os.close(read_fd)
            return
        finally:
            os.close(write_fd)  # the child holds it; EOF comes when the child is gone
        record = spawn_record(server, process.pid, cmd.marker)
        if records is not None:
            records.write(record)
            self.records = records
        os.set_blocking(read_fd, False)
        self.waiting[cmd.key()] = EarlyProcess(process, read_fd, cmd.marker, record,
                                               records.dir if records is not None else None)

    def take(self, cmd: StdioCommand) -> EarlyProcess | None:
        """The early process for exactly this command line, environment and cwd, once."""
        return self.waiting.pop(cmd.key(), None) if self.waiting else None

    async def discard(self) -> None:
        """Stop every early process nobody adopted (its definition changed or went away
        meanwhile): SIGTERM its group, then SIGKILL what is left after 2 s."""
        leftovers, self.waiting = list(self.waiting.values()), {}
        for early in leftovers:
            log.info("stopping early-spawned process %d: no actor adopted it", early.process.pid)
            signal_group(early.process.pid, signal.SIGTERM)
        for early in leftovers:
            with anyio.move_on_after(2.0):
                await early.process.wait()
            signal_group(early.process.pid, signal.SIGKILL)
            with anyio.move_on_after(2.0):
                await early.process.aclose()  # closes its pipes and reaps it
            with contextlib.suppress(OSError):
                os.close(early.stderr_fd)
            # Whatever it started outside its group (setsid, double fork) goes too.
            signal_pids(members(early.record), signal.SIGKILL)
            if self.records is not None:
                self.records.forget(early.record)
