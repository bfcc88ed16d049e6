"""Authorization on demand (docs/gateway.md): a tool call to a server in `needs-auth`, or
whose refresh fails under it, starts the authorization; the caller is shown the URL (a
gateway agent as a URL-mode elicitation, `monad mcp call` on a terminal), the browser leg
is driven with httpx (the test authorization server approves at once and redirects to the
supervisor's loopback callback), and the call goes on with the new tokens. Real parts: the
supervisor, `tests/servers/oauth_as.py` (an SDK-protected MCP server with its own
authorization server), the SDK client through `monad mcp serve`."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from tests.auth_helpers import DEVICE_AS, OAUTH_AS, assert_no_sentinel, post, stats
from tests.conftest import LIGHTSERVER, wait_for, wait_state, write_atom

pytestmark = pytest.mark.e2e


def _remote(home: Path, base: str) -> None:
    write_atom(home, "remote", f'transport = "http"\nurl = "{base}/mcp"\n'
                               'trust = {autoApproveTools = ["remote__echo", "remote__append"]}\n')


def _follow(url: str) -> int:
    """The browser leg: open the authorization URL; the authorization server approves at
    once and redirects to monad's loopback callback, which completes the flow."""
    with httpx2.Client(follow_redirects=True, timeout=30) as http:
        return http.get(url).status_code


def _serve(home: Path, *flags: str) -> Any:
    from mcp import StdioServerParameters

    return StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve", *flags],
                                 env={"MONAD_HOME": str(home), "MONAD_NO_AUTOSTART": "1"})


def _on_demand_rows(monad: Any) -> list[dict[str, Any]]:
    rows = monad("journal", "--server", "remote", "--json").json()
    return [r for r in rows if r["kind"] == "auth" and (r.get("detail") or {}).get("step")]


