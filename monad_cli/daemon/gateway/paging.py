"""Pages of the gateway's listings: `tools/list`, `prompts/list`, `resources/list`,
`resources/templates/list` (MCP spec, server/utilities/pagination).

The gateway gathers every server's whole list, then answers one page: `PAGE_SIZE` items,
with `nextCursor` when more follow. The cursor, opaque to the agent, is the listing's method
and the next item's offset, base64url-encoded: no state in the supervisor, and it outlives a
gateway session. A list that changes between two pages may repeat or skip items at the
seam; the list-changed notification that came with the change tells the agent to list again.

A cursor this gateway did not give for that method (garbage, another method's, past the
end) is refused with -32602 (Invalid params) saying to list again without one.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import TypeVar

import mcp_types as types
from mcp.shared.exceptions import MCPError

PAGE_SIZE = 500  # items per page: 1,000+ tools take a few requests, a usual setup one
T = TypeVar("T")


def cursor_for(method: str, offset: int) -> str:
    """The opaque cursor of `method`'s page starting at item `offset`."""
    return base64.urlsafe_b64encode(f"{method}:{offset}".encode()).decode().rstrip("=")


def _offset(method: str, cursor: str, total: int) -> int:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        named, _, number = raw.rpartition(":")
        offset = int(number)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        named, offset = "", -1
    if named != method or offset < 0:
        raise MCPError(types.INVALID_PARAMS, f"{method}: cursor `{cursor[:80]}` is not one this gateway gave for "
                                             f"{method}; list again without a cursor")
    if offset > total:
        raise MCPError(types.INVALID_PARAMS, f"{method}: cursor points past the end of the list ({total} items "
                                             f"now; it changed since); list again without a cursor")
    return offset


def page(method: str, items: Sequence[T], cursor: str | None, *,
         size: int = PAGE_SIZE) -> tuple[list[T], str | None]:
    """The page of `items` that `cursor` (None: the first) names, and the next page's
    cursor (None: this is the last). Raises MCPError(-32602) for a cursor this gateway did
    not give for `method`."""
    start = 0 if cursor is None else _offset(method, cursor, len(items))
    end = start + size
    return list(items[start:end]), (cursor_for(method, end) if end < len(items) else None)


__all__ = ["PAGE_SIZE", "cursor_for", "page"]
