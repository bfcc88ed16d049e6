"""Durable OAuth state, kept beside the server in its definition file (no keyring).

The state lives in the server's `auth` table (atom) or `auth` object (agents.json), which
`write_atomic` keeps at mode 0600:

    [auth]                      # written by the person
    mode = "oauth"
    clientId = "..."            # optional: a pre-registered client (skips registration)
    clientSecret = "..."        # optional, with clientId
    scopes = ["files:read"]     # optional: explicit scopes win
    flow = "loopback"           # or "device"

    [auth.tokens]               # written by monad (`monad mcp logout` removes these tables)
    accessToken = "..."
    refreshToken = "..."
    [auth.grant]                # not secret: what the tokens are and when they expire
    tokenType = "Bearer"
    scope = "files:read offline_access"
    expiresAt = 1764470000.0    # absolute, seconds since the epoch (UTC); absent = no expiry
    obtainedAt = 1764466400.0
    authorizationServer = "https://as.example.com"   # the issuer the tokens came from
    resource = "https://mcp.example.com/mcp"         # RFC 8707 resource they are bound to
    [auth.registration]         # RFC 7591 client information (only after dynamic registration)
    [auth.serverMetadata]       # RFC 8414 authorization server metadata, as discovered
    [auth.resourceMetadata]     # RFC 9728 protected resource metadata, as discovered

Why the expiry is absolute and the metadata is kept: the SDK's provider only knows an
expiry it computed itself and forgets the metadata on exit, so after a restart it would
send the expired token, get a 401 and ask the person again instead of refreshing.

Every write is a locked read-modify-write through `config.edits.update_server`, so a
concurrent edit is never lost and a person's comments in the atom survive.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from monad_cli.config.edits import read_definition, update_server
from monad_cli.config.schema import OAUTH_STATE_KEYS
from monad_cli.core.paths import Paths

if TYPE_CHECKING:  # the SDK is imported lazily: this module is reachable from commands
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

log = logging.getLogger("monad.auth")


@dataclass
class StoredGrant:
    """What is stored for one server. `expires_at` is seconds since the epoch or None."""

    access_token: str | None = None
    refresh_token: str | None = None
    scope: str | None = None
    expires_at: float | None = None
    obtained_at: float | None = None
    authorization_server: str | None = None
    resource: str | None = None
    registration: dict[str, Any] | None = None
    server_metadata: dict[str, Any] | None = None
    resource_metadata: dict[str, Any] | None = None
    config: dict[str, Any] = field(default_factory=dict)  # the person's part of `auth`


def _table(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def read_grant(paths: Paths, name: str) -> StoredGrant:
    """The stored state of server `name`. Raises `NotFound` if it is not defined."""
    _, raw = read_definition(paths, name)
    auth: dict[str, Any] = _table(raw.get("auth"))
    tokens = _table(auth.get("tokens"))
    grant = _table(auth.get("grant"))
    expires = grant.get("expiresAt")
    obtained = grant.get("obtainedAt")
    return StoredGrant(
        access_token=tokens.get("accessToken") or None,
        refresh_token=tokens.get("refreshToken") or None,
        scope=grant.get("scope"),
        expires_at=float(expires) if isinstance(expires, (int, float)) else None,
        obtained_at=float(obtained) if isinstance(obtained, (int, float)) else None,
        authorization_server=grant.get("authorizationServer"),
        resource=grant.get("resource"),
        registration=_table(auth.get("registration")) or None,
        server_metadata=_table(auth.get("serverMetadata")) or None,
        resource_metadata=_table(auth.get("resourceMetadata")) or None,
        config={k: v for k, v in auth.items() if k not in OAUTH_STATE_KEYS},
    )


def _plain(value: Any) -> Any:
    """JSON-ish data TOML can hold (no None: TOML has no null)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_plain(v) for v in value if v is not None]
    return value


_ANY = object()


class GrantChanged(Exception):
    """Another process wrote a newer grant; this write was skipped."""


