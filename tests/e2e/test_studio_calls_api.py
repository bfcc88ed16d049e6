"""Tool calls, approvals, Tasks and MCP Apps through the Studio's port, with real HTTP requests
against the real supervisor and real servers (the SDK-written app server and test server,
`mcp-server-time`): calls from the page are `studio` calls through the one gate, the
transcript keeps arguments, "always" is refused for hostEscape servers by the API itself,
app-only tools never reach agents (CLI, gateway), app requests are answered, refused and
journaled, the sandbox port's locks, the event stream, and no secret in any answer."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import LIGHTSERVER, SERVERS, wait_for, wait_state, write_atom
from tests.studio_helpers import StudioHTTP, journal_rows, open_studio

pytestmark = pytest.mark.e2e
APPSERVER = str(SERVERS / "appserver.py")
SECRET = "SENTINEL-calls-8d2e"
TIME = ["mcp-server-time", "--local-timezone", "UTC"]


@pytest.fixture
def studio(monad: Any) -> Iterator[StudioHTTP]:
    client = StudioHTTP(open_studio(monad)["url"])
    client.login()
    yield client
    client.close()
    monad("daemon", "stop")


def _app_atom(home: Path, name: str = "app", *flags: str, auto: tuple[str, ...] = ("app_only", "show")) -> None:
    trust = ", ".join(f'"{name}__{t}"' for t in auto)
    write_atom(home, name, f"command = {json.dumps(sys.executable)}\nargs = {json.dumps([APPSERVER, *flags])}\n"
                          f"timeout = 60\n[trust]\nautoApproveTools = [{trust}]\n")


def _host_info(studio: StudioHTTP) -> dict[str, Any]:
    page = studio.get("/studio/").text
    start = page.index('<script type="application/json" id="studio-host">') + len(
        '<script type="application/json" id="studio-host">')
    return json.loads(page[start:page.index("</script>", start)])


class Events:
    """The page's event stream, read in a thread into `events`."""

    def __init__(self, studio: StudioHTTP) -> None:
        self.events: list[dict[str, Any]] = []
        self.studio = studio
        self.response: Any = None
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        wait_for(lambda: any(e["type"] == "snapshot" for e in self.events))

    def _read(self) -> None:
        s = self.studio
        with s.http.stream("GET", f"{s.base}/v1/events", headers={"Cookie": f"{s.cookie_name}={s.cookie}",
                                                                 "Host": f"127.0.0.1:{s.port}"}) as r:
            self.response = r
            try:
                for line in r.iter_lines():
                    if line.startswith("data:"):
                        self.events.append(json.loads(line[5:]))
            except Exception:  # the stream closed under us at the end of the test
                return

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e["data"] for e in self.events if e["type"] == kind]

    def close(self) -> None:
        if self.response is not None:
            self.response.close()


