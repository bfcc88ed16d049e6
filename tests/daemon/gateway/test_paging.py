"""The gateway's pages (gateway/paging.py): cursors are opaque, per method, and refused with
-32602 and a reason when the gateway did not give them."""

from __future__ import annotations

import pytest


def test_pages_cover_the_list_once_in_order() -> None:
    from monad_cli.daemon.gateway.paging import page

    items = list(range(1001))
    seen, cursor, pages = [], None, 0
    while True:
        chunk, cursor = page("tools/list", items, cursor, size=400)
        seen += chunk
        pages += 1
        if cursor is None:
            break
    assert seen == items and pages == 3
    assert page("tools/list", [], None) == ([], None)
    assert page("tools/list", items[:400], None, size=400) == (items[:400], None)  # exactly one page


@pytest.mark.parametrize("cursor", ["garbage", "", "!!!", "dG9vbHMvbGlzdDotMQ"])  # the last: tools/list:-1
def test_a_cursor_the_gateway_did_not_give_is_refused_with_a_reason(cursor: str) -> None:
    from mcp.shared.exceptions import MCPError

    from monad_cli.daemon.gateway.paging import page

    with pytest.raises(MCPError) as refused:
        page("tools/list", list(range(10)), cursor)
    assert refused.value.error.code == -32602
    assert refused.value.error.message.startswith("tools/list: cursor")
    assert refused.value.error.message.endswith("list again without a cursor")


def test_a_cursor_is_for_its_own_method_and_list() -> None:
    from mcp.shared.exceptions import MCPError

    from monad_cli.daemon.gateway.paging import cursor_for, page

    with pytest.raises(MCPError, match="not one this gateway gave for prompts/list"):
        page("prompts/list", list(range(10)), cursor_for("tools/list", 5))
    with pytest.raises(MCPError, match="past the end of the list"):
        page("tools/list", list(range(10)), cursor_for("tools/list", 11))
