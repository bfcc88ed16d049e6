"""OAuth client credentials for servers no person authorizes (CI scripts, headless daemons).

`auth.flow = "client_credentials"`: the supervisor asks the authorization server for a token
with the client's own credentials (RFC 6749 §4.4), authenticated with `client_secret_basic`
(`auth.clientSecret`, RFC 6749 §2.3.1) or `private_key_jwt` (`auth.privateKey`, RFC 7523 §2.2
and the MCP extension `io.modelcontextprotocol/oauth-client-credentials`, SEP-1046). It is
built on the SDK's `ClientCredentialsOAuthProvider` and `PrivateKeyJWTOAuthProvider`
(discovery: RFC 9728 protected resource metadata, RFC 8414 metadata, the `issuer` check,
RFC 8707 `resource`), with what a long-lived supervisor needs around them:

- renewal: the grant has no refresh token (§4.4.3), so a token is fetched again shortly before
  it expires (10 % of its lifetime, at most 60 s early) and after a 401 on one thought valid;
- the lock is held around the token check and renewal only, never across a request (the
  SDK's own flow holds it for the whole request, which would serialize every tool call);
- a refused grant never raises into the session: the reason, naming the field to fix and never
  its value, goes to `on_needs_auth` and the request is sent bare, so the server's own 401 ends
  the connect and the server waits in `needs-auth` until its definition changes or
  `monad mcp reconnect`;
- the tokens live in memory only: a new one costs one request and no person, and the
  definition file keeps no secret when its credentials are `${VAR}` references;
- the authorization server the first token came from is kept for the provider's lifetime
  (`auth.issuer` names it up front): the credentials are never sent to another one.
"""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Any

import httpx2
import jwt
from mcp.client.auth import OAuthFlowError, OAuthTokenError
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
    SignedJWTParameters,
)
from mcp.client.auth.oauth2 import OAuthContext
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER

from monad_cli.auth.provider import EarlyRefreshContext

log = logging.getLogger("monad.auth")

ASSERTION_LIFETIME_S = 300
# RFC 7518 §3.1 names; EdDSA per RFC 8037.
_CURVE_ALGORITHMS = {"secp256r1": "ES256", "secp384r1": "ES384", "secp521r1": "ES512"}


class MemoryTokenStorage:
    """The SDK's `TokenStorage` in memory: client credentials tokens are never written down."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        pass


def signing_algorithm(private_key_pem: str) -> str:
    """The JWS algorithm for a PEM private key: ES256/384/512 for EC P-256/384/521, RS256 for
    RSA, EdDSA for Ed25519. Raises ValueError for anything else or an unreadable key (the
    message never holds key material)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

    try:
        key = serialization.load_pem_private_key(private_key_pem.encode(), password=None)
    except (ValueError, TypeError):
        raise ValueError("is not a readable PEM private key (PKCS#8 or traditional, unencrypted)") from None
    if isinstance(key, rsa.RSAPrivateKey):
        return "RS256"
    if isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name in _CURVE_ALGORITHMS:
        return _CURVE_ALGORITHMS[key.curve.name]
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return "EdDSA"
    raise ValueError(f"is a {type(key).__name__.removeprefix('_')} key; use RSA, EC P-256/384/521 or Ed25519")


# What a refused or impossible grant raises inside the flow: the SDK's flow errors (token
# endpoint refusals, issuer or resource mismatches), pydantic's ValueError for a malformed
# answer, PyJWT's for a key that cannot sign.
_REFUSED = (OAuthFlowError, ValueError, jwt.PyJWTError)


