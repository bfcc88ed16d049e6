"""The Content-Security-Policy an MCP App runs under, built from its `_meta.ui.csp` and
nothing more (ext-apps spec 2026-01-26, "UI Resource Format → Host Behavior" and "Security
Implications → Content Security Policy Enforcement"). Stdlib only, pure functions.

    approve(csp)  → the declared sources monad enforces (`{connectDomains: [...], ...}`),
                    also what the app is told it was granted (`hostCapabilities.sandbox.csp`)
    policy(approved) → the policy text
    wrap(html, policy) → the document the sandbox loads: a fixed shell whose first `<head>`
                    child is the policy's `<meta>`, the app's HTML inside `<body>`

A declared source is kept only when it is an origin-like source, `scheme://host[:port][/path]`
with scheme http, https, ws or wss and an optional `*.` wildcard label (the spec's
`https://*.example.com`). Anything else (`*`, `https:`, `'unsafe-eval'`, text that would add
a directive or leave the attribute) is dropped, so a declaration can only ever narrow what
an app reaches. With nothing declared the app has no network at all: `connect-src 'none'`
and no external images, scripts, styles, fonts, media or frames. The app's own inline
scripts and styles run (it has nothing else).
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from typing import Any

KEYS = ("connectDomains", "resourceDomains", "frameDomains", "baseUriDomains")
NONE, SELF = "'none'", "'self'"
MAX_SOURCES = 32  # per key: a declaration is a short allow-list, not a data dump
_SOURCE = re.compile(r"(?:https?|wss?)://(?:\*\.)?[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
                     r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*(?::(?:\d{1,5}|\*))?"
                     r"(?:/[A-Za-z0-9._~%!$&*+,=@:/-]*)?")


def approve(csp: Mapping[str, Any] | None) -> tuple[dict[str, list[str]], list[str]]:
    """(approved sources by key, the entries dropped) of a resource's `_meta.ui.csp`."""
    approved: dict[str, list[str]] = {}
    dropped: list[str] = []
    for key in KEYS:
        entries = csp.get(key) if isinstance(csp, Mapping) else None
        if not isinstance(entries, list):
            continue
        kept = [e for e in entries if isinstance(e, str) and _SOURCE.fullmatch(e)][:MAX_SOURCES]
        dropped += [str(e)[:100] for e in entries if e not in kept]
        if kept:
            approved[key] = list(dict.fromkeys(kept))
    return approved, dropped


def policy(approved: Mapping[str, list[str]]) -> str:
    """The policy text for `approved` sources (see the module docstring)."""
    def sources(key: str, fallback: str) -> str:
        return " ".join(approved.get(key) or []) or fallback

    extra = "".join(f" {source}" for source in approved.get("resourceDomains") or [])
    return "; ".join([
        "default-src 'none'",
        f"script-src 'self' 'unsafe-inline'{extra}",
        f"style-src 'self' 'unsafe-inline'{extra}",
        f"img-src 'self' data:{extra}",
        f"font-src 'self'{extra}",
        f"media-src 'self' data:{extra}",
        f"connect-src {sources('connectDomains', NONE)}",
        f"frame-src {sources('frameDomains', NONE)}",
        f"base-uri {sources('baseUriDomains', SELF)}",
        "object-src 'none'",
        "worker-src 'none'",
        "form-action 'none'",
    ])


def wrap(app_html: str, policy_text: str) -> str:
    """The app's HTML behind its policy: the `<meta>` comes before any byte of the app, so no
    markup in it (a second `<head>`, a comment) can load anything before the policy holds.
    A full document inside `<body>` still works: the parser drops the repeated structure
    tags and runs its scripts and styles, under the policy."""
    meta = f'<meta http-equiv="Content-Security-Policy" content="{html.escape(policy_text, quote=True)}">'
    return f'<!DOCTYPE html><html><head>{meta}<meta charset="utf-8"></head><body>{app_html}</body></html>'