async def _agent_call(home: Path, asked: list[str], *, follow: bool = True,
                      elicitation: bool = True, flags: tuple[str, ...] = (),
                      mode: str = "legacy", tool: str = "echo") -> tuple[bool, str]:
    """One gateway call of `remote__echo` by an SDK agent (`mode`: `legacy`, or `auto` for a
    2026-07-28 agent, asked through `input_required`) whose elicitation callback follows a
    URL-mode question's URL (`follow`); returns (isError, text)."""
    from mcp import Client
    from mcp_types import ElicitResult

    async def elicit(context: Any, params: Any) -> ElicitResult:
        asked.append(params.url)
        if follow:
            assert await anyio.to_thread.run_sync(_follow, params.url) == 200
        return ElicitResult(action="accept")

    kwargs = {"elicitation_callback": elicit} if elicitation else {}
    async with Client(_serve(home, *flags), mode=mode, **kwargs) as agent:
        result = await agent.call_tool(f"remote__{tool}", {"text": "hello through the gateway"})
    return bool(result.is_error), " ".join(getattr(c, "text", "") for c in result.content)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_gateway_call_to_a_server_in_needs_auth_authorizes_it_and_goes_on(supervisor: Any, monad_home: Path,
                                                                           servers: Any, mode: str) -> None:
    base = servers.start(OAUTH_AS)
    _remote(monad_home, base)
    wait_state(supervisor, "remote", "needs-auth", timeout=60)
    asked: list[str] = []
    is_error, text = anyio.run(lambda: _agent_call(monad_home, asked, mode=mode))
    assert (is_error, text) == (False, "hello through the gateway")
    assert len(asked) == 1 and asked[0].startswith(f"{base}/authorize?"), asked
    assert stats(base)["code_exchange"] == 1
    wait_state(supervisor, "remote", "connected")
    steps = [r["detail"]["step"] for r in _on_demand_rows(supervisor)]
    assert steps == ["started", "done"], steps
    rows = supervisor("journal", "--server", "remote", "--json").json()
    assert any(r["kind"] == "auth" and r["reason"].startswith("authorized on demand by a call of `remote__echo`")
               for r in rows), rows
    calls = supervisor("journal", "--calls", "--json").json()
    assert [c["outcome"] for c in calls if c.get("exposed") == "remote__echo"] == ["ok"], calls
    assert_no_sentinel(monad_home, text)


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_agent_is_told_the_elicitation_is_complete_once_the_tokens_arrive(supervisor: Any, monad_home: Path,
                                                                            servers: Any, transport: str) -> None:
    """A 2025-11-25 agent accepts the URL-mode elicitation at once and the person opens the
    URL afterwards: once the tokens arrive the agent gets `notifications/elicitation/complete`
    with that elicitation's `elicitationId` (MCP spec 2025-11-25, client/elicitation), on the
    call's channel and before its result. On stdio the agent lists tools first, so the call
    takes the relay's direct lane; on HTTP it is the SDK's path."""
    import threading

    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp_types import ElicitCompleteNotification, ElicitResult

    from tests.e2e.test_gateway_features import _http_gateway

    base = servers.start(OAUTH_AS)
    _remote(monad_home, base)
    wait_state(supervisor, "remote", "needs-auth", timeout=60)
    asked: list[str] = []
    events: list[tuple[str, Any]] = []
    followed = threading.Event()

    async def elicit(context: Any, params: Any) -> ElicitResult:
        asked.append(params.elicitation_id)

        def follow() -> None:  # the person opens the URL after the agent has answered
            _follow(params.url)
            followed.set()

        threading.Thread(target=follow, daemon=True).start()
        return ElicitResult(action="accept")

    async def on_message(message: Any) -> None:
        if isinstance(message, ElicitCompleteNotification):
            tokens = (await anyio.to_thread.run_sync(stats, base))["code_exchange"]
            events.append(("complete", (message.params.elicitation_id, tokens)))

    async def main(url: str | None, headers: dict[str, str]) -> None:
        import httpx2 as httpx

        async with contextlib.AsyncExitStack() as stack:
            if url is None:
                transport_: Any = _serve(monad_home)
            else:
                http = await stack.enter_async_context(httpx.AsyncClient(headers=headers, timeout=60))
                transport_ = streamable_http_client(url, http_client=http)
            agent = await stack.enter_async_context(Client(transport_, mode="legacy", elicitation_callback=elicit,
                                                           message_handler=on_message))
            assert agent.protocol_version == "2025-11-25"
            if url is None:
                await agent.list_tools()
            result = await agent.call_tool("remote__echo", {"text": "told"})
            events.append(("result", (bool(result.is_error), result.content[0].text)))

    if transport == "stdio":
        anyio.run(main, None, {})
    else:
        with _http_gateway(monad_home) as (url, headers):
            anyio.run(main, url, headers)
    assert followed.is_set() and len(asked) == 1 and asked[0], asked
    # The same id as the elicitation's, after the code exchange, before the call's result.
    assert events == [("complete", (asked[0], 1)), ("result", (False, "told"))], events
    steps = [r["detail"]["step"] for r in _on_demand_rows(supervisor)]
    assert steps == ["started", "done"], steps


def test_an_agent_without_url_elicitation_is_told_to_run_authorize(supervisor: Any, monad_home: Path,
                                                                    servers: Any) -> None:
    base = servers.start(OAUTH_AS)
    _remote(monad_home, base)
    wait_state(supervisor, "remote", "needs-auth", timeout=60)
    is_error, text = anyio.run(lambda: _agent_call(monad_home, [], elicitation=False))
    assert is_error, text
    assert "run `monad mcp authorize remote`" in text and f"{base}/authorize?" in text, text
    assert "\n" not in text.strip()
    steps = [r["detail"]["step"] for r in _on_demand_rows(supervisor)]
    assert steps == ["started", "refused"], steps
    # `monad mcp call` without a terminal cannot show the URL either: one line, exit 1.
    r = supervisor("mcp", "call", "remote__echo", "--arg", "text=x", "--yes")
    assert r.code == 1 and "run `monad mcp authorize remote`, or open http://" in r.err, r
    assert len(r.err.strip().splitlines()) == 1 and "Traceback" not in r.err, r
    calls = supervisor("journal", "--calls", "--json").json()
    assert [c["outcome"] for c in calls if c.get("exposed") == "remote__echo"] == ["refused", "refused"], calls
    # The URL the agent was given still works: following it authorizes the server.
    url = re.search(r"(http://\S+/authorize\?\S+)", text)
    assert url is not None
    assert _follow(url.group(1)) == 200
    wait_state(supervisor, "remote", "connected")


