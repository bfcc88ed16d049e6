"""Server states and every allowed transition (stdlib only; the CLI may import it).

    disabled    enabled = false in the definition
    connecting  spawning / HTTP connect + version negotiation + first complete tools/list
    connected   session open, tools listed
    degraded    session open but something failed (tools/list, tool pin)
    needs-auth  the remote wants (new) authorization: `monad mcp authorize NAME`
    idle        an on-demand server, stopped: its last lists are served, the first call starts it
    backoff     the last attempt failed; a retry is scheduled
    failed      gave up (5 failures in 60 s) or the definition is invalid; `monad mcp reconnect`
    stopped     the supervisor is stopping, or the server was removed
    filtered    left out by an include/exclude filter
"""

from __future__ import annotations

from enum import StrEnum


class State(StrEnum):
    DISABLED = "disabled"
    CONNECTING = "connecting"
    CONNECTED = "connected"
    DEGRADED = "degraded"
    NEEDS_AUTH = "needs-auth"
    IDLE = "idle"
    BACKOFF = "backoff"
    FAILED = "failed"
    STOPPED = "stopped"
    FILTERED = "filtered"

    def __str__(self) -> str:
        return self.value


S = State
_ANY = set(State)
TRANSITIONS: dict[State, set[State]] = {
    # `idle` is reached from a settled state only when the server is on-demand and its lists are
    # cached: at start (stopped), when enabled or let through again, after a changed definition.
    S.STOPPED: {S.CONNECTING, S.DISABLED, S.FAILED, S.FILTERED, S.IDLE, S.STOPPED},
    S.DISABLED: {S.CONNECTING, S.STOPPED, S.FAILED, S.FILTERED, S.IDLE, S.DISABLED},
    S.FILTERED: {S.CONNECTING, S.STOPPED, S.DISABLED, S.FAILED, S.IDLE, S.FILTERED},
    # connecting -> idle: an on-demand start that failed (the call fails; the next one tries again).
    S.CONNECTING: {S.CONNECTED, S.DEGRADED, S.NEEDS_AUTH, S.BACKOFF, S.FAILED, S.STOPPED, S.DISABLED,
                   S.FILTERED, S.IDLE, S.CONNECTING},
    # connected -> idle: stopped after `idleStop` without use, or it exited between calls.
    S.CONNECTED: {S.DEGRADED, S.BACKOFF, S.FAILED, S.NEEDS_AUTH, S.STOPPED, S.DISABLED, S.CONNECTING,
                  S.FILTERED, S.IDLE, S.CONNECTED},
    S.DEGRADED: {S.CONNECTED, S.BACKOFF, S.FAILED, S.NEEDS_AUTH, S.STOPPED, S.DISABLED, S.CONNECTING,
                 S.FILTERED, S.IDLE, S.DEGRADED},
    S.NEEDS_AUTH: {S.CONNECTING, S.STOPPED, S.DISABLED, S.FAILED, S.FILTERED, S.IDLE, S.NEEDS_AUTH},
    # idle -> connecting: a call, a Task to resume, or `monad mcp reconnect`; never `status`.
    S.IDLE: {S.CONNECTING, S.STOPPED, S.DISABLED, S.FAILED, S.FILTERED, S.IDLE},
    S.BACKOFF: {S.CONNECTING, S.FAILED, S.STOPPED, S.DISABLED, S.FILTERED, S.IDLE, S.BACKOFF},
    S.FAILED: {S.CONNECTING, S.STOPPED, S.DISABLED, S.FILTERED, S.IDLE, S.FAILED},
}
assert set(TRANSITIONS) == _ANY

LIVE = {S.CONNECTED, S.DEGRADED}


class IllegalTransition(RuntimeError):
    pass


def check_transition(old: State, new: State) -> None:
    if new not in TRANSITIONS[old]:
        raise IllegalTransition(f"{old} -> {new} is not an allowed transition")
