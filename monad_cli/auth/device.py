"""The OAuth 2.0 device authorization grant (RFC 8628), which the MCP SDK does not have.

For machines without a browser (servers, CI runners): monad asks the authorization
server's `device_authorization_endpoint` for a device code (§3.1-3.2), shows the person the
`verification_uri` and `user_code` (§3.3), and polls the token endpoint (§3.4-3.5):

- `authorization_pending` → keep polling at `interval` (default 5 s);
- `slow_down` → the interval grows by 5 s, for good;
- `access_denied`, `expired_token`, or any other error → stop with a clear message;
- a network timeout → the interval doubles (§3.5);
- never past `expires_in`.

The tokens, the client information and the metadata go into the same storage the
supervisor's provider reads, so it refreshes them like any other grant.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
from mcp.client.auth.utils import handle_registration_response
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from monad_cli.auth.discovery import Discovery
from monad_cli.auth.scopes import select_scopes
from monad_cli.auth.storage import DefinitionTokenStorage
from monad_cli.auth.urls import url_problem
from monad_cli.core.errors import AuthError
from monad_cli.core.messages import transport_error

DEVICE_CODE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
DEFAULT_INTERVAL_S = 5.0
SLOW_DOWN_STEP_S = 5.0
DEFAULT_EXPIRES_S = 600.0


@dataclass
class DeviceAuthorization:
    """The §3.2 response. `interval` and `expires_in` are seconds."""

    device_code: str
    user_code: str
    verification_uri: str
    verification_uri_complete: str | None
    expires_in: float
    interval: float


async def register_device_client(http: httpx2.AsyncClient, found: Discovery, *,
                                 name: str) -> OAuthClientInformationFull:
    """Dynamic client registration (RFC 7591) for the device grant: a public native client."""
    endpoint = found.server_metadata.registration_endpoint
    if endpoint is None:
        raise AuthError(f"server `{name}`: the authorization server offers no dynamic client registration; "
                        f"register monad there and run `monad mcp authorize {name} --client-id ID`")
    body = {"client_name": "monad", "grant_types": [DEVICE_CODE_GRANT, "refresh_token"],
            "response_types": [], "token_endpoint_auth_method": "none", "application_type": "native",
            "redirect_uris": []}
    try:
        response = await http.post(str(endpoint), json=body)
    except httpx2.HTTPError as e:
        raise AuthError(f"server `{name}`: client registration failed: {transport_error(e)}") from None
    try:
        info = await handle_registration_response(response)
    except Exception as e:  # noqa: BLE001 - the SDK's OAuthRegistrationError and friends
        raise AuthError(f"server `{name}`: client registration failed ({str(e)[:200]})") from None
    info.issuer = found.authorization_server
    return info


def _client_auth(client: OAuthClientInformationFull, data: dict[str, str]) -> dict[str, str]:
    """Headers for token-endpoint client authentication (RFC 6749 §2.3.1); mutates `data`."""
    data["client_id"] = client.client_id
    if client.client_secret and client.token_endpoint_auth_method == "client_secret_post":
        data["client_secret"] = client.client_secret
    elif client.client_secret:
        import base64
        from urllib.parse import quote

        pair = f"{quote(client.client_id, safe='')}:{quote(client.client_secret, safe='')}"
        return {"Authorization": f"Basic {base64.b64encode(pair.encode()).decode()}"}
    return {}


async def request_device_code(http: httpx2.AsyncClient, found: Discovery, client: OAuthClientInformationFull,
                              *, scope: str | None, name: str) -> DeviceAuthorization:
    """§3.1: POST to the device authorization endpoint."""
    endpoint = found.device_authorization_endpoint
    assert endpoint is not None
    data = {"resource": found.resource}  # RFC 8707 §2
    if scope:
        data["scope"] = scope
    headers = _client_auth(client, data)
    try:
        r = await http.post(endpoint, data=data, headers=headers)
        body = r.json() if r.content else {}
    except (httpx2.HTTPError, ValueError) as e:
        raise AuthError(f"server `{name}`: the device authorization request failed: {transport_error(e)}") from None
    if r.status_code != 200 or not isinstance(body, dict):
        err = body.get("error") if isinstance(body, dict) else None
        raise AuthError(f"server `{name}`: the device authorization request was refused "
                        f"({err or f'HTTP {r.status_code}'})")
    try:
        auth = DeviceAuthorization(
            device_code=str(body["device_code"]), user_code=str(body["user_code"]),
            verification_uri=str(body.get("verification_uri") or body["verification_url"]),
            verification_uri_complete=body.get("verification_uri_complete"),
            expires_in=float(body.get("expires_in") or DEFAULT_EXPIRES_S),
            interval=float(body.get("interval") or DEFAULT_INTERVAL_S))
    except (KeyError, TypeError, ValueError):
        raise AuthError(f"server `{name}`: the device authorization response lacks `device_code`, "
                        f"`user_code` or `verification_uri` (RFC 8628 §3.2)") from None
    for key in ("verification_uri", "verification_uri_complete"):
        value = getattr(auth, key)
        if value is not None and (problem := url_problem(value)):
            raise AuthError(f"server `{name}`: the `{key}` {problem}; refusing to show it")
    return auth


async def poll_for_token(http: httpx2.AsyncClient, found: Discovery, client: OAuthClientInformationFull,
                         auth: DeviceAuthorization, *, name: str,
                         sleep: Callable[[float], Awaitable[Any]] = anyio.sleep) -> OAuthToken:
    """§3.4-3.5: poll until the person approves, refuses, or the code expires."""
    token_endpoint = str(found.server_metadata.token_endpoint)
    deadline = time.monotonic() + auth.expires_in
    interval = auth.interval
    while True:
        await sleep(interval)
        if time.monotonic() > deadline:
            break
        data = {"grant_type": DEVICE_CODE_GRANT, "device_code": auth.device_code, "resource": found.resource}
        headers = _client_auth(client, data)
        try:
            r = await http.post(token_endpoint, data=data, headers=headers)
        except httpx2.TimeoutException:
            interval *= 2  # §3.5: back off on a timeout
            continue
        except httpx2.HTTPError as e:
            raise AuthError(f"server `{name}`: polling the token endpoint failed: {transport_error(e)}") from None
        try:
            body = r.json()
        except ValueError:
            body = {}
        if r.status_code == 200:
            try:
                return OAuthToken.model_validate(body)
            except ValueError:
                raise AuthError(f"server `{name}`: the token endpoint's answer is not a token response "
                                f"(RFC 6749 §5.1)") from None
        error = body.get("error") if isinstance(body, dict) else None
        if error == "authorization_pending":
            continue
        if error == "slow_down":
            interval += SLOW_DOWN_STEP_S
            continue
        if error == "access_denied":
            raise AuthError(f"server `{name}`: the authorization was denied; run `monad mcp authorize {name} "
                            f"--flow device` to try again")
        if error == "expired_token":
            break
        raise AuthError(f"server `{name}`: the token endpoint refused the device code "
                        f"({str(error or f'HTTP {r.status_code}')[:64]})")
    raise AuthError(f"server `{name}`: the device code expired before it was approved; run "
                    f"`monad mcp authorize {name} --flow device` again")


async def device_flow(http: httpx2.AsyncClient, found: Discovery, storage: DefinitionTokenStorage, *,
                      name: str, scopes: Sequence[str] | None,
                      show: Callable[[DeviceAuthorization], None]) -> OAuthToken:
    """The whole grant; stores client information, tokens and metadata in `storage`."""
    if found.device_authorization_endpoint is None:
        raise AuthError(f"server `{name}`: the authorization server does not offer the device flow "
                        f"(no `device_authorization_endpoint`); use `--flow loopback`")
    client = await storage.get_client_info()
    if client is None:
        client = await register_device_client(http, found, name=name)
        await storage.set_client_info(client)
    prm = found.resource_metadata
    scope = select_scopes(explicit=scopes, challenged=found.challenged_scope,
                          resource_scopes=prm.scopes_supported if prm else None,
                          server_scopes=found.server_metadata.scopes_supported)
    auth = await request_device_code(http, found, client, scope=scope, name=name)
    show(auth)
    token = await poll_for_token(http, found, client, auth, name=name)
    if token.scope is None:
        token.scope = scope  # RFC 6749 §5.1: omitted means as requested
    storage.bind(_DiscoveredContext(found))
    await storage.set_tokens(token)
    return token


class _DiscoveredContext:
    """The three things `DefinitionTokenStorage.set_tokens` reads from an SDK context."""

    def __init__(self, found: Discovery) -> None:
        self.oauth_metadata = found.server_metadata
        self.protected_resource_metadata = found.resource_metadata
        self.auth_server_url = found.authorization_server
        self._resource = found.resource

    def get_resource_url(self) -> str:
        return self._resource
