"""Which scopes to ask for (MCP spec, basic/authorization "Scope Selection Strategy")."""

from __future__ import annotations

from collections.abc import Sequence

from mcp.client.auth.utils import union_scopes

OFFLINE_ACCESS = "offline_access"


def select_scopes(*, explicit: Sequence[str] | None, challenged: str | None,
                  resource_scopes: Sequence[str] | None, server_scopes: Sequence[str] | None,
                  previous: str | None = None) -> str | None:
    """The `scope` parameter to request, or None to omit it.

    Order: explicit scopes (`auth.scopes` / `--scope`) win; else the scope of the
    `WWW-Authenticate` challenge; else the protected resource's `scopes_supported`
    (RFC 9728). Never the authorization server's whole catalogue (`server_scopes` is only
    consulted for `offline_access`, added when advertised so the grant can be refreshed).
    On step-up, `previous` (what was granted before) is kept in front (SEP-2350).
    """
    if explicit:
        chosen = list(explicit)
    elif challenged:
        chosen = (union_scopes(previous, challenged) or "").split()
    else:
        chosen = list(resource_scopes or ())
    chosen = list(dict.fromkeys(s for s in chosen if s))  # first-seen order, no repeats
    if chosen and server_scopes and OFFLINE_ACCESS in server_scopes and OFFLINE_ACCESS not in chosen:
        chosen.append(OFFLINE_ACCESS)
    return " ".join(chosen) or None
