"""Who may see and call a tool: MCP Apps' `_meta.ui.visibility` (ext-apps spec 2026-01-26,
"Resource Discovery → Visibility"). Stdlib only.

A tool's `_meta.ui` may carry `resourceUri` (a `ui://` resource the host renders the result
with; `_meta["ui/resourceUri"]` is the deprecated spelling) and `visibility`, a list of
`"model"` and `"app"` (absent or not a list: both; unknown entries ignored). Without
`"model"` the tool is never listed to an agent and only an MCP App of its own server may
call it; without `"app"` no MCP App may. An app never calls another server's tools.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from monad_cli.core.errors import CallRefused, NotFound

UI_KEY = "ui"
DEPRECATED_RESOURCE_URI = "ui/resourceUri"
AUDIENCES = ("model", "app")


def ui_meta(meta: Mapping[str, Any] | None) -> dict[str, Any]:
    """The tool's `_meta.ui` object (`{}` when there is none or it is not an object)."""
    ui = (meta or {}).get(UI_KEY)
    return dict(ui) if isinstance(ui, Mapping) else {}


def visibility(meta: Mapping[str, Any] | None) -> frozenset[str]:
    """Who the tool is for: a subset of `AUDIENCES`."""
    raw = ui_meta(meta).get("visibility")
    if not isinstance(raw, list):
        return frozenset(AUDIENCES)
    return frozenset(v for v in raw if v in AUDIENCES)


def resource_uri(meta: Mapping[str, Any] | None) -> str | None:
    """The `ui://` resource the tool's results render with, or None."""
    uri = ui_meta(meta).get("resourceUri")
    if uri is None:
        uri = (meta or {}).get(DEPRECATED_RESOURCE_URI)
    return uri if isinstance(uri, str) and uri.startswith("ui://") else None


def for_model(meta: Mapping[str, Any] | None) -> bool:
    return "model" in visibility(meta)


def check_caller(meta: Mapping[str, Any] | None, *, exposed: str, server: str, app_of: str | None) -> None:
    """Refuse a call the tool's visibility does not allow. `app_of`: the server whose MCP App
    makes the call (None: an agent, a script or a person). Raises NotFound (an app-only tool:
    refused as an unknown tool is, saying why), CallRefused (an app calling a tool
    without `"app"`, or another server's)."""
    seen_by = visibility(meta)
    if app_of is None:
        if "model" not in seen_by:
            raise NotFound(f"no tool `{exposed}` is exposed (its `_meta.ui.visibility` leaves out \"model\": "
                           f"only its server's MCP App may call it)")
        return
    if app_of != server:
        raise CallRefused(f"an MCP App of server `{app_of}` may not call `{exposed}` of server `{server}`")
    if "app" not in seen_by:
        raise CallRefused(f"`{exposed}` is not callable from an MCP App (its `_meta.ui.visibility` leaves "
                          f"out \"app\")")
