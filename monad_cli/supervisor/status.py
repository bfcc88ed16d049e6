"""A server's status row, as the control API and `monad mcp status` show it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from monad_cli.supervisor.actor import ServerActor


def status_row(actor: ServerActor, *, detail: bool = False) -> dict[str, Any]:
    """`{name, transport, state, reason, since, tools, protocolVersion, source, enabled,
    required, pid, configError}`; with `detail`, also `toolNames`, `stderrTail` (scrubbed),
    `serverInfo`, `strayStdoutLines`, `repairedStdoutLines`, `oversizeMessages` and
    `httpTransport` (`streamable-http` or `sse`, for an http server)."""
    spec, conn, live = actor.spec, actor.conn, actor.live
    row: dict[str, Any] = {
        "name": actor.name,
        "transport": spec.transport if spec else None,
        "state": str(actor.state),
        "reason": actor.reason,
        "since": actor.since,
        "tools": len(actor.tools) if live else None,
        "protocolVersion": actor.protocol_version if live else None,
        "source": actor.source,
        "enabled": spec.enabled if spec else None,
        "required": spec.required if spec else None,
        "pid": conn.pid if conn and live else None,
        "configError": actor.config_error if spec else None,
    }
    if detail:
        row["toolNames"] = [t.name for t in actor.tools] if live else []
        row["stderrTail"] = [actor.ctx.scrub(line) for line in actor.sink.lines()]
        row["serverInfo"] = actor.server_info if live else None
        row["strayStdoutLines"] = conn.stray_lines if conn else 0
        row["repairedStdoutLines"] = conn.repaired_lines if conn else 0
        row["oversizeMessages"] = conn.oversize_messages if conn else 0
        row["httpTransport"] = conn.transport if conn and spec and spec.transport == "http" else None
    return row
