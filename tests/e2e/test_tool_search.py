"""Tool search through the gateway (issue 40): `monad mcp serve --tool-search` over stdio and
HTTP lists `find_tool` and `call_tool`, finds tools among real servers' published tools
(bench/search/catalog/, served by tests/servers/catalogserver.py) and calls them; found
tools join the session's list with `notifications/tools/list_changed`; `call_tool` passes
the approval gate, the scrubber and the journal exactly as a direct call does; the result
budget (`--max-result-tokens`) round-trips a 1 MiB result exactly."""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import (
    LIGHTSERVER,
    LIGHTTOOLSERVER,
    free_port,
    gateway_up,
    inspector_bin,
    status_of,
    wait_for,
    wait_state,
    write_atom,
)

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT / "bench" / "search" / "catalog"
CATALOGSERVER = str(ROOT / "tests" / "servers" / "catalogserver.py")
SERVERS = ("git", "github", "slack", "playwright", "filesystem", "time", "memory", "atlassian")
SECRET = "SENTINEL-search-5d2e19"


def _catalog(home: Path, supervisor: Any, *names: str, auto: bool = True, extra: str = "") -> None:
    for name in names:
        args = [CATALOGSERVER, str(CATALOG / f"{name}.json"), *(["--big"] if name == "time" else [])]
        tools = [f"{name}__{t['name']}" for t in json.loads((CATALOG / f"{name}.json").read_text())["tools"]]
        tools += [f"{name}__big_text", f"{name}__big_blob"] if name == "time" else []
        trust = f"trust = {{autoApproveTools = {json.dumps(tools)}}}\n" if auto else ""
        write_atom(home, name, f"command = {json.dumps(sys.executable)}\nargs = {json.dumps(args)}\n{trust}{extra}")
    for name in names:
        wait_state(supervisor, name, "idle" if "on-demand" in extra else "connected", timeout=90)


def _serve(home: Path, *flags: str) -> Any:
    from mcp import StdioServerParameters

    return StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve", *flags],
                                 env={"MONAD_HOME": str(home), "MONAD_NO_AUTOSTART": "1"})


def _names(result: Any) -> list[str]:
    return [t["name"] for t in result.structured_content["tools"]]


async def _find(client: Any, changed: anyio.Event | None, query: str) -> Any:
    """find_tool, and the list change it causes: heard on a 2026-07-28 `subscriptions/listen`
    stream (`changed` None), or by a handshake-era client's message handler (`changed`)."""
    if changed is not None:
        found = await client.call_tool("find_tool", {"query": query})
        with anyio.fail_after(30):
            await changed.wait()
        return found
    async with client.listen(tools_list_changed=True) as sub:
        found = await client.call_tool("find_tool", {"query": query})
        with anyio.fail_after(30):
            async for _event in sub:
                break
    return found


async def _find_and_call(client: Any, changed: anyio.Event | None) -> None:
    listed = await client.list_tools()
    assert [t.name for t in listed.tools] == ["find_tool", "call_tool"]
    found = await _find(client, changed, "what changed in my working tree?")
    assert not found.is_error, found
    names = _names(found)
    assert names[0] == "git__git_status", names  # "working tree" is in its description
    assert len(names) == 8
    # The same as text, for agents that read text.
    assert json.loads(found.content[0].text) == found.structured_content
    hit = found.structured_content["tools"][0]
    assert hit["server"] == "git" and hit["inputSchema"]["type"] == "object" and hit["description"]
    relisted = [t.name for t in (await client.list_tools()).tools]
    assert relisted[:2] == ["find_tool", "call_tool"] and set(names) <= set(relisted[2:]), relisted
    called = await client.call_tool("call_tool", {"name": "git__git_diff_unstaged",
                                                  "arguments": {"repo_path": "/src"}})
    assert not called.is_error, called
    assert called.content[0].text == 'called git_diff_unstaged with {"repo_path": "/src"}'
    # A found tool is called directly too, by its name.
    direct = await client.call_tool("git__git_diff_unstaged", {"repo_path": "/src"})
    assert direct.content[0].text == called.content[0].text
    slack = _names(await client.call_tool("find_tool", {"query": "post a message to the #general channel",
                                                        "limit": 3}))
    assert slack[0] == "slack__slack_post_message" and len(slack) == 3, slack