def test_studio_calls_are_studio_calls_and_the_transcript_keeps_their_arguments(
        studio: StudioHTTP, monad: Any, monad_home: Path) -> None:
    write_atom(monad_home, "time", f"command = {json.dumps(TIME[0])}\nargs = {json.dumps(TIME[1:])}\n"
                                   "[trust]\nautoApproveTools = [\"time__get_current_time\"]\n")
    wait_state(monad, "time", "connected")
    events = Events(studio)
    try:
        r = studio.request("POST", "/v1/tools/call", body={
            "name": "time__get_current_time", "arguments": {"timezone": "UTC"}, "via": "cli", "ref": "my-ref",
            "approval": {"mode": "wait"}})
        assert r.status_code == 200, r.text
        answer = r.json()
        assert answer["decidedBy"] == "trust.autoApproveTools" and not answer["isError"]
        cli = monad("mcp", "call", "time__get_current_time", "--arg", "timezone=Europe/Paris")
        assert cli.code == 0, cli
        answer_calls = studio.get("/v1/journal/calls?limit=10").json()
        calls = answer_calls["calls"]
        assert answer_calls["fleet"] is False and {c["host"] for c in calls} == {answer_calls["host"]}
        assert [(c["via"], c["arguments"], c["outcome"]) for c in calls] == [
            ("cli", {"timezone": "Europe/Paris"}, "ok"), ("studio", {"timezone": "UTC"}, "ok")]
        assert calls[1]["ref"] == "my-ref" and calls[1]["id"] == answer["callId"]
        assert calls[1]["decidedBy"] == "trust.autoApproveTools" and calls[1]["durationMs"] > 0
        wait_for(lambda: len([c for c in events.of("call") if c["call"].get("outcome") == "ok"]) == 2)
        live = [c["call"] for c in events.of("call")]
        assert [(c["via"], c["outcome"]) for c in live if "via" in c] == [("studio", "running"), ("cli", "running")]
        assert live[0]["arguments"] == {"timezone": "UTC"} and live[0]["ref"] == "my-ref"
        assert live[0]["host"] == answer_calls["host"]
    finally:
        events.close()
    # The journal itself still keeps a digest only (docs/tools.md).
    rows = monad("journal", "--calls", "--json").json()
    assert all("arguments" not in row and row["argsDigest"].startswith("sha256:") for row in rows)


