"""An MCP server protected by a real OAuth authorization server: the SDK's `mcp.server.auth`
(`MCPServer(auth_server_provider=...)`) with an in-memory provider written for the tests.

    python oauth_as.py PORT [--ttl S] [--refreshed-ttl S] [--no-rotate] [--state-mode ok|wrong]
                            [--iss-mode ok|wrong|none] [--scopes-required a,b] [--registration/--no-registration]
                            [--client-credentials ID] [--client-secret S] [--jwt-public-key PEM-FILE]

- `/authorize` approves at once (a headless browser only has to follow the redirect);
- every token starts with `SENTINEL` so tests can grep outputs, logs and the journal for it;
- access tokens live `--ttl` seconds (`--refreshed-ttl`, when given, for those a refresh
  issues); refresh tokens are single use, and presenting a used
  one revokes the whole grant (what rotating authorization servers do, RFC 9700 §4.14);
- tools: `echo(text)` (read-only) and `append(text)` (no hints; `appended` in the stats);
- `GET /_stats` counts authorizations and refreshes; `POST /_revoke` revokes every grant;
  `POST /_expire_access` invalidates the access tokens only.
- `--client-credentials ID`: the token endpoint also serves the client credentials grant
  (RFC 6749 §4.4) for the confidential client ID, authenticated with `client_secret_basic`
  (`--client-secret`, RFC 6749 §2.3.1) or `private_key_jwt` (`--jwt-public-key`, RFC 7523
  §2.2: `iss` = `sub` = ID, `aud` = the issuer, `exp` in the future, each `jti` once). The
  SDK's token handler knows no such grant, so an ASGI wrapper answers it before the SDK does
  and adds it to the metadata. Its access tokens are `SENTINEL-cc-…`, live `--ttl`, and come
  without a refresh token (RFC 6749 §4.4.3).
"""

from __future__ import annotations

import argparse
import base64
import binascii
import json
import secrets
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote

from mcp.server import MCPServer
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from mcp_types import ToolAnnotations
from starlette.requests import Request
from starlette.responses import JSONResponse

PRE_REGISTERED = "monad-preregistered"


class Provider:
    def __init__(self, args: argparse.Namespace, issuer: str) -> None:
        self.args = args
        self.issuer = issuer
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, tuple[AccessToken, str]] = {}   # token -> (token, grant id)
        self.refresh: dict[str, tuple[RefreshToken, str]] = {}
        self.used_refresh: dict[str, str] = {}
        self.revoked_grants: set[str] = set()
        self.stats = {"authorize": 0, "code_exchange": 0, "refresh": 0, "refresh_rejected": 0,
                      "reuse_detected": 0, "registrations": 0, "authorize_scopes": [], "resources": [],
                      "client_credentials": 0, "client_credentials_rejected": 0, "client_credentials_auth": [],
                      "client_credentials_resources": [], "appended": []}
        self.seen_jti: set[str] = set()

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        if client_id == PRE_REGISTERED:
            # A pre-registered public client; loopback redirect URIs may use any port (RFC 8252 §7.3).
            return _AnyLoopbackClient(client_id=client_id, token_endpoint_auth_method="none",
                                      redirect_uris=["http://127.0.0.1/"])
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        self.stats["registrations"] += 1
        assert client_info.client_id
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        self.stats["authorize"] += 1
        self.stats["authorize_scopes"].append(params.scopes)
        self.stats["resources"].append(params.resource)
        code = "code-" + secrets.token_hex(12)
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or [], expires_at=time.time() + 300, client_id=client.client_id or "",
            code_challenge=params.code_challenge, redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly, resource=params.resource)
        state = params.state if self.args.state_mode == "ok" else "not-the-state-you-sent"
        iss = {"ok": self.issuer, "wrong": "https://evil.example", "none": None}[self.args.iss_mode]
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=state, iss=iss)

    async def load_authorization_code(self, client: Any, authorization_code: str) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None, grant: str,
               ttl: float) -> OAuthToken:
        access = "SENTINEL-access-" + secrets.token_hex(16)
        refresh = "SENTINEL-refresh-" + secrets.token_hex(16)
        self.access[access] = (AccessToken(token=access, client_id=client_id, scopes=scopes,
                                           expires_at=int(time.time() + ttl) if ttl else None,
                                           resource=resource), grant)
        self.refresh[refresh] = (RefreshToken(token=refresh, client_id=client_id, scopes=scopes,
                                              resource=resource), grant)
        return OAuthToken(access_token=access, refresh_token=refresh, scope=" ".join(scopes),
                          expires_in=int(ttl) if ttl else None)

    async def exchange_authorization_code(self, client: Any, authorization_code: AuthorizationCode) -> OAuthToken:
        self.stats["code_exchange"] += 1
        del self.codes[authorization_code.code]
        return self._issue(client.client_id, authorization_code.scopes, authorization_code.resource,
                           "grant-" + secrets.token_hex(6), self.args.ttl)

    async def load_refresh_token(self, client: Any, refresh_token: str) -> RefreshToken | None:
        if refresh_token in self.used_refresh:
            # Reuse of a rotated refresh token: revoke the whole grant.
            self.stats["reuse_detected"] += 1
            self.revoked_grants.add(self.used_refresh[refresh_token])
            self.stats["refresh_rejected"] += 1
            return None
        held = self.refresh.get(refresh_token)
        if held is None or held[1] in self.revoked_grants:
            self.stats["refresh_rejected"] += 1
            return None
        return held[0]

    async def exchange_refresh_token(self, client: Any, refresh_token: RefreshToken, scopes: list[str]) -> OAuthToken:
        self.stats["refresh"] += 1
        _, grant = self.refresh.pop(refresh_token.token)
        if not self.args.no_rotate:
            self.used_refresh[refresh_token.token] = grant
        ttl = self.args.ttl if self.args.refreshed_ttl is None else self.args.refreshed_ttl
        token = self._issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource, grant, ttl)
        if self.args.no_rotate:
            # Keep the same refresh token usable.
            self.refresh[refresh_token.token] = self.refresh.pop(token.refresh_token)  # type: ignore[arg-type]
            token.refresh_token = None
        return token

    async def load_access_token(self, token: str) -> AccessToken | None:
        held = self.access.get(token)
        if held is None or held[1] in self.revoked_grants:
            return None
        if held[0].expires_at is not None and held[0].expires_at < time.time():
            return None
        return held[0]

    async def revoke_token(self, token: Any) -> None:
        for table in (self.access, self.refresh):
            held = table.get(token.token)
            if held:
                self.revoked_grants.add(held[1])


