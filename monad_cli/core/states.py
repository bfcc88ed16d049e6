"""Server states and every allowed transition (stdlib only; the CLI may import it).

    disabled    enabled = false in the definition
    connecting  spawning / HTTP connect + version negotiation + first complete tools/list
    connected   session open, tools listed
    degraded    session open but something failed (tools/list, tool pin)
    needs-auth  the remote wants (new) authorization: `monad mcp authorize NAME`
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
    BACKOFF = "backoff"
    FAILED = "failed"
    STOPPED = "stopped"
    FILTERED = "filtered"

    def __str__(self) -> str:
        return self.value


S = State
_ANY = set(State)
TRANSITIONS: dict[State, set[State]] = {
    S.STOPPED: {S.CONNECTING, S.DISABLED, S.FAILED, S.FILTERED, S.STOPPED},
    S.DISABLED: {S.CONNECTING, S.STOPPED, S.FAILED, S.FILTERED, S.DISABLED},
    S.FILTERED: {S.CONNECTING, S.STOPPED, S.DISABLED, S.FAILED, S.FILTERED},
    S.CONNECTING: {S.CONNECTED, S.DEGRADED, S.NEEDS_AUTH, S.BACKOFF, S.FAILED, S.STOPPED, S.DISABLED,
                   S.FILTERED, S.CONNECTING},
    S.CONNECTED: {S.DEGRADED, S.BACKOFF, S.FAILED, S.NEEDS_AUTH, S.STOPPED, S.DISABLED, S.CONNECTING,
                  S.FILTERED, S.CONNECTED},
    S.DEGRADED: {S.CONNECTED, S.BACKOFF, S.FAILED, S.NEEDS_AUTH, S.STOPPED, S.DISABLED, S.CONNECTING,
                 S.FILTERED, S.DEGRADED},
    S.NEEDS_AUTH: {S.CONNECTING, S.STOPPED, S.DISABLED, S.FAILED, S.FILTERED, S.NEEDS_AUTH},
    S.BACKOFF: {S.CONNECTING, S.FAILED, S.STOPPED, S.DISABLED, S.FILTERED, S.BACKOFF},
    S.FAILED: {S.CONNECTING, S.STOPPED, S.DISABLED, S.FILTERED, S.FAILED},
}
assert set(TRANSITIONS) == _ANY

LIVE = {S.CONNECTED, S.DEGRADED}


class IllegalTransition(RuntimeError):
    pass


def check_transition(old: State, new: State) -> None:
    if new not in TRANSITIONS[old]:
        raise IllegalTransition(f"{old} -> {new} is not an allowed transition")
