"""The URL of an http server: whether it is usable, and its identity for duplicate
detection (two definitions of the same remote). Stdlib only."""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit


def normalize_url(url: str) -> str:
    """The identity of a remote for duplicate detection: lower-case scheme and host, no
    default port, no trailing slash, no fragment."""
    p = urlsplit(url)
    host = (p.hostname or "").lower()
    port = p.port
    if port and not ((p.scheme == "http" and port == 80) or (p.scheme == "https" and port == 443)):
        host = f"{host}:{port}"
    path = p.path.rstrip("/") or ""
    return urlunsplit((p.scheme.lower(), host, path, p.query, ""))


def check_url(url: str) -> str | None:
    """None when `url` is usable for a streamable-HTTP server, else why not."""
    try:
        p = urlsplit(url)
        p.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError as e:
        return f"not a valid URL ({e})"
    if p.scheme not in ("http", "https"):
        return (f"must start with http:// or https://, got `{p.scheme}:`" if p.scheme
                else "must start with http:// or https://")
    if not p.hostname:
        return "has no host"
    if _BAD_URL_CHARS.search(url) or not _HOST.fullmatch(p.hostname):
        return "has a space or a control character in it; percent-encode it"
    return None


_BAD_URL_CHARS = re.compile(r"[\s\x00-\x1f\x7f]")
_HOST = re.compile(r"[A-Za-z0-9._~%!$&'()*+,;=:\[\]-]+")