def test_a_device_flow_server_shows_the_agent_its_verification_url_and_code(supervisor: Any, monad_home: Path,
                                                                            servers: Any) -> None:
    """`auth.flow = "device"` (RFC 8628): the agent is shown the verification URL, the code
    in the message; the person approves on another device (the test server approves after a
    pending poll) and the call goes on."""
    from mcp import Client
    from mcp_types import ElicitResult

    base = servers.start(DEVICE_AS, "--device", "--interval", "0.2", "--poll-script", "pending,ok")
    write_atom(monad_home, "remote", f'transport = "http"\nurl = "{base}/mcp"\n'
                                     'auth = {mode = "oauth", flow = "device"}\n'
                                     'trust = {autoApproveTools = ["remote__echo"]}\n')
    wait_state(supervisor, "remote", "needs-auth", timeout=60)
    shown: list[tuple[str, str]] = []

    async def elicit(context: Any, params: Any) -> ElicitResult:
        shown.append((params.url, params.message))
        return ElicitResult(action="accept")

    async def main() -> Any:
        async with Client(_serve(monad_home), mode="legacy", elicitation_callback=elicit) as agent:
            return await agent.call_tool("remote__echo", {"text": "after the device"})

    result = anyio.run(main)
    assert not result.is_error and result.content[0].text == "after the device", result
    [(url, message)] = shown
    assert url.startswith(f"{base}/device") and "WDJB-MJHT" in message, shown
    assert stats(base)["polls"] == 2
    assert_no_sentinel(monad_home, message)


def test_a_per_server_entry_calls_by_the_servers_own_name_and_authorizes(supervisor: Any, monad_home: Path,
                                                                          servers: Any) -> None:
    """`monad mcp serve remote` (one server, its own tool names): `echo` of a server never
    authorized starts its authorization and goes on. Before it, the entry does not look
    healthy (found by a new-user trial: empty instructions and `tools/list = []`): its
    instructions and tools/list say it needs authorization and what to run, as for a failed
    server (docs/gateway.md "A server that is not serving")."""
    from mcp import Client
    from mcp.shared.exceptions import MCPError
    from mcp_types import ElicitResult

    base = servers.start(OAUTH_AS)
    _remote(monad_home, base)
    wait_state(supervisor, "remote", "needs-auth", timeout=60)
    asked: list[str] = []

    async def elicit(context: Any, params: Any) -> ElicitResult:
        asked.append(params.url)
        assert await anyio.to_thread.run_sync(_follow, params.url) == 200
        return ElicitResult(action="accept")

    async def main() -> Any:
        async with Client(_serve(monad_home, "remote"), mode="legacy", elicitation_callback=elicit) as agent:
            told = agent.instructions or ""
            with pytest.raises(MCPError) as listed:
                await agent.list_tools()
            result = await agent.call_tool("echo", {"text": "by its own name"})
            return told, listed.value.error, result

    told, listed, result = anyio.run(main)
    assert told.startswith("monad: server `remote` needs authorization"), told
    assert "`monad mcp authorize remote` authorizes it" in told, told
    assert listed.code == -32603 and listed.message.startswith("server `remote` needs authorization"), listed
    assert "`monad mcp authorize remote`" in listed.message and "reconnect" not in listed.message, listed
    assert not result.is_error and result.content[0].text == "by its own name", result
    assert len(asked) == 1


def test_a_view_that_does_not_serve_the_server_never_starts_its_authorization(supervisor: Any, monad_home: Path,
                                                                              servers: Any) -> None:
    """`monad mcp serve local` serves one other server: a call naming `remote__echo` is
    refused by the view, and no authorization starts."""
    base = servers.start(OAUTH_AS)
    _remote(monad_home, base)
    write_atom(monad_home, "local", f"command = {json.dumps(sys.executable)}\nargs = {json.dumps([LIGHTSERVER])}\n")
    wait_state(supervisor, "remote", "needs-auth", timeout=60)
    wait_state(supervisor, "local", "connected", timeout=60)
    asked: list[str] = []
    is_error, text = anyio.run(lambda: _agent_call(monad_home, asked, flags=("local",)))
    assert is_error and asked == [], text
    assert _on_demand_rows(supervisor) == []
    assert stats(base)["authorize"] == 0


