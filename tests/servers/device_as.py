"""A small authorization server written for the tests (starlette), with an MCP server behind it.

The SDK's `mcp.server.auth` has no device grant and always serves its metadata at the root,
so this one covers what it cannot:

    python device_as.py PORT [--prefix /tenant] [--oidc-only] [--no-s256] [--no-registration]
                             [--authorization-endpoint URL] [--device] [--poll-script a,b,c]
                             [--interval S] [--expires-in S] [--issuer-mismatch]
                             [--accept-bearer TOKEN] [--accept-header NAME=VALUE] [--cimd]

- the MCP endpoint is `<prefix>/mcp`; protected resource metadata (RFC 9728) only at
  `/.well-known/oauth-protected-resource<prefix>/mcp` (no `resource_metadata` in the 401);
- the issuer is `http://127.0.0.1:PORT<prefix>`; with `--oidc-only` its metadata exists
  only at `/.well-known/openid-configuration<prefix>` (the OAuth well-known URL is 404);
- `--device`: `device_authorization_endpoint` (RFC 8628); the token endpoint answers the
  device-code polls with `--poll-script` (pending, slow_down, denied, expired, ok), one
  entry per poll, the last repeated; every poll's time is recorded;
- `/authorize` approves at once (auto-consent), with `iss`; tokens start with `SENTINEL`;
- `GET /_stats` returns counters and the poll times.
"""

from __future__ import annotations

import argparse
import itertools
import secrets
import time
from typing import Any

