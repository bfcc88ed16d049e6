"""Fast checks of the auth building blocks: URL validation, scope selection, the schema of
the oauth fields, the fingerprint, redaction of stored state, the loopback listener, and the
CLI's light import path."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import anyio
import httpx2
import pytest

from monad_cli.auth.scopes import select_scopes
from monad_cli.auth.urls import url_problem
from monad_cli.config.schema import validate
from monad_cli.core.errors import AuthError, ConfigError
from monad_cli.core.redact import redact_definition, secret_values
from tests.conftest import write_atom


@pytest.mark.parametrize("url", [
    "https://as.example.com/authorize?x=1", "http://127.0.0.1:8080/authorize", "http://localhost/a",
    "http://[::1]:9/authorize",
])
def test_url_problem_accepts(url: str) -> None:
    assert url_problem(url) is None


@pytest.mark.parametrize("url,why", [
    ("javascript:alert(1)", "scheme `javascript:`"), ("file:///etc/passwd", "scheme `file:`"),
    ("data:text/html,hi", "scheme `data:`"), ("http://as.example.com/authorize", "plain http"),
    ("-https://as.example.com", "starts with `-`"), ("https://as.example.com/a b", "whitespace"),
    ("https://as.example.com/\x1b[31m", "control"), ("https:///nohost", "no host"), ("", "empty"),
    ("https://as.example.com:99999/", "not a valid URL"),
])
def test_url_problem_refuses(url: str, why: str) -> None:
    problem = url_problem(url)
    assert problem is not None and why in problem


def test_scope_selection_order() -> None:
    catalogue = ["a", "b", "admin", "offline_access"]
    # explicit wins, in the order given, without repeats
    assert select_scopes(explicit=["b", "a", "b"], challenged="x", resource_scopes=["y"],
                         server_scopes=catalogue) == "b a offline_access"
    # then the challenge, then the resource's scopes_supported
    assert select_scopes(explicit=None, challenged="x y", resource_scopes=["r"], server_scopes=None) == "x y"
    assert select_scopes(explicit=None, challenged=None, resource_scopes=["r"], server_scopes=["r"]) == "r"
    # never the authorization server's catalogue; offline_access only when advertised
    assert select_scopes(explicit=None, challenged=None, resource_scopes=None, server_scopes=catalogue) is None
    assert select_scopes(explicit=["a"], challenged=None, resource_scopes=None, server_scopes=["a"]) == "a"
    # step-up keeps what was granted first (SEP-2350)
    assert select_scopes(explicit=None, challenged="write", resource_scopes=None, server_scopes=None,
                         previous="read") == "read write"


@pytest.mark.parametrize("auth,field", [
    ({"mode": "oauth", "flow": "carrier-pigeon"}, "auth.flow"),
    ({"mode": "oauth", "scopes": "read"}, "auth.scopes"),
    ({"mode": "oauth", "clientSecret": "s3cr3t-value"}, "auth.clientSecret"),
    ({"mode": "oauth", "clientId": 7}, "auth.clientId"),
])
def test_oauth_fields_are_validated(auth: dict, field: str) -> None:
    with pytest.raises(ConfigError) as e:
        validate({"url": "https://x.example/mcp", "auth": auth}, name="x", source="atoms/mcp/x.toml", environ={})
    assert e.value.message.startswith("`atoms/mcp/x.toml`: server `x`, field `" + field + "`")
    assert "s3cr3t" not in e.value.message


def test_stored_state_does_not_change_the_fingerprint() -> None:
    base = {"url": "https://x.example/mcp", "auth": {"mode": "oauth", "scopes": ["a"]}}
    with_state = {"url": "https://x.example/mcp", "auth": {
        "mode": "oauth", "scopes": ["a"], "tokens": {"accessToken": "SENTINEL-1", "refreshToken": "SENTINEL-2"},
        "grant": {"expiresAt": 1.0, "tokenType": "Bearer"}, "serverMetadata": {"issuer": "https://as"}}}
    a = validate(base, name="x", source="s", environ={})
    b = validate(with_state, name="x", source="s", environ={})
    assert a.connection_fingerprint() == b.connection_fingerprint()
    c = validate({**base, "auth": {"mode": "oauth", "scopes": ["b"]}}, name="x", source="s", environ={})
    assert c.connection_fingerprint() != a.connection_fingerprint()


def test_stored_state_is_redacted() -> None:
    defn = {"url": "https://x.example/mcp", "auth": {
        "mode": "oauth", "clientId": "cid", "clientSecret": "SENTINEL-cs",
        "tokens": {"accessToken": "SENTINEL-at", "refreshToken": "SENTINEL-rt"},
        "grant": {"tokenType": "Bearer", "scope": "read"},
        "registration": {"client_id": "dyn", "client_secret": "SENTINEL-dcs"}}}
    shown = redact_definition(defn)
    assert "SENTINEL" not in repr(shown)
    assert shown["auth"]["grant"]["scope"] == "read" and shown["auth"]["clientId"] == "cid"
    secrets = secret_values(defn)
    assert {"SENTINEL-cs", "SENTINEL-at", "SENTINEL-rt", "SENTINEL-dcs"} <= secrets
    assert "Bearer" not in secrets and "read" not in secrets  # free text keeps its words


def test_loopback_listener_is_one_shot() -> None:
    from monad_cli.auth.loopback import LoopbackListener, callback_result

    async def main() -> None:
        async with LoopbackListener(server="x", timeout=20) as lb:
            assert lb.redirect_uri.startswith("http://127.0.0.1:") and len(lb.path) > 20
            async with httpx2.AsyncClient() as http:
                # Wrong path (no random component): 404, the wait goes on.
                r = await http.get(f"http://127.0.0.1:{lb.port}/callback?code=evil&state=s")
                assert r.status_code == 404
                r = await http.get(f"{lb.redirect_uri}?code=c1&state=s1&iss=https%3A%2F%2Fas")
                assert r.status_code == 200 and "close this window" in r.text
                # A second callback is not served.
                with pytest.raises(httpx2.HTTPError):
                    await http.get(f"{lb.redirect_uri}?code=c2&state=s2", timeout=2)
            params = await lb.wait()
        result = callback_result(params, server="x")
        assert (result.code, result.state, result.iss) == ("c1", "s1", "https://as")
        with pytest.raises(AuthError, match="refused: access_denied"):
            callback_result({"error": "access_denied"}, server="x")

    anyio.run(main)


def test_loopback_listener_times_out() -> None:
    from monad_cli.auth.loopback import LoopbackListener

    async def main() -> None:
        async with LoopbackListener(server="x", timeout=0.2) as lb:
            with pytest.raises(AuthError, match="no authorization arrived within"):
                await lb.wait()
            port = lb.port
        # Closed after the flow: nothing listens on the port any more.
        with pytest.raises(OSError):
            await anyio.connect_tcp("127.0.0.1", port)

    anyio.run(main)


def test_cli_import_path_stays_light() -> None:
    code = ("import sys, monad_cli.cli.app; monad_cli.cli.app.app; "  # the whole app: every command module
            "print(','.join(m for m in ('mcp', 'httpx2', 'sqlalchemy', 'uvicorn', 'monad_cli.auth.provider') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == ""


@pytest.mark.parametrize("atom,argv,expected", [
    ('command = "true"\n', (), "is a stdio server"),
    ('url = "https://x.example/mcp"\n[auth]\nmode = "bearer"\ntoken = "abcd1234"\n', (),
     "field `auth.mode`: set it to `oauth` (not `bearer`)"),
    ('url = "https://x.example/mcp"\n', ("--flow", "carrier-pigeon"), "`--flow` must be one of"),
])
def test_authorize_refuses_bad_input_in_one_line(cli: Any, monad_home: Any, atom: str, argv: tuple,
                                                 expected: str) -> None:
    write_atom(monad_home, "x", "schema = 1\n" + atom)
    r = cli("mcp", "authorize", "x", *argv)
    assert r.code == 2, r
    assert expected in r.err and len(r.err.strip().splitlines()) == 1 and "abcd1234" not in r.err


def test_authorize_and_logout_unknown_server(cli: Any) -> None:
    for argv in (("mcp", "authorize", "ghost"), ("mcp", "logout", "ghost")):
        r = cli(*argv)
        assert r.code == 1 and "server `ghost` is not defined" in r.err, r


@pytest.mark.parametrize("fault", ["refused", "dns", "timeout"])
def test_authorize_says_why_the_server_cannot_be_reached_and_what_to_do(cli: Any, monad_home: Any,
                                                                        fault: str) -> None:
    """One line: what failed (the socket's own error under httpx2's `ConnectError: All
    connection attempts failed`: refused, a name that does not resolve, no answer in time),
    where (the server, its url) and what to do (check the url, where to fix it). A key in the
    url's query stays `***`. (Found by a new-user trial: no next step.)"""
    import socket

    from tests.conftest import free_port

    silent = socket.create_server(("127.0.0.1", 0))  # takes connections (the backlog), never answers
    try:
        host = {"refused": f"127.0.0.1:{free_port()}", "dns": "no-such-host.invalid",
                "timeout": f"127.0.0.1:{silent.getsockname()[1]}"}[fault]
        write_atom(monad_home, "x", f'schema = 1\nurl = "http://{host}/mcp?key=abcd1234"\n')
        r = cli("mcp", "authorize", "x")
    finally:
        silent.close()
    assert r.code == 1, r
    what = {"refused": f"connection to {host} refused (nothing listens there)",
            "dns": "the host name `no-such-host.invalid` does not resolve (DNS: ",
            "timeout": f"{host} took the connection but did not answer within 10 s"}[fault]
    assert r.err.startswith(f"error: server `x`: cannot reach its url `http://{host}/mcp?key=***`: {what}"), r
    assert r.err.rstrip().endswith("; check the url with `monad mcp get x`, and if it is wrong fix it in "
                                   "`atoms/mcp/x.toml` or with `monad mcp add x --url URL --force`"), r
    assert "abcd1234" not in r.err and len(r.err.strip().splitlines()) == 1, r