def test_find_and_call_over_stdio_and_http(supervisor: Any, monad_home: Path) -> None:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    _catalog(monad_home, supervisor, *SERVERS)

    async def stdio() -> None:  # a 2026-07-28 agent
        async with Client(_serve(monad_home, "--tool-search")) as client:
            await _find_and_call(client, None)

    anyio.run(stdio)

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "monad_cli", "mcp", "serve", "--http", "--port", str(port),
                             "--tool-search"], env={**os.environ, "MONAD_NO_AUTOSTART": "1"},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        url, headers = gateway_up(monad_home, port)

        async def http() -> None:  # a handshake-era agent
            import httpx2

            changed = anyio.Event()

            async def on_message(message: Any) -> None:
                if getattr(getattr(message, "root", message), "method", "") == "notifications/tools/list_changed":
                    changed.set()

            async with httpx2.AsyncClient(headers=headers) as http_client, \
                    Client(streamable_http_client(url, http_client=http_client), mode="legacy",
                           message_handler=on_message) as c:
                await _find_and_call(c, changed)

        anyio.run(http)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)


def _row(call: dict[str, Any]) -> dict[str, Any]:
    """A journal call row without what differs between any two calls (ids, times)."""
    return {k: v for k, v in call.items() if k not in ("id", "ts", "durationMs")}


def test_find_tool_hits_pass_the_one_scrubber(supervisor: Any, monad_home: Path, tmp_path: Path) -> None:
    """A stored secret in a tool's description (as the server lists it) is `***` in
    find_tool's hits, text and structuredContent alike: the ingress scrubber masked it as
    the list arrived, the one choke point (find_tool scrubs nothing again)."""
    from mcp import Client

    assert supervisor("env", "set", "API_TOKEN", input=SECRET).code == 0
    catalog = tmp_path / "leaky.json"
    catalog.write_text(json.dumps({"tools": [{
        "name": "deploy", "description": f"Deploy the site with the token {SECRET} to production.",
        "inputSchema": {"type": "object", "properties": {}}}]}))
    write_atom(monad_home, "leaky", f"command = {json.dumps(sys.executable)}\n"
                                    f"args = {json.dumps([CATALOGSERVER, str(catalog)])}\n"
                                    f'env = {{API_TOKEN = "$API_TOKEN"}}\n')
    wait_state(supervisor, "leaky", "connected", timeout=90)

    async def agent() -> Any:
        async with Client(_serve(monad_home, "--tool-search")) as client:
            return await client.call_tool("find_tool", {"query": "deploy the site to production"})

    found = anyio.run(agent)
    assert _names(found) == ["leaky__deploy"], found
    assert found.structured_content["tools"][0]["description"] == "Deploy the site with the token *** to production."
    assert SECRET not in found.content[0].text and "token *** to" in found.content[0].text, found


