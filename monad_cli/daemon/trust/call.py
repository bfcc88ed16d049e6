"""`ToolCall`: one tools/call on its way through monad, as one explicit object.

Every entry builds one and hands it to `ToolService.call`; the path's steps write what they
learn on it, so a wrapper (telemetry) reads the whole call from it once the path returns.
Nothing about a call travels beside it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING, Any

from monad_cli.daemon.trust.inputs import Caller

if TYPE_CHECKING:
    from mcp_types import Tool

    from monad_cli.daemon.trust.gate import Pending
    from monad_cli.daemon.trust.servers import ProgressFn, ToolServer

MAX_REF = 64  # characters of a caller's own tag kept


@dataclass(eq=False)
class ToolCall(Caller):
    """One tools/call (MCP spec, server/tools "Calling Tools") and what it carries.

    Set by its caller: `exposed` (`server__tool`); `arguments` as sent (checked against
    the inputSchema); `via` (`cli`, `gateway`, `studio`, `app`, `api`, …, journaled);
    `approval`: `{"mode": "wait" | "yes" | "check" | "decided", "timeout": s, "approvalId",
    "grant"}` (docs/tools.md "Approvals"); `detach`: once approved, hand it to the task
    manager and return at once; `app_of`: the server whose MCP App calls (visibility.py);
    `include`/`exclude`: a gateway view's tool globs; `write_behind`: journal a successful
    outcome just after the answer (the gateway's hot path); `progress`: awaited per
    notifications/progress (None: none asked); `waiting`: awaited once with one line when
    the call starts waiting for a person (None: the caller shows its own); `ref`: the
    caller's own tag (≤ 64 characters) on its events and its Task's correlation; `inputs`,
    `capabilities`, `meta`: see `Caller`.

    Learned by the path (None until then): `server` and `tool`, `call_id` (the `tool_calls`
    row), `decision` and `decided_by`, `outcome` (as journaled: `ok`, `tool-error`,
    `error`, `timeout`, `refused`, `cancelled`, `interrupted`, `detached`), `started`
    (monotonic s of its intent row, its duration's start), `request_id` (the upstream
    JSON-RPC id when monad's own lane sent it).
    """

    exposed: str
    arguments: Any = None
    _: KW_ONLY
    via: str = "api"
    approval: dict[str, Any] = field(default_factory=dict)
    detach: bool = False
    app_of: str | None = None
    include: Sequence[str] = ()
    exclude: Sequence[str] = ()
    write_behind: bool = False
    progress: ProgressFn | None = None
    waiting: Callable[[str], Awaitable[None]] | None = None
    ref: str | None = None
    server: ToolServer | None = None
    tool: Tool | None = None
    call_id: int | None = None
    decision: str | None = None
    decided_by: str | None = None
    outcome: str | None = None
    started: float = 0.0
    request_id: Any = None

    def __post_init__(self) -> None:
        self.ref = self.ref[:MAX_REF] if isinstance(self.ref, str) and self.ref else None

    @property
    def server_name(self) -> str:
        """The server's name: the resolved one, else the exposed name's prefix."""
        return self.server.name if self.server is not None else self.exposed.partition("__")[0]

    @property
    def tool_name(self) -> str:
        """The tool's own name: the resolved one, else what follows the exposed name's prefix."""
        return self.tool.name if self.tool is not None else self.exposed.partition("__")[2] or self.exposed

    def correlation(self) -> dict[str, Any]:
        """`{callId, exposed, via, ref, decidedBy}`: what a Task started by this call keeps of it."""
        return {"callId": self.call_id, "exposed": self.exposed, "via": self.via, "ref": self.ref,
                "decidedBy": self.decided_by}


# One tools/call from its start to its answer (`ToolService`'s path), and what wraps it.
CallHandler = Callable[[ToolCall], Awaitable[dict[str, Any]]]
CallMiddleware = Callable[[CallHandler], CallHandler]
# The gate's wait for a person (`Pending`, at most `timeout` s): (approved, decision, who).
ApprovalWait = Callable[[ToolCall, "Pending", float], Awaitable[tuple[bool, str, str]]]
ApprovalMiddleware = Callable[[ApprovalWait], ApprovalWait]

__all__ = ["MAX_REF", "ApprovalMiddleware", "ApprovalWait", "CallHandler", "CallMiddleware", "ToolCall"]