def test_an_authorization_nobody_finishes_times_out_like_an_approval(supervisor: Any, monad_home: Path,
                                                                     servers: Any) -> None:
    """An agent that accepts the URL but never opens it: the call fails after the gateway's
    approval timeout, saying so, and the journal says what happened."""
    base = servers.start(OAUTH_AS)
    _remote(monad_home, base)
    wait_state(supervisor, "remote", "needs-auth", timeout=60)
    asked: list[str] = []
    is_error, text = anyio.run(lambda: _agent_call(monad_home, asked, follow=False,
                                                         flags=("--approval-timeout", "3")))
    assert is_error and "was not authorized within 3 s" in text, text
    assert "monad mcp authorize remote" in text
    assert len(asked) == 1
    steps = [r["detail"]["step"] for r in _on_demand_rows(supervisor)]
    assert steps == ["started", "timeout"], steps


def test_two_agents_share_one_authorization_and_a_caller_that_leaves_is_journaled(supervisor: Any,
                                                                                 monad_home: Path,
                                                                                 servers: Any) -> None:
    """Two agents call the server in `needs-auth` at once: one flow, one code exchange, both
    shown the same URL; only one follows it and both calls go on. Then (logged out) an agent
    that gives up while its call waits: the call is journaled `cancelled`, so is the wait."""
    base = servers.start(OAUTH_AS)
    _remote(monad_home, base)
    wait_state(supervisor, "remote", "needs-auth", timeout=60)
    asked_a: list[str] = []
    asked_b: list[str] = []
    results: dict[str, Any] = {}

    async def both() -> None:
        async def b() -> None:
            results["b"] = await _agent_call(monad_home, asked_b, follow=False)

        async with anyio.create_task_group() as tg:
            tg.start_soon(b)
            # A's question comes once B's call has joined the run (B's own question is out).
            while not asked_b:
                await anyio.sleep(0.05)
            results["a"] = await _agent_call(monad_home, asked_a)

    anyio.run(both)
    assert results == {"a": (False, "hello through the gateway"), "b": (False, "hello through the gateway")}
    assert asked_a == asked_b and len(asked_a) == 1
    s = stats(base)
    assert s["authorize"] == 1 and s["code_exchange"] == 1, s

    assert supervisor("mcp", "logout", "remote").code == 0
    wait_state(supervisor, "remote", "needs-auth")
    asked: list[str] = []

    async def leave() -> None:
        with anyio.move_on_after(60) as scope:
            async def watch() -> None:
                while not asked:
                    await anyio.sleep(0.05)
                scope.cancel()  # the agent gives up once it was shown the URL

            async with anyio.create_task_group() as tg:
                tg.start_soon(watch)
                await _agent_call(monad_home, asked, follow=False)

    anyio.run(leave)
    assert len(asked) == 1
    rows = wait_for(lambda: [r for r in _on_demand_rows(supervisor) if r["detail"]["step"] == "cancelled"])
    assert rows[0]["detail"]["exposed"] == "remote__echo"
    calls = wait_for(lambda: [c for c in supervisor("journal", "--calls", "--json").json()
                              if c.get("outcome") == "cancelled"])
    assert "waiting for the server's authorization" in calls[0]["decidedBy"], calls


def _on_a_terminal_following(argv: list[str], env: dict[str, str], *, timeout: float = 120) -> tuple[int, str]:
    """Run `argv` on a pseudo-terminal; when it shows an authorization URL, open it (the
    browser leg) and answer the question `y`. Returns (exit code, what the terminal showed)."""
    import pty
    import select

    leader, follower = pty.openpty()
    proc = subprocess.Popen(argv, stdin=follower, stderr=follower, stdout=follower, env=env)
    os.close(follower)
    seen, answered = "", False
    deadline = time.monotonic() + timeout
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.2)
            if not ready:
                continue
            try:
                seen += os.read(leader, 4096).decode(errors="replace")
            except OSError:
                break
            if not answered and seen.rstrip().endswith("[c]ancel:"):
                url = re.search(r"(http://127\.0\.0\.1:\d+/authorize\?\S+)", seen)
                assert url is not None, seen
                assert _follow(url.group(1)) == 200
                os.write(leader, b"y\n")
                answered = True
        proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(leader)
    return proc.returncode, seen


