"""The result budget: a long tool result reaches the agent cut to about N tokens, the whole
of it kept as a `monad://` resource the agent can read (docs/gateway.md "Result budget"
says what is cut, what a read returns and the bounds).

`ResultStore` is one gateway session's: results are readable only through the session that
got them (an HTTP listener's clients share one session). Bounds: a result is kept `KEEP_S`
seconds (1 hour) from the call; at most `MAX_RESULT_BYTES` (64 MiB) a result (a larger one
is still cut, and the note says it was not kept) and `MAX_STORE_BYTES` (256 MiB) in all,
the oldest dropped first; sizes are of the JSON the agent would have got.

`cut` keeps the content items in order (`estimate_tokens` each), the text item that crosses
the budget cut at a character boundary, and `structuredContent` when it takes at most half
the budget; a tool with an `outputSchema` (`typed`) keeps it whole whatever its size: the
schema promises it (MCP spec, server/tools "Output Schema"), and a client fails a call whose
result lacks it, where a budget only meant to shorten it.
"""

from __future__ import annotations

import json
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError

from monad_cli.daemon.gateway.catalog import RESOURCE_NOT_FOUND
from monad_cli.daemon.gateway.search import BYTES_PER_TOKEN, estimate_tokens

SCHEME = "monad://results/"
KEEP_S = 3600.0
MAX_RESULT_BYTES = 64 * 1024 * 1024
MAX_STORE_BYTES = 256 * 1024 * 1024


@dataclass
class _Kept:
    result: dict[str, Any]
    size: int
    until: float


class ResultStore:
    """One session's kept results (module docstring); `clock` is monotonic seconds."""

    def __init__(self, *, keep_s: float = KEEP_S, max_result: int = MAX_RESULT_BYTES,
                 max_total: int = MAX_STORE_BYTES, clock: Callable[[], float] = time.monotonic) -> None:
        self.keep_s = keep_s
        self.max_result = max_result
        self.max_total = max_total
        self.clock = clock
        self._kept: OrderedDict[str, _Kept] = OrderedDict()
        self._total = 0

    def _expire(self) -> None:
        now = self.clock()
        while self._kept:
            uri, kept = next(iter(self._kept.items()))
            if kept.until > now and self._total <= self.max_total:
                break
            del self._kept[uri]
            self._total -= kept.size

    def keep(self, result: dict[str, Any], size: int) -> str | None:
        """The URI `result` is kept under, or None when it is larger than a result may be."""
        if size > self.max_result:
            return None
        uri = SCHEME + secrets.token_urlsafe(16)
        self._kept[uri] = _Kept(result, size, self.clock() + self.keep_s)
        self._total += size
        self._expire()
        return uri if uri in self._kept else None

    def read(self, uri: str) -> types.ReadResourceResult:
        """resources/read of a kept result. Raises MCPError(-32002) when it is not kept (never
        was, expired, or dropped for room)."""
        self._expire()
        kept = self._kept.get(uri)
        if kept is None:
            raise MCPError(RESOURCE_NOT_FOUND, f"Resource not found: `{uri}` is not a result this gateway session "
                                               f"keeps (results are kept {int(self.keep_s)} s); call the tool again")
        return types.ReadResourceResult(contents=_contents(uri, kept.result))


def _contents(uri: str, result: dict[str, Any]) -> list[Any]:
    out: list[Any] = []
    for item in result.get("content") or []:
        kind = item.get("type")
        if kind == "text":
            out.append(types.TextResourceContents(uri=uri, mime_type="text/plain", text=item.get("text", "")))
        elif kind in ("image", "audio"):
            out.append(types.BlobResourceContents(uri=uri, mime_type=item.get("mimeType"), blob=item.get("data", "")))
        elif kind == "resource" and isinstance(item.get("resource"), dict):
            r = item["resource"]
            out.append((types.BlobResourceContents if "blob" in r else types.TextResourceContents).model_validate(r))
        else:
            out.append(types.TextResourceContents(uri=uri, mime_type="application/json", text=json.dumps(item)))
    if "structuredContent" in result:
        out.append(types.TextResourceContents(uri=uri, mime_type="application/json",
                                              text=json.dumps(result["structuredContent"])))
    return out


def _cut_text(text: str, tokens: int) -> str:
    """`text`'s start that fits `tokens` (by the same estimate: UTF-8 bytes / 4)."""
    budget = tokens * BYTES_PER_TOKEN
    data = text.encode()
    if len(data) <= budget:
        return text
    return data[:max(budget, 0)].decode(errors="ignore")


def cut(result: dict[str, Any], budget: int, store: ResultStore, *, typed: bool = False) -> dict[str, Any]:
    """`result` as the agent gets it under a budget of `budget` tokens (module docstring):
    unchanged when it fits, or when its content items all fit and only its envelope passes
    the budget; else cut, with a note naming the kept whole. `typed`: the tool declares an
    `outputSchema`, so its `structuredContent` stays whole."""
    total = estimate_tokens(result)
    if total <= budget:
        return result
    structured = result.get("structuredContent")
    keep_structured = structured is not None and (typed or estimate_tokens(structured) <= budget // 2)
    left = max(budget - (estimate_tokens(structured) if keep_structured else 0), 0)
    content: list[dict[str, Any]] = []
    for item in result.get("content") or []:
        size = estimate_tokens(item)
        if size <= left:
            content.append(item)
            left -= size
            continue
        if item.get("type") == "text" and left > 16:
            content.append({**item, "text": _cut_text(item.get("text", ""), left - 16)})
        left = 0
        break
    if content == (result.get("content") or []) and (structured is None or keep_structured):
        # Over the budget only by the result's own envelope (`isError`, `_meta`): nothing would
        # be cut, and a note would make it longer, not shorter.
        return result
    uri = store.keep(result, total * BYTES_PER_TOKEN)
    out = {k: v for k, v in result.items() if k not in ("content", "structuredContent")}
    if keep_structured:
        out["structuredContent"] = structured
    where = (f"the whole result is the resource {uri} (resources/read; kept {int(store.keep_s // 60)} min)"
             if uri else f"the whole result is larger than {store.max_result // (1024 * 1024)} MiB and was not kept")
    content.append({"type": "text", "text": f"[monad: this result was cut to about {budget} tokens of about {total}; "
                                            f"{where}]"})
    out["content"] = content
    return out


__all__ = ["KEEP_S", "MAX_RESULT_BYTES", "MAX_STORE_BYTES", "SCHEME", "ResultStore", "cut"]