def test_refresh_never_overwrites_a_newer_grant(monad_home: Any) -> None:
    """A supervisor refresh of the old grant that lands after `authorize` wrote a new one is
    dropped (compare-and-swap on grant.obtainedAt), so the new grant survives."""
    from mcp.shared.auth import OAuthToken

    from monad_cli.auth.storage import DefinitionTokenStorage, read_grant
    from monad_cli.core.paths import paths

    write_atom(monad_home, "x", 'schema = 1\nurl = "https://x.example/mcp"\n[auth]\nmode = "oauth"\n')

    async def main() -> None:
        cli_side = DefinitionTokenStorage(paths(), "x", fresh=True)
        await cli_side.set_tokens(OAuthToken(access_token="old-access", refresh_token="old-refresh", expires_in=60))
        supervisor_side = DefinitionTokenStorage(paths(), "x")
        assert (await supervisor_side.get_tokens()).access_token == "old-access"  # type: ignore[union-attr]
        await DefinitionTokenStorage(paths(), "x", fresh=True).set_tokens(
            OAuthToken(access_token="new-access", refresh_token="new-refresh", expires_in=60))
        await supervisor_side.set_tokens(OAuthToken(access_token="refreshed-old", expires_in=60))
        assert read_grant(paths(), "x").access_token == "new-access"
        # With nothing newer on disk, its own refreshes are written.
        assert (await supervisor_side.get_tokens()).access_token == "new-access"  # type: ignore[union-attr]
        await supervisor_side.set_tokens(OAuthToken(access_token="refreshed-new", refresh_token="r2", expires_in=60))
        g = read_grant(paths(), "x")
        assert (g.access_token, g.refresh_token) == ("refreshed-new", "r2")
        assert g.expires_at is not None and g.expires_at > g.obtained_at  # type: ignore[operator]

    anyio.run(main)


