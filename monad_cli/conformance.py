"""`python -m monad_cli.conformance URL`: a client for `@modelcontextprotocol/conformance`.

The conformance CLI starts a scenario's server and runs this with its URL. It drives
monad's own OAuth code - `MonadOAuthProvider` in interactive mode, so the scope rules, the
S256 requirement, the URL checks and bounded step-up are what is tested - with a headless
"browser" (GET the authorization URL, read `code`/`state`/`iss` from the redirect's
`Location`) and in-memory storage. It connects, lists the tools and calls the first one.
Exit status 0 on success. Environment: `MCP_CONFORMANCE_SCENARIO`,
`MCP_CONFORMANCE_PROTOCOL_VERSION`, `MCP_CONFORMANCE_CONTEXT` (JSON; `client_id` and
`client_secret` for pre-registration).

Not part of the CLI: nothing imports this module.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthToken
from mcp_types import Implementation

from monad_cli import __version__
from monad_cli.auth.provider import MonadOAuthProvider

REDIRECT_URI = "http://localhost:3000/callback"


class MemoryStorage:
    """`TokenStorage` in memory, with the two extra members `MonadOAuthProvider` uses."""

    fresh = True

    def __init__(self, client: OAuthClientInformationFull | None) -> None:
        self.tokens: OAuthToken | None = None
        self.client = client

    def bind(self, context: Any) -> None:
        pass

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


async def run(url: str) -> None:
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION", "2025-11-25")
    client = None
    if context.get("client_id"):
        secret = context.get("client_secret")
        client = OAuthClientInformationFull(client_id=context["client_id"], client_secret=secret,
                                            redirect_uris=[REDIRECT_URI],  # type: ignore[list-item]
                                            token_endpoint_auth_method="client_secret_basic" if secret else "none")
    pending: dict[str, AuthorizationCodeResult] = {}

    async def redirect_handler(authorization_url: str) -> None:
        async with httpx2.AsyncClient(follow_redirects=False, timeout=30) as http:
            response = await http.get(authorization_url)
        params = {k: v[0] for k, v in parse_qs(urlsplit(response.headers.get("location", "")).query).items()}
        pending["result"] = AuthorizationCodeResult(code=params.get("code", ""), state=params.get("state"),
                                                    iss=params.get("iss"))

    async def callback_handler() -> AuthorizationCodeResult:
        return pending.pop("result")

    provider = MonadOAuthProvider(name="conformance", server_url=url, storage=MemoryStorage(client),  # type: ignore[arg-type]
                                  interactive=True, redirect_uri=REDIRECT_URI, redirect_handler=redirect_handler,
                                  callback_handler=callback_handler)
    mode: Any = "auto" if version >= "2026-07-28" else "legacy"
    async with (httpx2.AsyncClient(auth=provider, timeout=httpx2.Timeout(30.0, read=300.0)) as http,
                Client(streamable_http_client(url, http_client=http), mode=mode, cache=None,
                       client_info=Implementation(name="monad", version=__version__)) as session):
        tools = (await session.list_tools()).tools
        if tools:
            await session.call_tool(tools[0].name, {})


def main() -> int:
    if len(sys.argv) < 2:
        print("usage: python -m monad_cli.conformance URL", file=sys.stderr)
        return 2
    async def bounded() -> None:
        with anyio.fail_after(25):  # the harness gives 30 s; fail before it kills us
            await run(sys.argv[-1])

    anyio.run(bounded)
    return 0


if __name__ == "__main__":
    sys.exit(main())