class _Supervised:
    """The flow monad runs around the SDK's client credentials providers (module docstring)."""

    context: OAuthContext
    _initialized: bool
    _issuer: str | None

    def _supervise(self, *, name: str, source: str, secret_field: str, scopes: Sequence[str],
                   on_needs_auth: Callable[[str], None]) -> None:
        old: Any = self.context
        # The SDK builds a plain OAuthContext; ours renews a little early.
        self.context = EarlyRefreshContext(
            server_url=old.server_url, client_metadata=old.client_metadata, storage=old.storage,
            redirect_handler=old.redirect_handler, callback_handler=old.callback_handler)
        self.name = name
        self.source = source
        self.secret_field = secret_field
        self.explicit_scope = " ".join(scopes) or None
        self.on_needs_auth = on_needs_auth
        self.problem: str | None = None  # why the credentials are unusable until `reset()`
        self.unusable: str | None = None  # a key that cannot sign: only a new definition helps
        self._token_error: tuple[int, str | None] | None = None

    def reset(self) -> None:
        """A new connect (`monad mcp reconnect`): try the grant again."""
        self.problem = self.unusable

    # -- the SDK's hooks ---------------------------------------------------------------
    async def _perform_authorization(self) -> httpx2.Request:
        # The SDK takes the scope from the 401 challenge or the metadata; explicit
        # `auth.scopes` win, as they do for the other flows.
        if self.explicit_scope:
            self.context.client_metadata.scope = self.explicit_scope
        request: httpx2.Request = await super()._perform_authorization()  # type: ignore[misc]
        return request

    async def _handle_token_response(self, response: httpx2.Response) -> None:
        if response.status_code not in (200, 201):
            await response.aread()
            error: str | None = None
            try:
                body = json.loads(response.content)
                error = str(body.get("error"))[:64] if isinstance(body, dict) and body.get("error") else None
            except ValueError:
                pass
            self._token_error = (response.status_code, error)
        await super()._handle_token_response(response)  # type: ignore[misc]
        metadata = self.context.oauth_metadata
        if self._issuer is None and metadata is not None:
            # Keep the authorization server these credentials were accepted by.
            self._issuer = str(metadata.issuer)

    # -- the flow ------------------------------------------------------------------------
    def _explain(self, exc: BaseException) -> str:
        where = f"`{self.source}`"
        if isinstance(exc, OAuthTokenError) and self._token_error is not None:
            status, error = self._token_error
            self._token_error = None
            if error == "invalid_client" or (error is None and status == 401):
                return (f"the authorization server refused the client credentials (HTTP {status} "
                        f"{error or 'Unauthorized'}); check `auth.{self.secret_field}` and `auth.clientId` in {where}")
            if error == "invalid_scope":
                return f"the authorization server refused the scope (invalid_scope); check `auth.scopes` in {where}"
            if error in ("unauthorized_client", "unsupported_grant_type"):
                return (f"the authorization server does not let this client use the client credentials grant "
                        f"({error}); check `auth.clientId` in {where}")
            return f"the client credentials token request failed (HTTP {status} {error or ''}".rstrip() + ")"
        if isinstance(exc, (ValueError, jwt.PyJWTError)) and self.secret_field == "privateKey":
            return f"`auth.privateKey` in {where} cannot sign the client assertion: {exc}"
        text = str(exc).split(":")[0][:160] or type(exc).__name__
        return f"client credentials: {text}"

    def _fail(self, exc: BaseException) -> str:
        self.problem = self._explain(exc)
        log.warning("server %s: %s", self.name, self.problem)
        return self.problem

    def _add_token(self, request: httpx2.Request) -> str | None:
        tokens = self.context.current_tokens
        if tokens is None or not self.context.is_token_valid():
            return None
        request.headers["Authorization"] = f"Bearer {tokens.access_token}"
        return tokens.access_token

    async def _auth_flow(self, request: httpx2.Request) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        async with self.context.lock:
            if not self._initialized:
                await self._initialize()  # type: ignore[attr-defined]
            self.context.protocol_version = request.headers.get(MCP_PROTOCOL_VERSION_HEADER)
            if (not self.context.is_token_valid() and self.problem is None
                    and self.context.oauth_metadata is not None):
                # Renew before expiry at the token endpoint found earlier: no 401 first.
                try:
                    response = yield await self._perform_authorization()
                    await self._handle_token_response(response)
                except _REFUSED as exc:
                    self.on_needs_auth(self._fail(exc))
            sent = self._add_token(request)
        response = yield request
        if response.status_code != 401:
            return
        if self.problem is not None:
            self.on_needs_auth(self.problem)
            return
        async with self.context.lock:
            current = self.context.current_tokens
            renewed = current is not None and current.access_token != sent and self.context.is_token_valid()
            if not renewed:
                # The token was rejected (or there was none): discover the authorization server
                # (the 401 says where) and ask for a new one through the SDK's flow.
                self.context.clear_tokens()
        if renewed:
            self._add_token(request)
            yield request
            return
        flow: AsyncGenerator[httpx2.Request, httpx2.Response] = super()._auth_flow(request)  # type: ignore[misc]
        try:
            outgoing = await flow.__anext__()
            while True:
                response = yield outgoing
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        except _REFUSED as exc:
            self.on_needs_auth(self._fail(exc))
        finally:
            await flow.aclose()
        # Sent bare once more so the caller sees the resource server's own 401, not the token
        # endpoint's answer.
        request.headers.pop("Authorization", None)
        yield request


class SecretProvider(_Supervised, ClientCredentialsOAuthProvider):
    """Client credentials with `client_secret_basic` (RFC 6749 §2.3.1)."""


class KeyProvider(_Supervised, PrivateKeyJWTOAuthProvider):
    """Client credentials with `private_key_jwt` (RFC 7523 §2.2): each token request carries a
    fresh assertion (`iss` = `sub` = the client id, `aud` = the issuer, a `jti`, 300 s life)."""


def client_credentials_provider(*, name: str, source: str, server_url: str, client_id: str,
                                client_secret: str | None = None, private_key: str | None = None,
                                algorithm: str | None = None, scopes: Sequence[str] = (),
                                issuer: str | None = None,
                                on_needs_auth: Callable[[str], None]) -> SecretProvider | KeyProvider:
    """The httpx2 Auth for one client credentials server; exactly one of `client_secret` and
    `private_key` (PEM) is given. `algorithm` (a JWS `alg`) defaults to the key's own (see
    `signing_algorithm`). `issuer`: the only authorization server the credentials may go to;
    None keeps the first one discovered. Never raises for bad credentials: they are reported
    through `on_needs_auth` on the first request."""
    storage = MemoryTokenStorage()
    scope = " ".join(scopes) or None
    provider: SecretProvider | KeyProvider
    unusable: str | None = None
    with warnings.catch_warnings():
        # Without `issuer` the SDK warns that the server picks the authorization server;
        # monad pins the first one it sees instead (module docstring).
        warnings.simplefilter("ignore")
        if private_key is None:
            assert client_secret is not None
            provider = SecretProvider(server_url, storage, client_id, client_secret, scope=scope, issuer=issuer)
        else:
            try:
                alg = algorithm or signing_algorithm(private_key)
            except ValueError as e:
                alg, unusable = "RS256", str(e)
            params = SignedJWTParameters(issuer=client_id, subject=client_id, signing_key=private_key,
                                         signing_algorithm=alg, lifetime_seconds=ASSERTION_LIFETIME_S)
            provider = KeyProvider(server_url, storage, client_id, params.create_assertion_provider(), scope=scope,
                                   issuer=issuer)
    provider._supervise(name=name, source=source, secret_field="clientSecret" if private_key is None else "privateKey",
                        scopes=scopes, on_needs_auth=on_needs_auth)
    if unusable is not None:
        provider.unusable = provider.problem = f"`auth.privateKey` in `{source}` {unusable}"
    return provider
