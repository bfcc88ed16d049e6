"""The gateway's answers to lines that are not JSON-RPC messages (daemon/gateway/wire.py
`rejection`, JSON-RPC 2.0 §5 and §5.1): -32700 for text that is not JSON, -32600 for JSON of
another shape, echoing the id only when it is a string or an integer; end to end over the
relay in tests/e2e/test_gateway.py."""

from __future__ import annotations

import json
from typing import Any

import pytest

from monad_cli.daemon.gateway.wire import error_line, rejection

INVALID = "Invalid Request: not a JSON-RPC 2.0 message"


def answer(line: bytes) -> Any:
    out = rejection(line)
    assert out.endswith(b"\n") and out.count(b"\n") == 1  # one line
    return json.loads(out)


def test_text_that_is_not_json_is_a_parse_error_with_a_null_id() -> None:
    assert answer(b'{"jsonrpc": "2.0", "id": 3, "method"') == {
        "jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}}


@pytest.mark.parametrize(("line", "rid"), [
    (b"[1, 2]", None),
    (b"42", None),
    (b'{"id": 7, "method": "ping"}', 7),  # no `jsonrpc`: its usable id is echoed
    (b'{"jsonrpc": "1.0", "id": "a-1", "method": "ping"}', "a-1"),
    (b'{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}', None),  # ids are strings or integers
    (b'{"jsonrpc": "2.0", "id": true, "method": "ping"}', None),
    (b'{"jsonrpc": "2.0", "id": null, "method": "ping"}', None),
])
def test_json_of_another_shape_is_an_invalid_request(line: bytes, rid: object) -> None:
    assert answer(line) == {"jsonrpc": "2.0", "id": rid, "error": {"code": -32600, "message": INVALID}}


def test_an_error_line_is_compact_json() -> None:
    assert error_line(-32603, "boom", "r1") == b'{"jsonrpc":"2.0","id":"r1","error":{"code":-32603,"message":"boom"}}\n'
