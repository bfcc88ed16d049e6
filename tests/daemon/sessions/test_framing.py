"""`encode_line`, the one way the supervisor writes a JSON-RPC line (a server's request on
monad's own lane, an agent's answer on the gateway's): what the standard library's
`json.dumps` wrote before, byte for byte, and the same refusals (RFC 8259 §6), through an
encoder that writes a 1 MB answer several times faster (bench/README.md, issue 38)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from monad_cli.daemon.sessions.framing import decode_line, encode_line


def reference(body: Any) -> bytes:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode() + b"\n"


@pytest.mark.parametrize("body", [
    {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "hello"}], "isError": False}},
    {"jsonrpc": "2.0", "id": "monad-7", "method": "tools/call", "params": {"name": "echo", "arguments": {
        "text": "é \n \t \" \\ / \u2028 \u0000 \U0001f600", "n": 1e16, "f": 0.1, "z": -0.0, "big": 2 ** 70,
        "none": None, "list": [True, False, [], {}]}}},
    # The two words the encoder writes for non-finite numbers, inside strings: still JSON.
    {"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": "NaN and -Infinity"}]}},
])
def test_a_line_is_what_the_standard_library_writes(body: Any) -> None:
    assert encode_line(body) == reference(body)
    decoded = decode_line(encode_line(body).rstrip(b"\n"))
    assert decoded.message is not None and decoded.problem is None


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf"), "a lone \ud800 surrogate"])
def test_what_json_cannot_hold_is_refused(value: Any) -> None:
    with pytest.raises(ValueError):
        encode_line({"jsonrpc": "2.0", "id": 1, "result": {"structuredContent": {"v": value}, "content": []}})


@pytest.mark.parametrize("text", ["short", "long " * 2000])
def test_a_non_finite_number_is_refused_in_a_short_line_and_a_long_one(text: str) -> None:
    """A short line is searched for the words once written, a long one's value walked: both
    refuse a NaN wherever it is, and take the words inside a string."""
    body = {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": text + " NaN Infinity"}],
                                                  "structuredContent": {"deep": [{"v": [1.5, float("nan")]}]}}}
    with pytest.raises(ValueError):
        encode_line(body)
    del body["result"]["structuredContent"]
    assert encode_line(body) == reference(body)


def test_a_large_answer_is_one_line() -> None:
    text = "plain answer " * 80_000
    data = encode_line({"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": text}]}})
    assert data.count(b"\n") == 1 and data.endswith(b"\n")
    assert json.loads(data)["result"]["content"][0]["text"] == text