class ClientCredentialsGrant:
    """ASGI wrapper: `POST /token` with `grant_type=client_credentials` is answered here, and
    the authorization server metadata advertises the grant and its two client
    authentication methods; everything else goes to the SDK's app unchanged."""

    def __init__(self, app: Any, provider: Provider, args: argparse.Namespace, issuer: str) -> None:
        self.app = app
        self.provider = provider
        self.client_id: str = args.client_credentials
        self.secret: str | None = args.client_secret
        self.public_key = Path(args.jwt_public_key).read_text() if args.jwt_public_key else None
        self.issuer = issuer
        self.ttl = args.ttl

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/token" and scope["method"] == "POST":
            body = b""
            while True:
                message = await receive()
                body += message.get("body", b"")
                if not message.get("more_body"):
                    break
            form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
            if form.get("grant_type") == "client_credentials":
                status, answer = self.token(form, dict(scope["headers"]))
                await _send_json(send, status, answer)
                return
            replayed = False

            async def replay() -> Any:
                nonlocal replayed
                if replayed:
                    return await receive()
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}

            await self.app(scope, replay, send)
            return
        if scope["type"] == "http" and scope["path"] == "/.well-known/oauth-authorization-server":
            await self.app(scope, receive, _AmendMetadata(send))
            return
        await self.app(scope, receive, send)

    def token(self, form: dict[str, str], headers: dict[bytes, bytes]) -> tuple[int, dict[str, Any]]:
        stats = self.provider.stats
        method, problem = self._authenticate(form, headers.get(b"authorization", b"").decode())
        if problem is not None:
            stats["client_credentials_rejected"] += 1
            return 401, {"error": "invalid_client", "error_description": problem}
        stats["client_credentials"] += 1
        stats["client_credentials_auth"].append(method)
        stats["client_credentials_resources"].append(form.get("resource"))
        scopes = form.get("scope", "mcp:read").split()
        access = "SENTINEL-cc-" + secrets.token_hex(16)
        self.provider.access[access] = (AccessToken(
            token=access, client_id=self.client_id, scopes=scopes, resource=form.get("resource"),
            expires_at=int(time.time() + self.ttl) if self.ttl else None), "cc-" + secrets.token_hex(6))
        answer: dict[str, Any] = {"access_token": access, "token_type": "Bearer", "scope": " ".join(scopes)}
        if self.ttl:
            answer["expires_in"] = int(self.ttl)
        return 200, answer

    def _authenticate(self, form: dict[str, str], authorization: str) -> tuple[str, str | None]:
        if authorization.startswith("Basic "):
            try:
                client_id, _, secret = base64.b64decode(authorization[6:]).decode().partition(":")
            except (binascii.Error, UnicodeDecodeError):
                return "client_secret_basic", "malformed Basic credentials"
            if unquote(client_id) != self.client_id or self.secret is None or \
                    not secrets.compare_digest(unquote(secret), self.secret):
                return "client_secret_basic", "wrong client id or secret"
            return "client_secret_basic", None
        if form.get("client_assertion_type") == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer":
            import jwt

            if self.public_key is None:
                return "private_key_jwt", "private_key_jwt is not configured for this client"
            try:
                claims = jwt.decode(form.get("client_assertion", ""), self.public_key,
                                    algorithms=["ES256", "RS256"], audience=self.issuer,
                                    options={"require": ["iss", "sub", "aud", "exp", "jti"]})
            except jwt.PyJWTError as e:
                return "private_key_jwt", f"assertion rejected: {type(e).__name__}"
            if claims["iss"] != self.client_id or claims["sub"] != self.client_id:
                return "private_key_jwt", "assertion iss/sub is not the client id"
            if claims["jti"] in self.provider.seen_jti:
                return "private_key_jwt", "assertion replayed (jti seen before)"
            self.provider.seen_jti.add(claims["jti"])
            return "private_key_jwt", None
        return "none", "client authentication is required"


