"""A server's row in `monad mcp status` (`status_row`), read from its `ServerActor`.

Everything the row says is the actor's own state, read here without changing it: `monad mcp
status --json` reads every server's row on each call, so it stays a handful of attribute
reads (no I/O, nothing awaited).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from monad_cli.core.messages import one_line
from monad_cli.core.states import State

if TYPE_CHECKING:
    from monad_cli.daemon.sessions.actor import ServerActor


def status_row(actor: ServerActor, *, detail: bool = False) -> dict[str, Any]:
    """The server's row in `monad mcp status` (docs/supervisor.md "Routes"):
    `{name, transport, state, reason, since, tools, protocolVersion, source, enabled,
    required, timeout, pid, configError, attempt, lastAttemptReason, nextAttemptAt, start,
    listedAt, stoppedAt, variables}`: `timeout` is its connect timeout (s), how long a call
    waits for it while it restarts; `pid` also while connecting; `attempt` and
    `lastAttemptReason` while connecting or backing off, `nextAttemptAt` (epoch s) while
    backing off; `start` `always` | `on-demand`; `listedAt` (epoch s) of its tools; while
    `idle`, `stoppedAt` (epoch s; `tools` counts the cached list); `variables`: each `$VAR`
    it references, `{name, source}` (`env-file` | `environment`), never a value. With
    `detail`, also `toolNames`, `stderrTail` (scrubbed), `probeNoiseLines` (an older SDK's
    warning lines about the probe, left out of the tail), `serverInfo`, `strayStdoutLines`,
    `repairedStdoutLines`, `oversizeMessages`, `httpTransport` (`streamable-http` | `sse`)
    and `leftOut` (one reason per item of its lists not taken: listings.py)."""
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
        "timeout": spec.timeout if spec else None,
        # While it connects too: a server that hangs at start is a live process worth naming.
        "pid": conn.pid if conn and conn.returncode is None and (actor.live or actor.state == State.CONNECTING)
        else None,
        "configError": one_line(actor.config_error) if spec and actor.config_error else None,
        "attempt": actor.attempt if retrying else None,
        "lastAttemptReason": one_line(actor.last_failure) if retrying and actor.last_failure else None,
        "nextAttemptAt": actor.next_attempt_at if actor.state == State.BACKOFF else None,
        "start": "on-demand" if actor.on_demand() else "always" if spec else None,
        "listedAt": actor.lists.listed_at if live else None,
        "stoppedAt": actor.since if actor.state == State.IDLE else None,
        "variables": [{"name": n, "source": src} for n, src in spec.variables.items()] if spec else [],
    }
    if detail:
        row["toolNames"] = [t.name for t in actor.tools] if live else []
        row["stderrTail"] = actor.sink.lines()  # scrubbed as they were read (StderrSink)
        row["probeNoiseLines"] = actor.sink.probe_noise
        row["serverInfo"] = actor.server_info if actor.live else None
        row["strayStdoutLines"] = conn.stray_lines if conn else 0
        row["repairedStdoutLines"] = conn.repaired_lines if conn else 0
        row["oversizeMessages"] = conn.oversize_messages if conn else 0
        row["httpTransport"] = conn.transport if conn and spec and spec.transport == "http" else None
        row["leftOut"] = left_out(actor) if live else []
    return row


def left_out(actor: ServerActor) -> list[str]:
    """Why items of its lists were not taken: its tools/list's, then those of the latest
    prompts/list, resources/list and resources/templates/list (listed when an agent
    asks: the gateway's catalog), one reason per item, naming it."""
    exchange = actor.conn.exchange if actor.conn is not None else None
    listed = exchange.listed_out if exchange is not None and actor.live else {}
    return [*actor.left_out, *(reason for method in sorted(listed) for reason in listed[method])]
