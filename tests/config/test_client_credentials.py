"""`auth.flow = "client_credentials"`: the definition's checks (each error names the file, the
server and the field, never a secret), `${VAR}` expansion of the credentials, their
redaction, `monad mcp add --client-credentials`, and the provider's refusal reasons."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from monad_cli.config.schema import validate
from monad_cli.core.errors import ConfigError
from monad_cli.core.redact import redact_definition, redact_text, secret_values

URL = "https://mcp.example.com/mcp"
PEM = "-----BEGIN PRIVATE KEY-----\nSENTINELkeymaterial\n-----END PRIVATE KEY-----\n"


def spec_of(auth: dict[str, Any], environ: dict[str, str] | None = None) -> Any:
    return validate({"url": URL, "auth": {"mode": "oauth", "flow": "client_credentials", **auth}},
                    name="ci", source="atoms/mcp/ci.toml", environ={} if environ is None else environ)


def test_secret_and_key_expand_and_are_redacted() -> None:
    spec = spec_of({"clientId": "ci", "clientSecret": "${CI_SECRET}"}, {"CI_SECRET": "SENTINEL-secret"})
    assert spec.auth.flow == "client_credentials" and spec.auth.client_secret == "SENTINEL-secret"
    assert "SENTINEL-secret" in secret_values({"auth": spec.auth.table})
    key = spec_of({"clientId": "ci", "privateKey": "${CI_KEY}", "signingAlgorithm": "ES256",
                   "issuer": "https://as.example.com"}, {"CI_KEY": PEM})
    assert key.auth.private_key == PEM and key.auth.signing_algorithm == "ES256"
    assert key.auth.issuer == "https://as.example.com"
    found = secret_values({"auth": key.auth.table})
    assert PEM in found
    assert "SENTINEL" not in redact_text(f"failed with {PEM}", found)
    shown = redact_definition({"url": URL, "auth": dict(key.auth.table)})
    assert shown["auth"]["privateKey"] == "***" and shown["auth"]["clientId"] == "ci"


@pytest.mark.parametrize(("auth", "environ", "field", "words"), [
    ({"privateKey": PEM}, {}, "auth.clientId", "needs the client's `clientId`"),
    ({"clientId": "ci"}, {}, "auth", "exactly one of `clientSecret`"),
    ({"clientId": "ci", "clientSecret": "s", "privateKey": PEM}, {}, "auth", "exactly one of"),
    ({"clientId": "ci", "clientSecret": "${UNSET_VAR}"}, {}, "auth.clientSecret", "UNSET_VAR"),
    ({"clientId": "ci", "clientSecret": "${EMPTY}"}, {"EMPTY": ""}, "auth.clientSecret",
     "field `auth.clientSecret`: empty (is the variable it names set?)"),
    ({"clientId": "ci", "privateKey": "${K}"}, {"K": "SENTINEL-not-a-pem"}, "auth.privateKey", "PEM private key"),
    ({"clientId": "ci", "privateKey": PEM, "signingAlgorithm": "none"}, {}, "auth.signingAlgorithm", "one of"),
    ({"clientId": "ci", "clientSecret": "s", "signingAlgorithm": "ES256"}, {}, "auth.signingAlgorithm",
     "field `auth.signingAlgorithm`: only for `privateKey`"),
    ({"clientId": "ci", "clientSecret": "s", "issuer": "ftp://x"}, {}, "auth.issuer", "issuer URL"),
    ({"clientId": "ci", "clientSecret": "s", "clientMetadataUrl": "https://x.example/c.json"}, {},
     "auth.clientMetadataUrl", "browser flow"),
])
def test_bad_client_credentials_name_the_field(auth: dict[str, Any], environ: dict[str, str], field: str,
                                               words: str) -> None:
    with pytest.raises(ConfigError) as e:
        spec_of(auth, environ)
    assert e.value.field == field and words in e.value.message, e.value.message
    assert "atoms/mcp/ci.toml" in e.value.message and "SENTINEL" not in e.value.message


def test_a_private_key_needs_the_client_credentials_flow() -> None:
    with pytest.raises(ConfigError) as e:
        validate({"url": URL, "auth": {"mode": "oauth", "privateKey": PEM}}, name="ci", source="atoms/mcp/ci.toml",
                 environ={})
    assert e.value.field == "auth.privateKey"


def test_add_writes_the_references_not_the_secret(cli: Any, monad_home: Path) -> None:
    r = cli("mcp", "add", "ci", "--url", URL, "--client-credentials", "--client-id", "monad-ci",
            "--client-secret", "${CI_SECRET}", "--scope", "mcp:read")
    assert r.code == 0, r
    atom = tomllib.loads((monad_home / "atoms" / "mcp" / "ci.toml").read_text())
    assert atom["auth"] == {"mode": "oauth", "flow": "client_credentials", "clientId": "monad-ci",
                            "clientSecret": "${CI_SECRET}", "scopes": ["mcp:read"]}
    r = cli("mcp", "add", "cj", "--url", "https://other.example.com/mcp", "--client-credentials", "--client-id",
            "monad-ci", "--private-key", "${CI_KEY}")
    assert r.code == 0, r
    atom = tomllib.loads((monad_home / "atoms" / "mcp" / "cj.toml").read_text())
    assert atom["auth"]["privateKey"] == "${CI_KEY}"


@pytest.mark.parametrize(("argv", "words"), [
    (("--client-credentials", "--client-secret", "x"), "needs --client-id"),
    (("--client-credentials", "--client-id", "a"), "one of --client-secret"),
    (("--client-credentials", "--client-id", "a", "--client-secret", "x", "--private-key", "y"), "one of"),
    (("--private-key", "${K}", "--client-id", "a"), "is for --client-credentials"),
    (("--client-credentials", "--oauth", "--client-id", "a", "--client-secret", "x"), "choose one"),
])
def test_add_refuses_incomplete_client_credentials(cli: Any, monad_home: Path, argv: tuple[str, ...],
                                                   words: str) -> None:
    r = cli("mcp", "add", "ci", "--url", URL, *argv)
    assert r.code != 0 and words in r.err, r
    assert not (monad_home / "atoms" / "mcp" / "ci.toml").exists()


def test_the_provider_names_the_field_and_never_the_key() -> None:
    from monad_cli.auth.client_credentials import client_credentials_provider, signing_algorithm

    reasons: list[str] = []
    provider = client_credentials_provider(name="ci", source="atoms/mcp/ci.toml", server_url=URL, client_id="ci",
                                           private_key=PEM, on_needs_auth=reasons.append)
    assert provider.problem is not None and "`auth.privateKey`" in provider.problem
    assert "SENTINEL" not in provider.problem
    provider.reset()  # a reconnect does not make an unreadable key usable
    assert provider.problem is not None
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    def pem(key: Any) -> str:
        return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption()).decode()

    assert signing_algorithm(pem(ec.generate_private_key(ec.SECP384R1()))) == "ES384"
    assert signing_algorithm(pem(rsa.generate_private_key(public_exponent=65537, key_size=2048))) == "RS256"
