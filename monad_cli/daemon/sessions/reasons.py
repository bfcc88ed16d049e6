"""Why a connection attempt or a session ended, in the words `monad mcp status` shows.

Pure functions of what the actor saw: the definition, the phase, the `Connection` record
(pid, exit status, last HTTP status, a protocol error), the last stderr lines, the OAuth
provider's reason. `classify` also decides what the actor does next: `fatal` (the command
cannot start: no retry), `needs-auth` (wait for `monad mcp authorize`) or `failed` (retry).
"""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Sequence
from typing import Literal

from mcp import MCPError
from mcp_types import CONNECTION_CLOSED
from pydantic import ValidationError

from monad_cli.config.schema import ServerSpec
from monad_cli.core.messages import connect_failure, without_pydantic_frame
from monad_cli.core.redact import redact_url
from monad_cli.daemon.sessions.framing import format_size
from monad_cli.daemon.sessions.spawn import SpawnError
from monad_cli.daemon.sessions.transports import Connection

Verdict = Literal["fatal", "failed", "needs-auth"]
STDERR_IN_REASON = 3
# Transport errors matched by name, so httpx2's and those of the connection layer under it
# (httpcore2, which uses the same names) are both recognised.
_CONNECT_ERRORS = ("ConnectError", "ConnectTimeout")
_TRANSFER_ERRORS = ("ReadTimeout", "WriteTimeout", "PoolTimeout", "RemoteProtocolError", "ReadError")


