"""The supervisor's side of OAuth: one `MonadOAuthProvider` per server for its lifetime.

A fresh provider per connect would forget the token's expiry and the authorization
server's metadata, and send an expired token (then ask the person again) where a refresh
would do. Providers run in supervisor mode: they never open a browser or register a
client; they refresh (RFC 6749 §6), and when they cannot they tell the server's session,
which moves to `needs-auth` with the hint `monad mcp authorize NAME`.

The supervisor is the only process that refreshes, so two processes never spend the same
refresh token: the CLI obtains grants (`authorize`) and removes them (`logout`), and each
of those asks the supervisor to reconnect the server, at which point the provider
re-reads the definition file.

Servers with `flow = "client_credentials"` get the client credentials provider
(`client_credentials.py`) instead: no person, no stored grant; a refusal names the field.
"""

from __future__ import annotations

import json
import logging
import os
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from monad_cli.auth.storage import DefinitionTokenStorage, read_grant

if TYPE_CHECKING:
    import httpx2

    from monad_cli.auth.client_credentials import KeyProvider, SecretProvider
    from monad_cli.auth.provider import MonadOAuthProvider
    from monad_cli.config.schema import ServerSpec
    from monad_cli.core.paths import Paths

log = logging.getLogger("monad.auth")


class Authorizable(Protocol):
    """A server session the OAuth side can tell that its authorization lapsed."""

    def auth_required(self, reason: str, *, end_session: bool = True) -> None:
        """End the session and wait for `monad mcp authorize` (`reason` says why). With
        `end_session=False` (one request lacked scope) a live session goes on; a connect
        that fails on it still ends in `needs-auth` with that reason."""


@dataclass(frozen=True)
class PersonNeeded:
    """Why a server's OAuth needs `monad mcp authorize` before it can go on: `reason`, and
    `scope`, the scopes (space-separated) to ask for when a step-up was refused, else None."""

    reason: str
    scope: str | None = None


class SupervisorAuth:
    """Owns the OAuth providers of the supervisor's http servers, by server name.

    `paths`: where the definitions (and their stored grants) live; `servers`: a live
    name → session lookup (the supervisor's actors), told through `auth_required` when a
    provider cannot authorize requests any more. It never opens a browser, never registers
    a client and never writes a definition itself (the token storage does, under the
    config lock).
    """

    def __init__(self, paths: Paths, servers: Mapping[str, Authorizable]) -> None:
        self.paths = paths
        self.servers = servers
        self.providers: dict[str, tuple[str, MonadOAuthProvider]] = {}
        self.machine: dict[str, tuple[str, SecretProvider | KeyProvider]] = {}
        # Told (server, outcome) after each refresh of a provider made here (telemetry).
        self.on_refresh: Callable[[str, str], None] | None = None

    def http_auth(self, spec: ServerSpec) -> httpx2.Auth | None:
        """The httpx2 Auth for an http server: for `auth.mode = "oauth"` its provider (the
        client credentials one for `flow = "client_credentials"`), else None (bearer and
        headers modes are plain request headers)."""
        if spec.auth.mode != "oauth":
            return None
        if spec.auth.flow == "client_credentials":
            return self.client_credentials(spec)
        return self.provider(spec)

    def person_needed(self, name: str) -> PersonNeeded | None:
        """Why server `name` waits for `monad mcp authorize` (a refresh that failed, a token
        rejected with nothing to refresh it, a refused step-up), or None."""
        held = self.providers.get(name)
        if held is None:
            return None
        provider = held[1]
        if provider.wanted_scope is not None:
            return PersonNeeded(f"a request needs more scope ({provider.wanted_scope})", provider.wanted_scope or None)
        if provider.dead:
            return PersonNeeded(provider.dead)
        return None

    def client_credentials(self, spec: ServerSpec) -> SecretProvider | KeyProvider:
        """The server's client credentials provider: kept while its URL and credentials stay
        the same (a new one after an edit), told to try again on every connect."""
        import hashlib

        from monad_cli.auth.client_credentials import client_credentials_provider

        a = spec.auth
        assert spec.url is not None and a.client_id is not None  # schema.py: the flow needs both
        digest = hashlib.sha256(json.dumps([spec.url, a.client_id, a.client_secret, a.private_key,
                                            a.signing_algorithm, a.issuer, list(a.scopes)]).encode()).hexdigest()
        held = self.machine.get(spec.name)
        if held is not None and held[0] == digest:
            held[1].reset()
            return held[1]
        name = spec.name
        provider = client_credentials_provider(
            name=name, source=spec.source, server_url=spec.url, client_id=a.client_id,
            client_secret=a.client_secret, private_key=a.private_key, algorithm=a.signing_algorithm,
            scopes=a.scopes, issuer=a.issuer, on_needs_auth=lambda reason: self._needs_auth(name, reason))
        self.machine[spec.name] = (digest, provider)
        return provider

    def provider(self, spec: ServerSpec) -> MonadOAuthProvider:
        """The server's provider: made on its first connect, kept while its URL and
        `clientId` stay the same, reloaded from the file when someone else wrote the grant."""
        from monad_cli.auth.provider import MonadOAuthProvider  # the SDK's OAuth, only when used

        assert spec.url is not None
        self._tighten(spec)
        key = f"{spec.url}\0{spec.auth.client_id or ''}"
        held = self.providers.get(spec.name)
        if held is None or held[0] != key:
            name = spec.name
            provider = MonadOAuthProvider(
                name=name, server_url=spec.url, storage=DefinitionTokenStorage(self.paths, name), interactive=False,
                on_needs_auth=lambda reason: self._needs_auth(name, reason),
                on_scope_required=lambda reason: self._needs_auth(name, reason, end_session=False))
            provider.on_refresh = self.on_refresh
            self.providers[spec.name] = (key, provider)
            return provider
        provider = held[1]
        # A new connect: if someone else wrote the grant (`authorize`, `logout`, a person),
        # start from the file again; our own refreshes are already in memory.
        try:
            stored = read_grant(self.paths, spec.name)
        except Exception:  # noqa: BLE001 - the definition moved or vanished: reload anyway
            provider.reload()
            return provider
        ours = {provider.loaded_obtained_at, provider.storage.last_obtained_at}
        if stored.obtained_at not in ours or stored.access_token is None:
            provider.reload()
        return provider

    def _tighten(self, spec: ServerSpec) -> None:
        """A definition file that holds tokens is 0600. monad writes it so; if a person
        loosened it, fix it and say so (as OpenSSH refuses keys that are "too open")."""
        path = self.paths.home / spec.source
        try:
            mode = stat.S_IMODE(path.stat().st_mode)
            if mode & 0o077 and spec.auth.holds_tokens:
                os.chmod(path, 0o600)
                log.warning("`%s` holds tokens but was mode %o; set it to 600", spec.source, mode)
        except OSError:
            pass

    def _needs_auth(self, name: str, reason: str, *, end_session: bool = True) -> None:
        log.warning("server %s: %s", name, reason)
        server = self.servers.get(name)
        if server is not None:
            server.auth_required(reason, end_session=end_session)
