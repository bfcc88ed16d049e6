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


S = State
# Every move an actor makes (daemon/sessions/actor.py), and no other; a move to the same state
# is listed where the reason can change (set_state ignores the same state with the same reason).
# `_loop`'s checks, or the end; `idle` only for an on-demand server whose lists are cached.
_PARKED = {S.CONNECTING, S.DISABLED, S.FAILED, S.FILTERED, S.IDLE, S.STOPPED}
TRANSITIONS: dict[State, set[State]] = {
    S.STOPPED: _PARKED,  # the first check of `_loop`; `run` ending before it started
    S.DISABLED: _PARKED - {S.DISABLED},  # woken: enabled again, edited, filtered, removed
    S.FILTERED: set(_PARKED),  # woken; another filter rule is another reason
    S.FAILED: set(_PARKED),  # woken; another config error is another reason
    S.NEEDS_AUTH: _PARKED - {S.NEEDS_AUTH},  # woken by new tokens or an edit
    S.BACKOFF: _PARKED - {S.BACKOFF},  # the delay is over, or woken by an edit
    # idle -> connecting: a call, a Task to resume, or `monad mcp reconnect`; never `status`.
    S.IDLE: set(_PARKED),
    # A connect: it ends connected (or degraded), refused (needs-auth, failed), failed (backoff,
    # or failed after too many), cut by an edit (connecting again, disabled, failed, filtered),
    # or by the end; a new attempt's reason names its number.
    # connecting -> idle: an on-demand start that failed (the call fails; the next one tries again).
    S.CONNECTING: {S.CONNECTED, S.DEGRADED, S.NEEDS_AUTH, S.BACKOFF, S.FAILED, S.STOPPED, S.DISABLED,
                   S.FILTERED, S.IDLE, S.CONNECTING},
    # A session: a tool list or storm problem (degraded), an edit or reconnect (connecting,
    # disabled, failed), its end (backoff, failed, needs-auth), the supervisor's end.
    # connected -> idle: an on-demand server stopped after `idleStop`, or it exited between calls.
    S.CONNECTED: {S.DEGRADED, S.CONNECTING, S.DISABLED, S.FAILED, S.NEEDS_AUTH, S.BACKOFF, S.IDLE, S.STOPPED},
    S.DEGRADED: {S.CONNECTED, S.DEGRADED, S.CONNECTING, S.DISABLED, S.FAILED, S.NEEDS_AUTH, S.BACKOFF,
                 S.IDLE, S.STOPPED},
}
assert set(TRANSITIONS) == set(State)

LIVE = {S.CONNECTED, S.DEGRADED}


class IllegalTransition(RuntimeError):
    pass


def check_transition(old: State, new: State) -> None:
    if new not in TRANSITIONS[old]:
        raise IllegalTransition(f"{old} -> {new} is not an allowed transition")