def test_call_tool_passes_the_gate_the_scrubber_and_the_journal_as_a_direct_call(supervisor: Any,
                                                                               monad_home: Path) -> None:
    """The same tools called directly and through call_tool, neither auto-approved: each waits
    for the same approval (allowed, then denied), the stored secret in the result is `***`
    both ways, and the journal rows are the same but for ids and times."""
    from mcp import Client

    assert supervisor("env", "set", "API_TOKEN", input=SECRET).code == 0
    write_atom(monad_home, "envsrv", f"command = {json.dumps(sys.executable)}\nargs = {json.dumps([LIGHTSERVER])}\n"
                                     f'env = {{API_TOKEN = "$API_TOKEN"}}\n')
    wait_state(supervisor, "envsrv", "connected", timeout=90)

    def decide(tool: str, verb: str) -> None:
        pending = wait_for(lambda: [p for p in supervisor("approvals", "--json").json() if p["tool"] == tool],
                           timeout=60)
        assert len(pending) == 1, pending
        assert supervisor("approvals", verb, pending[0]["id"]).code == 0

    async def agent() -> dict[str, list[Any]]:
        seen: dict[str, list[Any]] = {"direct": [], "call_tool": []}
        async with Client(_serve(monad_home, "--tool-search", "--approval-timeout", "60")) as client:
            for way in ("direct", "call_tool"):
                for tool, args, verb in (("env", {"name": "API_TOKEN"}, "allow"), ("echo", {"text": "hi"}, "deny")):
                    name = f"envsrv__{tool}"
                    call = (client.call_tool(name, args) if way == "direct"
                            else client.call_tool("call_tool", {"name": name, "arguments": args}))
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(anyio.to_thread.run_sync, decide, tool, verb)
                        result = await call
                    seen[way].append(result.model_dump(mode="json", exclude={"meta"}))
        return seen

    seen = anyio.run(agent)
    assert seen["direct"] == seen["call_tool"], seen
    allowed, denied = seen["call_tool"]
    assert allowed["content"][0]["text"] == "***" and not allowed["is_error"], allowed
    assert denied["is_error"] and "denied" in denied["content"][0]["text"], denied
    calls = [c for c in supervisor("journal", "--calls", "--json").json() if c.get("server") == "envsrv"]
    assert len(calls) == 4, calls
    by_tool: dict[str, list[dict[str, Any]]] = {}
    for c in calls:
        by_tool.setdefault(c["tool"], []).append(_row(c))
    for tool, rows in by_tool.items():
        assert len(rows) == 2 and rows[0] == rows[1], (tool, rows)
    assert SECRET not in json.dumps(calls)


def _found(client: Any, query: str, limit: int = 20) -> Any:
    return client.call_tool("find_tool", {"query": query, "limit": limit})


def test_what_a_view_may_not_see_is_never_found_and_idle_servers_are(supervisor: Any, monad_home: Path) -> None:
    """A tool hidden by features/tools.toml, by the session's --exclude-tools, a deferred one
    not loaded, and a server left out by --exclude-mcps are never returned; an idle on-demand
    server's tools are found from its cached list without starting it, and a call starts it."""
    from mcp import Client

    (monad_home / "features").mkdir(exist_ok=True)
    (monad_home / "features" / "tools.toml").write_text('disabled = ["github__create_issue"]\n'
                                                        'deferred = ["github__search_*"]\n')
    _catalog(monad_home, supervisor, "git", "github", "slack")
    _catalog(monad_home, supervisor, "time", extra='start = "on-demand"\nidleStop = "1s"\n')

    async def agent() -> None:
        async with Client(_serve(monad_home, "--tool-search", "--exclude-tools", "git__git_commit",
                                 "--exclude-mcps", "slack")) as client:
            async def names(query: str) -> list[str]:
                return _names(await _found(client, query))

            assert "github__create_issue" not in await names("open an issue on GitHub about the crash")
            assert "github__update_issue" in await names("open an issue on GitHub about the crash")
            assert "git__git_commit" not in await names("commit these changes with a message")
            assert not [n for n in await names("post a message to the #general channel") if n.startswith("slack__")]
            assert "github__search_code" not in await names("find code that calls parseConfig across GitHub")
            loaded = await client.call_tool("load_tools", {"tools": ["github__search_*"]})
            assert not loaded.is_error, loaded
            assert "github__search_code" in await names("find code that calls parseConfig across GitHub")
            # The idle on-demand server: found from its cached list, not started by the search.
            assert "time__get_current_time" in (await names("what time is it in Tokyo right now"))[:3]
            assert status_of(supervisor, "time")["state"] == "idle"
            called = await client.call_tool("call_tool", {"name": "time__get_current_time",
                                                          "arguments": {"timezone": "Asia/Tokyo"}})
            assert called.content[0].text == 'called get_current_time with {"timezone": "Asia/Tokyo"}', called

    anyio.run(agent)


