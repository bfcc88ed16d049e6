"""Discovery, client identity, URL checks and the RFC 8628 device flow, against the small
starlette authorization server written for the tests (`tests/servers/device_as.py`)."""

from __future__ import annotations

import stat
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.auth_helpers import (
    DEVICE_AS,
    Servers,
    assert_no_sentinel,
    browser_calls,
    browser_followed,
    install_browser,
    stats,
)
from tests.conftest import wait_state

pytestmark = pytest.mark.e2e
NO_AUTOSTART = {"MONAD_NO_AUTOSTART": "1"}



def _setup(monad: Any, base: str, path: str = "/mcp", name: str = "remote") -> None:
    r = monad("mcp", "add", name, "--url", f"{base}{path}")
    assert r.code == 0, r


def _auth(home: Path, name: str = "remote") -> dict[str, Any]:
    return tomllib.loads((home / "atoms" / "mcp" / f"{name}.toml").read_text()).get("auth", {})


def test_path_aware_discovery_loopback(monad: Any, monad_home: Path, servers: Servers, tmp_path: Path,
                                       monkeypatch: Any) -> None:
    """Metadata only at /.well-known/oauth-protected-resource/<path> and
    /.well-known/openid-configuration/<issuer path>; no resource_metadata in the 401."""
    base = servers.start(DEVICE_AS, "--prefix", "/tenant1", "--oidc-only")
    install_browser(tmp_path, monkeypatch)
    _setup(monad, base, "/tenant1/mcp")
    r = monad("mcp", "authorize", "remote", env=NO_AUTOSTART)
    assert r.code == 0, r
    auth = _auth(monad_home)
    assert auth["grant"]["authorizationServer"] == f"{base}/tenant1"
    assert auth["serverMetadata"]["token_endpoint"] == f"{base}/tenant1/token"
    # Scope: the protected resource's scopes_supported, not the AS catalogue (which has admin).
    assert auth["grant"]["scope"] == "files:read"
    assert len(browser_calls(tmp_path)) == 1
    r2 = monad("daemon", "start")
    assert r2.code == 0, r2
    wait_state(monad, "remote", "connected")
    monad("daemon", "stop")
    assert_no_sentinel(monad_home, r.out, r.err)


def test_no_registration_endpoint_needs_client_id(monad: Any, monad_home: Path, servers: Servers,
                                                  tmp_path: Path, monkeypatch: Any) -> None:
    base = servers.start(DEVICE_AS, "--no-registration")
    install_browser(tmp_path, monkeypatch)
    _setup(monad, base)
    r = monad("mcp", "authorize", "remote", env=NO_AUTOSTART)
    assert r.code == 1, r
    assert "no dynamic client registration" in r.err and "--client-id" in r.err
    assert browser_calls(tmp_path) == []
    # With a pre-registered client ID: no registration, the ID is saved in the definition.
    r = monad("mcp", "authorize", "remote", "--client-id", "monad-cli", env=NO_AUTOSTART)
    assert r.code == 0, r
    auth = _auth(monad_home)
    assert auth["clientId"] == "monad-cli" and "registration" not in auth
    assert "client_id=monad-cli" in browser_followed(tmp_path)[0]
    assert stats(base)["registrations"] == 0


def test_authorization_server_without_s256_is_refused(monad: Any, monad_home: Path, servers: Servers,
                                                      tmp_path: Path, monkeypatch: Any) -> None:
    base = servers.start(DEVICE_AS, "--no-s256")
    install_browser(tmp_path, monkeypatch)
    _setup(monad, base)
    r = monad("mcp", "authorize", "remote", env=NO_AUTOSTART)
    assert r.code == 1, r
    assert "S256" in r.err and "Traceback" not in r.err
    assert browser_calls(tmp_path) == [] and stats(base)["registrations"] == 0


@pytest.mark.parametrize("endpoint,why", [
    ("javascript:alert(1)", "scheme `javascript:`"),
    ("file:///etc/passwd", "scheme `file:`"),
    ("http://auth.example.com/authorize", "plain http to a remote host"),
    ("-oProxyCommand=evil", "starts with `-`"),
])
def test_bad_authorization_endpoint_refused_before_browser(monad: Any, monad_home: Path, servers: Servers,
                                                           tmp_path: Path, monkeypatch: Any, endpoint: str,
                                                           why: str) -> None:
    base = servers.start(DEVICE_AS, f"--authorization-endpoint={endpoint}")
    install_browser(tmp_path, monkeypatch)
    _setup(monad, base)
    r = monad("mcp", "authorize", "remote", env=NO_AUTOSTART)
    assert r.code == 1, r
    assert "authorization_endpoint" in r.err and why in r.err, r.err
    assert browser_calls(tmp_path) == []
    assert stats(base)["registrations"] == 0
    assert "tokens" not in _auth(monad_home)


def test_issuer_mismatch_is_refused(monad: Any, servers: Servers, tmp_path: Path, monkeypatch: Any) -> None:
    base = servers.start(DEVICE_AS, "--issuer-mismatch")
    install_browser(tmp_path, monkeypatch)
    _setup(monad, base)
    r = monad("mcp", "authorize", "remote", env=NO_AUTOSTART)
    assert r.code == 1, r
    assert "issuer" in r.err and "RFC 8414" in r.err
    assert browser_calls(tmp_path) == []


