"""A server's lists (tools, prompts, resources), taken item by item: one bad item costs
that item, never the listing or the session.

- `sieve_listing` runs on the wire, before the SDK validates a `*/list` result whole (one
  tool whose `inputSchema` is not an object failed `tools/list`, and the connect): each item
  is checked alone against the version's result shape; one that fails is taken out, named.
- `declared`: a client uses only what the server declared (MCP spec, basic/lifecycle
  "Capability Negotiation"): no `tools` capability, no `tools/list` (it would answer -32601).
- `first_of_each_name` keeps the first of tools sharing a name (Claude's API refuses a list
  with two: "Tool names must be unique").
- `list_items` lists a server's prompts, resources or templates, every page.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from operator import methodcaller
from typing import TYPE_CHECKING, Any

from mcp_types import methods
from pydantic import ValidationError

if TYPE_CHECKING:
    from mcp import Client

log = logging.getLogger("monad.actor")

# The result key of each list method, and what one item is called in a reason.
LISTS: dict[str, tuple[str, str]] = {
    "tools/list": ("tools", "tool"),
    "prompts/list": ("prompts", "prompt"),
    "resources/list": ("resources", "resource"),
    "resources/templates/list": ("resourceTemplates", "resource template"),
}
FALLBACK_VERSION = "2025-11-25"  # before the handshake settles a version (the SDK's own fallback)
# Each kind's list method on `mcp.Client`, and the field of its result.
ITEM_LISTS = {"prompts": ("list_prompts", "prompts"), "resources": ("list_resources", "resources"),
              "templates": ("list_resource_templates", "resource_templates")}
MAX_ITEM_PAGES = 100  # a server whose cursors never end must not hold a listing forever


async def list_items(kind: str, send: Callable[[Callable[[Client], Awaitable[Any]]], Awaitable[Any]]) -> list[Any]:
    """Every item of `kind` (`prompts`, `resources`, `templates`: `mcp_types` models), page
    by page (MCP spec, server/utilities/pagination; at most `MAX_ITEM_PAGES`); `send(request)`
    awaits `request(client)` on the server's live `mcp.Client`. Raises what a page raises."""
    method, field = ITEM_LISTS[kind]
    items: list[Any] = []
    cursor: str | None = None
    for _page in range(MAX_ITEM_PAGES):
        result = await send(methodcaller(method, cursor=cursor))
        items += getattr(result, field)
        cursor = result.next_cursor
        if not cursor:
            break
    return items


def item_label(item: Any, index: int) -> str:
    """How a reason names an item: its `name`, else its `uri`, else its place in the list."""
    if isinstance(item, dict):
        for key in ("name", "uriTemplate", "uri"):
            value = item.get(key)
            if isinstance(value, str) and value:
                return f"`{value[:80]}`"
    return f"#{index + 1} in the list"


def _item_problem(method: str, version: str, key: str, item: Any) -> str | None:
    """Why `item` cannot be accepted in a `method` result of `version`, or None. A tool or
    prompt with an empty `name` is refused too: the SDK's model takes it, but it is called by
    that name (tool names are 1 to 128 characters: MCP spec, server/tools "Tool Names"), and
    such a tool was exposed as `server__`."""
    if method in ("tools/list", "prompts/list") and isinstance(item, dict) and item.get("name") == "":
        return "name: empty"

    try:
        methods.validate_server_result(method, version, {key: [item]})
    except KeyError:
        return None  # a method the SDK does not validate: nothing to sieve by
    except ValidationError as e:
        own = [err for err in e.errors() if tuple(err["loc"][:2]) == (key, 0)]
        if not own:
            return None  # only the envelope (e.g. 2026-07-28's cacheScope), not the item
        err = own[0]
        where = ".".join(str(p) for p in err["loc"][2:]) or "the item"
        return f"{where}: {err['msg']}"
    return None


def sieve_listing(method: str, version: str | None, result: dict[str, Any]) -> list[str]:
    """Take out of `result` (a `method` result as received, changed in place) every item that
    fails the `version` result shape on its own; one reason per item, e.g. "tool `broken`
    left out: inputSchema: Input should be a valid dictionary". A prompts or resources answer
    without its list (`{}`) fails whole (the SDK's validation; the catalog leaves the server
    out), with one reason: "resources/templates/list answer left out: resourceTemplates:
    Field required". A tools/list answer without its list fails the connect, which says so."""
    if method not in LISTS:
        return []
    key, noun = LISTS[method]
    items = result.get(key)
    if not isinstance(items, list):
        if method == "tools/list":
            return []
        return [f"{method} answer left out: {key}: "
                + ("Field required" if key not in result else "Input should be a valid list")]
    kept: list[Any] = []
    reasons: list[str] = []
    for index, item in enumerate(items):
        problem = _item_problem(method, version or FALLBACK_VERSION, key, item)
        if problem is None:
            kept.append(item)
        else:
            reasons.append(f"{noun} {item_label(item, index)} left out: {problem}")
    if reasons:
        result[key] = kept
    return reasons


def declared(capabilities: Any, capability: str) -> bool:
    """Whether the server declared `capability` (`tools`, `prompts`, `resources`) in its
    ServerCapabilities (None: not declared)."""
    return capabilities is not None and getattr(capabilities, capability, None) is not None


def first_of_each_name(tools: list[Any]) -> tuple[list[Any], list[str]]:
    """(the tools with the first of each name kept, a reason per copy left out)."""
    seen: set[str] = set()
    kept: list[Any] = []
    reasons: list[str] = []
    for tool in tools:
        if tool.name in seen:
            reasons.append(f"tool `{tool.name}` is listed more than once; the first is kept")
            continue
        seen.add(tool.name)
        kept.append(tool)
    return kept, reasons