def test_device_poll_doubles_the_interval_on_a_network_timeout() -> None:
    """RFC 8628 §3.5: a timed-out poll doubles the interval. A real server cannot be made to
    time out on cue, so this one edge uses httpx2.MockTransport."""
    from mcp.shared.auth import OAuthClientInformationFull, OAuthMetadata

    from monad_cli.auth.device import DeviceAuthorization, poll_for_token
    from monad_cli.auth.discovery import Discovery

    answers = ["timeout", "pending", "slow_down", "ok"]

    def handler(request: httpx2.Request) -> httpx2.Response:
        step = answers.pop(0)
        if step == "timeout":
            raise httpx2.ReadTimeout("slow", request=request)
        if step == "ok":
            return httpx2.Response(200, json={"access_token": "t", "token_type": "bearer", "expires_in": 60})
        return httpx2.Response(400, json={"error": "authorization_pending" if step == "pending" else step})

    asm = OAuthMetadata.model_validate({"issuer": "https://as.example", "authorization_endpoint":
                                        "https://as.example/a", "token_endpoint": "https://as.example/t"})
    found = Discovery(resource="https://mcp.example/mcp", challenged_scope=None, resource_metadata=None,
                      authorization_server="https://as.example", server_metadata=asm, server_metadata_raw={})
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    async def main() -> str:
        async with httpx2.AsyncClient(transport=httpx2.MockTransport(handler)) as http:
            token = await poll_for_token(http, found, OAuthClientInformationFull(client_id="c"),
                                         DeviceAuthorization("dc", "UC", "https://as.example/device", None, 600, 2),
                                         name="x", sleep=sleep)
        return token.access_token

    assert anyio.run(main) == "t"
    assert slept == [2, 4, 4, 9]  # timeout doubles; pending keeps; slow_down adds 5 s for good


