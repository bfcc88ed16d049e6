"""OAuth against the SDK's own authorization server (`tests/servers/oauth_as.py`):
`monad mcp authorize` (loopback), durable storage, the supervisor's silent refresh across
restarts, `invalid_grant` → needs-auth, `logout`, state/iss checks, and one refresh for 20
concurrent requests. Tokens are sentinels; every output, log and journal row is searched."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.auth_helpers import (
    OAUTH_AS,
    Servers,
    assert_no_sentinel,
    browser_calls,
    browser_followed,
    install_browser,
    post,
    stats,
)
from tests.conftest import status_of, wait_for, wait_state

pytestmark = pytest.mark.e2e



def _add(monad: Any, name: str, url: str) -> None:
    r = monad("mcp", "add", name, "--url", url)
    assert r.code == 0, r


def _atom(home: Path, name: str) -> Path:
    return home / "atoms" / "mcp" / f"{name}.toml"


def test_authorize_refresh_restart_invalid_grant_logout(monad: Any, monad_home: Path, servers: Servers,
                                                        tmp_path: Path, monkeypatch: Any) -> None:
    base = servers.start(OAUTH_AS, "--ttl", "5")  # room for a refresh on a loaded machine (2 s failed in CI)
    install_browser(tmp_path, monkeypatch)
    monkeypatch.setenv("MONAD_NO_AUTOSTART", "1")
    _add(monad, "remote", f"{base}/mcp")
    outputs = []

    r = monad("mcp", "authorize", "remote", env={"MONAD_NO_AUTOSTART": "1"})
    outputs += [r.out, r.err]
    assert r.code == 0, r
    # The URL is printed (stdout) and opened once, with PKCE S256 and the resource (RFC 8707);
    # the browser's command line holds only a 0600 file's path, never the URL (its `state`
    # and redirect path would let another account answer the listener first), and the file
    # is gone once the flow is over.
    calls, followed = browser_calls(tmp_path), browser_followed(tmp_path)
    assert len(calls) == 1 and calls[0].startswith(f"file://{monad_home}/run/authorize-"), calls
    assert "state=" not in calls[0] and not Path(calls[0].removeprefix("file://")).exists()
    assert len(followed) == 1 and followed[0] in r.out
    assert "code_challenge_method=S256" in followed[0] and "resource=" in followed[0]
    s = stats(base)
    assert s["authorize"] == 1 and s["code_exchange"] == 1 and s["registrations"] == 1
    # The challenge asked for mcp:read; offline_access is advertised; `admin` (in the AS's
    # catalogue only) is never asked for.
    assert s["authorize_scopes"] == [["mcp:read", "offline_access"]]
    assert s["resources"] == [f"{base}/mcp"]

    atom = _atom(monad_home, "remote")
    assert stat.S_IMODE(atom.stat().st_mode) == 0o600
    text = atom.read_text()
    assert "SENTINEL-access-" in text and "SENTINEL-refresh-" in text
    assert "expiresAt" in text and "[auth.serverMetadata]" in text

    # `get`, `list` and `status` show no token.
    for argv in (("mcp", "get", "remote"), ("mcp", "get", "remote", "--json"), ("mcp", "list", "--json")):
        r = monad(*argv)
        assert r.code == 0, r
        outputs += [r.out, r.err]

    # Let the token expire, then start the supervisor: it refreshes silently (no browser).
    wait_for(lambda: time.time() > _expires_at(atom), timeout=10)
    monkeypatch.delenv("MONAD_NO_AUTOSTART")
    r = monad("daemon", "start")
    assert r.code == 0, r
    row = wait_state(monad, "remote", "connected")
    outputs.append(str(row))
    s = stats(base)
    assert s["refresh"] == 1 and s["authorize"] == 1 and s["reuse_detected"] == 0
    assert len(browser_calls(tmp_path)) == 1

    # A restart after the next expiry refreshes again, with the rotated refresh token.
    monad("daemon", "stop")
    wait_for(lambda: time.time() > _expires_at(atom), timeout=10)
    r = monad("daemon", "start")
    assert r.code == 0, r
    wait_state(monad, "remote", "connected")
    s = stats(base)
    assert s["refresh"] == 2 and s["reuse_detected"] == 0 and s["refresh_rejected"] == 0

    # The authorization server revokes the grant: the next refresh gets invalid_grant and
    # the server fails closed in needs-auth with the hint.
    monad("daemon", "stop")
    post(base, "/_revoke")
    wait_for(lambda: time.time() > _expires_at(atom), timeout=10)
    r = monad("daemon", "start")
    assert r.code == 0, r
    row = wait_state(monad, "remote", "needs-auth")
    assert "invalid_grant" in row["reason"] and "monad mcp authorize remote" in row["reason"]
    r = monad("mcp", "status", "--json")
    outputs += [r.out, r.err]
    assert len(browser_calls(tmp_path)) == 1  # the supervisor never opens a browser

    # Authorizing again reconnects the running supervisor's server.
    r = monad("mcp", "authorize", "remote")
    outputs += [r.out, r.err]
    assert r.code == 0, r
    wait_state(monad, "remote", "connected")

    # logout removes every stored token; the server needs authorization again.
    r = monad("mcp", "logout", "remote")
    outputs += [r.out, r.err]
    assert r.code == 0, r
    assert "SENTINEL" not in atom.read_text() and "[auth.grant]" not in atom.read_text()
    assert 'mode = "oauth"' in atom.read_text()
    row = wait_state(monad, "remote", "needs-auth")
    assert "monad mcp authorize remote" in row["reason"]
    r = monad("journal", "--server", "remote", "--json")
    assert r.code == 0, r
    outputs += [r.out, r.err]
    reasons = [row["reason"] for row in r.json() if row["kind"] == "auth"]
    assert reasons[0].startswith("authorized (loopback flow") and reasons[-1].startswith("logged out")
    monad("daemon", "stop")
    assert_no_sentinel(monad_home, *outputs)


def _expires_at(atom: Path) -> float:
    import tomllib

    return float(tomllib.loads(atom.read_text())["auth"]["grant"]["expiresAt"])


@pytest.mark.parametrize("flag,expected", [
    (("--state-mode", "wrong"), "`state` does not match"),
    (("--iss-mode", "wrong"), "`iss` does not name"),
])
def test_wrong_state_or_iss_is_refused(monad: Any, monad_home: Path, servers: Servers, tmp_path: Path,
                                       monkeypatch: Any, flag: tuple[str, str], expected: str) -> None:
    base = servers.start(OAUTH_AS, *flag)
    install_browser(tmp_path, monkeypatch)
    _add(monad, "remote", f"{base}/mcp")
    before = _atom(monad_home, "remote").read_bytes()
    r = monad("mcp", "authorize", "remote", env={"MONAD_NO_AUTOSTART": "1"})
    assert r.code == 1, r
    assert expected in r.err and "Traceback" not in r.err
    assert len(r.err.strip().splitlines()[-1]) < 300
    assert "SENTINEL" not in _atom(monad_home, "remote").read_text()  # nothing stored
    # The definition is as it was: no `auth.mode = "oauth"`, no registration, although the
    # flow registered monad before the redirect was refused (issue 16).
    assert stats(base)["registrations"] == 1
    assert _atom(monad_home, "remote").read_bytes() == before
    assert stats(base)["code_exchange"] == 0  # the code was never redeemed


def test_no_browser_accepts_a_pasted_redirect(monad_home: Path, servers: Servers, tmp_path: Path,
                                              monkeypatch: Any, monad: Any) -> None:
    base = servers.start(OAUTH_AS)
    install_browser(tmp_path, monkeypatch)
    _add(monad, "remote", f"{base}/mcp")
    proc = subprocess.Popen([sys.executable, "-m", "monad_cli", "mcp", "authorize", "remote", "--no-browser"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "MONAD_NO_AUTOSTART": "1"})
    try:
        assert proc.stdout is not None and proc.stdin is not None
        url = proc.stdout.readline().strip()
        assert url.startswith(f"{base}/authorize?")
        # The person approves in a browser elsewhere; the redirect does not reach this machine,
        # they copy the URL from the address bar instead.
        location = httpx2.get(url, follow_redirects=False, timeout=30).headers["location"]
        assert location.startswith("http://127.0.0.1:")
        proc.stdin.write(location + "\n")
        proc.stdin.flush()
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert browser_calls(tmp_path) == []  # --no-browser never starts one
    assert "SENTINEL-access-" in _atom(monad_home, "remote").read_text()
    assert_no_sentinel(monad_home, out, err)


def test_one_refresh_for_twenty_concurrent_requests(monad: Any, monad_home: Path, servers: Servers,
                                                     tmp_path: Path, monkeypatch: Any) -> None:
    """The supervisor's provider: 20 requests race an expired token; exactly one refresh
    (a second would present a used refresh token, which revokes the grant here)."""
    import anyio

    from monad_cli.auth.provider import MonadOAuthProvider
    from monad_cli.auth.storage import DefinitionTokenStorage
    from monad_cli.core.paths import paths

    # The first token expires at once; the refreshed one outlives the test, so a slow run
    # cannot make a second refresh fall due.
    base = servers.start(OAUTH_AS, "--ttl", "2", "--refreshed-ttl", "3600")
    install_browser(tmp_path, monkeypatch)
    _add(monad, "remote", f"{base}/mcp")
    r = monad("mcp", "authorize", "remote", env={"MONAD_NO_AUTOSTART": "1"})
    assert r.code == 0, r
    atom = _atom(monad_home, "remote")
    wait_for(lambda: time.time() > _expires_at(atom), timeout=10)
    problems: list[str] = []

    async def main() -> list[int]:
        storage = DefinitionTokenStorage(paths(), "remote")
        provider = MonadOAuthProvider(name="remote", server_url=f"{base}/mcp", storage=storage,
                                      interactive=False, on_needs_auth=problems.append)
        codes: list[int] = []

        async def one(http: httpx2.AsyncClient) -> None:
            resp = await http.post(f"{base}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                   headers={"Accept": "application/json, text/event-stream"})
            codes.append(resp.status_code)

        async with httpx2.AsyncClient(auth=provider, timeout=30) as http, anyio.create_task_group() as tg:
            for _ in range(20):
                tg.start_soon(one, http)
        assert provider.refreshes == 1, provider.refreshes
        return codes

    codes = anyio.run(main)
    assert len(codes) == 20 and 401 not in codes, codes
    s = stats(base)
    assert s["refresh"] == 1 and s["reuse_detected"] == 0, s
    assert problems == []
    assert _expires_at(atom) > time.time()  # the new expiry is on disk


def _supervisor_provider(base: str, problems: list[str]) -> Any:
    from monad_cli.auth.provider import MonadOAuthProvider
    from monad_cli.auth.storage import DefinitionTokenStorage
    from monad_cli.core.paths import paths

    return MonadOAuthProvider(name="remote", server_url=f"{base}/mcp",
                              storage=DefinitionTokenStorage(paths(), "remote"), interactive=False,
                              on_needs_auth=problems.append)


async def _ping_many(base: str, provider: Any, n: int) -> list[int]:
    import anyio

    codes: list[int] = []

    async def one(http: httpx2.AsyncClient) -> None:
        resp = await http.post(f"{base}/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                               headers={"Accept": "application/json, text/event-stream"})
        codes.append(resp.status_code)

    async with httpx2.AsyncClient(auth=provider, timeout=30) as http, anyio.create_task_group() as tg:
        for _ in range(n):
            tg.start_soon(one, http)
    return codes


def test_mid_session_401_refreshes_once_then_invalid_grant_needs_auth(monad: Any, monad_home: Path,
                                                                       servers: Servers, tmp_path: Path,
                                                                       monkeypatch: Any) -> None:
    """A token rejected before its expiry → one refresh, the requests retried; a refresh
    answered with invalid_grant → the actor is told (needs-auth) and nothing is retried."""
    import anyio

    base = servers.start(OAUTH_AS)  # an hour-long token: only the 401 path can refresh it
    install_browser(tmp_path, monkeypatch)
    _add(monad, "remote", f"{base}/mcp")
    assert monad("mcp", "authorize", "remote", env={"MONAD_NO_AUTOSTART": "1"}).code == 0
    problems: list[str] = []
    provider = _supervisor_provider(base, problems)
    assert anyio.run(_ping_many, base, provider, 3) .count(401) == 0
    assert stats(base)["refresh"] == 0

    post(base, "/_expire_access")
    codes = anyio.run(_ping_many, base, provider, 20)
    assert 401 not in codes, codes
    assert provider.refreshes == 1 and stats(base)["refresh"] == 1 and problems == []

    post(base, "/_revoke")
    codes = anyio.run(_ping_many, base, provider, 5)
    assert set(codes) == {401}
    s = stats(base)
    assert s["refresh"] == 1 and s["refresh_rejected"] == 1  # one failed refresh, never repeated
    assert problems and all("invalid_grant" in p and "monad mcp authorize remote" in p for p in problems)


def test_supervisor_refreshes_mid_session_once_for_twenty_tool_calls(monad: Any, monad_home: Path,
                                                                     servers: Servers, tmp_path: Path,
                                                                     monkeypatch: Any) -> None:
    """End to end through the control API: the token expires while the session is open; 20
    concurrent tool calls cause exactly one refresh and all succeed. After the grant is
    revoked, the next call fails and the server goes to needs-auth with the hint."""
    from concurrent.futures import ThreadPoolExecutor

    from monad_cli.cli.control import ControlClient
    from monad_cli.core.errors import MonadError
    from monad_cli.core.paths import paths

    base = servers.start(OAUTH_AS, "--ttl", "3")
    install_browser(tmp_path, monkeypatch)
    _add(monad, "remote", f"{base}/mcp")
    assert monad("mcp", "authorize", "remote", env={"MONAD_NO_AUTOSTART": "1"}).code == 0
    atom = _atom(monad_home, "remote")
    assert monad("daemon", "start").code == 0
    wait_state(monad, "remote", "connected")
    refreshes_before = stats(base)["refresh"]
    wait_for(lambda: time.time() > _expires_at(atom), timeout=15)

    def call(i: int) -> Any:
        client = ControlClient(paths(), timeout=60)
        try:
            return client.post("/v1/tools/call", {"name": "remote__echo", "arguments": {"text": f"hi {i}"},
                                                  "via": "api", "approval": {"mode": "yes"}})
        except MonadError as e:
            return e.message

    with ThreadPoolExecutor(max_workers=20) as pool:
        answers = list(pool.map(call, range(20)))
    texts = sorted(a["content"][0]["text"] for a in answers if isinstance(a, dict) and "content" in a)
    assert texts == sorted(f"hi {i}" for i in range(20)), answers
    s = stats(base)
    assert s["refresh"] == refreshes_before + 1 and s["reuse_detected"] == 0
    assert status_of(monad, "remote")["state"] == "connected"
    # The refreshed grant was written to the atom, and that write is state, not a change of
    # definition: the session was not reconnected.
    assert "expiresAt" in atom.read_text()
    rows = monad("journal", "--server", "remote", "--json").json()
    assert [r for r in rows if r["kind"] == "config"] == []
    assert [r["state"] for r in rows if r["kind"] == "state"].count("connecting") == 1

    post(base, "/_revoke")
    wait_for(lambda: time.time() > _expires_at(atom), timeout=15)
    answer = call(99)
    assert not (isinstance(answer, dict) and "content" in answer), answer
    row = wait_state(monad, "remote", "needs-auth")
    assert "invalid_grant" in row["reason"] and "monad mcp authorize remote" in row["reason"]
    monad("daemon", "stop")
    assert_no_sentinel(monad_home, json.dumps(answers), str(answer), json.dumps(row))
