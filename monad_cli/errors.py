"""One error family; each error carries the exit code the CLI leaves with.

Exit codes (docs/cli.md): 0 ok, 1 error, 2 usage or invalid input, 3 supervisor not
running (autostart off), 4 timed out waiting, 130 interrupted.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    ERROR = 1
    USAGE = 2
    NOT_RUNNING = 3
    TIMEOUT = 4
    INTERRUPTED = 130


class MonadError(Exception):
    """A failure with a one-line message for the person and an exit code."""

    exit_code: ExitCode = ExitCode.ERROR

    def __init__(self, message: str, *, exit_code: ExitCode | None = None) -> None:
        super().__init__(message)
        self.message = message
        if exit_code is not None:
            self.exit_code = exit_code


class InvalidInput(MonadError):
    """Bad input from the person: a flag, a name, a field in a file."""

    exit_code = ExitCode.USAGE


class ConfigError(InvalidInput):
    """A definition that does not validate; names file, server and field."""

    def __init__(self, message: str, *, file: str | None = None, server: str | None = None,
                 field: str | None = None) -> None:
        super().__init__(message)
        self.file = file
        self.server = server
        self.field = field


class NotFound(MonadError):
    exit_code = ExitCode.ERROR


class SupervisorNotRunning(MonadError):
    exit_code = ExitCode.NOT_RUNNING


class LockTimeout(MonadError):
    exit_code = ExitCode.ERROR


class ApiError(MonadError):
    """An error answer of the control API: `code` is its stable error code."""

    def __init__(self, message: str, *, code: str, status: int) -> None:
        super().__init__(message, exit_code=ExitCode.USAGE if status in (400, 409, 422) else ExitCode.ERROR)
        self.code = code
        self.status = status
