"""The Studio's listener against the real supervisor, with real HTTP requests: `monad studio`,
its port rules, every lock (loopback only, one-time token → cookie, cookie on every route,
Host, Origin, CSP), the same control API as the unix socket, the event stream, and no
secret in any answer (sentinel values in headers, env, URL query and a bearer token)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.auth_helpers import browser_calls, install_browser
from tests.conftest import BIN, CliResult, free_port, wait_for
from tests.studio_helpers import SIGNED_IN, URL_RE, StudioHTTP, journal_rows, open_studio

pytestmark = pytest.mark.e2e
SECRETS = {"header": "SENTINEL-hdr-7f3a", "env": "SENTINEL-env-51c2", "query": "SENTINEL-qry-9be0",
           "token": "SENTINEL-tok-d41e"}


def _atom(home: Path, name: str) -> Path:
    return home / "atoms" / "mcp" / f"{name}.toml"


@pytest.fixture
def studio(monad: Any) -> Any:
    """The Studio served by a supervisor that `monad studio` started; signed in."""
    answer = open_studio(monad)
    client = StudioHTTP(answer["url"])
    client.login()
    yield client
    client.close()
    monad("daemon", "stop")


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[StudioHTTP, Any]]:
    """One supervisor and Studio for the tests that only read (each test starting its own
    would cost ~4 s): a signed-in client, and `monad` bound to that state directory."""
    root = tmp_path_factory.mktemp("shared-studio")
    (root / "user-home").mkdir()
    env = {**os.environ, "MONAD_HOME": str(root / "monad-home"), "HOME": str(root / "user-home"),
           "PATH": BIN + os.pathsep + os.environ.get("PATH", "")}
    env.pop("MONAD_NO_AUTOSTART", None)

    def monad(*argv: str) -> CliResult:
        proc = subprocess.run([sys.executable, "-m", "monad_cli", *argv], capture_output=True, text=True,
                              timeout=60, env=env)
        return CliResult(proc.returncode, proc.stdout, proc.stderr)

    client = StudioHTTP(open_studio(monad)["url"])
    client.login()
    yield client, monad
    client.close()
    monad("daemon", "stop")


def test_monad_studio_autostarts_prints_one_url_and_a_new_one_each_time(monad: Any, monad_home: Path,
                                                                        tmp_path: Path, monkeypatch: Any) -> None:
    assert monad("daemon", "status").code == 3
    port = free_port()
    r = monad("studio", "--no-browser", "--port", str(port))
    assert r.code == 0, r
    lines = r.out.splitlines()
    assert len(lines) == 1 and URL_RE.fullmatch(lines[0]) and f":{port}/" in lines[0]
    assert monad("daemon", "status").code == 0  # started in the background, still running
    again = open_studio(monad, "--port", "0")  # 0 keeps the page where it is
    assert again["port"] == port and again["started"] is False and again["url"] != lines[0]
    # Both URLs work, once each.
    for url in (lines[0], again["url"]):
        client = StudioHTTP(url)
        client.login()
        assert client.get("/v1/health").status_code == 200
    # Without --no-browser the person's browser ($BROWSER here) gets the 0600 file that holds
    # the URL, never the URL: its command line is readable by every account (test_studio_login.py).
    install_browser(tmp_path, monkeypatch, mode="log-only")
    r = monad("studio", "--port", str(port))
    assert r.code == 0, r
    [opened] = browser_calls(tmp_path)
    assert opened.startswith("file://") and r.out.strip() in Path(opened.removeprefix("file://")).read_text()
    monad("daemon", "stop")


def test_default_port_moving_and_a_busy_port(monad: Any, monkeypatch: Any) -> None:
    r = monad("studio", "--help")
    assert "8720" in r.out and "MONAD_STUDIO_PORT" in r.out
    r = monad("studio", "--no-browser", env={"MONAD_STUDIO_PORT": "eighty"})
    assert r.code == 2 and r.err == "error: $MONAD_STUDIO_PORT must be a port number from 0 to 65535\n"
    first = free_port()
    monkeypatch.setenv("MONAD_STUDIO_PORT", str(first))
    r = monad("studio", "--no-browser", "--json")  # no --port: $MONAD_STUDIO_PORT, else 8720
    assert r.code == 0, r
    answer = r.json()
    assert answer["port"] == first and answer["started"] is True
    old = StudioHTTP(answer["url"])
    old.login()
    # Another explicit port moves the page: the old port stops, its session with it.
    second = free_port()
    r = monad("studio", "--no-browser", "--json", "--port", str(second))
    assert r.code == 0, r
    assert r.json()["port"] == second and "moved from port" in r.err
    with pytest.raises(httpx2.ConnectError):
        old.get("/v1/health")
    # A port that is taken: one line, and the page keeps being served where it is.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        busy = taken.getsockname()[1]
        r = monad("studio", "--no-browser", "--port", str(busy))
        assert r.code == 2 and r.out == ""  # exit 2: a port to change, like any bad input
        assert r.err.strip() == (f"error: cannot serve the Studio on 127.0.0.1:{busy}: Address already in use; "
                                 f"pass `--port N` for another port, or `--port 0` for any free one")
    again = open_studio(monad)
    assert again["port"] == second
    monad("daemon", "stop")


def test_two_studio_ports_at_once_leave_no_dead_url(monad: Any) -> None:
    """`monad studio --port A` and `--port B` at the same moment: the page ends on one port,
    and the login URL the other printed still works (issue 30)."""
    ports = [free_port(), free_port()]
    procs = [subprocess.Popen([sys.executable, "-m", "monad_cli", "studio", "--no-browser", "--json", "--port",
                               str(p)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for p in ports]
    answers = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        answers.append(json.loads(out))
    assert {a["port"] for a in answers} == set(ports)
    for answer in answers:  # each printed URL signs a browser in, wherever the page is now
        browser = StudioHTTP(answer["url"])
        r = browser.http.get(answer["url"], follow_redirects=False)
        if r.status_code == 307:  # the port that lost the race forwards its URL to the page's port
            assert r.headers["location"].startswith("http://127.0.0.1:") and "token=" in r.headers["location"]
            browser = StudioHTTP(r.headers["location"])
            r = browser.http.get(browser.url)
        assert r.status_code == 200 and SIGNED_IN in r.text, (r.status_code, r.text)
        browser.cookie = r.headers["set-cookie"].split(";", 1)[0].partition("=")[2]
        assert browser.get("/v1/health").status_code == 200
    # A URL opened on the forwarding port is spent like any other; the old port serves nothing else.
    moved = [a for a in answers if StudioHTTP(a["url"]).http.get(a["url"]).status_code == 307]
    assert len(moved) == 1, answers  # the port that lost the race
    for answer in moved:
        forward = httpx2.get(f"http://127.0.0.1:{answer['port']}/studio/")
        assert forward.status_code == 410 and "the Studio moved to" in forward.text
        # Moving back to the forwarding port works: it becomes the page's port again.
        r = monad("studio", "--no-browser", "--json", "--port", str(answer["port"]))
        assert r.code == 0 and r.json()["port"] == answer["port"], r
        assert StudioHTTP(r.json()["url"]).login().status_code == 200
    assert monad("daemon", "stop").code == 0


def test_one_time_token_becomes_an_httponly_samesite_strict_cookie(shared: tuple[StudioHTTP, Any]) -> None:
    login = StudioHTTP(open_studio(shared[1])["url"])
    r = login.login()
    assert SIGNED_IN in r.text
    flags = [f.strip() for f in r.headers["set-cookie"].split(";")]
    assert {"HttpOnly", "SameSite=Strict", "Path=/"} <= set(flags[1:])
    assert not any(f.lower().startswith(("domain", "max-age", "expires")) for f in flags)
    # The page is served with the cookie ...
    page = login.get("/studio/")
    assert page.status_code == 200 and "<title>MCP servers · monad Studio</title>" in page.text
    # ... and the same URL in another browser (no cookie) gets nothing: the token is spent.
    stranger = httpx2.get(login.url, follow_redirects=False)
    assert stranger.status_code == 401 and "set-cookie" not in stranger.headers
    assert "used already or has expired" in stranger.text
    # A made-up token, and no token, get nothing either.
    for bad in (login.url[:-4] + "AAAA", login.base + "/studio/login"):
        r = httpx2.get(bad, follow_redirects=False)
        assert r.status_code == 401 and "set-cookie" not in r.headers


def test_every_route_needs_the_cookie(shared: tuple[StudioHTTP, Any]) -> None:
    studio, monad = shared
    routes = [("GET", "/"), ("GET", "/studio/"), ("GET", "/studio/js/app.js"), ("GET", "/studio/studio.css"),
              ("GET", "/v1/health"), ("GET", "/v1/events"), ("GET", "/v1/settings/mcp-servers"),
              ("GET", "/v1/settings/mcp-servers/status"), ("GET", "/v1/journal"), ("GET", "/v1/tools"),
              ("GET", "/no/such/path"), ("POST", "/v1/settings/mcp-servers"),
              ("PATCH", "/v1/settings/mcp-servers/x"), ("DELETE", "/v1/settings/mcp-servers/x"),
              ("POST", "/v1/mcp-servers/reconnect"), ("POST", "/v1/daemon/stop")]
    for cookie in (None, "not-a-session", studio.cookie + "x"):
        for method, path in routes:
            r = studio.request(method, path, body={"name": "x", "definition": {"command": "true"}}
                               if method == "POST" else None, cookie=cookie)
            assert r.status_code == 401, (cookie, method, path, r.status_code)
    assert monad("mcp", "list", "--json").json() == []
    assert studio.get("/v1/health").status_code == 200  # and with it, they answer


def test_host_must_be_this_port_on_loopback(shared: tuple[StudioHTTP, Any]) -> None:
    studio = shared[0]
    p = studio.port
    for host in (f"evil.example:{p}", f"127.0.0.1:{p + 1}", "127.0.0.1", f"localhost.evil.example:{p}",
                 f"[::1]:{p}", f"10.0.0.1:{p}"):
        for path in ("/v1/health", "/studio/"):
            r = studio.get(path, host=host)
            assert r.status_code == 403, (host, path, r.status_code)
    r = studio.get("/v1/health", host=f"evil.example:{p}")
    assert r.json()["error"]["code"] == "forbidden_host"
    assert studio.get("/v1/health", host=f"localhost:{p}").status_code == 200


def test_a_change_from_another_origin_is_refused_and_writes_nothing(studio: StudioHTTP, monad: Any,
                                                                   monad_home: Path) -> None:
    add = {"name": "evil", "definition": {"command": "sh", "args": ["-c", "touch pwned"]}}
    before = len(journal_rows(monad_home))
    for origin in ("http://evil.example", "null", f"http://127.0.0.1:{studio.port + 1}",
                   f"https://127.0.0.1:{studio.port}", None):
        r = studio.request("POST", "/v1/settings/mcp-servers", body=add, origin=origin)
        assert r.status_code == 403, (origin, r.status_code, r.text)
        assert r.json()["error"]["code"] in ("cross_origin", "origin_required")
    assert not _atom(monad_home, "evil").exists()
    assert monad("mcp", "add", "mine", "--", "true").code == 0
    text = _atom(monad_home, "mine").read_text()
    for method, path, body in (("PATCH", "/v1/settings/mcp-servers/mine", {"command": "sh"}),
                               ("DELETE", "/v1/settings/mcp-servers/mine", None),
                               ("POST", "/v1/mcp-servers/mine/reconnect", {}),
                               ("POST", "/v1/daemon/stop", {})):
        r = studio.request(method, path, body=body, origin="http://evil.example")
        assert r.status_code == 403, (method, path)
    assert _atom(monad_home, "mine").read_text() == text
    assert [r for r in journal_rows(monad_home)[before:] if r["kind"] in ("edit", "action")] == []
    # An oversized body is refused before it is read.
    r = studio.http.post(f"{studio.base}/v1/settings/mcp-servers", content=b"x" * (1024 * 1024 + 1),
                         headers={"Host": f"127.0.0.1:{studio.port}", "Origin": studio.origin,
                                  "Cookie": f"{studio.cookie_name}={studio.cookie}"})
    assert r.status_code == 413
    # A cross-site read is refused too, even though it could not read the answer.
    assert studio.get("/v1/settings/mcp-servers", origin="http://evil.example").status_code == 403
    # The page's own origin may change things.
    r = studio.request("POST", "/v1/settings/mcp-servers", body={"name": "ok", "definition": {"command": "true"}})
    assert r.status_code == 201, r.text


def test_csp_and_security_headers_on_every_answer(shared: tuple[StudioHTTP, Any]) -> None:
    studio = shared[0]
    answers = [studio.get("/studio/"), studio.get("/studio/js/app.js"), studio.get("/studio/studio.css"),
               studio.get("/v1/settings/mcp-servers"), studio.get("/v1/settings/mcp-servers/nope"),
               studio.get("/v1/health", cookie=None), studio.get("/studio/", host="evil.example:1"),
               studio.request("POST", "/v1/settings/mcp-servers", body={}, origin="http://evil.example"),
               studio.get("/"), httpx2.get(studio.url, follow_redirects=False)]
    for r in answers:
        csp = r.headers.get("content-security-policy", "")
        assert "default-src 'none'" in csp and "script-src 'self'" in csp and "frame-ancestors 'none'" in csp, r
        assert "'unsafe-inline'" not in csp and "'unsafe-eval'" not in csp
        assert r.headers["x-content-type-options"] == "nosniff" and r.headers["referrer-policy"] == "no-referrer"
        assert r.headers["x-frame-options"] == "DENY"
    assert answers[1].headers["content-type"].startswith(("text/javascript", "application/javascript"))


def test_binds_127_0_0_1_only(shared: tuple[StudioHTTP, Any]) -> None:
    studio = shared[0]
    hex_port = f"{studio.port:04X}"
    listening = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except FileNotFoundError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            if state == "0A" and local.endswith(f":{hex_port}"):  # 0A: LISTEN
                listening.add(local)
    assert listening == {f"0100007F:{hex_port}"}, listening
    # Through another address of this machine the port is closed.
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # no packet is sent: this only picks the outgoing address
            own = probe.getsockname()[0]
        except OSError:
            own = "127.0.0.1"
    if not own.startswith("127."):
        with socket.socket() as s, pytest.raises(OSError):
            s.settimeout(2)
            s.connect((own, studio.port))


def test_minting_login_urls_is_for_the_control_socket_only(shared: tuple[StudioHTTP, Any]) -> None:
    studio = shared[0]
    r = studio.request("POST", "/v1/studio", body={})
    assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden"
    assert "token" not in r.text


def test_the_same_control_api_and_json_as_the_unix_socket(studio: StudioHTTP, monad: Any, monad_home: Path) -> None:
    from monad_cli.cli.control import ControlClient
    from monad_cli.core.paths import Paths

    assert monad("mcp", "add", "t", "--", "mcp-server-time").code == 0
    unix = ControlClient(Paths(monad_home))
    for path in ("/v1/settings/mcp-servers", "/v1/settings/mcp-servers/t"):
        assert studio.get(path).json() == unix.get(path), path
    assert studio.get("/v1/settings/mcp-servers/nope").json() == {
        "error": {"code": "not_found", "message": "server `nope` is not defined (see `monad mcp list`)"}}
    # An invalid definition names its field, for the form.
    r = studio.request("POST", "/v1/settings/mcp-servers", body={"name": "bad name", "definition": {"command": "x"}})
    assert r.status_code == 422
    said = ("server name `bad name`: the name may only contain letters A-Z a-z, digits, `_` and `-`; "
            "choose another")
    assert r.json()["error"] == {"code": "invalid_definition", "field": "name", "message": said,
                                 "errors": [{"field": "name", "message": said}]}
    assert not list((monad_home / "atoms" / "mcp").glob("bad*"))
    # Every field problem of one request at once (a new-user trial got one per Save), each next
    # to its field; `field` and `message` stay the first's for older clients.
    r = studio.request("POST", "/v1/settings/mcp-servers", body={"name": "bad name", "definition": {
        "url": "ftp://x", "timeout": 0, "headers": {"X-Key": "a\nb"}}})
    error = r.json()["error"]
    assert r.status_code == 422 and error["field"] == "name" and error["message"] == said, error
    assert [(e["field"], e["message"].split(": ", 1)[1]) for e in error["errors"][1:]] == [
        ("timeout", "must be a number of seconds more than 0 and at most 600, got 0"),
        ("url", "must start with http:// or https://, got `ftp:`"),
        ("headers.X-Key", "a header value must not contain line breaks")], error
    assert not list((monad_home / "atoms" / "mcp").glob("bad*"))


def test_no_secret_in_any_answer_and_an_unchanged_edit_keeps_every_secret(studio: StudioHTTP, monad: Any,
                                                                         monad_home: Path) -> None:
    s = SECRETS
    definitions = {
        "hdr": {"url": "https://hdr.example/mcp", "headers": {"X-Api-Key": s["header"]}},
        "qry": {"url": f"https://u:{s['query']}x@qry.example/mcp?key={s['query']}&plain=1"},
        "tok": {"url": "https://tok.example/mcp", "auth": {"mode": "bearer", "token": s["token"]}},
        "envy": {"command": "sh", "args": ["-c", "exit 3", "--api-key", s["env"]], "env": {"API_KEY": s["env"]}},
    }
    for name, definition in definitions.items():
        r = studio.request("POST", "/v1/settings/mcp-servers", body={"name": name, "definition": definition})
        assert r.status_code == 201, r.text
    files = {name: _atom(monad_home, name).read_text() for name in definitions}
    wait_for(lambda: all(row["state"] != "connecting" for row in
                         studio.get("/v1/settings/mcp-servers/status").json()["servers"]), timeout=30)
    answers = [studio.get(p).text for p in (
        "/studio/", "/v1/settings/mcp-servers", "/v1/settings/mcp-servers/status?detail=1", "/v1/journal?limit=500",
        "/v1/tools", *(f"/v1/settings/mcp-servers/{n}" for n in definitions),
        *(f"/v1/settings/mcp-servers/{n}/status" for n in definitions))]
    answers.append(_first_event(studio))
    for text in answers:
        assert "SENTINEL" not in text, text[:400]
    # What the page got back is what it sends when nothing was touched: the files keep the
    # secrets, and `***` is never written.
    for name in definitions:
        shown = studio.get(f"/v1/settings/mcp-servers/{name}").json()["definition"]
        r = studio.request("PATCH", f"/v1/settings/mcp-servers/{name}", body=shown)
        assert r.status_code == 200, r.text
        text = _atom(monad_home, name).read_text()
        assert "***" not in text and text.count("SENTINEL") == files[name].count("SENTINEL"), text
    # A changed field around a kept secret: the secret stays in place.
    r = studio.request("PATCH", "/v1/settings/mcp-servers/qry",
                       body={"url": "https://u:***@qry.example/v2?key=***&plain=2"})
    assert r.status_code == 200
    assert f"https://u:{s['query']}x@qry.example/v2?key={s['query']}&plain=2" in _atom(monad_home, "qry").read_text()
    # `***` under a name that holds no secret is refused next to that field; nothing is written.
    before = _atom(monad_home, "hdr").read_text()
    r = studio.request("PATCH", "/v1/settings/mcp-servers/hdr", body={"headers": {"X-Other": "***"}})
    assert r.status_code == 422 and r.json()["error"]["field"] == "headers.X-Other"
    assert "nothing was written" in r.json()["error"]["message"]
    assert _atom(monad_home, "hdr").read_text() == before
    # Every edit is a journal row marked as made from the Studio (field names, no values).
    edits = journal_rows(monad_home, "edit")
    assert {r["server"] for r in edits} == set(definitions)
    assert all(r["detail"]["via"] == "studio" and "from the Studio" in r["reason"] for r in edits)
    assert "SENTINEL" not in json.dumps(journal_rows(monad_home))
    r = studio.request("DELETE", "/v1/settings/mcp-servers/hdr")
    assert r.status_code == 200 and not _atom(monad_home, "hdr").exists()


def _first_event(studio: StudioHTTP) -> str:
    with studio.http.stream("GET", f"{studio.base}/v1/events",
                            headers={"Cookie": f"{studio.cookie_name}={studio.cookie}",
                                     "Host": f"127.0.0.1:{studio.port}"}) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        for line in r.iter_lines():
            if line.startswith("data:"):
                return line
    raise AssertionError("no event")


def test_event_stream_starts_with_a_snapshot_then_follows_changes(studio: StudioHTTP, monad: Any) -> None:
    assert monad("mcp", "add", "a", "--disabled", "--", "true").code == 0
    events: list[dict[str, Any]] = []
    with studio.http.stream("GET", f"{studio.base}/v1/events",
                            headers={"Cookie": f"{studio.cookie_name}={studio.cookie}",
                                     "Host": f"127.0.0.1:{studio.port}"}) as r:
        lines = r.iter_lines()
        for line in lines:
            if line.startswith("data:"):
                events.append(json.loads(line[5:]))
                break
        assert monad("mcp", "add", "b", "--disabled", "--", "true").code == 0
        for line in lines:
            if line.startswith("data:"):
                events.append(json.loads(line[5:]))
                if events[-1]["type"] == "server.state" and events[-1]["data"]["server"]["name"] == "b" \
                        and events[-1]["data"]["server"]["state"] == "disabled":
                    break
    snapshot = events[0]
    assert snapshot["type"] == "snapshot" and set(snapshot) == {"id", "type", "ts", "data"}
    assert [row["name"] for row in snapshot["data"]["servers"]] == ["a"]
    assert {"servers", "problems", "definitions"} <= set(snapshot["data"])
    kinds = [e["type"] for e in events[1:]]
    assert "config" in kinds and kinds[-1] == "server.state"
    ids = [e["id"] for e in events]
    assert ids == sorted(ids) and len(set(ids[1:])) == len(ids) - 1


def test_a_value_equal_to_an_env_file_secret_is_masked_as_the_cli_masks_it(studio: StudioHTTP, monad: Any,
                                                                          monad_home: Path) -> None:
    """A header, env or argument value equal to a value of MONAD_HOME/env is a secret monad
    holds: the Studio's answers mask it as `monad mcp get` does, and the unchanged form sent
    back keeps it (one set for both: `redact.held_secrets`)."""
    secret = "SENTINEL-envfile-3c9d"
    (monad_home / "env").write_text(f"SHARED_TOKEN={secret}\n")
    os.chmod(monad_home / "env", 0o600)
    definition = {"command": "sh", "args": ["-c", "exit 3", "--opt", secret, f"value:{secret}"],
                  "env": {"PLAIN": secret}, "enabled": False}
    r = studio.request("POST", "/v1/settings/mcp-servers", body={"name": "plain", "definition": definition})
    assert r.status_code == 201, r.text
    before = _atom(monad_home, "plain").read_text()
    cli = monad("mcp", "get", "plain", "--json").json()["definition"]
    assert cli["env"] == {"PLAIN": "***"} and cli["args"] == ["-c", "exit 3", "--opt", "***", "value:***"], cli
    shown = studio.get("/v1/settings/mcp-servers/plain").json()["definition"]
    assert shown == cli
    listed = {d["name"]: d["definition"] for d in studio.get("/v1/settings/mcp-servers").json()}
    assert listed["plain"] == cli
    r = studio.request("PATCH", "/v1/settings/mcp-servers/plain", body=shown)
    assert r.status_code == 200, r.text
    assert _atom(monad_home, "plain").read_text() == before
