"""The result budget (gateway/budget.py): what is cut, what is kept, for how long, and what
a read of the kept result returns. The 1 MiB round trip through the real gateway is
tests/e2e/test_tool_search.py's."""

from __future__ import annotations

import base64

import pytest
from mcp.shared.exceptions import MCPError

from monad_cli.daemon.gateway.budget import SCHEME, ResultStore, cut
from monad_cli.daemon.gateway.search import estimate_tokens


def _uri(result: dict) -> str:
    note = result["content"][-1]["text"]
    start = note.index(SCHEME)
    return note[start:].split()[0]


def test_a_result_under_the_budget_is_untouched_and_not_kept() -> None:
    store = ResultStore()
    result = {"content": [{"type": "text", "text": "short"}], "isError": False}
    assert cut(result, 100, store) is result
    assert store._total == 0


def test_a_long_text_is_cut_to_the_budget_never_inside_a_character() -> None:
    store = ResultStore()
    text = "é€" * 100_000  # 500,000 bytes, no ASCII to cut at
    result = {"content": [{"type": "text", "text": text}, {"type": "text", "text": "tail"}],
              "structuredContent": {"n": 1}, "isError": False}
    out = cut(result, 1000, store)
    assert estimate_tokens(out) <= 1000 + 60  # the note's own words
    first = out["content"][0]["text"]
    assert text.startswith(first) and len(first) > 100
    assert out["structuredContent"] == {"n": 1} and out["isError"] is False
    assert out["content"][-1]["text"].startswith("[monad: this result was cut to about 1000 tokens of about ")
    whole = store.read(_uri(out)).contents
    assert [c.text for c in whole] == [text, "tail", '{"n": 1}']


def test_blobs_and_embedded_resources_read_back_exactly() -> None:
    store = ResultStore()
    data = base64.b64encode(bytes(range(256)) * 4000).decode()
    result = {"content": [{"type": "image", "data": data, "mimeType": "image/png"},
                          {"type": "resource", "resource": {"uri": "file:///a", "blob": data,
                                                            "mimeType": "application/pdf"}},
                          {"type": "resource_link", "uri": "file:///b", "name": "b"}]}
    out = cut(result, 500, store)
    assert [c["type"] for c in out["content"]] == ["text"]  # nothing fitted but the note
    whole = store.read(_uri(out)).contents
    assert whole[0].blob == data and whole[0].mime_type == "image/png"
    assert whole[1].blob == data and str(whole[1].uri) == "file:///a"
    assert '"resource_link"' in whole[2].text


def test_kept_results_expire_and_the_store_is_bounded() -> None:
    now = [0.0]
    store = ResultStore(keep_s=60, max_result=10_000, max_total=25_000, clock=lambda: now[0])
    big = {"content": [{"type": "text", "text": "x" * 9_000}]}
    uris = [_uri(cut(big, 10, store)) for _ in range(3)]
    store.read(uris[2])
    with pytest.raises(MCPError) as dropped:
        store.read(uris[0])  # the oldest, dropped for room
    assert dropped.value.error.code == -32002
    now[0] = 61.0
    with pytest.raises(MCPError):
        store.read(uris[2])  # expired
    huge = cut({"content": [{"type": "text", "text": "y" * 20_000}]}, 10, store)
    assert "was not kept" in huge["content"][-1]["text"] and SCHEME not in huge["content"][-1]["text"]
