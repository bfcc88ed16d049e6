"""The `auth` table of an `oauth` server (docs/auth.md): the flow, the client's identity and
its credentials, checked field by field; schema.py's `validate` runs `check_oauth`.

Flows: `loopback` (authorization code with PKCE, RFC 8252), `device` (RFC 8628), and
`client_credentials` (RFC 6749 §4.4) for clients no person authorizes: `clientId` and exactly
one of `clientSecret` (`client_secret_basic`, RFC 6749 §2.3.1) or `privateKey` (a PEM key for
`private_key_jwt`, RFC 7523 §2.2), both expanded from the environment (`${VAR}`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from monad_cli.config.fields import FieldContext, expand_field

OAUTH_FLOWS = ("loopback", "device", "client_credentials")
# JWS algorithms (RFC 7518 §3.1; EdDSA, RFC 8037) a private_key_jwt assertion may use.
SIGNING_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
_TEXT_FIELDS = ("clientId", "clientSecret", "privateKey", "signingAlgorithm", "issuer", "clientMetadataUrl")


def check_oauth(ctx: FieldContext, auth: Mapping[str, Any], environ: Mapping[str, str] | None) -> dict[str, Any]:
    """Check an oauth `auth` table; returns the fields whose expanded value differs from the
    text as written (`clientSecret`, `privateKey`). Raises `ConfigError` naming the field;
    no message holds a secret's value."""
    flow = auth.get("flow", "loopback")
    if flow not in OAUTH_FLOWS:
        raise ctx.error("auth.flow", f"must be one of {', '.join(OAUTH_FLOWS)}; got {flow!r}")
    scopes = auth.get("scopes", [])
    if not isinstance(scopes, list) or not all(isinstance(x, str) and x for x in scopes):
        raise ctx.error("auth.scopes", "must be a list of scope names")
    for key in _TEXT_FIELDS:
        if key in auth and not isinstance(auth[key], str):
            raise ctx.error(f"auth.{key}", "must be a string")
    cimd = auth.get("clientMetadataUrl")
    if cimd is not None and not (cimd.startswith("https://") and urlsplit(cimd).path not in ("", "/")):
        raise ctx.error("auth.clientMetadataUrl", "must be an https URL with a path (the client ID "
                                                  "metadata document monad is known by)")
    if "clientSecret" in auth and "clientId" not in auth:
        raise ctx.error("auth.clientSecret", "needs `clientId` beside it")
    expanded: dict[str, Any] = {}
    for key in ("clientSecret", "privateKey"):
        if key in auth:
            value = expand_field(ctx, f"auth.{key}", auth[key], environ)
            if value != auth[key]:
                expanded[key] = value
    if flow == "client_credentials":
        _check_client_credentials(ctx, auth, {**auth, **expanded}, environ is not None)
    else:
        for key in ("privateKey", "signingAlgorithm", "issuer"):
            if key in auth:
                raise ctx.error(f"auth.{key}", 'only for `flow = "client_credentials"`')
    return expanded


def _check_client_credentials(ctx: FieldContext, auth: Mapping[str, Any], values: Mapping[str, Any],
                              expanded: bool) -> None:
    if not auth.get("clientId"):
        raise ctx.error("auth.clientId", "the client credentials flow needs the client's `clientId`")
    if ("clientSecret" in auth) == ("privateKey" in auth):
        raise ctx.error("auth", "the client credentials flow needs exactly one of `clientSecret` "
                                "(client_secret_basic) and `privateKey` (private_key_jwt)")
    if "clientMetadataUrl" in auth:
        raise ctx.error("auth.clientMetadataUrl", "only for the browser flow; a client credentials client is "
                                                  "known by its `clientId`")
    key = "clientSecret" if "clientSecret" in auth else "privateKey"
    if expanded and not values[key]:
        raise ctx.error(f"auth.{key}", "empty (is the variable it names set?)")
    if key == "privateKey" and expanded and not _looks_like_pem(values[key]):
        raise ctx.error("auth.privateKey", "must be a PEM private key (`-----BEGIN PRIVATE KEY-----` ...), "
                                           "unencrypted")
    alg = auth.get("signingAlgorithm")
    if alg is not None and key != "privateKey":
        raise ctx.error("auth.signingAlgorithm", "only for `privateKey` (private_key_jwt)")
    if alg is not None and alg not in SIGNING_ALGORITHMS:
        raise ctx.error("auth.signingAlgorithm", f"must be one of {', '.join(SIGNING_ALGORITHMS)}; got {alg!r}")
    issuer = auth.get("issuer")
    if issuer is not None and urlsplit(issuer).scheme not in ("https", "http"):
        raise ctx.error("auth.issuer", "must be the authorization server's issuer URL (https://...)")


def _looks_like_pem(value: str) -> bool:
    text = value.strip()
    return text.startswith("-----BEGIN ") and "PRIVATE KEY-----" in text.splitlines()[0] \
        and text.endswith("PRIVATE KEY-----")