def test_auto_searches_only_past_the_threshold_and_the_setting_turns_it_on(supervisor: Any,
                                                                          monad_home: Path) -> None:
    from mcp import Client

    _catalog(monad_home, supervisor, "git", "time")

    async def listed(*flags: str) -> list[str]:
        async with Client(_serve(monad_home, *flags)) as client:
            return [t.name for t in (await client.list_tools()).tools]

    plain = anyio.run(listed)
    assert len(plain) == 16 and "find_tool" not in plain, plain  # git's 12, time's 2 and 2 --big ones
    assert anyio.run(listed, "--tool-search-above", "100000") == plain  # ~2,000 tokens: under
    assert anyio.run(listed, "--tool-search-above", "500") == ["find_tool", "call_tool"]
    (monad_home / "features").mkdir(exist_ok=True)
    (monad_home / "features" / "gateway.toml").write_text('toolSearch = "on"\n')
    assert anyio.run(listed) == ["find_tool", "call_tool"]
    assert anyio.run(listed, "--no-tool-search") == plain
    (monad_home / "features" / "gateway.toml").write_text('toolSearch = "auto"\ntoolSearchAbove = 100000\n')
    assert anyio.run(listed) == plain
    (monad_home / "features" / "gateway.toml").write_text('toolSearch = "sometimes"\n')
    r = supervisor("mcp", "serve")
    assert r.code != 0 and "`toolSearch` must be" in r.err and "Traceback" not in r.err, r


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_long_result_is_cut_and_read_back_whole(supervisor: Any, monad_home: Path, transport: str) -> None:
    """`--max-result-tokens 1000`: a 1 MiB text result and a 1 MiB image reach the agent cut,
    with a note naming a monad:// resource; resources/read of it returns the whole, exactly
    (over stdio the relay's direct lane reads it, over HTTP the SDK's handler)."""
    from mcp import Client
    from mcp.shared.exceptions import MCPError

    sys.path.insert(0, str(ROOT / "tests" / "servers"))
    from catalogserver import big_bytes, big_text

    _catalog(monad_home, supervisor, "time")
    size = 1 << 20

    async def check(client: Any) -> None:
        text = await client.call_tool("time__big_text", {"size": size})
        assert not text.is_error
        shown = "".join(c.text for c in text.content)
        assert len(shown.encode()) < 5000, len(shown)
        note = text.content[-1].text
        assert note.startswith("[monad: this result was cut to about 1000 tokens of about "), note
        uri = re.search(r"monad://results/[A-Za-z0-9_-]+", note)
        assert uri is not None, note
        assert text.content[0].text == big_text(size)[:len(text.content[0].text)]
        assert text.structured_content == {"bytes": size}  # small enough to stay
        whole = (await client.read_resource(uri.group(0))).contents
        assert whole[0].text == big_text(size)  # exactly
        assert json.loads(whole[1].text) == {"bytes": size}

        blob = await client.call_tool("time__big_blob", {"size": size})
        assert [c.type for c in blob.content] == ["text", "text"], blob.content  # the image did not fit
        uri = re.search(r"monad://results/[A-Za-z0-9_-]+", blob.content[-1].text)
        assert uri is not None
        whole = (await client.read_resource(uri.group(0))).contents
        assert whole[0].text == "an image follows"
        assert whole[1].mime_type == "image/png" and base64.b64decode(whole[1].blob) == big_bytes(size)

        small = await client.call_tool("time__get_current_time", {"timezone": "UTC"})
        assert len(small.content) == 1  # under the budget: untouched
        with pytest.raises(MCPError) as gone:
            await client.read_resource("monad://results/not-a-kept-result")
        assert gone.value.error.code == -32002

    if transport == "stdio":
        async def stdio() -> None:
            async with Client(_serve(monad_home, "--max-result-tokens", "1000")) as client:
                await check(client)

        anyio.run(stdio)
        return
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "monad_cli", "mcp", "serve", "--http", "--port", str(port),
                             "--max-result-tokens", "1000"], env={**os.environ, "MONAD_NO_AUTOSTART": "1"},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        url, headers = gateway_up(monad_home, port)

        async def http() -> None:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            async with httpx2.AsyncClient(headers=headers) as http_client, \
                    Client(streamable_http_client(url, http_client=http_client)) as client:
                await check(client)

        anyio.run(http)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)