_FLOOD = """
import socket, sys, time
held = []
for _ in range(int(sys.argv[2])):
    try:
        s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2)
        s.sendall(b"GET / HTTP/1.1\\r\\nX-Slow: ")  # headers that never end
        held.append(s)
    except OSError:
        pass
print(len(held), flush=True)
time.sleep(60)
"""

_LISTEN = """
import os, resource, signal, socket, subprocess, sys
import anyio
from monad_cli.auth.loopback import LoopbackListener

resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))  # a small limit: 250 connections reach it


async def main() -> None:
    async with LoopbackListener(server="x", timeout=30) as lb:
        flood = subprocess.Popen([*sys.argv[1:], "/usr/bin/python3", "-c", sys.stdin.read(), str(lb.port), "400"],
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd="/",
                                 start_new_session=True)
        held = await anyio.to_thread.run_sync(flood.stdout.readline)

        def callback() -> bytes:
            with socket.create_connection(("127.0.0.1", lb.port), timeout=10) as s:
                s.sendall(f"GET {lb.path}?code=c1&state=s1 HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n".encode())
                return s.recv(12)

        answer = await anyio.to_thread.run_sync(callback)
        params = await lb.wait()
        os.killpg(flood.pid, signal.SIGKILL)
        print(held.strip(), answer.decode(), params["code"], flush=True)


anyio.run(main)
"""


def test_the_loopback_listener_outlasts_another_accounts_flood() -> None:
    """Another account opens 400 connections to the callback port and sends partial headers
    (the listener runs in `monad mcp authorize` under a 256-descriptor limit): the
    browser's callback is still answered and the flow ends with its code. Before the cap,
    accept() failed with EMFILE and the flow ended in an ExceptionGroup."""
    import os
    import pwd
    import subprocess
    import sys

    if os.geteuid() != 0:
        pytest.skip("connecting as another account needs root (setuid); run as root to test it")
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no `nobody` account on this machine to connect as")
    as_nobody = ["/usr/sbin/runuser", "-u", nobody.pw_name, "--"]
    proc = subprocess.run([sys.executable, "-c", _LISTEN, *as_nobody], input=_FLOOD, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    held, answer, code = proc.stdout.split()[:2], proc.stdout.split()[2], proc.stdout.split()[3]
    assert int(held[0]) > 250, proc.stdout  # the flood reached the limit
    assert held[1] == "HTTP/1.1" and answer == "200" and code == "c1", proc.stdout