def test_always_is_refused_for_a_host_escape_server_by_the_api_and_a_cli_call_waits_for_the_page(
        studio: StudioHTTP, monad: Any, monad_home: Path) -> None:
    write_atom(monad_home, "esc", f"command = {json.dumps(TIME[0])}\nargs = {json.dumps(TIME[1:])}\n"
                                  "[trust]\nhostEscape = true\n")
    wait_state(monad, "esc", "connected")
    cli = subprocess.Popen([sys.executable, "-m", "monad_cli", "mcp", "call", "esc__get_current_time",
                            "--arg", "timezone=UTC", "--approval-timeout", "60"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        [pending] = wait_for(lambda: studio.get("/v1/approvals").json()["pending"])
        assert (pending["exposed"], pending["via"], pending["hostEscape"]) == ("esc__get_current_time", "cli", True)
        assert pending["arguments"] == {"timezone": "UTC"} and pending["command"][0] == "mcp-server-time"
        r = studio.request("POST", f"/v1/approvals/{pending['id']}", body={"decision": "allow", "scope": "always"})
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_input", r.text
        assert "never always" in r.json()["error"]["message"]
        assert [p["id"] for p in studio.get("/v1/approvals").json()["pending"]] == [pending["id"]]  # still waiting
        r = studio.request("POST", f"/v1/approvals/{pending['id']}", body={"decision": "allow", "scope": "once"})
        assert r.status_code == 200, r.text
        out, err = cli.communicate(timeout=60)
    finally:
        if cli.poll() is None:
            cli.kill()
    assert cli.returncode == 0, err
    assert "UTC" in out
    [row] = monad("journal", "--calls", "--json").json()
    assert (row["via"], row["decision"], row["decidedBy"], row["outcome"]) == \
        ("cli", "approved", "the Studio (once)", "ok")


def test_app_only_tools_never_reach_agents_and_the_client_advertises_mcp_apps(
        monad: Any, monad_home: Path, supervisor: Any) -> None:
    _app_atom(monad_home)
    wait_state(monad, "app", "connected", timeout=60)
    names = [t["name"] for t in monad("mcp", "tools", "--json").json()]
    assert "app__model_only" in names and "app__show" in names and "app__app_only" not in names
    r = monad("mcp", "call", "app__app_only", "--arg", "n=1", "--yes")
    assert r.code != 0 and "leaves out \"model\"" in r.err, r
    r = monad("mcp", "call", "app__show", "--arg", "text=hi")  # auto-approved
    assert r.code == 0 and r.out.strip() == "hi (apps: yes)", r  # the server saw the extension

    async def gateway() -> None:
        from mcp import Client, MCPError, StdioServerParameters

        params = StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve"],
                                       env={"MONAD_HOME": str(monad_home), "MONAD_NO_AUTOSTART": "1"})
        async with Client(params) as client:
            listed = [t.name for t in (await client.list_tools()).tools]
            assert "app__model_only" in listed and "app__app_only" not in listed
            with pytest.raises(MCPError, match="leaves out \"model\""):  # as for a tool that is not there
                await client.call_tool("app__app_only", {"n": 1})

    anyio.run(gateway)
    calls = monad("journal", "--calls", "--json").json()
    # refused before the gate: never run, journaled as refused
    assert all(c["outcome"] == "refused" for c in calls if c["tool"] == "app_only") and calls


def test_app_requests_are_answered_refused_and_journaled(studio: StudioHTTP, monad: Any, monad_home: Path) -> None:
    _app_atom(monad_home, "app", "--declared", "http://127.0.0.1:8999")
    _app_atom(monad_home, "other", auto=("app_only",))
    wait_state(monad, "app", "connected", timeout=60)
    wait_state(monad, "other", "connected", timeout=60)
    app = studio.get("/v1/studio/apps/resource?name=app__show").json()
    assert app["uri"] == "ui://probe/app.html" and app["csp"] == {"connectDomains": ["http://127.0.0.1:8999"]}
    assert app["html"].startswith('<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" content="')
    assert "connect-src http://127.0.0.1:8999;" in app["policy"] and app["permissions"] == {}
    assert studio.get("/v1/studio/apps/resource?name=app__kinds").status_code == 404  # no app

    def ask(message: Any, **extra: Any) -> dict[str, Any]:
        r = studio.request("POST", "/v1/studio/apps/request", body={"name": "app__show", "message": message, **extra})
        assert r.status_code == 200, r.text
        return r.json()

    def rpc(method: str, params: dict[str, Any], rid: Any = 1, **extra: Any) -> dict[str, Any]:
        return ask({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}, **extra)

    init = rpc("ui/initialize", {"protocolVersion": "2026-01-26"}, hostContext={"theme": "dark", "evil": "x"})
    result = init["result"]
    assert result["protocolVersion"] == "2026-01-26" and result["hostInfo"]["name"] == "monad Studio"
    assert result["hostCapabilities"]["sandbox"] == {"permissions": {}, "csp": app["csp"]}
    assert result["hostContext"]["theme"] == "dark" and "evil" not in result["hostContext"]
    assert result["hostContext"]["toolInfo"]["tool"]["name"] == "show"
    ok = rpc("tools/call", {"name": "app_only", "arguments": {"n": 3}}, rid="c1")
    assert ok["id"] == "c1" and ok["result"]["content"][0]["text"] == "app_only 3" and "callId" not in ok["result"]
    refused = rpc("tools/call", {"name": "model_only", "arguments": {}})["error"]
    assert refused["code"] == -32000 and "not callable from an MCP App" in refused["message"]
    assert rpc("tools/call", {"name": "nope"})["error"]["code"] == -32602
    bad_link = rpc("ui/open-link", {"url": "javascript:alert(1)"}, confirmed=True)["error"]
    assert bad_link["code"] == -32602 and "only http and https" in bad_link["message"]
    assert "declined" in rpc("ui/open-link", {"url": "https://example.com/x"})["error"]["message"]
    assert rpc("ui/open-link", {"url": "https://example.com/x"}, confirmed=True)["result"] == {}
    malformed = ask({"jsonrpc": "1.0", "id": 99, "method": 5})
    assert malformed["id"] == 99 and malformed["error"]["code"] == -32600
    assert ask("not even an object")["error"]["code"] == -32600
    assert rpc("ui/message", {"role": "user", "content": {"type": "text", "text": "hi"}})["error"]["code"] == -32601
    assert rpc("ping", {})["result"] == {}
    # Every one of them is a journal row; the app's own tool call is a tool_calls row too.
    rows = [r for r in journal_rows(monad_home, "app")]
    assert [(r["detail"]["method"], r["detail"]["outcome"]) for r in rows] == [
        ("ui/initialize", "ok"), ("tools/call", "ok"), ("tools/call", "refused"), ("tools/call", "refused"),
        ("ui/open-link", "refused"), ("ui/open-link", "refused"), ("ui/open-link", "ok"), ("(malformed)", "rejected"),
        ("(malformed)", "rejected"), ("ui/message", "refused"), ("ping", "ok")]
    assert all(r["server"] == "app" and r["detail"]["tool"] == "app__show" for r in rows)
    assert "https://example.com/x" in rows[6]["reason"]
    calls = monad("journal", "--calls", "--json").json()
    # A call of a tool its server does not have is a call too: its rows, like any refused call's.
    assert [(c["exposed"], c["via"], c["outcome"]) for c in calls] == [("app__app_only", "app", "ok"),
                                                                          ("app__model_only", "app", "refused"),
                                                                          ("app__nope", "app", "refused")]
    unknown = calls[2]
    assert unknown["decidedBy"] == "monad (not_found)" and unknown["server"] == "app" and unknown["tool"] == "nope"
    assert unknown["error"] == "server `app` has no tool `nope`", unknown


def test_the_sandbox_port_and_its_locks(studio: StudioHTTP) -> None:
    import httpx2

    info = _host_info(studio)
    port, path = info["sandboxPort"], info["sandboxPath"]
    assert port and port != studio.port and path == "/sandbox/proxy.html"
    page_csp = studio.get("/studio/").headers["content-security-policy"]
    assert f"frame-src http://127.0.0.1:{port} http://localhost:{port}" in page_csp
    origin = f"http://127.0.0.1:{studio.port}"
    frame = {"Sec-Fetch-Dest": "iframe", "Sec-Fetch-Site": "same-site", "Host": f"127.0.0.1:{port}"}
    base = f"http://127.0.0.1:{port}"

    def get(url: str, **headers: str) -> httpx2.Response:
        return httpx2.get(base + url, headers={**frame, **headers}, timeout=10)

    ok = get(f"{path}?host={origin}")
    assert ok.status_code == 200 and ok.headers["content-security-policy"] == f"frame-ancestors {origin}"
    assert ok.headers["x-content-type-options"] == "nosniff" and ok.headers["cache-control"] == "no-store"
    assert f"const HOST = {json.dumps(origin)};" in ok.text and "set-cookie" not in ok.headers
    assert 'setAttribute("sandbox", "allow-scripts")' in ok.text and "allow-same-origin" not in ok.text.split(
        "<script>")[1].split("app.setAttribute")[1].split(")")[0]
    assert get(f"{path}?host=http://localhost:{studio.port}").status_code == 200
    assert get(f"{path}?host={origin}", Host=f"evil.example:{port}").status_code == 403
    assert get(f"{path}?host={origin}", **{"Sec-Fetch-Dest": "document"}).status_code == 403  # opened as a tab
    assert get(f"{path}?host={origin}", **{"Sec-Fetch-Site": "cross-site"}).status_code == 403  # another site frames it
    assert get(f"{path}?host=http://evil.example").status_code == 403
    assert get(f"{path}").status_code == 403
    assert get("/v1/settings/mcp-servers").status_code == 404 and get("/studio/").status_code == 404
    assert httpx2.post(base + path, headers=frame, timeout=10).status_code == 404


def test_events_carry_approvals_tasks_and_no_secret(studio: StudioHTTP, monad: Any, monad_home: Path) -> None:
    write_atom(monad_home, "ts", f"command = {json.dumps(sys.executable)}\nargs = {json.dumps([LIGHTSERVER])}\n"
                                 f"[env]\nAPI_KEY = \"{SECRET}\"\n")
    write_atom(monad_home, "tk", f"command = {json.dumps(sys.executable)}\n"
                                 f"args = {json.dumps([str(SERVERS / 'tasks_server.py')])}\n")
    wait_state(monad, "ts", "connected")
    wait_state(monad, "tk", "connected")
    events = Events(studio)
    try:
        # A call whose arguments, then one whose result, hold the secret value: the page gets `***`.
        outcome: dict[str, Any] = {}

        def call(name: str, arguments: dict[str, Any]) -> threading.Thread:
            def run() -> None:
                outcome[name] = studio.request("POST", "/v1/tools/call", body={
                    "name": name, "arguments": arguments, "approval": {"mode": "wait"}})

            thread = threading.Thread(target=run)
            thread.start()
            return thread

        def pending_request(n: int) -> dict[str, Any]:
            """The n-th request announced (a request is announced again when its caller waits)."""
            def requests() -> list[dict[str, Any]]:
                return list({p["approval"]["id"]: p for p in events.of("approval.pending")}.values())
            return wait_for(lambda: len(requests()) > n and requests())[n]

        caller = call("ts__echo", {"text": SECRET})
        pending = pending_request(0)
        assert pending["approval"]["via"] == "studio" and pending["approval"]["arguments"] == {"text": "***"}
        assert studio.get("/v1/approvals").json()["pending"][0]["arguments"] == {"text": "***"}
        studio.request("POST", f"/v1/approvals/{pending['approval']['id']}", body={"decision": "deny"})
        caller.join(60)
        assert outcome["ts__echo"].status_code == 403 and outcome["ts__echo"].json()["error"]["code"] == "denied"
        closed = wait_for(lambda: events.of("approval.closed"))
        assert (closed[0]["decision"], closed[0]["by"]) == ("denied", "denied in the Studio")
        caller = call("ts__env", {"name": "API_KEY"})
        pending = pending_request(1)
        r = studio.request("POST", f"/v1/approvals/{pending['approval']['id']}", body={"decision": "allow",
                                                                                     "scope": "session"})
        assert r.status_code == 200, r.text
        caller.join(60)
        answer = outcome["ts__env"]
        assert answer.status_code == 200 and answer.json()["content"][0]["text"] == "***", answer.text
        assert answer.json()["decidedBy"] == "the Studio (session)"
        # An agent's call through the gateway waits in the page like any other, and the page decides it.
        gateway: dict[str, Any] = {}

        async def through_the_gateway() -> None:
            from mcp import Client, StdioServerParameters

            params = StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve"],
                                           env={"MONAD_HOME": str(monad_home), "MONAD_NO_AUTOSTART": "1"})
            async with Client(params) as client:
                gateway["result"] = await client.call_tool("tk__quick", {"text": "from an agent"})

        agent = threading.Thread(target=lambda: anyio.run(through_the_gateway))
        agent.start()
        pending = pending_request(2)
        assert (pending["approval"]["via"], pending["approval"]["exposed"]) == ("gateway", "tk__quick")
        studio.request("POST", f"/v1/approvals/{pending['approval']['id']}", body={"decision": "allow"})
        agent.join(60)
        assert gateway["result"].content[0].text == "from an agent"
        # A detached task's every change is a `task` event.
        detached = monad("mcp", "call", "tk__slow", "--arg", "seconds=0.5", "--yes", "--detach")
        assert detached.code == 0, detached
        task_id = detached.out.strip()
        wait_for(lambda: any(t["task"]["id"] == task_id and t["task"]["state"] == "completed"
                             for t in events.of("task")), timeout=60)
        states = [t["task"]["state"] for t in events.of("task") if t["task"]["id"] == task_id]
        assert states[0] in ("queued", "submitting", "working") and "completed" in states
        done = next(t["task"] for t in events.of("task") if t["task"]["state"] == "completed")
        assert done["deliveryPending"] and done["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"]
        assert done["correlation"]["exposed"] == "tk__slow"
    finally:
        events.close()
    assert SECRET not in json.dumps(events.events)
    assert SECRET not in studio.get("/v1/journal/calls").text
