"""Checks on URLs that come from a remote server before a browser or a person sees them.

A malicious server controls its authorization endpoint and the device flow's
`verification_uri`. Handing such a URL to a browser launcher has led to command execution
(CVE-2025-6514: a URL that was really shell syntax; a URL starting with `-` read as a flag).
So every URL is parsed and must be https, or http to a loopback host, with a host, no
leading `-`, and no whitespace or control characters (MCP security best practices, "OAuth
Authorization URL Validation"). Stdlib only.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

LOOPBACK_NAMES = {"localhost"}


def is_loopback_host(host: str | None) -> bool:
    """True for `localhost`, 127.0.0.0/8 and ::1."""
    if not host:
        return False
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def url_problem(url: str) -> str | None:
    """None when `url` may be shown to a person and opened in a browser, else why not.

    Rules: a string with no whitespace or control characters, not starting with
    `-`; scheme `https`, or `http` to a loopback host; a host. Everything else, including
    `javascript:`, `file:` and `data:`, is refused.
    """
    if not isinstance(url, str) or not url:
        return "is empty"
    if url.startswith("-"):
        return "starts with `-` (it could be read as a command-line option)"
    if any(ord(c) < 0x21 or ord(c) == 0x7F for c in url):
        return "contains whitespace or control characters"
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError as e:
        return f"is not a valid URL ({e})"
    scheme = parts.scheme.lower()
    if scheme not in ("https", "http"):
        return f"uses the scheme `{scheme or '(none)'}:`; only https (or http to this machine) is allowed"
    if not host:
        return "has no host"
    if scheme == "http" and not is_loopback_host(host):
        return "uses plain http to a remote host; only https is allowed there"
    return None
