"""A server's status row, as the control API and `monad mcp status` show it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from monad_cli.core.states import State

if TYPE_CHECKING:
    from monad_cli.daemon.sessions.actor import ServerActor


def status_row(actor: ServerActor, *, detail: bool = False) -> dict[str, Any]:
    """`{name, transport, state, reason, since, tools, protocolVersion, source, enabled,
    required, pid, configError, attempt, lastAttemptReason}` (`pid` also while it connects;
    `attempt` and why the last one failed while connecting or backing off; `start`
    (`always` | `on-demand`), `listedAt` (epoch s: when its tools were last listed) and, while
    `idle`, `stoppedAt` (epoch s; `tools` then counts the cached list); with `detail`,
    also `toolNames`, `stderrTail` (scrubbed), `serverInfo`, `strayStdoutLines`,
    `repairedStdoutLines`, `oversizeMessages` and `httpTransport` (`streamable-http` or
    `sse`, for an http server)."""
    spec, conn = actor.spec, actor.conn
    live = actor.live or actor.listed  # an idle server's tools are its cached lists
    retrying = actor.state in (State.CONNECTING, State.BACKOFF)
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
        # While it connects too: a server that hangs at start is a live process worth naming.
        "pid": conn.pid if conn and conn.returncode is None and (actor.live or actor.state == State.CONNECTING)
        else None,
        "configError": actor.config_error if spec else None,
        "attempt": actor.attempt if retrying else None,
        "lastAttemptReason": actor.last_failure if retrying else None,
        "start": "on-demand" if actor.on_demand() else "always" if spec else None,
        "listedAt": actor.listed_at if live else None,
        "stoppedAt": actor.since if actor.state == State.IDLE else None,
    }
    if detail:
        row["toolNames"] = [t.name for t in actor.tools] if live else []
        row["stderrTail"] = [actor.ctx.scrub(line) for line in actor.sink.lines()]
        row["serverInfo"] = actor.server_info if actor.live else None
        row["strayStdoutLines"] = conn.stray_lines if conn else 0
        row["repairedStdoutLines"] = conn.repaired_lines if conn else 0
        row["oversizeMessages"] = conn.oversize_messages if conn else 0
        row["httpTransport"] = conn.transport if conn and spec and spec.transport == "http" else None
    return row