def write_state(paths: Paths, name: str, updates: dict[str, dict[str, Any] | None], *,
                expect_obtained_at: Any = _ANY) -> None:
    """Set (or, with None, delete) state tables under the server's `auth`, under the lock.

    With `expect_obtained_at`, the write happens only if the stored grant is still the one
    read before (compare-and-swap on `grant.obtainedAt`); else `GrantChanged`. This keeps a
    refresh of an old grant from overwriting one that `monad mcp authorize` just wrote.
    """

    def mutate(defn: Any) -> None:
        auth = defn.get("auth")
        if auth is None:
            return
        if expect_obtained_at is not _ANY:
            grant = auth.get("grant")
            current = grant.get("obtainedAt") if grant is not None else None
            if current != expect_obtained_at:
                raise GrantChanged()
        _apply_state(auth, updates)

    update_server(paths, name, {}, mutate=mutate)


def clear_state(paths: Paths, name: str) -> None:
    """Remove every stored token and OAuth state table (`monad mcp logout`)."""
    write_state(paths, name, {k: None for k in OAUTH_STATE_KEYS})


class DefinitionTokenStorage:
    """The SDK's `TokenStorage` protocol over the definition file.

    `fresh=True` (what `monad mcp authorize` uses) starts from nothing: stored tokens and a
    stored registration are ignored (the registration names the redirect URI of an earlier
    run), and whatever the new flow obtains is written. A person-configured `clientId`
    always wins over a registration; `client_id` is one given for this flow (`--client-id`).

    `staged=True` writes nothing until `commit()`: a flow that fails half-way (registered,
    then refused a token) leaves the definition exactly as it was.

    `bind(context)` lets `set_tokens` also persist the metadata the provider discovered.
    """

    def __init__(self, paths: Paths, name: str, *, fresh: bool = False, staged: bool = False,
                 client_id: str | None = None) -> None:
        self.paths = paths
        self.name = name
        self.fresh = fresh
        self.staged = staged
        self.client_id = client_id
        self._pending: dict[str, dict[str, Any] | None] = {}
        self._context: Any = None
        self._tokens: OAuthToken | None = None
        self._client: OAuthClientInformationFull | None = None
        self.writes = 0
        self.last_obtained_at: float | None = None  # the `obtainedAt` this object last wrote
        self._seen: Any = _ANY  # the `obtainedAt` of the grant the tokens in memory came from

    def bind(self, context: Any) -> None:
        self._context = context

    def stored(self) -> StoredGrant:
        return read_grant(self.paths, self.name)

    async def get_tokens(self) -> OAuthToken | None:
        from mcp.shared.auth import OAuthToken

        if self.fresh:
            return self._tokens
        g = self.stored()
        self._seen = g.obtained_at
        if not g.access_token:
            return None
        remaining = None if g.expires_at is None else max(0, int(g.expires_at - time.time()))
        return OAuthToken(access_token=g.access_token, refresh_token=g.refresh_token, scope=g.scope,
                          expires_in=remaining)

    async def set_tokens(self, tokens: OAuthToken) -> None:
        now = time.time()
        self._tokens = tokens
        ctx = self._context
        grant: dict[str, Any] = {"tokenType": tokens.token_type, "scope": tokens.scope, "obtainedAt": now,
                                 "expiresAt": now + int(tokens.expires_in) if tokens.expires_in is not None
                                 else None}
        updates: dict[str, dict[str, Any] | None] = {
            "tokens": {"accessToken": tokens.access_token, "refreshToken": tokens.refresh_token},
        }
        if ctx is not None:
            grant["authorizationServer"] = (str(ctx.oauth_metadata.issuer) if ctx.oauth_metadata
                                            else ctx.auth_server_url)
            grant["resource"] = ctx.get_resource_url()
            if ctx.oauth_metadata is not None:
                updates["serverMetadata"] = ctx.oauth_metadata.model_dump(mode="json", exclude_none=True)
            if ctx.protected_resource_metadata is not None:
                updates["resourceMetadata"] = ctx.protected_resource_metadata.model_dump(
                    mode="json", exclude_none=True)
        updates["grant"] = grant
        if self.staged:
            self._pending.update(updates)
        else:
            try:
                await _write(self.paths, self.name, updates, expect_obtained_at=_ANY if self.fresh else self._seen)
            except GrantChanged:
                # A newer grant is on disk (a concurrent `authorize`); keep it. The next connect
                # re-reads the file and uses it.
                log.warning("server %s: a newer grant was stored meanwhile; not overwriting it", self.name)
                return
        self.writes += 1
        self.last_obtained_at = self._seen = now

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        from mcp.shared.auth import OAuthClientInformationFull

        g = self.stored()
        configured = configured_client(self._config(g))
        if configured is not None:
            return configured
        if self.fresh:
            return self._client
        if g.registration and g.registration.get("client_id"):
            return OAuthClientInformationFull.model_validate(g.registration)
        return None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self._client = client_info
        if configured_client(self._config(self.stored())) is not None:
            return  # the person's clientId is configuration; never overwrite it
        registration: dict[str, dict[str, Any] | None] = {
            "registration": client_info.model_dump(mode="json", exclude_none=True)}
        if self.staged:
            self._pending.update(registration)
            return
        await _write(self.paths, self.name, registration)

    def _config(self, grant: StoredGrant) -> dict[str, Any]:
        return {**grant.config, "clientId": self.client_id} if self.client_id else grant.config

    def commit(self) -> None:
        """Write what a staged flow obtained, with `auth.mode = "oauth"` (and its `clientId`),
        in one locked read-modify-write; the rest of the definition stays as it is then."""
        pending, client_id = dict(self._pending), self.client_id

        def mutate(defn: Any) -> None:
            if "auth" not in defn:
                defn["auth"] = {}
            auth = defn["auth"]
            auth["mode"] = "oauth"
            if client_id:
                auth["clientId"] = client_id
            _apply_state(auth, pending)

        update_server(self.paths, self.name, {}, mutate=mutate)
        self._pending.clear()