class _AmendMetadata:
    """Adds the client credentials grant to the SDK's metadata document on its way out."""

    def __init__(self, send: Any) -> None:
        self.send = send
        self.start: dict[str, Any] | None = None
        self.body = b""

    async def __call__(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.start = message
            return
        self.body += message.get("body", b"")
        if message.get("more_body"):
            return
        assert self.start is not None
        doc = json.loads(self.body)
        doc["grant_types_supported"] = [*doc.get("grant_types_supported", []), "client_credentials"]
        doc["token_endpoint_auth_methods_supported"] = [
            *doc.get("token_endpoint_auth_methods_supported", []), "private_key_jwt"]
        doc["token_endpoint_auth_signing_alg_values_supported"] = ["ES256", "RS256"]
        body = json.dumps(doc).encode()
        headers = [(k, v) for k, v in self.start["headers"] if k.lower() != b"content-length"]
        await self.send({**self.start, "headers": [*headers, (b"content-length", str(len(body)).encode())]})
        await self.send({"type": "http.response.body", "body": body})


async def _send_json(send: Any, status: int, body: dict[str, Any]) -> None:
    data = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"cache-control", b"no-store"),
                            (b"content-length", str(len(data)).encode())]})
    await send({"type": "http.response.body", "body": data})


class _AnyLoopbackClient(OAuthClientInformationFull):
    def validate_redirect_uri(self, redirect_uri: Any) -> Any:
        if redirect_uri is not None and str(redirect_uri).startswith("http://127.0.0.1:"):
            return redirect_uri
        return super().validate_redirect_uri(redirect_uri)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("--ttl", type=float, default=3600)
    ap.add_argument("--refreshed-ttl", type=float)
    ap.add_argument("--no-rotate", action="store_true")
    ap.add_argument("--state-mode", choices=["ok", "wrong"], default="ok")
    ap.add_argument("--iss-mode", choices=["ok", "wrong", "none"], default="ok")
    ap.add_argument("--scopes-required", default="mcp:read")
    ap.add_argument("--client-credentials", metavar="CLIENT_ID")
    ap.add_argument("--client-secret")
    ap.add_argument("--jwt-public-key", metavar="PEM_FILE")
    args = ap.parse_args()

    base = f"http://127.0.0.1:{args.port}"
    provider = Provider(args, base)
    required = [s for s in args.scopes_required.split(",") if s]
    mcp = MCPServer(
        name="oauth-protected", auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=base, resource_server_url=f"{base}/mcp", validate_token_resource=False,
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=["mcp:read", "mcp:write", "admin", "offline_access"],
                default_scopes=["mcp:read"]),
            revocation_options=RevocationOptions(enabled=True), required_scopes=required or None))

    @mcp.tool(annotations=ToolAnnotations(readOnlyHint=True))
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    @mcp.tool()
    def append(text: str) -> str:
        """Append the text to the server's list (no hints: not safe to send twice)."""
        provider.stats["appended"].append(text)
        return f"appended {text}"

    @mcp.custom_route("/_stats", methods=["GET"])
    async def stats(request: Request) -> JSONResponse:
        return JSONResponse(provider.stats)

    @mcp.custom_route("/_revoke", methods=["POST"])
    async def revoke(request: Request) -> JSONResponse:
        grants = {g for _, g in provider.access.values()} | {g for _, g in provider.refresh.values()}
        provider.revoked_grants |= grants
        return JSONResponse({"revoked": len(grants)})

    @mcp.custom_route("/_expire_access", methods=["POST"])
    async def expire_access(request: Request) -> JSONResponse:
        # The access tokens stop working before their announced expiry (a key rotation, say);
        # the refresh tokens stay good.
        n = len(provider.access)
        provider.access.clear()
        return JSONResponse({"expired": n})

    if not args.client_credentials:
        mcp.run("streamable-http", host="127.0.0.1", port=args.port)
        return
    import uvicorn

    app = ClientCredentialsGrant(mcp.streamable_http_app(host="127.0.0.1"), provider, args, base)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