def test_the_cli_ranks_tools_for_a_task_as_find_tool_does(supervisor: Any, monad_home: Path) -> None:
    """Found by a new-user trial: nothing in the CLI answered "what will the agent find for
    this?" (only the Studio's box). `monad mcp tools --search TASK` ranks over the same index."""
    _catalog(monad_home, supervisor, "slack", "git", "time")
    r = supervisor("mcp", "tools", "--search", "post a message to the #general channel", "--limit", "3", "--json")
    assert r.code == 0, r
    hits = r.json()
    assert len(hits) == 3 and hits[0]["name"] == "slack__slack_post_message", hits
    assert hits[0]["score"] >= hits[1]["score"] >= hits[2]["score"]
    r = supervisor("mcp", "tools", "git", "--search", "what changed in my working tree?")
    assert r.code == 0 and r.out.splitlines()[0].split() == ["TOOL", "SCORE", "DESCRIPTION"], r
    assert {line.split()[0].split("__")[0] for line in r.out.splitlines()[1:]} == {"git"}, r.out
    r = supervisor("mcp", "tools", "--search", "   ")
    assert r.code == 2 and "--search needs the task in plain words" in r.err, r
    r = supervisor("mcp", "tools", "--limit", "3")
    assert r.code == 2 and "--limit goes with --search" in r.err, r


def test_call_tool_of_a_name_it_cannot_resolve_is_a_tool_error_the_model_reads(supervisor: Any,
                                                                               monad_home: Path) -> None:
    """Found by a new-user trial: `call_tool` with a name no server exposes was a JSON-RPC
    error (-32602) saying `see monad mcp tools` — an error many agents do not show the model,
    about a tool (`call_tool`) that does exist. It is now call_tool's error result, which says
    to call a name find_tool gave; a direct tools/call of an unknown name stays -32602."""
    from mcp import Client
    from mcp.shared.exceptions import MCPError

    _catalog(monad_home, supervisor, "time")

    async def agent() -> tuple[Any, Any, int]:
        async with Client(_serve(monad_home, "--tool-search")) as client:
            unknown = await client.call_tool("call_tool", {"name": "time__no_such_tool", "arguments": {}})
            other = await client.call_tool("call_tool", {"name": "nowhere__x"})
            with pytest.raises(MCPError) as direct:
                await client.call_tool("time__no_such_tool", {})
            return unknown, other, direct.value.error.code

    unknown, other, code = anyio.run(agent)
    for result, name in ((unknown, "time__no_such_tool"), (other, "nowhere__x")):
        assert result.is_error, result
        text = result.content[0].text
        assert text.startswith(f"call_tool: no tool `{name}` is exposed") and "find_tool gave" in text, text
    assert code == -32602


