"""What the tool service is handed (service.py): the server sessions it calls through, the
task manager's entry points and a call's progress callback. Protocols only (no SDK import at
run time), so a test double or an in-process caller can stand in for the supervisor's actors
and task manager."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Protocol

from monad_cli.core.errors import Unavailable

if TYPE_CHECKING:
    from mcp_types import CallToolResult, Tool

    from monad_cli.config.schema import ServerSpec
    from monad_cli.daemon.trust.call import ToolCall


class SessionCut(Unavailable):
    """A request failed because monad ended its server's session on purpose under it (the
    server was removed, reconnected, disabled or redefined): `happened` and `todo` say so in
    words an agent can act on (sessions/requests.py raises it, the tool service and the
    gateway's catalog word it for their callers). Whether the server acted on the request is
    unknown."""

    def __init__(self, server: str, happened: str, todo: str) -> None:
        super().__init__(f"{happened} while the request ran; {todo}")
        self.server, self.happened, self.todo = server, happened, todo


class ProgressFn(Protocol):
    """Awaited with each notifications/progress of a call (MCP spec, basic/utilities/progress)."""

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None: ...


class ToolServer(Protocol):
    """What the tool service uses of one server's session (a supervisor actor is one).

    `live`: the session is up and `call_tool` can be used; `restarting`: not live now, but
    connecting or waiting to retry (a call waits for it, up to its `timeout`); `listed`: no
    session, but its `tools` are listed all the same (an on-demand server, idle: its cached
    lists); `in_use()`: an async context manager that starts such a server, waits for it and
    holds it up for the block (raises `MonadError` with the start's reason);
    `needs_authorization`: its OAuth grant lapsed (`needs-auth`, or ending the session for
    it), so a call may authorize it (trust/authorization.py); `tools`: its last tools/list;
    `call_tool(call)`: tools/call of `call.tool` (its progress and questions go to the
    caller's, trust/call.py), raising `MonadError` when not connected, `SessionCut` when monad
    ended the session under the call, and `mcp.MCPError` when the server fails the request.
    """

    @property
    def name(self) -> str: ...
    @property
    def spec(self) -> ServerSpec | None: ...
    @property
    def live(self) -> bool: ...
    @property
    def restarting(self) -> bool: ...

    @property
    def listed(self) -> bool: ...
    @property
    def needs_authorization(self) -> bool: ...
    @property
    def tools(self) -> Sequence[Tool]: ...
    def in_use(self) -> AbstractAsyncContextManager[None]: ...
    async def call_tool(self, call: ToolCall) -> CallToolResult: ...


class StartTask(Protocol):
    """Hand an approved call to the task manager (`TaskManager.start`): the server's own
    tool name, the arguments and what to journal beside the task; returns the task's row
    (API shape) once it is submitted or queued. Raises `MonadError` (not connected, queue
    full)."""

    async def __call__(self, server: str, tool: str, arguments: dict[str, Any] | None, *,
                       correlation: dict[str, Any] | None = None) -> dict[str, Any]: ...


# Run an approved call that must be a task and wait for its result (`TaskManager.run_call`,
# same arguments as `StartTask`); raises `MonadError`, or `mcp.MCPError` for a failed task.
RunTask = Callable[..., Awaitable["CallToolResult"]]

__all__ = ["ProgressFn", "RunTask", "StartTask", "ToolServer"]
