"""One error family: every kind carries a stable `code`, an HTTP status and an exit code.

As supervisord's `Faults`, the kind is the contract: the control API answers a kind as
`{"error": {"code", "message"}}` with its `http_status` (`daemon/http.py`), the CLI and
the gateway rebuild the same kind from that answer (`core/envelope.py`), and the CLI
leaves with its `exit_code`. Code paths branch on the kind, never on message text.

Exit codes (docs/cli.md): 0 ok, 1 error, 2 usage or invalid input, 3 supervisor not
running (autostart off), 4 timed out waiting, 130 interrupted. The table of codes is in
docs/supervisor.md "Control API". Stdlib only: the CLI's light path imports this.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any


class ExitCode(IntEnum):
    OK = 0
    ERROR = 1
    USAGE = 2
    NOT_RUNNING = 3
    TIMEOUT = 4
    INTERRUPTED = 130


class MonadError(Exception):
    """A failure with a one-line message for the person (what failed, where, what to do).

    Raised as it is, it is the kind with no more specific meaning: `internal`, HTTP 500,
    exit 1. Subclasses set `code`, `http_status` and `exit_code` as class attributes; a
    kind's `code` never changes once released (clients branch on it).
    """

    code: str = "internal"
    http_status: int = 500
    exit_code: ExitCode = ExitCode.ERROR

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidInput(MonadError):
    """Bad input from the person: a flag, a name, a request body, a tool's arguments."""

    code = "invalid_input"
    http_status = 400
    exit_code = ExitCode.USAGE


class ConfigError(InvalidInput):
    """A definition that does not validate; names file, server and field. `errors`: every
    field problem found in the same definition (`[(field, message)]`, this one first), for a
    form that shows each next to its field at once; empty when only this one is known."""

    code = "invalid_definition"
    http_status = 422

    def __init__(self, message: str, *, file: str | None = None, server: str | None = None,
                 field: str | None = None, errors: list[tuple[str, str]] | None = None) -> None:
        super().__init__(message)
        self.file = file
        self.server = server
        self.field = field
        self.errors = list(errors or [])


class NotFound(MonadError):
    """No such server, tool, task or pending approval."""

    code = "not_found"
    http_status = 404


class Conflict(MonadError):
    """The request conflicts with the current state: the name is already defined, the URL
    already used, a supervisor already running for this MONAD_HOME (RFC 9110 §15.5.10)."""

    code = "conflict"
    http_status = 409
    exit_code = ExitCode.USAGE


class NotConnected(Conflict):
    """The server a call or task request names is not connected, or could not be started (its
    state says why). Exit 1: nothing was wrong with what the person typed."""

    code = "not_connected"
    exit_code = ExitCode.ERROR


class QueueFull(MonadError):
    """A server already has `max_active` tasks in flight and `max_queued` waiting
    (docs/tasks.md); HTTP 429 as RFC 6585 §4 "Too Many Requests"."""

    code = "queue_full"
    http_status = 429


class CallRefused(MonadError):
    """The approval gate refused a tool call: the person denied it (`denied`). The
    subclasses are the other refusals; every refusal is 403."""

    code = "denied"
    http_status = 403


class ApprovalTimeout(CallRefused):
    """Nobody approved the call within the approval timeout."""

    code = "approval_timeout"
    exit_code = ExitCode.TIMEOUT


class NotRegistered(CallRefused):
    """The server's tools are not registered (its tool set does not match its pin)."""

    code = "not_registered"


class ToolHidden(CallRefused):
    """A tool filter hides the tool (docs/filtering.md "Tool filters"); the message names the rule."""

    code = "tool_hidden"


class AuthorizationRequired(CallRefused):
    """A call to a server that waits for authorization (`needs-auth`) could not start it:
    its caller cannot be shown the authorization URL, declined it, or the flow could not
    start. The message says to run `monad mcp authorize NAME` (docs/gateway.md)."""

    code = "authorization_required"


class AuthorizationTimeout(AuthorizationRequired):
    """The tokens of an authorization started by a call did not arrive within the call's
    approval timeout."""

    code = "authorization_timeout"
    exit_code = ExitCode.TIMEOUT


class ToolCallFailed(MonadError):
    """The upstream server failed a request (an MCP error, a timeout, a broken answer).

    `stderr`: the last lines a stdio server wrote to stderr during the call (scrubbed; the
    error envelope carries them as a list, the CLI shows them below the error, an agent never
    gets them). `rpc_error`: the server's JSON-RPC error (`{"code", "message", "data"?}`)
    when it is the caller's to get as it is: a missing client capability (-32021, MCP
    2026-07-28), about the capabilities the caller declared (the gateway relays it as a
    protocol error); else None."""

    code = "tool_call_failed"
    http_status = 502
    rpc_error: dict[str, Any] | None = None

    def __init__(self, message: str, *, stderr: list[str] | None = None) -> None:
        super().__init__(message)
        self.stderr = list(stderr or [])


class AuthError(MonadError):
    """Authorization with a server's authorization server failed or was refused; the
    message names the server and says what to do. Messages never carry token values,
    codes or verifiers."""

    code = "auth_failed"
    http_status = 502


class LockTimeout(MonadError):
    """Another monad process holds the config lock longer than we wait."""

    code = "locked"
    http_status = 503


class DiskFull(MonadError):
    """A file could not be written: its filesystem is full (ENOSPC) or over quota (EDQUOT).
    Nothing was written; HTTP 507 "Insufficient Storage" (RFC 4918 §11.5)."""

    code = "disk_full"
    http_status = 507


class Unavailable(MonadError):
    """A part of the supervisor the request needs is not running (yet), e.g. the task
    manager before the journal is open, or a required server that failed at start."""

    code = "unavailable"
    http_status = 503


class UnsafeHome(MonadError):
    """MONAD_HOME (or `atoms/`, `run/`, `env` in it) belongs to another account or is writable
    by group or others: whoever can write there decides what runs as this user (OpenSSH's
    `StrictModes` refuses the same). Never in an API answer: the CLI and the supervisor refuse
    before anything listens (the supervisor says it on its ready pipe)."""

    code = "unsafe_home"


class SupervisorNotRunning(MonadError):
    """Nothing listens on the control socket (and autostart is off or failed)."""

    code = "not_running"
    http_status = 503
    exit_code = ExitCode.NOT_RUNNING


class ConnectionClosed(MonadError):
    """The supervisor closed the control connection before answering (it is stopping)."""

    code = "connection_closed"
    http_status = 502


KINDS: tuple[type[MonadError], ...] = (
    MonadError, InvalidInput, ConfigError, NotFound, Conflict, NotConnected, QueueFull, CallRefused,
    ApprovalTimeout, NotRegistered, ToolHidden, ToolCallFailed, AuthError, LockTimeout, DiskFull, Unavailable,
    SupervisorNotRunning, ConnectionClosed, AuthorizationRequired, AuthorizationTimeout, UnsafeHome,
)
"""Every kind, each with its own `code` (a test checks they are unique)."""

BY_CODE: dict[str, type[MonadError]] = {kind.code: kind for kind in KINDS}


def kind_of(code: str) -> type[MonadError] | None:
    """The kind whose stable `code` is `code`, or None for a code this version does not know."""
    return BY_CODE.get(code)
