"""The journal's tables (SQLModel). `journal/migrations.py` creates them, in its order.

- `migrations`: the named migrations applied, each once;
- `events`: state changes, config errors, supervisor and task events;
- `tool_calls`: one row per call, written before the call (outcome `running`) and updated
  after it, so a crash between the two leaves a visible gap; arguments only as a digest;
- `approvals`: "always" approvals, keyed to (server, definition hash, tool), so an edited
  command asks again;
- `tool_sets`: every tool set a server advertised, by hash, so a pin mismatch can say what
  changed against the pinned set;
- `tasks`: one row per tool call started through the task manager (see `TaskRow`);
- `server_lists`: each server's last lists (tools) with their hash and the definition they came
  from, so an on-demand server that is stopped stays listed (docs/supervisor.md "On demand");
- `vetted_tool_sets`: tool sets a person accepted for a server definition (its pin
  matched them), so a supervisor sharing the journal accepts the same set (docs/fleet.md).

Shipped rows (`events`, `tool_calls`, `approvals`, `vetted_tool_sets`) end with the origin
columns (docs/fleet.md): `uid` (the row's identity across journals: the idempotency key of
every upsert), `host` and `home` (the supervisor that wrote it) and `rev`: in a fleet, set on
every write to one more than the table's highest, inside the write's transaction, so `rev`
order is commit order and the link ships "every row with `rev` above its cursor"; 0 for
rows that are never shipped (written without a fleet, or copied from the shared journal).

A released table is never edited in place: a change is a new named migration.
"""

from __future__ import annotations

import json
from typing import Any

from sqlmodel import Field, SQLModel

# The origin columns every shipped table ends with (added by migration 0200 to journals
# made before it; `migrations.add_origin_columns`).
ORIGIN_COLUMNS = ("uid", "host", "home", "rev")
SHIPPED_TABLES = ("events", "tool_calls", "approvals", "vetted_tool_sets")


class Migration(SQLModel, table=True):
    __tablename__ = "migrations"
    name: str = Field(primary_key=True)
    applied_at: float


class Event(SQLModel, table=True):
    """One journal row: a state change, a config error, a supervisor event."""

    __tablename__ = "events"
    id: int | None = Field(default=None, primary_key=True)
    ts: float = Field(index=True)
    server: str | None = Field(default=None, index=True)
    kind: str  # state | config-error | config | daemon | task
    state: str | None = None
    reason: str | None = None
    detail: str | None = None  # JSON
    uid: str | None = None
    host: str | None = None
    home: str | None = None
    rev: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "ts": self.ts, "server": self.server, "kind": self.kind,
                "state": self.state, "reason": self.reason,
                "detail": json.loads(self.detail) if self.detail else None, "host": self.host,
                "home": self.home}


class ToolCall(SQLModel, table=True):
    __tablename__ = "tool_calls"
    id: int | None = Field(default=None, primary_key=True)
    ts: float = Field(index=True)
    server: str = Field(index=True)
    tool: str
    exposed: str
    args_digest: str
    via: str  # cli | gateway | api
    decision: str | None = None  # approved | denied | timeout | refused
    decided_by: str | None = None
    outcome: str = "running"
    duration_ms: float | None = None
    error: str | None = None
    uid: str | None = None
    host: str | None = None
    home: str | None = None
    rev: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "ts": self.ts, "server": self.server, "tool": self.tool,
                "exposed": self.exposed, "argsDigest": self.args_digest, "via": self.via,
                "decision": self.decision, "decidedBy": self.decided_by, "outcome": self.outcome,
                "durationMs": self.duration_ms, "error": self.error, "host": self.host, "home": self.home}


class AlwaysApproval(SQLModel, table=True):
    __tablename__ = "approvals"
    id: int | None = Field(default=None, primary_key=True)
    server: str = Field(index=True)
    definition_hash: str
    tool: str
    created: float
    decided_by: str
    uid: str | None = None
    host: str | None = None
    home: str | None = None
    rev: int = 0
    # The tool's own definition it approved (`sha256:<hex>`, gate.tool_definition_hash); NULL
    # in a row written before tools were hashed, bound by the gate on first use.
    tool_hash: str | None = None


class ToolSet(SQLModel, table=True):
    __tablename__ = "tool_sets"
    server: str = Field(primary_key=True)
    hash: str = Field(primary_key=True)
    tools: str  # JSON, the canonical pinned view
    seen: float


class ServerLists(SQLModel, table=True):
    """The last lists server `server` answered while defined as `definition_hash`: `tools`
    (JSON, every tool in wire shape), their `tool_hash` (`sha256:<hex>`, as a pin takes it),
    `listed_at` (epoch seconds); `prompts`, `resources`, `templates` (JSON, in wire shape;
    NULL: not learned from this definition yet). One row per server, replaced on every
    (re)listing."""

    __tablename__ = "server_lists"
    server: str = Field(primary_key=True)
    definition_hash: str
    tool_hash: str
    tools: str
    listed_at: float
    prompts: str | None = None
    resources: str | None = None
    templates: str | None = None


class VettedToolSet(SQLModel, table=True):
    """A tool set (`hash`, `sha256:<hex>`) a person accepted for server `server` defined as
    `definition_hash`: recorded when its `trust.pinnedToolHash` matched what it advertised."""

    __tablename__ = "vetted_tool_sets"
    id: int | None = Field(default=None, primary_key=True)
    server: str = Field(index=True)
    definition_hash: str
    hash: str
    created: float
    decided_by: str
    uid: str | None = None
    host: str | None = None
    home: str | None = None
    rev: int = 0


class TaskRow(SQLModel, table=True):
    """One tool call started through the task manager (SEP-2663 tasks).

    The row is written before anything is sent, so a supervisor killed at any point leaves
    a row that says what to do next: `queued` → submit, `submitting` → resend `tools/call`
    with the same invocation id (retry-safe servers deduplicate on it), `working` /
    `input_required` → observe again, `cancel_requested` → finish the `tasks/cancel`.
    `state` is a `monad_cli.core.task_states.TaskState` name. Times are epoch seconds; JSON
    columns hold wire JSON (camelCase), scrubbed of known secrets like every journal value.
    """

    __tablename__ = "tasks"
    id: str = Field(primary_key=True)  # monad's id; also the invocation id sent in _meta
    server: str = Field(index=True)
    tool: str
    arguments: str | None = None  # JSON
    correlation: str | None = None  # JSON: who started it and why (caller-supplied)
    task_id: str | None = Field(default=None, index=True)  # the server's taskId
    state: str = Field(index=True)
    status_message: str | None = None
    created_at: float = Field(index=True)
    updated_at: float
    terminal_at: float | None = Field(default=None, index=True)
    server_created_at: str | None = None
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None
    result: str | None = None  # JSON CallToolResult
    error: str | None = None  # JSON error object
    input_requests: str | None = None  # JSON: outstanding inputRequests
    answered_keys: str | None = None  # JSON list: keys already answered (dedupe across polls)
    delivery_pending: bool = Field(default=False, index=True)
    pending_kind: str | None = None  # "result" | "input"
    deliveries: int = 0
    delivered_at: float | None = None
    cancel_requested: bool = False
    recoveries: int = 0
    retries: int = 0
    submitted: bool = False  # tools/call written at least once
    adopted: bool = False  # a task returned to a plain call_tool (no arguments known)
