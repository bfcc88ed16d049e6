"""What of an agent's `_meta` the gateway passes to the server (gateway/meta.py)."""

from __future__ import annotations

from typing import Any

import pytest

from monad_cli.daemon.gateway.meta import agent_meta


def test_the_agents_own_keys_pass_and_the_protocols_do_not() -> None:
    meta = {"tenant": "acme", "com.example/trace": "t-1", "traceparent": "00-x-y-01", "claudecode/toolUseId": "u1",
            "progressToken": 3, "io.modelcontextprotocol/logLevel": "info",
            "io.modelcontextprotocol/clientCapabilities": {}, "dev.mcp/anything": 1, "modelcontextprotocol.io/x": 1,
            "monad/callerCapabilities": {"sampling": {}}, "tools.mcp.com/x": 2, "example.com/mcp": 2}
    assert agent_meta(meta) == {"tenant": "acme", "com.example/trace": "t-1", "traceparent": "00-x-y-01",
                                "claudecode/toolUseId": "u1", "example.com/mcp": 2}


@pytest.mark.parametrize("meta", [None, {}, [], "x", 3])
def test_no_object_no_keys(meta: Any) -> None:
    assert agent_meta(meta) == {}
