"""OAuth client credentials (RFC 6749 §4.4) through the real supervisor, against the SDK's
authorization server with the grant added (`tests/servers/oauth_as.py --client-credentials`):
`client_secret_basic` and `private_key_jwt` (RFC 7523) from `${VAR}` references, renewal
before expiry, a wrong secret → `needs-auth` naming the field, and no secret anywhere."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.auth_helpers import OAUTH_AS, SENTINEL, Servers, assert_no_sentinel, stats
from tests.conftest import status_of, wait_for, wait_state

pytestmark = pytest.mark.e2e
SECRET = "SENTINEL-client-secret-4711"


def _keypair(tmp: Path) -> tuple[str, Path]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    public = tmp / "client.pub.pem"
    public.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo))
    return pem, public


def test_client_credentials_secret_key_renewal_and_refusal(monad: Any, monad_home: Path, servers: Servers,
                                                          tmp_path: Path, monkeypatch: Any) -> None:
    pem, public = _keypair(tmp_path)
    flags = ("--ttl", "3", "--client-credentials", "monad-ci", "--client-secret", SECRET,
             "--jwt-public-key", str(public))
    # One authorization server per definition: `add` refuses two servers for one URL.
    bases = {name: servers.start(OAUTH_AS, *flags) for name in ("ci", "cj", "bad")}
    base = bases["ci"]
    # The supervisor expands the references from the environment it starts with.
    monkeypatch.setenv("CI_SECRET", SECRET)
    monkeypatch.setenv("CI_KEY", pem)
    monkeypatch.setenv("CI_WRONG", "SENTINEL-not-the-secret")
    outputs: list[str] = []
    for name, extra in (("ci", ("--client-secret", "${CI_SECRET}")), ("cj", ("--private-key", "${CI_KEY}")),
                        ("bad", ("--client-secret", "${CI_WRONG}"))):
        r = monad("mcp", "add", name, "--url", f"{bases[name]}/mcp", "--client-credentials", "--client-id",
                  "monad-ci", *extra)
        assert r.code == 0, r
        outputs += [r.out, r.err]
    r = monad("daemon", "start")
    assert r.code == 0, r
    try:
        for name in ("ci", "cj"):
            wait_state(monad, name, "connected", timeout=60)
        s = stats(base)
        assert set(s["client_credentials_auth"]) == {"client_secret_basic"}, s
        assert s["client_credentials_resources"][0] == f"{base}/mcp"  # RFC 8707
        assert set(stats(bases["cj"])["client_credentials_auth"]) == {"private_key_jwt"}

        r = monad("mcp", "call", "ci__echo", "--arg", "text=one", "--yes")
        assert r.code == 0 and "one" in r.out, r
        outputs += [r.out, r.err]
        before = stats(base)["client_credentials"]

        def renewed() -> bool:
            # The tokens live 3 s: calls go on working across expiries, on tokens the
            # supervisor asked for again by itself.
            r = monad("mcp", "call", "ci__echo", "--arg", "text=two", "--yes")
            assert r.code == 0 and "two" in r.out, r
            return stats(base)["client_credentials"] > before

        wait_for(renewed, timeout=30, interval=0.5)
        r = monad("mcp", "call", "cj__echo", "--arg", "text=three", "--yes")
        assert r.code == 0 and "three" in r.out, r
        assert status_of(monad, "ci")["state"] == "connected"

        bad = wait_state(monad, "bad", "needs-auth", timeout=60)
        assert "auth.clientSecret" in bad["reason"] and "invalid_client" in bad["reason"], bad
        assert "atoms/mcp/bad.toml" in bad["reason"]
        assert stats(bases["bad"])["client_credentials_rejected"] >= 1

        r = monad("mcp", "authorize", "ci")
        assert r.code != 0 and "nothing to authorize" in r.err, r
        outputs += [r.out, r.err]
        for argv in (("mcp", "status", "--json"), ("mcp", "get", "ci", "--json"), ("mcp", "get", "cj"),
                     ("journal", "--json"), ("journal", "--calls", "--json")):
            r = monad(*argv)
            assert r.code == 0, r
            outputs += [r.out, r.err]
        shown = json.loads(monad("mcp", "get", "ci", "--json").out)
        # A reference names where the secret lives and is shown as written (core/redact.is_reference);
        # the secret itself is checked absent from every output below.
        assert shown["definition"]["auth"]["clientSecret"] == "${CI_SECRET}"
    finally:
        monad("daemon", "stop")
    # The definitions hold only the references; tokens were never written down.
    for name in ("ci", "cj", "bad"):
        text = (monad_home / "atoms" / "mcp" / f"{name}.toml").read_text()
        assert SENTINEL not in text and "BEGIN PRIVATE KEY" not in text, text
    assert_no_sentinel(monad_home, *outputs)
    for path in monad_home.rglob("*"):
        if path.is_file():
            assert b"BEGIN PRIVATE KEY" not in path.read_bytes(), path