def leaf_exceptions(exc: BaseException) -> list[BaseException]:
    """Flatten the ExceptionGroups anyio task groups wrap connect failures in."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in leaf_exceptions(sub)]
    return [exc]


def describe(exc: BaseException) -> str:
    """One line for an exception: an MCP error's message and code (a pydantic problem it
    quotes, without pydantic's frame), a result of the wrong shape (pydantic's multi-line
    ValidationError) by its first problem, else its text."""
    if isinstance(exc, MCPError):
        return f"{without_pydantic_frame(exc.error.message)} (MCP error {exc.error.code})"
    if isinstance(exc, ValidationError):
        errors = exc.errors()
        first = errors[0] if errors else None
        where = ".".join(str(p) for p in first["loc"]) if first else ""
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        what = f"{where}: {first['msg']}" if first else "invalid"
        # The SDK checks a result against `union[CallToolResult,InputRequiredResult]`: the first
        # is the result the request asked for.
        title = exc.title.removeprefix("union[").split(",")[0].rstrip("]")
        return f"the server's {title} is not of the shape the protocol defines: {what}{more}"
    return " ".join((str(exc) or type(exc).__name__).split())


# What npm (behind `npx`) closes every failure with, after the line that says why: quoted
# instead, a mistyped package's reason read "Note that you can also install from a | tarball,
# folder, http url, or git url. | A complete log of this run can be found in: …".
_NPM_TRAILER = re.compile(r"npm (?:error|ERR!) (?:404|404 Note that you can also install from a|"
                          r"404 tarball, folder, http url, or git url\.|A complete log of this run can be found in:.*)")


def stderr_hint(lines: Sequence[str]) -> str:
    """`; stderr: a | b | c` from the last lines a stdio server wrote, or ``. Lines that say
    nothing are skipped: those that only underline the line above (Python's `^^^^` and `~~~~`
    markers), so a traceback's last lines quote its code and its exception, and npm's trailer,
    so a failed `npx` quotes its error (`404 Not Found - GET …`)."""
    last = [line.strip() for line in lines
            if line.strip().strip("^~").strip() and not _NPM_TRAILER.fullmatch(line.strip())][-STDERR_IN_REASON:]
    return f"; stderr: {' | '.join(last)}" if last else ""


def exit_text(conn: Connection) -> str:
    rc = conn.returncode
    if rc is None:
        return "closed its stdout"
    if rc < 0:
        try:
            name = f" ({signal.Signals(-rc).name})"
        except ValueError:  # a number this platform does not name
            name = ""
        return f"was killed by signal {-rc}{name}"
    return f"exited with status {rc}"


def stray_hint(conn: Connection) -> str:
    """`; it wrote N lines to stdout that are not JSON-RPC (the first: …)`, or ``.

    A server that prints a banner or its logs to stdout usually never answers in a way the
    client can read; saying so names the fix (the stdio transport keeps stdout for messages).
    """
    if not conn.stray_lines:
        return ""
    lines = "a line" if conn.stray_lines == 1 else f"{conn.stray_lines} lines"
    return (f"; it wrote {lines} to stdout that {'is' if conn.stray_lines == 1 else 'are'} not JSON-RPC "
            f"(the first: {conn.first_stray_line!r}): a stdio server must log to stderr, not stdout")


def explain_timeout(spec: ServerSpec, phase: str, stderr: Sequence[str], conn: Connection | None = None) -> str:
    """Why a connect attempt ran out of time: the phase it was in, stdout noise, the stderr tail."""
    noise = stray_hint(conn) if conn is not None else ""
    if conn is not None and conn.oversize_messages:
        # Its answer may be the message that was skipped: the limit is the fix, not the server.
        n = conn.oversize_messages
        noise = (f"; {'a stdout message' if n == 1 else f'{n} stdout messages'} over the "
                 f"{format_size(spec.max_message_bytes)} message limit {'was' if n == 1 else 'were'} skipped "
                 f"(raise `maxMessageBytes` in `{spec.source}`){noise}")
    elif conn is not None and spec.transport == "stdio" and not conn.stdout_lines:
        runner = runner_hint(spec)
        if stderr:
            # Its stderr says why (a package manager retrying a certificate error, a missing
            # key): quote it first, not a guess about buffering.
            noise = f"; it wrote nothing to its stdout{network_hint(stderr) or runner}"
        else:
            # Often a server that buffers its stdout (a pipe is not a terminal) or reads a config first;
            # behind a package runner, one still fetching the package (silently, as `npx -y` does).
            noise = f"; it wrote nothing to its stdout{runner or ' (does it flush its output?)'}"
    return f"timed out after {spec.timeout:g} s while {phase}{noise}{stderr_hint(stderr)}"


# Commands that fetch the server before running it: the first start can take longer than a
# connect's `timeout` (10 s by default) while they download, and `npx -y` says nothing meanwhile.
_PACKAGE_RUNNERS = ("npx", "uvx", "bunx", "pnpx", "pipx", "dnx", "docker", "podman")


# What npx's own cache (`_npx` in npm's cache folder) gives when a download was killed half
# way: the package's folder is there, its files are not, and every later start fails with it.
_NPX_BROKEN_CACHE = "ERR_MODULE_NOT_FOUND"
_NPX_CACHE_FIX = ("clear npx's cache with `npm cache clean --force` (or remove the `_npx` folder of npm's "
                  "cache, `npm config get cache` says where)")


def runner_hint(spec: ServerSpec) -> str:
    """` (`npx` may still be fetching the package: …raise `timeout`…)` for a command that
    fetches its server first, else ``. Says where the `timeout` line goes: after an `[env]`
    table (the last of most atoms) it is an environment variable, not the connect's timeout.
    For `npx`, also what to do when fetching it by hand fails with ERR_MODULE_NOT_FOUND (the
    cache a stopped download left broken)."""
    name = os.path.basename(spec.command or "")
    if name not in _PACKAGE_RUNNERS:
        return ""
    cache = (f"; if that fails with {_NPX_BROKEN_CACHE}, a stopped download left npx's cache broken: "
             f"{_NPX_CACHE_FIX}") if name == "npx" else ""
    return (f" (`{name}` may still be fetching the server on its first start: raise `timeout` in "
            f"`{spec.source}`, e.g. `timeout = 60` on a line before its first `[table]` (under `[env]` it "
            f"would be an environment variable), or run the command once by hand{cache})")


def npx_cache_hint(spec: ServerSpec, stderr: Sequence[str]) -> str:
    """` (npx's cache may be broken: …)` when an `npx` server's stderr names
    ERR_MODULE_NOT_FOUND (a download stopped half way, by a connect timeout say, leaves the
    package's folder without its files, and every later start fails the same), else ``."""
    if os.path.basename(spec.command or "") != "npx" or not any(_NPX_BROKEN_CACHE in line for line in stderr):
        return ""
    return (f" (npx's cache may have been left broken by a stopped download: run the command once by hand; "
            f"if it fails with {_NPX_BROKEN_CACHE} too, {_NPX_CACHE_FIX})")


_NETWORK_WORDS = ("certificate", "cert_", "ssl", "tls", "proxy", "econnrefused", "etimedout", "enotfound",
                  "getaddrinfo", "unable to get local issuer")


def network_hint(stderr: Sequence[str]) -> str:
    """` (its stderr names a network or certificate problem: …)` when the last lines do."""
    text = " ".join(list(stderr)[-STDERR_IN_REASON:]).lower()
    if not any(word in text for word in _NETWORK_WORDS):
        return ""
    return (" (its stderr names a network or certificate problem: the proxy and CA variables it inherits "
            "are listed in docs/atoms.md \"What a server inherits\")")


def explain_closed(spec: ServerSpec, conn: Connection, stderr: Sequence[str]) -> str:
    """A live session ended."""
    if conn.hung:
        return conn.hung
    if conn.protocol_error:
        return f"closed the session: {conn.protocol_error}"
    if spec.transport == "stdio":
        return f"server process {exit_text(conn)}{stderr_hint(stderr)}"
    return "the server closed the connection"


def classify(spec: ServerSpec, exc: BaseException, phase: str, *, conn: Connection | None,
             auth_reason: str | None, stderr: Sequence[str]) -> tuple[Verdict, str]:
    """(what to do next, the reason) for a connection attempt that raised `exc` in `phase`.

    `auth_reason`: what the server's OAuth provider reported during the attempt, if anything.
    A 401 is `needs-auth` (RFC 6750 §3.1 `invalid_token`; MCP spec, basic/authorization).
    """
    leaves = leaf_exceptions(exc)
    url = redact_url(spec.url or "")
    for leaf in leaves:
        if isinstance(leaf, SpawnError):
            return "fatal", str(leaf)
    if conn and conn.protocol_error:
        return "failed", f"{conn.protocol_error} while {phase}"
    if spec.transport == "http" and auth_reason:
        return "needs-auth", auth_reason
    if spec.transport == "http" and conn is not None:
        status = conn.last_http_status
        if status == 401:
            if spec.auth.mode in ("bearer", "headers"):
                field = "auth.token" if spec.auth.mode == "bearer" else "auth.headers"
                return "needs-auth", (f"the server answered 401 Unauthorized: it rejected the credentials "
                                      f"in `{field}`; update them in `{spec.source}`")
            return "needs-auth", f"the server answered 401 Unauthorized; run `monad mcp authorize {spec.name}`"
        if status is not None and status >= 400 and status != 404:
            return "failed", f"HTTP {status} from {url} while {phase}"
    for leaf in leaves:
        name = type(leaf).__name__
        if name in _CONNECT_ERRORS:
            # httpx2's own text ("All connection attempts failed") says not which: the socket's does.
            return "failed", f"cannot connect to {url}: {connect_failure(leaf, spec.url or '', timeout=spec.timeout)}"
        if name in _TRANSFER_ERRORS:
            return "failed", f"HTTP error talking to {url}: {leaf or name}"
    for leaf in leaves:
        if isinstance(leaf, MCPError) and leaf.error.code == CONNECTION_CLOSED and conn is not None:
            if spec.transport == "stdio":
                if not conn.stdout_lines:
                    # It never wrote a line: it died starting (an import error, a missing
                    # dependency), not while speaking MCP; its stderr says why.
                    return "failed", (f"server process {exit_text(conn)} before answering (it wrote nothing to "
                                      f"its stdout){npx_cache_hint(spec, stderr)}{stderr_hint(stderr)}")
                # What it printed instead of answering (a usage text, a banner) often names the
                # mistake: a command that is not an MCP server, or a missing argument.
                return "failed", (f"server process {exit_text(conn)} while {phase}{stray_hint(conn)}"
                                  f"{stderr_hint(stderr)}")
            return "failed", f"the server closed the connection while {phase}"
    first = leaves[0] if leaves else exc
    if spec.transport == "http" and conn and conn.last_http_status == 404:
        return "failed", f"HTTP 404 from {url}: is the URL's path right?"
    return "failed", f"{describe(first)} while {phase}{stderr_hint(stderr)}"