def test_a_result_over_the_budget_only_by_its_envelope_is_not_cut(supervisor: Any, monad_home: Path) -> None:
    """Found by a new-user trial: a result whose content fit the budget but whose whole JSON
    (`isError`, `_meta`) passed it came back "cut" with nothing taken out and a note added,
    longer than it was. Such a result now reaches the agent as it is."""
    from mcp import Client

    from monad_cli.daemon.gateway.search import estimate_tokens

    _catalog(monad_home, supervisor, "time")
    args = {"timezone": "Europe/Lisbon " + "x" * 400}

    async def call(*flags: str) -> Any:
        async with Client(_serve(monad_home, *flags)) as client:
            return await client.call_tool("time__get_current_time", args)

    plain = anyio.run(call)
    [item] = [c.model_dump(by_alias=True, exclude_none=True, mode="json") for c in plain.content]
    budget = estimate_tokens(item) + 2  # the content fits; with `isError` and the rest, the whole does not
    assert estimate_tokens({"content": [item], "isError": False}) > budget
    budgeted = anyio.run(call, "--max-result-tokens", str(budget))
    assert [c.model_dump(by_alias=True, exclude_none=True, mode="json") for c in budgeted.content] == [item]
    # One byte of content past the budget is cut, with the note.
    cut = anyio.run(call, "--max-result-tokens", str(estimate_tokens(item) - 10))
    assert len(cut.content) == 2 and cut.content[-1].text.startswith("[monad: this result was cut"), cut


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_inspector_finds_and_calls_through_tool_search(supervisor: Any, monad_home: Path, transport: str) -> None:
    _catalog(monad_home, supervisor, *SERVERS)
    proc = None
    if transport == "stdio":
        base = [inspector_bin(), "--cli", "-e", f"MONAD_HOME={monad_home}", "-e", "MONAD_NO_AUTOSTART=1",
                sys.executable, "-m", "monad_cli", "mcp", "serve", "--tool-search"]
    else:
        port = free_port()
        proc = subprocess.Popen([sys.executable, "-m", "monad_cli", "mcp", "serve", "--http", "--port", str(port),
                                 "--tool-search"], env={**os.environ, "MONAD_NO_AUTOSTART": "1"},
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        url, headers = gateway_up(monad_home, port)
        base = [inspector_bin(), "--cli", url, "--transport", "http", "--header",
                f"Authorization: {headers['Authorization']}"]

    def inspect(*flags: str) -> Any:
        r = subprocess.run([*base, *flags], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, (flags, r.stdout, r.stderr)
        return json.loads(r.stdout)

    try:
        assert [t["name"] for t in inspect("--method", "tools/list")["tools"]] == ["find_tool", "call_tool"]
        found = inspect("--method", "tools/call", "--tool-name", "find_tool", "--tool-arg",
                        "query=take a screenshot of the page", "--tool-arg", "limit=3")
        names = [t["name"] for t in found["structuredContent"]["tools"]]
        assert names[0] == "playwright__browser_take_screenshot" and len(names) == 3, names
        called = inspect("--method", "tools/call", "--tool-name", "call_tool", "--tool-arg",
                         "name=playwright__browser_take_screenshot", "--tool-arg", 'arguments={"type": "png"}')
        assert called["content"][0]["text"] == 'called browser_take_screenshot with {"type": "png"}', called
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=30)


def test_the_index_follows_a_servers_list_change(supervisor: Any, monad_home: Path) -> None:
    """A server announces its tools changed (tests/servers/lighttoolserver.py's `mutate` rewrites
    `echo`'s description): the next find_tool ranks by the new text."""
    from mcp import Client

    tools = ["echo", "add", "kinds", "fail", "mutate", "slow"]
    write_atom(monad_home, "ts", f"command = {json.dumps(sys.executable)}\n"
                                 f"args = {json.dumps([LIGHTTOOLSERVER])}\n"
                                 f"trust = {{autoApproveTools = {json.dumps([f'ts__{t}' for t in tools])}}}\n")
    wait_state(supervisor, "ts", "connected", timeout=90)

    async def agent() -> None:
        async with Client(_serve(monad_home, "--tool-search")) as client:
            before = _names(await _found(client, "translate a sentence into klingon", 3))
            assert "ts__echo" not in before, before
            changed = await client.call_tool("ts__mutate", {"description": "Translates a sentence into Klingon."})
            assert not changed.is_error, changed
            with anyio.fail_after(60):
                while _names(await _found(client, "translate a sentence into klingon", 3))[:1] != ["ts__echo"]:
                    await anyio.sleep(0.2)

    anyio.run(agent)


def test_found_tools_are_per_http_session_and_bounded(supervisor: Any, monad_home: Path) -> None:
    """On `serve --http`, what one MCP session's find_tool found joins that session's list only
    (the other session neither lists it nor hears a list change), and a session keeps at most
    `MAX_FOUND` found tools, the most recently found."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    from monad_cli.daemon.gateway.search import MAX_FOUND

    _catalog(monad_home, supervisor, "git", "atlassian")
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "monad_cli", "mcp", "serve", "--http", "--port", str(port),
                             "--tool-search"], env={**os.environ, "MONAD_NO_AUTOSTART": "1"},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    heard = {"a": 0, "b": 0}
    seen: dict[str, Any] = {}
    try:
        url, headers = gateway_up(monad_home, port)

        def handler(who: str) -> Any:
            async def on_message(message: Any) -> None:
                if getattr(getattr(message, "root", message), "method", "") == "notifications/tools/list_changed":
                    heard[who] += 1
            return on_message

        async def main() -> None:
            async with (httpx2.AsyncClient(headers=headers) as h,
                        Client(streamable_http_client(url, http_client=h), mode="legacy",
                               message_handler=handler("a")) as a,
                        Client(streamable_http_client(url, http_client=h), mode="legacy",
                               message_handler=handler("b")) as b):
                assert [t.name for t in (await b.list_tools()).tools] == ["find_tool", "call_tool"]
                found = _names(await a.call_tool("find_tool", {"query": "what changed in my working tree?"}))
                with anyio.fail_after(30):
                    while not heard["a"]:
                        await anyio.sleep(0.05)
                seen["a"] = [t.name for t in (await a.list_tools()).tools]
                seen["b"] = [t.name for t in (await b.list_tools()).tools]
                seen["found"] = found
                for query in ("create a jira issue", "edit a confluence page", "search jira with jql"):
                    seen["last"] = _names(await a.call_tool("find_tool", {"query": query, "limit": 50}))
                seen["capped"] = [t.name for t in (await a.list_tools()).tools]
                await anyio.sleep(0.5)  # any stray list change to b would have come by now

        anyio.run(main)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    assert seen["a"][:2] == ["find_tool", "call_tool"] and set(seen["a"][2:]) == set(seen["found"]), seen
    assert seen["b"] == ["find_tool", "call_tool"] and heard["b"] == 0, (seen, heard)
    capped = seen["capped"][2:]
    assert len(seen["last"]) == 50 and len(capped) == MAX_FOUND and set(seen["last"]) <= set(capped), seen


def test_the_budget_keeps_a_typed_results_structured_content_valid(supervisor: Any, monad_home: Path) -> None:
    """A tool with an `outputSchema` keeps its `structuredContent` whole under the result
    budget, even past it (the schema promises it; a cut or dropped one fails the agent's
    check): the SDK's client validates it, and the text is cut to the note naming the
    kept whole, which reads back exactly."""
    from mcp import Client

    write_atom(monad_home, "typed", f"command = {json.dumps(sys.executable)}\n"
                                    f"args = {json.dumps([CATALOGSERVER, str(CATALOG / 'time.json'), '--typed'])}\n"
                                    'trust = {autoApproveTools = ["typed__big_record"]}\n')
    wait_state(supervisor, "typed", "connected", timeout=90)
    out: dict[str, Any] = {}

    async def main() -> None:
        async with Client(_serve(monad_home, "--max-result-tokens", "1000")) as client:
            await client.list_tools()  # the SDK's client checks results against the listed outputSchema
            result = await client.call_tool("typed__big_record", {"size": 40_000})
            out["result"] = result
            uri = re.search(r"monad://results/[A-Za-z0-9_-]+", result.content[-1].text)
            assert uri, result.content
            out["whole"] = await client.read_resource(uri.group(0))

    anyio.run(main)
    result = out["result"]
    assert not result.is_error and result.structured_content["bytes"] == 40_000, result.content
    assert len(result.structured_content["text"].encode()) == 40_000
    assert len(result.content) == 1 and result.content[0].text.startswith("[monad: this result was cut"), result
    texts = [c.text for c in out["whole"].contents]
    assert json.loads(texts[0]) == result.structured_content == json.loads(texts[-1])