def _apply_state(auth: Any, updates: Mapping[str, Any]) -> None:
    """Write OAuth state keys into an atom's `[auth]` table; None removes a key."""
    for key, value in updates.items():
        assert key in OAUTH_STATE_KEYS
        if value is None:
            auth.pop(key, None)
        else:
            auth[key] = _plain(value)


def configured_client(config: dict[str, Any]) -> OAuthClientInformationFull | None:
    """The pre-registered client named by `clientId` (and `clientSecret`), or None.

    `clientSecret` may be a `${VAR}` reference: it is expanded from this process's
    environment, as the definition's other fields are. Raises `AuthError` naming
    the field (never a value) when a variable is unset."""
    from mcp.shared.auth import OAuthClientInformationFull

    from monad_cli.config.expansion import ExpansionError, expand
    from monad_cli.core.errors import AuthError

    client_id = config.get("clientId")
    if not isinstance(client_id, str) or not client_id:
        return None
    secret = config.get("clientSecret")
    secret = secret if isinstance(secret, str) and secret else None
    if secret is not None:
        try:
            secret = expand(secret, os.environ) or None
        except ExpansionError as e:
            raise AuthError(f"`auth.clientSecret`: {e}") from None
    # A confidential client authenticates with HTTP Basic (RFC 6749 §2.3.1: MUST support).
    return OAuthClientInformationFull(client_id=client_id, client_secret=secret,
                                      token_endpoint_auth_method="client_secret_basic" if secret else "none")


async def _write(paths: Paths, name: str, updates: dict[str, dict[str, Any] | None], *,
                 expect_obtained_at: Any = _ANY) -> None:
    import functools

    import anyio

    # The config lock may wait (another writer); never block the event loop on it.
    await anyio.to_thread.run_sync(functools.partial(write_state, paths, name, updates,
                                                     expect_obtained_at=expect_obtained_at))
