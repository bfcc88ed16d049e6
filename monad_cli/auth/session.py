"""What the supervisor plugs into `Supervisor.http_auth(spec)` for `auth.mode = "oauth"`.

One `MonadOAuthProvider` per server for the supervisor's lifetime (notes/mcp-sdk.md §1.7:
a fresh provider per connect would forget the expiry and ask the person again), created in
supervisor mode: it never opens a browser or registers a client; it refreshes, and when it
cannot it tells the server's actor, which moves to `needs-auth` with the hint
`monad mcp authorize NAME`.

The supervisor is the only process that refreshes (TK-2's single owner): the CLI obtains
grants (`authorize`) and removes them (`logout`), and each of those asks the supervisor to
reconnect the server, at which point the provider re-reads the definition file.
"""

from __future__ import annotations

import logging
import os
import stat
from typing import TYPE_CHECKING, Any

from monad_cli.auth.provider import MonadOAuthProvider
from monad_cli.auth.storage import DefinitionTokenStorage, read_grant

if TYPE_CHECKING:
    from monad_cli.config.schema import ServerSpec
    from monad_cli.supervisor.supervisor import Supervisor

log = logging.getLogger("monad.auth")


class SupervisorAuth:
    """Providers by server name; `provider(spec)` is `Supervisor.http_auth` for oauth."""

    def __init__(self, supervisor: Supervisor) -> None:
        self.sup = supervisor
        self.providers: dict[str, tuple[str, MonadOAuthProvider]] = {}

    def provider(self, spec: ServerSpec) -> MonadOAuthProvider:
        assert spec.url is not None
        self._tighten(spec)
        key = f"{spec.url}\0{spec.auth.client_id or ''}"
        held = self.providers.get(spec.name)
        if held is None or held[0] != key:
            storage = DefinitionTokenStorage(self.sup.paths, spec.name)
            name = spec.name

            def needs_auth(reason: str) -> None:
                self._needs_auth(name, reason)

            provider = MonadOAuthProvider(name=name, server_url=spec.url, storage=storage, interactive=False,
                                          on_needs_auth=needs_auth)
            self.providers[spec.name] = (key, provider)
            return provider
        provider = held[1]
        # A new connect: if someone else wrote the grant (`authorize`, `logout`, a person),
        # start from the file again; our own refreshes are already in memory.
        try:
            stored = read_grant(self.sup.paths, spec.name)
        except Exception:  # noqa: BLE001 - the definition moved or vanished: reload anyway
            provider.reload()
            return provider
        ours = {provider.loaded_obtained_at, provider.storage.last_obtained_at}
        if stored.obtained_at not in ours or stored.access_token is None:
            provider.reload()
        return provider

    def _tighten(self, spec: ServerSpec) -> None:
        """TK-5: a definition file that holds tokens is 0600. monad writes it so; if a person
        loosened it, fix it and say so (as OpenSSH refuses keys that are "too open")."""
        path = self.sup.paths.home / spec.source
        try:
            mode = stat.S_IMODE(path.stat().st_mode)
            if mode & 0o077 and spec.auth.holds_tokens:
                os.chmod(path, 0o600)
                log.warning("`%s` holds tokens but was mode %o; set it to 600", spec.source, mode)
        except OSError:
            pass

    def _needs_auth(self, name: str, reason: str) -> None:
        actor: Any = self.sup.actors.get(name)
        log.warning("server %s: %s", name, reason)
        if actor is not None and hasattr(actor, "auth_required"):
            actor.auth_required(reason)