def test_monad_mcp_call_prints_the_url_and_waits_then_a_lapsed_refresh_reauthorizes(
        supervisor: Any, monad_home: Path, servers: Any) -> None:
    """`monad mcp call` on a terminal: the URL with its host in bold, then the result once
    authorized. Then the grant is revoked and the token expires: the next call's refresh is
    refused under it (401), and that call authorizes again and goes on."""
    base = servers.start(OAUTH_AS, "--ttl", "3")
    _remote(monad_home, base)
    wait_state(supervisor, "remote", "needs-auth", timeout=60)
    env = {**os.environ, "MONAD_HOME": str(monad_home), "MONAD_NO_AUTOSTART": "1"}
    argv = [sys.executable, "-m", "monad_cli", "mcp", "call", "remote__echo", "--arg", "text=from the terminal",
            "--yes"]
    code, shown = _on_a_terminal_following(argv, env)
    assert code == 0, shown
    assert "asks you to open a URL on \x1b[1m127.0.0.1\x1b[0m" in shown, shown
    assert "from the terminal" in shown.split("[c]ancel:")[-1], shown
    wait_state(supervisor, "remote", "connected")

    # The grant is revoked and the access token expires: the refresh is refused under a call
    # of `append`, a tool without hints: it fails saying so and is not sent again (whether
    # the server ran it is unknown to monad); the next call authorizes the server.
    atom = monad_home / "atoms" / "mcp" / "remote.toml"

    def lapse() -> None:
        post(base, "/_revoke")
        wait_for(lambda: time.time() > _expires_at(atom), timeout=15)

    lapse()
    asked: list[str] = []
    is_error, text = anyio.run(lambda: _agent_call(monad_home, asked, tool="append"))
    assert is_error and "its authorization lapsed during the call of `remote__append`" in text, text
    assert "it is not sent again" in text and asked == []
    assert stats(base)["appended"] == []  # its request was refused (401): it never ran
    wait_state(supervisor, "remote", "needs-auth")
    is_error, text = anyio.run(_agent_call, monad_home, asked)
    assert (is_error, text) == (False, "hello through the gateway") and len(asked) == 1
    assert stats(base)["code_exchange"] == 2

    # Again, under a call of `echo` (read-only): authorized on demand and sent again.
    wait_state(supervisor, "remote", "connected")
    lapse()
    is_error, text = anyio.run(_agent_call, monad_home, asked)
    assert (is_error, text) == (False, "hello through the gateway") and len(asked) == 2
    s = stats(base)
    assert s["refresh_rejected"] == 2 and s["code_exchange"] == 3, s
    steps = [r["detail"]["step"] for r in _on_demand_rows(supervisor)]
    assert steps == ["started", "done"] * 3, steps
    calls = supervisor("journal", "--calls", "--json").json()
    outcomes = [(c["exposed"], c["outcome"]) for c in calls if c.get("exposed", "").startswith("remote__")]
    assert sorted(outcomes) == [("remote__append", "error"), ("remote__echo", "ok"), ("remote__echo", "ok"),
                                ("remote__echo", "ok")], outcomes
    assert_no_sentinel(monad_home, shown, text, json.dumps(calls))


def _expires_at(atom: Path) -> float:
    import tomllib

    return float(tomllib.loads(atom.read_text())["auth"]["grant"]["expiresAt"])


def test_a_head_leaves_an_authorization_run_alone(supervisor: Any, monad_home: Path, servers: Any) -> None:
    """`GET /v1/mcp-servers/NAME/authorize` shows the run and `DELETE` cancels it; a `HEAD`
    (a safe method, which the Studio's locks let through without an Origin) only looks: the
    run it looked at completes."""
    from monad_cli.cli.control import ControlClient
    from monad_cli.core.paths import paths

    base = servers.start(OAUTH_AS)
    _remote(monad_home, base)
    wait_state(supervisor, "remote", "needs-auth", timeout=60)
    api, path = ControlClient(paths(), timeout=60), "/v1/mcp-servers/remote/authorize"
    started = api.post(path, {})
    assert started["phase"] == "url" and started["url"].startswith(f"{base}/authorize?"), started
    with api.exchange("HEAD", path) as head:  # its answer has headers only
        assert head.status == 200
    time.sleep(0.5)  # a cancel would have ended the run's loopback listener by now
    assert _follow(started["url"]) == 200
    wait_state(supervisor, "remote", "connected", timeout=60)
