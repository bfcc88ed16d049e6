"""The SDK's `OAuthClientProvider` with what monad adds.

`MonadOAuthProvider` is an `httpx2.Auth`. Two modes:

- interactive (`monad mcp authorize`): the SDK's own flow - discovery (RFC 9728, RFC 8414,
  OpenID), registration (RFC 7591 / CIMD), PKCE S256, `state`, RFC 9207 `iss`, RFC 8707
  `resource` - with monad's scope rules, the S256 requirement and the URL checks applied to
  every request the flow makes, and at most `MAX_STEP_UPS` step-ups;
- supervisor (`interactive=False`): never a browser, never a registration. It sends the
  stored token, refreshes it (proactively before expiry, or once after a 401), and when it
  cannot, lets the 401 through and reports why through `on_needs_auth`. The lock is held
  only around the token check and refresh, not across requests, so a slow tool call does
  not queue the others, and exactly one refresh happens per expiry however many requests
  race (rotating refresh tokens are revoked by many servers when reused).

Both restore the absolute expiry and the metadata from storage (`storage.py`), closing the
SDK's restart gap.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass

import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.oauth2 import OAuthContext
from mcp.client.auth.utils import extract_field_from_www_auth, extract_scope_from_www_auth, union_scopes
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER

from monad_cli.auth.scopes import select_scopes
from monad_cli.auth.storage import DefinitionTokenStorage
from monad_cli.auth.urls import url_problem
from monad_cli.core.errors import AuthError

log = logging.getLogger("monad.auth")

MAX_STEP_UPS = 2
# Refresh this long before the expiry: 10 % of the lifetime, at most 60 s, so a request
# sent just before the expiry does not arrive just after it.
REFRESH_MARGIN_MAX_S = 60.0
REFRESH_MARGIN_FRACTION = 0.1
# The supervisor's provider has no redirect; the SDK's model still wants one.
NO_REDIRECT = "http://127.0.0.1/unused"


@dataclass
class EarlyRefreshContext(OAuthContext):
    """OAuthContext whose token counts as expired a little early (`REFRESH_MARGIN_*`)."""

    token_lifetime: float | None = None

    def update_token_expiry(self, token: OAuthToken) -> None:
        super().update_token_expiry(token)
        self.token_lifetime = float(token.expires_in) if token.expires_in is not None else None

    def is_token_valid(self) -> bool:
        if not (self.current_tokens and self.current_tokens.access_token):
            return False
        if not self.token_expiry_time:
            return True
        margin = min(REFRESH_MARGIN_MAX_S, REFRESH_MARGIN_FRACTION * (self.token_lifetime or 0.0))
        return time.time() < self.token_expiry_time - margin


def client_metadata(*, redirect_uri: str, scope: str | None) -> OAuthClientMetadata:
    """RFC 7591 metadata monad registers with: a native public client (RFC 8252 §8.4: a
    native app cannot keep a secret)."""
    return OAuthClientMetadata(redirect_uris=[redirect_uri], client_name="monad", scope=scope,  # type: ignore[list-item]
                               token_endpoint_auth_method="none", application_type="native",
                               grant_types=["authorization_code", "refresh_token"], response_types=["code"])


def check_server_metadata(asm: OAuthMetadata) -> None:
    """Refuse an authorization server before any request to it: every endpoint must pass
    `url_problem` and S256 must be advertised (MCP spec,
    basic/authorization "Authorization Code Protection"; RFC 7636).

    Raises `AuthError`.
    """
    for key in ("authorization_endpoint", "token_endpoint", "registration_endpoint"):
        value = getattr(asm, key, None)
        if value is not None and (problem := url_problem(str(value))):
            raise AuthError(f"the authorization server's `{key}` {problem}; refusing to use it")
    if "S256" not in (asm.code_challenge_methods_supported or []):
        raise AuthError(f"the authorization server `{asm.issuer}` does not advertise PKCE `S256` "
                        f"(code_challenge_methods_supported); monad refuses to authorize without it")


class MonadOAuthProvider(OAuthClientProvider):
    """See the module docstring. `name` is the server name (for messages only)."""

    def __init__(self, *, name: str, server_url: str, storage: DefinitionTokenStorage,
                 interactive: bool, redirect_uri: str = NO_REDIRECT, scopes: Sequence[str] | None = None,
                 redirect_handler: Callable[[str], Awaitable[None]] | None = None,
                 callback_handler: Callable[[], Awaitable[AuthorizationCodeResult]] | None = None,
                 on_needs_auth: Callable[[str], None] | None = None,
                 on_scope_required: Callable[[str], None] | None = None,
                 client_metadata_url: str | None = None) -> None:
        super().__init__(server_url, client_metadata(redirect_uri=redirect_uri, scope=None), storage,
                         redirect_handler=redirect_handler, callback_handler=callback_handler,
                         client_metadata_url=client_metadata_url)
        old = self.context
        # The SDK builds a plain OAuthContext; swap in ours (early refresh).
        self.context: EarlyRefreshContext = EarlyRefreshContext(
            server_url=old.server_url, client_metadata=old.client_metadata, storage=old.storage,
            redirect_handler=old.redirect_handler, callback_handler=old.callback_handler,
            client_metadata_url=client_metadata_url)
        storage.bind(self.context)
        self.name = name
        self.storage = storage
        self.interactive = interactive
        self.explicit_scopes = list(scopes or [])
        self.on_needs_auth = on_needs_auth or (lambda reason: None)
        self.on_scope_required = on_scope_required or (lambda reason: None)
        # The scopes (space-separated) a refused step-up asks the person to grant, or None.
        self.wanted_scope: str | None = None
        self.challenged_scope: str | None = None
        self.step_ups = 0
        self.refreshes = 0
        self.refresh_error: str | None = None
        # Told (server name, outcome: ok | invalid_grant | error) after each refresh answer.
        self.on_refresh: Callable[[str, str], None] | None = None
        self.loaded_obtained_at: float | None = None
        self._metadata_checked: OAuthMetadata | None = None
        self.dead: str | None = None  # why the grant is unusable until the next authorize

    # -- state ---------------------------------------------------------------------------
    async def _initialize(self) -> None:
        await super()._initialize()
        if self.storage.fresh:
            return
        stored = self.storage.stored()
        self.loaded_obtained_at = stored.obtained_at
        if stored.expires_at is not None:
            self.context.token_expiry_time = stored.expires_at
            if stored.obtained_at is not None:
                self.context.token_lifetime = max(0.0, stored.expires_at - stored.obtained_at)
        # Restore what discovery found, so a refresh goes to the right token endpoint with the
        # right `resource` (RFC 8707 §2: on refresh too) instead of guessing `{origin}/token`.
        if stored.server_metadata:
            try:
                self.context.oauth_metadata = OAuthMetadata.model_validate(stored.server_metadata)
            except ValueError:
                log.warning("server %s: stored authorization server metadata is unreadable", self.name)
        if stored.resource_metadata:
            try:
                self.context.protected_resource_metadata = ProtectedResourceMetadata.model_validate(
                    stored.resource_metadata)
            except ValueError:
                log.warning("server %s: stored protected resource metadata is unreadable", self.name)
        self.context.auth_server_url = stored.authorization_server

    def reload(self) -> None:
        """Forget the in-memory state; the next request reads the definition file again."""
        self._initialized = False
        self.dead = None
        self.wanted_scope = None

    async def _refresh_token(self) -> httpx2.Request:
        self.refreshes += 1
        self.refresh_error = None
        return await super()._refresh_token()

    async def _handle_refresh_response(self, response: httpx2.Response) -> bool:
        if response.status_code != 200:
            await response.aread()
            try:
                body = response.json()
                self.refresh_error = str(body.get("error") or f"HTTP {response.status_code}")[:64]
            except ValueError:
                self.refresh_error = f"HTTP {response.status_code}"
        ok = await super()._handle_refresh_response(response)
        if self.on_refresh is not None:
            # A fixed vocabulary: the server's own error text never becomes a metric label.
            self.on_refresh(self.name, "ok" if ok else "invalid_grant" if self.refresh_error == "invalid_grant"
                            else "error")
        return ok

    # -- interactive ---------------------------------------------------------------------
    async def _perform_authorization_code_grant(self) -> tuple[str, str]:
        asm = self.context.oauth_metadata
        if asm is None:
            raise AuthError(f"server `{self.name}`: no usable authorization server metadata was found "
                            f"(RFC 8414); cannot authorize")
        check_server_metadata(asm)
        prm = self.context.protected_resource_metadata
        # The SDK would fall back to the authorization server's whole scope catalogue; monad's
        # order is explicit > challenge > the resource's scopes_supported (MCP spec,
        # basic/authorization "Scope Selection Strategy").
        self.context.client_metadata.scope = select_scopes(
            explicit=self.explicit_scopes, challenged=self.challenged_scope,
            resource_scopes=prm.scopes_supported if prm else None, server_scopes=asm.scopes_supported,
            previous=self.context.current_tokens.scope if self.context.current_tokens else None)
        return await super()._perform_authorization_code_grant()

    async def _interactive_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        flow = super()._auth_flow(request)
        try:
            outgoing = await flow.__anext__()
            while True:
                if outgoing is not request:
                    self._check_flow_request(outgoing)
                response = yield outgoing
                if outgoing is request and response.status_code in (401, 403):
                    if (response.status_code == 403
                            and extract_field_from_www_auth(response, "error") == "insufficient_scope"):
                        self.step_ups += 1
                        if self.step_ups > MAX_STEP_UPS:
                            raise AuthError(f"server `{self.name}` keeps asking for more scope "
                                            f"({MAX_STEP_UPS} step-ups already); giving up")
                    self.challenged_scope = extract_scope_from_www_auth(response)
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        finally:
            await flow.aclose()

    def _check_flow_request(self, outgoing: httpx2.Request) -> None:
        """Every request the flow makes goes to https, or http on loopback; nothing is
        sent to an authorization server that fails `check_server_metadata`."""
        problem = url_problem(str(outgoing.url))
        if problem:
            raise AuthError(f"server `{self.name}`: the authorization flow wanted to contact a URL that "
                            f"{problem}; refused")
        asm = self.context.oauth_metadata
        if outgoing.method == "POST" and asm is None:
            raise AuthError(f"server `{self.name}`: no usable authorization server metadata was found "
                            f"(RFC 8414: the documents were missing or invalid); cannot authorize")
        if asm is not None and asm is not self._metadata_checked:
            check_server_metadata(asm)
            self._metadata_checked = asm

    # -- supervisor ----------------------------------------------------------------------
    def _token_problem(self) -> str | None:
        if self.context.is_token_valid():
            return None
        if self.dead:
            return self.dead
        if self.context.current_tokens:
            return f"the stored token expired and cannot be refreshed; run `monad mcp authorize {self.name}`"
        return f"not authorized yet; run `monad mcp authorize {self.name}`"

    async def _supervisor_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        async with self.context.lock:
            if not self._initialized:
                await self._initialize()
            self.context.protocol_version = request.headers.get(MCP_PROTOCOL_VERSION_HEADER)
            if not self.context.is_token_valid() and self.context.can_refresh_token() and not self.dead:
                response = yield await self._refresh_token()
                if not await self._handle_refresh_response(response):
                    self._mark_dead()
            problem = self._token_problem()
            sent = self.context.current_tokens.access_token if problem is None and self.context.current_tokens \
                else None
        if problem is not None:
            # Send it bare: if the server answers 401 that reaches the session, and the actor
            # learns why; a server that answers anything else is not asking for a token.
            response = yield request
            if response.status_code == 401:
                self.on_needs_auth(problem)
            return
        self._add_auth_header(request)
        response = yield request
        if response.status_code == 401:
            # One refresh and one retry, never a loop - unless another request already refreshed
            # while this one was in flight, in which case its token is used.
            async with self.context.lock:
                current = self.context.current_tokens
                if current is not None and current.access_token == sent and not self.dead:
                    if self.context.can_refresh_token():
                        refresh_response = yield await self._refresh_token()
                        if not await self._handle_refresh_response(refresh_response):
                            self._mark_dead()
                    else:
                        self.dead = (f"the server rejected the stored token (401) and there is no refresh "
                                     f"token; run `monad mcp authorize {self.name}`")
                problem = None if self.context.current_tokens and not self.dead else self._token_problem()
            if problem is not None:
                self.on_needs_auth(problem)
                # httpx2 hands the caller the flow's last response, which would be the token
                # endpoint's error; send the request once more, bare, so the caller sees the
                # resource server's own 401.
                request.headers.pop("Authorization", None)
                yield request
                return
            self._add_auth_header(request)
            response = yield request
            if response.status_code == 401:
                self.on_needs_auth(f"the server rejected a freshly refreshed token (401); run "
                                   f"`monad mcp authorize {self.name}`")
        elif response.status_code == 403 and extract_field_from_www_auth(response, "error") == "insufficient_scope":
            self._scope_refused(response)

    def _scope_refused(self, response: httpx2.Response) -> None:
        """A step-up (MCP authorization, "Scope Challenge Handling") needs a person. One
        operation lacking scope does not take the whole server offline: that request fails
        (with the 403), the others go on. The scope to ask for is the union of what was
        granted and what the challenge names (SEP-2350: escalating one operation must not
        drop another's grant); `wanted_scope` holds it and `on_scope_required` is told."""
        challenged = extract_scope_from_www_auth(response)
        granted = self.context.current_tokens.scope if self.context.current_tokens else None
        self.wanted_scope = union_scopes(granted, challenged) or ""
        hint = "".join(f" --scope {s}" for s in self.wanted_scope.split())
        reason = (f"the server needs more scope{f' ({challenged})' if challenged else ''} for a request; run "
                  f"`monad mcp authorize {self.name}{hint}`")
        log.warning("server %s: %s", self.name, reason)
        self.on_scope_required(reason)

    def _mark_dead(self) -> None:
        # invalid_grant (or any refresh failure) is final for this grant: never retry it, a
        # rotating refresh token presented twice revokes the whole grant at many servers.
        self.dead = f"token refresh failed ({self.refresh_error or 'error'}); run `monad mcp authorize {self.name}`"

    def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        return self._interactive_flow(request) if self.interactive else self._supervisor_flow(request)