import uvicorn
from mcp.server import MCPServer
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("port", type=int)
    ap.add_argument("--prefix", default="")
    ap.add_argument("--oidc-only", action="store_true")
    ap.add_argument("--no-s256", action="store_true")
    ap.add_argument("--no-registration", action="store_true")
    ap.add_argument("--authorization-endpoint", default=None)
    ap.add_argument("--device", action="store_true")
    ap.add_argument("--poll-script", default="ok")
    ap.add_argument("--interval", type=float, default=0.2)
    ap.add_argument("--expires-in", type=float, default=600)
    ap.add_argument("--issuer-mismatch", action="store_true")
    ap.add_argument("--cimd", action="store_true", help="advertise client_id_metadata_document_supported")
    ap.add_argument("--accept-bearer", default=None, help="also accept this static bearer token")
    ap.add_argument("--accept-header", default=None, help="NAME=VALUE: a header that also grants access")
    args = ap.parse_args()

    base = f"http://127.0.0.1:{args.port}"
    issuer = base + args.prefix
    mcp_path = f"{args.prefix}/mcp"
    script = [s for s in args.poll_script.split(",") if s]
    state: dict[str, Any] = {"polls": [], "registrations": 0, "device_requests": [], "tokens": set(),
                             "codes": {}, "clients": {}, "refresh": 0}

    def metadata() -> dict[str, Any]:
        doc: dict[str, Any] = {
            "issuer": "https://other.example" if args.issuer_mismatch else issuer,
            "authorization_endpoint": args.authorization_endpoint or f"{issuer}/authorize",
            "token_endpoint": f"{issuer}/token",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", DEVICE_GRANT],
            "token_endpoint_auth_methods_supported": ["none"],
            "scopes_supported": ["files:read", "files:write", "admin"],
            "authorization_response_iss_parameter_supported": True,
        }
        if not args.no_s256:
            doc["code_challenge_methods_supported"] = ["S256"]
        if args.cimd:
            doc["client_id_metadata_document_supported"] = True
        if not args.no_registration:
            doc["registration_endpoint"] = f"{issuer}/register"
        if args.device:
            doc["device_authorization_endpoint"] = f"{issuer}/device_authorization"
        return doc

    async def oauth_metadata(request: Request) -> Response:
        if args.oidc_only:
            return JSONResponse({"error": "not here"}, status_code=404)
        return JSONResponse(metadata())

    async def oidc_metadata(request: Request) -> Response:
        return JSONResponse(metadata())

    async def resource_metadata(request: Request) -> Response:
        return JSONResponse({"resource": f"{base}{mcp_path}", "authorization_servers": [issuer],
                             "scopes_supported": ["files:read"]})

    async def register(request: Request) -> Response:
        body = await request.json()
        state["registrations"] += 1
        client_id = "client-" + secrets.token_hex(6)
        state["clients"][client_id] = body
        return JSONResponse({**body, "client_id": client_id, "token_endpoint_auth_method": "none"},
                            status_code=201)

    def issue() -> dict[str, Any]:
        access = "SENTINEL-dev-access-" + secrets.token_hex(12)
        state["tokens"].add(access)
        return {"access_token": access, "token_type": "bearer", "expires_in": 3600,
                "refresh_token": "SENTINEL-dev-refresh-" + secrets.token_hex(12)}

    async def authorize(request: Request) -> Response:
        q = request.query_params
        code = "code-" + secrets.token_hex(8)
        state["codes"][code] = q.get("code_challenge")
        sep = "&" if "?" in q["redirect_uri"] else "?"
        from urllib.parse import urlencode

        query = urlencode({"code": code, "state": q.get("state", ""), "iss": issuer})
        return RedirectResponse(f"{q['redirect_uri']}{sep}{query}", status_code=302)

    async def device_authorization(request: Request) -> Response:
        form = await request.form()
        state["device_requests"].append({k: str(v) for k, v in form.items()})
        return JSONResponse({"device_code": "dc-" + secrets.token_hex(8), "user_code": "WDJB-MJHT",
                             "verification_uri": f"{issuer}/device",
                             "verification_uri_complete": f"{issuer}/device?user_code=WDJB-MJHT",
                             "expires_in": args.expires_in, "interval": args.interval})

    async def token(request: Request) -> Response:
        form = await request.form()
        grant = form.get("grant_type")
        if grant == DEVICE_GRANT:
            state["polls"].append(time.monotonic())
            step = script[min(len(state["polls"]) - 1, len(script) - 1)]
            if step == "ok":
                return JSONResponse(issue())
            error = {"pending": "authorization_pending", "slow_down": "slow_down", "denied": "access_denied",
                     "expired": "expired_token"}[step]
            return JSONResponse({"error": error}, status_code=400)
        if grant == "authorization_code":
            if form.get("code") not in state["codes"]:
                return JSONResponse({"error": "invalid_grant"}, status_code=400)
            return JSONResponse(issue())
        if grant == "refresh_token":
            state["refresh"] += 1
            return JSONResponse(issue())
        return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)

    async def stats(request: Request) -> Response:
        polls = state["polls"]
        return JSONResponse({"registrations": state["registrations"], "polls": len(polls),
                             "poll_gaps": [b - a for a, b in itertools.pairwise(polls)],
                             "device_requests": state["device_requests"], "refresh": state["refresh"]})

    server = MCPServer(name="device-protected")

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    app = server.streamable_http_app(streamable_http_path=mcp_path)
    app.router.routes[0:0] = [
        Route(f"/.well-known/oauth-authorization-server{args.prefix}", oauth_metadata),
        Route(f"/.well-known/openid-configuration{args.prefix}", oidc_metadata),
        Route(f"/.well-known/oauth-protected-resource{mcp_path}", resource_metadata),
        Route(f"{args.prefix}/register", register, methods=["POST"]),
        Route(f"{args.prefix}/authorize", authorize),
        Route(f"{args.prefix}/device_authorization", device_authorization, methods=["POST"]),
        Route(f"{args.prefix}/token", token, methods=["POST"]),
        Route("/_stats", stats),
    ]

    class BearerGate:
        """Only `<prefix>/mcp` is protected: 401 with a challenge (no resource_metadata, so the
        client must find the path-inserted well-known URL itself)."""

        def __init__(self, inner: Any) -> None:
            self.inner = inner

        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http" and scope["path"] == mcp_path:
                headers = dict(scope["headers"])
                auth = headers.get(b"authorization", b"").decode()
                ok = auth.startswith("Bearer ") and (auth[7:] in state["tokens"] or auth[7:] == args.accept_bearer)
                if args.accept_header:
                    hname, hvalue = args.accept_header.split("=", 1)
                    ok = ok or headers.get(hname.lower().encode(), b"").decode() == hvalue
                if not ok:
                    response = JSONResponse({"error": "invalid_token"}, status_code=401,
                                            headers={"WWW-Authenticate": 'Bearer error="invalid_token"'})
                    await response(scope, receive, send)
                    return
            await self.inner(scope, receive, send)

    uvicorn.run(BearerGate(app), host="127.0.0.1", port=args.port, log_level="warning", lifespan="on")


if __name__ == "__main__":
    main()
