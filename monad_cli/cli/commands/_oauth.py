"""The `auth` table `monad mcp add` writes for `--oauth` / `--client-credentials` (docs/auth.md)."""

from __future__ import annotations

from typing import Any

from monad_cli.core.errors import InvalidInput


def oauth_table(*, client_credentials: bool, client_id: str | None, client_secret: str | None,
                 private_key: str | None, scopes: list[str] | None) -> dict[str, Any]:
    """The `auth` table of `add --oauth` / `--client-credentials` (docs/auth.md)."""
    auth: dict[str, Any] = {"mode": "oauth"}
    if client_credentials:
        if not client_id:
            raise InvalidInput("--client-credentials needs --client-id")
        if (client_secret is None) == (private_key is None):
            raise InvalidInput("--client-credentials needs one of --client-secret (client_secret_basic) and "
                               "--private-key (private_key_jwt)")
        auth["flow"] = "client_credentials"
    elif private_key is not None:
        raise InvalidInput("--private-key is for --client-credentials")
    for key, value in (("clientId", client_id), ("clientSecret", client_secret), ("privateKey", private_key)):
        if value is not None:
            auth[key] = value
    if scopes:
        auth["scopes"] = list(scopes)
    return auth
