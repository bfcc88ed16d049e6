"""What the tool service is handed: the server sessions it calls through, the task manager's
entry points and a call's progress callback. Protocols only (no SDK import at run time)."""

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
    """A request failed because monad ended its server's session on purpose under it
    (removed, reconnected, disabled, redefined): `happened` and `todo` say so in words an
    agent can act on. Whether the server acted on the request is unknown."""

    def __init__(self, server: str, happened: str, todo: str) -> None:
        super().__init__(f"{happened} while the request ran; {todo}")
        self.server, self.happened, self.todo = server, happened, todo


class ProgressFn(Protocol):
    """Awaited with each notifications/progress of a call (MCP spec, basic/utilities/progress)."""

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None: ...


class ToolServer(Protocol):
    """What the tool service uses of one server's session (a supervisor actor is one).

    `live`: the session is up; `restarting`: connecting or waiting to retry (a call waits
    up to its `timeout`); `listed`: no session, but its cached `tools` are listed (an idle
    on-demand server); `in_use()`: starts such a server and holds it up for the block
    (raises `MonadError`); `needs_authorization`: its OAuth grant lapsed, so a call may
    authorize it; `tools`: its last tools/list; `call_tool(call)`: tools/call of `call.tool`,
    raising `MonadError` when not connected, `SessionCut` when monad ended the session under
    the call, `mcp.MCPError` when the server fails the request.
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
    """Hand an approved call (the server's own tool name, its arguments, what to journal
    beside it) to the task manager; the task's row (API shape) once it is submitted or
    queued. Raises `MonadError` (not connected, queue full)."""

    async def __call__(self, server: str, tool: str, arguments: dict[str, Any] | None, *,
                       correlation: dict[str, Any] | None = None) -> dict[str, Any]: ...


# Run an approved call that must be a task and wait for its result (`TaskManager.run_call`,
# same arguments as `StartTask`); raises `MonadError`, or `mcp.MCPError` for a failed task.
RunTask = Callable[..., Awaitable["CallToolResult"]]

__all__ = ["ProgressFn", "RunTask", "StartTask", "ToolServer"]
