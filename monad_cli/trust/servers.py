"""What the tool service uses of its surroundings, as protocols (no SDK import at run time):
a server's live session (`ToolServer`, which a supervisor actor is), the task manager's
`StartTask`, and a call's progress callback (`ProgressFn`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from mcp_types import CallToolResult, Tool

    from monad_cli.config.schema import ServerSpec


class ProgressFn(Protocol):
    """Awaited with each notifications/progress of a call (MCP spec, basic/utilities/progress)."""

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None: ...


class ToolServer(Protocol):
    """What the tool service uses of one server's session (a supervisor actor is one).

    `live`: the session is up and `call_tool` can be used; `tools`: its last tools/list;
    `call_tool(tool, arguments, progress=...)`: tools/call with the server's own tool name
    (`progress` awaited per progress notification), raising `MonadError` when not connected
    and `mcp.MCPError` when the server fails the request.
    """

    @property
    def name(self) -> str: ...
    @property
    def spec(self) -> ServerSpec | None: ...
    @property
    def live(self) -> bool: ...
    @property
    def tools(self) -> Sequence[Tool]: ...
    async def call_tool(self, tool: str, arguments: dict[str, Any] | None, *,
                        progress: ProgressFn | None = None) -> CallToolResult: ...


class StartTask(Protocol):
    """Hand an approved call to the task manager (`TaskManager.start`): the server's own
    tool name, the arguments and what to journal beside the task; returns the task's row
    (API shape) once it is submitted or queued. Raises `MonadError` (not connected, queue
    full)."""

    async def __call__(self, server: str, tool: str, arguments: dict[str, Any] | None, *,
                       correlation: dict[str, Any] | None = None) -> dict[str, Any]: ...


__all__ = ["ProgressFn", "StartTask", "ToolServer"]
