"""The capabilities a gateway call carries for its agent (`AgentQuestions.client_capabilities`):
what the agent declared of those monad relays questions under, in wire shape."""

from __future__ import annotations

from types import SimpleNamespace

from monad_cli.daemon.gateway.questions import AgentQuestions


def _call_on(lane: object) -> AgentQuestions:
    return AgentQuestions(None, None, protocol_version="2025-11-25", lane=lane)


def test_a_connections_declared_capabilities_reach_each_of_its_calls_as_declared() -> None:
    declared = {"elicitation": {"form": {}}, "roots": {"listChanged": True}, "experimental": {"x": {}}}
    lane = SimpleNamespace(capabilities=declared)
    first = _call_on(lane).client_capabilities()
    assert first == {"elicitation": {"form": {}}, "roots": {"listChanged": True}}
    first["sampling"] = {}  # one call's dict is its own
    assert _call_on(lane).client_capabilities() == {"elicitation": {"form": {}}, "roots": {"listChanged": True}}
    # Another connection (another declaration) gets its own.
    other = SimpleNamespace(capabilities={"sampling": {}})
    assert _call_on(other).client_capabilities() == {"sampling": {}}
    assert _call_on(SimpleNamespace(capabilities=None)).client_capabilities() == {}
    # A 2026-07-28 request's envelope capabilities win over the connection's.
    envelope = AgentQuestions(None, None, protocol_version="2026-07-28", lane=lane, capabilities={"roots": {}})
    assert envelope.client_capabilities() == {"roots": {}}
