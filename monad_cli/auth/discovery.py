"""Discovery as the MCP authorization spec (2026-07-28) orders it, keeping what the SDK's
models drop (`device_authorization_endpoint`), and refusing bad servers early.

1. An unauthenticated request to the MCP server; its 401 `WWW-Authenticate` may name
   `resource_metadata` and `scope`.
2. Protected resource metadata (RFC 9728): the header's URL, then
   `/.well-known/oauth-protected-resource/<path>`, then the root (MCP spec, basic/authorization
   "Protected Resource Metadata Discovery"). Its `resource` must match the server URL
   (RFC 9728 §3.3, RFC 8707).
3. Authorization server metadata (RFC 8414, OpenID Connect Discovery) in the path-aware
   order; any 4xx or non-JSON answer means "try the next candidate", a 5xx stops.
   The `issuer` must equal the one the URL was built from (RFC 8414 §3.3).
4. Every endpoint must be https, or http on loopback (MCP spec, basic/authorization
   "Communication Security"; server-supplied URLs are an SSRF vector).

The URL builders are the SDK's (`mcp.client.auth.utils`), so both flows walk the same
candidates. Redirects are not followed (each hop would need the same checks); answers are capped at
1 MiB and 10 s, so a hostile server cannot hold or flood the client.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx2
from mcp.client.auth.utils import (
    build_oauth_authorization_server_metadata_discovery_urls,
    build_protected_resource_metadata_discovery_urls,
    extract_resource_metadata_from_www_auth,
    extract_scope_from_www_auth,
    issuers_match,
)
from mcp.shared.auth import OAuthMetadata, ProtectedResourceMetadata
from mcp.shared.auth_utils import check_resource_allowed, resource_url_from_server_url
from mcp_types import LATEST_PROTOCOL_VERSION
from pydantic import ValidationError

from monad_cli.auth.urls import url_problem
from monad_cli.core.errors import AuthError
from monad_cli.core.messages import connect_failure, transport_error
from monad_cli.core.redact import redact_url

MAX_DOCUMENT_BYTES = 1024 * 1024
FETCH_TIMEOUT_S = 10.0


@dataclass
class Discovery:
    """What discovery found. `server_metadata_raw` is the RFC 8414 document as served."""

    resource: str
    challenged_scope: str | None
    resource_metadata: ProtectedResourceMetadata | None
    authorization_server: str
    server_metadata: OAuthMetadata
    server_metadata_raw: dict[str, Any]

    @property
    def device_authorization_endpoint(self) -> str | None:
        v = self.server_metadata_raw.get("device_authorization_endpoint")
        return v if isinstance(v, str) and v else None


def unreachable(name: str, url: str, exc: BaseException, *, source: str | None = None,
                timeout: float = FETCH_TIMEOUT_S) -> AuthError:
    """The error for a server whose own `url` could not be reached: what failed (refused,
    DNS, a timeout: `connect_failure`), where (the server and its url) and what to do (check
    the url; where to fix it)."""
    fix = f"in `{source}` or " if source else ""
    return AuthError(f"server `{name}`: cannot reach its url `{redact_url(url)}`: "
                     f"{connect_failure(exc, url, timeout=timeout)}; check the url with `monad mcp get "
                     f"{name}`, and if it is wrong fix it {fix}with `monad mcp add {name} --url URL --force`")


def new_http_client(headers: dict[str, str] | None = None) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(headers=headers or {}, follow_redirects=False,
                              timeout=httpx2.Timeout(FETCH_TIMEOUT_S))


async def fetch_json(http: httpx2.AsyncClient, url: str) -> tuple[int, Any]:
    """(status, parsed JSON or None). Non-JSON and oversized bodies read as None."""
    problem = url_problem(url)
    if problem:
        raise AuthError(f"a discovery URL {problem}: `{redact_url(url)}`; refused")
    try:
        async with http.stream("GET", url, headers={"Accept": "application/json",
                                                     "MCP-Protocol-Version": LATEST_PROTOCOL_VERSION}) as r:
            body = b""
            async for chunk in r.aiter_bytes():
                body += chunk
                if len(body) > MAX_DOCUMENT_BYTES:
                    return r.status_code, None
            status = r.status_code
    except httpx2.HTTPError as e:
        raise AuthError(f"cannot fetch `{redact_url(url)}`: {transport_error(e)}") from None
    try:
        return status, json.loads(body)
    except ValueError:
        return status, None


async def discover(http: httpx2.AsyncClient, server_url: str, *, name: str, source: str | None = None) -> Discovery:
    """Run discovery for server `name` at `server_url` (defined in `source`). Raises
    `AuthError` naming what failed."""
    resource = resource_url_from_server_url(server_url)
    try:
        probe = await http.post(server_url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                headers={"Accept": "application/json, text/event-stream",
                                         "MCP-Protocol-Version": LATEST_PROTOCOL_VERSION})
        await probe.aclose()
    except httpx2.HTTPError as e:
        raise unreachable(name, server_url, e, source=source) from None
    www_resource = extract_resource_metadata_from_www_auth(probe) if probe.status_code in (401, 403) else None
    challenged = extract_scope_from_www_auth(probe) if probe.status_code in (401, 403) else None

    prm: ProtectedResourceMetadata | None = None
    for url in build_protected_resource_metadata_discovery_urls(www_resource, server_url):
        status, doc = await fetch_json(http, url)
        if status >= 500 or status == 429:
            raise AuthError(f"server `{name}`: protected resource metadata at `{redact_url(url)}` answered "
                            f"HTTP {status}; try again later")
        if status != 200 or not isinstance(doc, dict):
            continue
        try:
            prm = ProtectedResourceMetadata.model_validate(doc)
        except ValueError:
            continue
        if not check_resource_allowed(requested_resource=resource, configured_resource=str(prm.resource)):
            raise AuthError(f"server `{name}`: its protected resource metadata is for `{prm.resource}`, "
                            f"not `{redact_url(resource)}` (RFC 9728 §3.3); refusing")
        break
    auth_server = str(prm.authorization_servers[0]) if prm else None
    expected = auth_server or f"{httpx2.URL(server_url).scheme}://{httpx2.URL(server_url).netloc.decode()}"

    for url in build_oauth_authorization_server_metadata_discovery_urls(auth_server, server_url):
        status, doc = await fetch_json(http, url)
        if status >= 500:
            raise AuthError(f"server `{name}`: authorization server metadata at `{redact_url(url)}` answered "
                            f"HTTP {status}; try again later")
        if status != 200 or not isinstance(doc, dict):
            continue  # any 4xx or non-JSON: the next candidate
        for key in ("authorization_endpoint", "token_endpoint", "registration_endpoint",
                    "device_authorization_endpoint"):
            value = doc.get(key)
            if isinstance(value, str) and (problem := url_problem(value)):
                raise AuthError(f"server `{name}`: the authorization server's `{key}` {problem}; refusing "
                                f"to use it")
        try:
            asm = OAuthMetadata.model_validate(doc)
        except ValidationError as e:
            first = e.errors()[0]
            raise AuthError(f"server `{name}`: authorization server metadata at `{redact_url(url)}` is "
                            f"invalid (`{'.'.join(str(x) for x in first['loc'])}`: {first['msg']})") from None
        if not issuers_match(str(asm.issuer), expected) and str(doc.get("issuer")) != expected:
            raise AuthError(f"server `{name}`: authorization server metadata names issuer `{asm.issuer}`, "
                            f"expected `{expected}` (RFC 8414 §3.3); refusing")
        return Discovery(resource=str(prm.resource) if prm else resource, challenged_scope=challenged,
                         resource_metadata=prm, authorization_server=str(asm.issuer), server_metadata=asm,
                         server_metadata_raw=doc)
    where = f"`{auth_server}`" if auth_server else f"`{redact_url(expected)}` (no protected resource metadata)"
    raise AuthError(f"server `{name}`: no authorization server metadata found for {where}; is this server "
                    f"using OAuth? (set `auth.mode` to `bearer` or `headers` otherwise)")