def test_device_flow_pending_then_slow_down(monad: Any, monad_home: Path, servers: Servers, tmp_path: Path,
                                            monkeypatch: Any) -> None:
    base = servers.start(DEVICE_AS, "--device", "--interval", "0.3",
                         "--poll-script", "pending,pending,slow_down,ok")
    install_browser(tmp_path, monkeypatch)
    _setup(monad, base)
    r = monad("mcp", "authorize", "remote", "--flow", "device", "--scope", "files:write", env=NO_AUTOSTART)
    assert r.code == 0, r
    assert f"{base}/device" in r.out and "WDJB-MJHT" in r.err
    assert browser_calls(tmp_path) == []  # the device flow never opens a browser
    s = stats(base)
    assert s["polls"] == 4
    gaps = s["poll_gaps"]
    # RFC 8628 §3.5: at least `interval` between polls; slow_down adds 5 s for good.
    assert min(gaps[:2]) >= 0.3 - 0.05 and gaps[2] >= 5.3 - 0.05, gaps
    request = s["device_requests"][0]
    assert request["scope"] == "files:write" and request["resource"] == f"{base}/mcp"
    auth = _auth(monad_home)
    assert auth["tokens"]["accessToken"].startswith("SENTINEL")
    assert auth["grant"]["scope"] == "files:write"
    assert stat.S_IMODE((monad_home / "atoms" / "mcp" / "remote.toml").stat().st_mode) == 0o600
    assert_no_sentinel(monad_home, r.out, r.err)


@pytest.mark.parametrize("script,message", [
    ("pending,expired", "expired before it was approved"),
    ("denied", "authorization was denied"),
])
def test_device_flow_stops_with_a_clear_message(monad: Any, monad_home: Path, servers: Servers, script: str,
                                                message: str) -> None:
    base = servers.start(DEVICE_AS, "--device", "--interval", "0.1", "--poll-script", script)
    _setup(monad, base)
    r = monad("mcp", "authorize", "remote", "--flow", "device", env=NO_AUTOSTART)
    assert r.code == 1, r
    assert message in r.err and "Traceback" not in r.err
    assert "tokens" not in _auth(monad_home)


def test_device_flow_stops_at_expires_in(monad: Any, monad_home: Path, servers: Servers) -> None:
    base = servers.start(DEVICE_AS, "--device", "--interval", "0.2", "--expires-in", "1",
                         "--poll-script", "pending")
    _setup(monad, base)
    r = monad("mcp", "authorize", "remote", "--flow", "device", env=NO_AUTOSTART)
    assert r.code == 1, r
    assert "expired before it was approved" in r.err
    assert stats(base)["polls"] <= 6


def test_device_flow_not_offered(monad: Any, servers: Servers) -> None:
    base = servers.start(DEVICE_AS)
    _setup(monad, base)
    r = monad("mcp", "authorize", "remote", "--flow", "device", env=NO_AUTOSTART)
    assert r.code == 1, r
    assert "device_authorization_endpoint" in r.err and "--flow loopback" in r.err


def test_tokens_stored_in_agents_json_entry_at_0600(monad: Any, monad_home: Path, servers: Servers) -> None:
    """A server defined in agents.json keeps its grant in its own entry; the file, even if a
    person made it world-readable, is 0600 once it holds tokens."""
    import json

    base = servers.start(DEVICE_AS, "--device", "--interval", "0.1")
    monad_home.mkdir(parents=True, exist_ok=True)
    agents = monad_home / "agents.json"
    agents.write_text(json.dumps({"mcpServers": [
        {"name": "other", "command": "true"},
        {"name": "remote", "url": f"{base}/mcp", "auth": {"mode": "oauth", "flow": "device"}}]}, indent=2))
    agents.chmod(0o644)
    r = monad("mcp", "authorize", "remote", env=NO_AUTOSTART)  # flow from the definition
    assert r.code == 0, r
    assert stat.S_IMODE(agents.stat().st_mode) == 0o600
    doc = json.loads(agents.read_text())
    entry = next(e for e in doc["mcpServers"] if e["name"] == "remote")
    assert entry["auth"]["tokens"]["accessToken"].startswith("SENTINEL")
    assert entry["auth"]["flow"] == "device" and entry["auth"]["grant"]["expiresAt"] > 0
    assert next(e for e in doc["mcpServers"] if e["name"] == "other") == {"name": "other", "command": "true"}
    r = monad("mcp", "logout", "remote", env=NO_AUTOSTART)
    assert r.code == 0, r
    entry = next(e for e in json.loads(agents.read_text())["mcpServers"] if e["name"] == "remote")
    assert entry["auth"] == {"mode": "oauth", "flow": "device"}
    assert_no_sentinel(monad_home, r.out, r.err)


def test_client_id_metadata_document_when_advertised(monad: Any, monad_home: Path, servers: Servers,
                                                     tmp_path: Path, monkeypatch: Any) -> None:
    """No registration endpoint, but the AS takes client ID metadata documents and the
    definition names one: its URL is the client_id, nothing is registered."""
    base = servers.start(DEVICE_AS, "--no-registration", "--cimd")
    install_browser(tmp_path, monkeypatch)
    cimd = "https://monad.example/oauth/client.json"
    (monad_home / "atoms" / "mcp").mkdir(parents=True, exist_ok=True)
    (monad_home / "atoms" / "mcp" / "remote.toml").write_text(
        f'# my server\nschema = 1\nurl = "{base}/mcp"\n\n[auth]\nmode = "oauth"  # keep this comment\n'
        f'clientMetadataUrl = "{cimd}"\n')
    r = monad("mcp", "authorize", "remote", env=NO_AUTOSTART)
    assert r.code == 0, r
    from urllib.parse import quote

    assert f"client_id={quote(cimd, safe='')}" in browser_followed(tmp_path)[0]
    assert stats(base)["registrations"] == 0
    text = (monad_home / "atoms" / "mcp" / "remote.toml").read_text()
    assert "# my server" in text and "# keep this comment" in text  # tomlkit kept the comments
