"""Task states and every allowed transition (stdlib only; the CLI may import it).

monad's own two states come before the MCP task statuses of the tasks extension
(SEP-2663 "Task Status": `working`, `input_required`, `completed`, `failed`, `cancelled`):

    queued          written, nothing sent yet (every `max_active` slot busy, or not reached)
    submitting      `tools/call` is on the wire, not yet answered with a task
    working         the server is working on the task
    input_required  the server waits for answers to its `inputRequests` (`tasks/update`)
    completed       ended with a `CallToolResult` (maybe a tool error, `isError`)
    failed          ended with a JSON-RPC error, or monad gave up on it (forgotten, past its
                    `ttlMs`, the call itself failed)
    cancelled       ended by `tasks/cancel`, or a queued call never sent

The terminal states are sticky: a late notification or poll never overwrites the first ending.
"""

from __future__ import annotations

from enum import StrEnum


class TaskState(StrEnum):
    QUEUED = "queued"
    SUBMITTING = "submitting"
    WORKING = "working"
    INPUT_REQUIRED = "input_required"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


T = TaskState
# The statuses a server may report (tasks/get, notifications/tasks, CreateTaskResult).
MCP_STATUSES = frozenset({T.WORKING, T.INPUT_REQUIRED, T.COMPLETED, T.FAILED, T.CANCELLED})
# In flight: each holds one of a server's `max_active` slots.
ACTIVE = frozenset({T.SUBMITTING, T.WORKING, T.INPUT_REQUIRED})
# Not finished: resumed after a reconnect or a supervisor restart.
OPEN = frozenset({T.QUEUED}) | ACTIVE
TERMINAL = frozenset({T.COMPLETED, T.FAILED, T.CANCELLED})
# A row is created `queued` (a call monad starts) or `submitting` (a task a server returned
# to a plain `Client.call_tool`: the call is out, its answer not yet folded in).
INITIAL = frozenset({T.QUEUED, T.SUBMITTING})

TRANSITIONS: dict[TaskState, frozenset[TaskState]] = {
    # Sent when a slot frees up; cancelled before it was ever sent.
    T.QUEUED: frozenset({T.SUBMITTING, T.CANCELLED}),
    # The answer to tools/call: a task in any status, a plain result (completed), an error
    # (failed); or back to queued when the connection dropped before the answer (resent with
    # the same invocation id).
    T.SUBMITTING: frozenset({T.QUEUED} | MCP_STATUSES),
    # Status updates repeat the state (a new statusMessage, new input requests).
    T.WORKING: MCP_STATUSES,
    T.INPUT_REQUIRED: MCP_STATUSES,
    T.COMPLETED: frozenset(),
    T.FAILED: frozenset(),
    T.CANCELLED: frozenset(),
}
assert set(TRANSITIONS) == set(TaskState)
assert set(TaskState) == OPEN | TERMINAL and not OPEN & TERMINAL


class IllegalTransition(RuntimeError):
    """A row was about to change state along a transition `TRANSITIONS` does not allow."""


def parse_state(value: object) -> TaskState | None:
    """The state `value` names, or None for anything else (a server's unknown status)."""
    if not isinstance(value, str):
        return None
    try:
        return TaskState(value)
    except ValueError:
        return None


def can_transition(old: str, new: str) -> bool:
    """Whether a row in state `old` may move to `new` (both state names)."""
    o, n = parse_state(old), parse_state(new)
    return o is not None and n is not None and n in TRANSITIONS[o]


def check_transition(old: str, new: str) -> None:
    """Raise `IllegalTransition` unless `old` → `new` is allowed."""
    if not can_transition(old, new):
        raise IllegalTransition(f"task state {old} -> {new} is not an allowed transition")
