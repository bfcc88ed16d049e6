"""The gateway as a complete MCP server: `@modelcontextprotocol/server-everything` from npm
behind the real supervisor and `monad mcp serve`, next to a direct SDK session with the same
server. Resources, templates, reads, prompts, completions, subscriptions and log messages
behave as on the direct session (a differential test), two agents at once keep their own
subscriptions, and resource reads and prompt gets are journaled."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import (
    everything_bin,
    free_port,
    gateway_up,
    inspector_bin,
    status_of,
    wait_for,
    wait_state,
    write_atom,
)

# Agents of the handshake era use logging/setLevel and resources/subscribe, which the SDK
# marks deprecated at 2026-07-28.
pytestmark = [pytest.mark.e2e, pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]
UPDATE_WAIT_S = 30.0  # server-everything sends an update at once, then every 5 s
AUTO = ("toggle-subscriber-updates", "trigger-elicitation-request", "trigger-sampling-request", "get-roots-list")


def _serve(home: Path, *names: str) -> Any:
    from mcp import StdioServerParameters

    return StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve", *names],
                                 env={"MONAD_HOME": str(home), "MONAD_NO_AUTOSTART": "1"})


def _everything(home: Path, supervisor: Any, name: str = "everything") -> None:
    write_atom(home, name, f'transport = "stdio"\ncommand = {json.dumps(everything_bin())}\nargs = ["stdio"]\n'
                           f'trust = {{autoApproveTools = {json.dumps([f"{name}__{t}" for t in AUTO])}}}\n')
    wait_state(supervisor, name, "connected", timeout=90)


def _plain(items: list[Any]) -> list[dict[str, Any]]:
    """Wire dumps without `_meta` (the gateway names the server there)."""
    out = []
    for item in items:
        d = item.model_dump(by_alias=True, mode="json", exclude_none=True)
        d.pop("_meta", None)
        out.append(d)
    return out


def test_everything_behind_the_gateway_behaves_as_a_direct_session(supervisor: Any, monad_home: Path) -> None:
    from mcp import Client, StdioServerParameters
    from mcp.shared.exceptions import MCPError
    from mcp_types import PromptReference, ResourceTemplateReference

    _everything(monad_home, supervisor)
    direct_params = StdioServerParameters(command=everything_bin(), args=["stdio"])
    seen: dict[str, Any] = {}

    async def facts(client: Client, prefix: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        resources = (await client.list_resources()).resources
        out["resources"] = sorted(_plain(resources), key=lambda r: r["uri"])
        templates = (await client.list_resource_templates()).resource_templates
        out["templates"] = sorted(_plain(templates), key=lambda t: t["uriTemplate"])
        static = sorted(str(r.uri) for r in resources)[0]
        out["read"] = _plain((await client.read_resource(static)).contents)
        # A URI nobody listed, read by its template (routed by the template through monad).
        dynamic = _plain((await client.read_resource("demo://resource/dynamic/text/3")).contents)
        out["read_template"] = [{**c, "text": re.sub(r"created at .*", "created at T", c["text"])} for c in dynamic]
        prompts = (await client.list_prompts()).prompts
        out["prompts"] = sorted((p.name.removeprefix(prefix), p.description,
                                 [a.name for a in p.arguments or []]) for p in prompts)
        got = await client.get_prompt(f"{prefix}args-prompt", {"city": "Lyon", "state": "Rhone"})
        out["get"] = _plain(got.messages)
        done = await client.complete(PromptReference(name=f"{prefix}completable-prompt"),
                                     {"name": "department", "value": "S"})
        out["complete_prompt"] = done.completion.values
        ctx = await client.complete(PromptReference(name=f"{prefix}completable-prompt"),
                                    {"name": "name", "value": ""}, context_arguments={"department": "Sales"})
        out["complete_context"] = ctx.completion.values
        tmpl = templates[0].uri_template
        out["complete_template"] = (await client.complete(ResourceTemplateReference(uri=tmpl),
                                                          {"name": "resourceId", "value": "1"})).completion.values
        try:
            await client.read_resource("nothing://here")
        except MCPError as e:
            out["unknown_read_code"] = e.error.code
        return out

    async def main() -> None:
        async with Client(direct_params, mode="legacy") as direct:
            seen["direct"] = await facts(direct, "")
        for mode in ("legacy", "auto"):
            async with Client(_serve(monad_home), mode=mode) as gateway:
                caps = gateway.server_capabilities
                assert caps.resources is not None and caps.prompts is not None and caps.completions is not None
                seen[mode] = await facts(gateway, "everything__")
                listed = (await gateway.list_resources()).resources
                assert {r.meta["monad/server"] for r in listed if r.meta} == {"everything"}

    anyio.run(main)
    direct = seen["direct"]
    assert direct["resources"] and direct["templates"] and direct["prompts"], direct
    assert direct["complete_prompt"] == ["Sales", "Support"] and direct["complete_context"], direct
    for mode in ("legacy", "auto"):
        through = seen[mode]
        for key in direct:
            if key == "unknown_read_code":
                continue  # the server's own code for an unknown URI; monad answers the spec's -32002
            assert through[key] == direct[key], (mode, key)
        assert through["unknown_read_code"] == -32002
    # Every read and get is journaled (the journal of events).
    r = supervisor("journal", "--server", "everything", "--json")
    kinds = [e.get("kind") for e in r.json()]
    assert kinds.count("resource.read") >= 4 and kinds.count("prompt.get") >= 2, kinds


def test_two_agents_share_one_upstream_subscription(supervisor: Any, monad_home: Path) -> None:
    """Both agents subscribe to one URI, and a 2026-07-28 agent listens to it: one upstream
    subscription. Agent A unsubscribes: B's and C's updates keep coming, A's stop. Each
    agent's log level is its own."""
    from mcp import Client
    from mcp_types import LoggingMessageNotificationParams, ResourceUpdatedNotification

    _everything(monad_home, supervisor)
    updates: dict[str, list[str]] = {"a": [], "b": []}
    logs: dict[str, list[LoggingMessageNotificationParams]] = {"a": [], "b": []}

    def handler(who: str) -> Any:
        async def on_message(message: Any) -> None:
            if isinstance(message, ResourceUpdatedNotification):
                updates[who].append(str(message.params.uri))
        return on_message

    def on_log(who: str) -> Any:
        async def record(params: LoggingMessageNotificationParams) -> None:
            logs[who].append(params)
        return record

    async def main() -> None:
        async with (Client(_serve(monad_home), mode="legacy", message_handler=handler("a"),
                           logging_callback=on_log("a")) as a,
                    Client(_serve(monad_home), mode="legacy", message_handler=handler("b"),
                           logging_callback=on_log("b")) as b):
            uri = sorted(str(r.uri) for r in (await a.list_resources()).resources)[0]
            await a.set_logging_level("info")
            await b.set_logging_level("emergency")
            await a.subscribe_resource(uri)
            # server-everything acknowledges a subscription with an info log message: A asked for
            # info, B only for emergencies.
            with anyio.fail_after(UPDATE_WAIT_S):
                while not any("Subscribe" in str(p.data) for p in logs["a"]):
                    await anyio.sleep(0.05)
            await b.subscribe_resource(uri)
            async with Client(_serve(monad_home)) as c, c.listen(resource_subscriptions=[uri]) as stream:
                assert c.protocol_version == "2026-07-28"
                result = await a.call_tool("everything__toggle-subscriber-updates", {})
                assert not result.is_error, result
                with anyio.fail_after(UPDATE_WAIT_S):
                    while not (updates["a"] and updates["b"]):
                        await anyio.sleep(0.05)
                    event = await stream.__anext__()
                assert updates["a"][0] == uri and updates["b"][0] == uri and event.uri == uri
                await a.unsubscribe_resource(uri)
                a_after = len(updates["a"])
                b_before = len(updates["b"])
                with anyio.fail_after(UPDATE_WAIT_S):
                    while len(updates["b"]) < b_before + 2:
                        await anyio.sleep(0.05)
                    assert (await stream.__anext__()).uri == uri
                # At most one update was already on its way to A when it unsubscribed.
                assert len(updates["a"]) <= a_after + 1, updates
                await a.call_tool("everything__toggle-subscriber-updates", {})  # stop them

    anyio.run(main)
    a_logs = [p for p in logs["a"] if "Subscribe" in str(p.data)]
    assert a_logs and all(p.logger == "everything" and p.level == "info" for p in a_logs), logs["a"]
    assert not [p for p in logs["b"] if p.level != "emergency"], logs["b"]
    # Whoever listens, the server's log messages are in its log file.
    log_file = monad_home / "logs" / "servers" / "everything.stderr.log"
    wait_for(lambda: "Received Unsubscribe Resource request" in log_file.read_text(), timeout=30)
    # Three agents, one upstream subscription, ended when the last of them left.
    text = log_file.read_text()
    assert text.count("Received Subscribe Resource request") == 1, text
    assert text.count("Received Unsubscribe Resource request") == 1, text


def test_collisions_list_changes_and_a_per_server_entry(supervisor: Any, monad_home: Path) -> None:
    """A second server with the same resources: every connected agent hears the lists change;
    each colliding URI is listed for both servers and a read of it is refused naming both.
    `monad mcp serve twin` is twin's own entry: its names, its serverInfo and instructions."""
    from mcp import Client, StdioServerParameters
    from mcp.shared.exceptions import MCPError
    from mcp_types import PromptListChangedNotification, ResourceListChangedNotification

    _everything(monad_home, supervisor)
    heard: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, ResourceListChangedNotification | PromptListChangedNotification):
            heard.append(message.method)

    async def main() -> None:
        async with Client(_serve(monad_home), mode="legacy", message_handler=on_message) as merged:
            static = sorted(str(r.uri) for r in (await merged.list_resources()).resources)[0]
            await merged.list_prompts()
            write_atom(monad_home, "twin", f'transport = "stdio"\ncommand = {json.dumps(everything_bin())}\n'
                                           f'args = ["stdio"]\ntrust = {{autoApproveTools = ["twin__echo"]}}\n')
            await anyio.to_thread.run_sync(lambda: wait_state(supervisor, "twin", "connected", timeout=90))
            with anyio.fail_after(30):
                while not {"notifications/resources/list_changed", "notifications/prompts/list_changed"} <= set(heard):
                    await anyio.sleep(0.05)
            listed = [r for r in (await merged.list_resources()).resources if str(r.uri) == static]
            assert sorted(r.meta["monad/server"] for r in listed if r.meta) == ["everything", "twin"]
            with pytest.raises(MCPError) as refused:
                await merged.read_resource(static)
            assert refused.value.error.code == -32602
            assert "`everything` and `twin`" in refused.value.error.message
            names = {p.name for p in (await merged.list_prompts()).prompts}
            assert {"everything__simple-prompt", "twin__simple-prompt"} <= names
            merged_tools = {t.name for t in (await merged.list_tools()).tools}
            # Shown as tool collisions are: the row's `collisions` in `monad mcp status NAME`.
            row = await anyio.to_thread.run_sync(lambda: supervisor("mcp", "status", "twin", "--json").json())
            row = row[0] if isinstance(row, list) else row
            assert any(w.startswith(f"resource URI collision: `{static}` is listed by `everything` and `twin`")
                       for w in row["collisions"]), row

        async with Client(StdioServerParameters(command=everything_bin(), args=["stdio"]), mode="legacy") as direct:
            direct_info, direct_instructions = direct.server_info, direct.instructions
            direct_prompts = sorted(p.name for p in (await direct.list_prompts()).prompts)
        async with Client(_serve(monad_home, "twin"), mode="legacy") as single:
            assert single.server_info is not None and direct_info is not None
            assert (single.server_info.name, single.server_info.version) == (direct_info.name, direct_info.version)
            assert single.instructions == direct_instructions and direct_instructions
            tools = {t.name for t in (await single.list_tools()).tools}
            assert tools == {n.removeprefix("twin__") for n in merged_tools if n.startswith("twin__")}
            assert sorted(p.name for p in (await single.list_prompts()).prompts) == direct_prompts
            assert (await single.read_resource(static)).contents  # no collision inside one server's entry
            assert (await single.call_tool("echo", {"message": "hi"})).content[0].text == "Echo: hi"
            got = await single.get_prompt("simple-prompt")
            assert got.messages

    anyio.run(main)
    r = supervisor("mcp", "serve", "nope", input="")
    assert r.code != 0 and "server `nope` is not defined" in r.err, r


def test_a_servers_question_reaches_the_agent_whose_call_it_is(supervisor: Any, monad_home: Path) -> None:
    """Elicitation, sampling and roots during agent A's call go to A (B, connected too and
    able to answer, is never asked); agent C, which declared none, gets a refusal naming the
    capability. Every question is journaled, without its answer."""
    from mcp import Client
    from mcp_types import CreateMessageResult, ElicitResult, ListRootsResult, Root, TextContent

    _everything(monad_home, supervisor)
    asked: dict[str, list[str]] = {"a": [], "b": [], "d": []}

    def answers(who: str) -> dict[str, Any]:
        async def elicit(context: Any, params: Any) -> ElicitResult:
            asked[who].append("elicitation")
            return ElicitResult(action="accept", content={"name": f"Ada-{who}", "check": True})

        async def sample(context: Any, params: Any) -> CreateMessageResult:
            asked[who].append("sampling")
            return CreateMessageResult(role="assistant", content=TextContent(type="text", text=f"sampled-by-{who}"),
                                       model=f"model-{who}")

        async def roots(context: Any) -> ListRootsResult:
            asked[who].append("roots")
            return ListRootsResult(roots=[Root(uri=f"file:///root-of-{who}", name=f"root {who}")])

        return {"elicitation_callback": elicit, "sampling_callback": sample, "list_roots_callback": roots}

    def text(result: Any) -> str:
        return " ".join(getattr(c, "text", "") for c in result.content)

    async def main() -> None:
        async with (Client(_serve(monad_home), mode="legacy", **answers("a")) as a,
                    Client(_serve(monad_home), mode="legacy", **answers("b")) as b,
                    Client(_serve(monad_home), mode="legacy") as c):
            names = {t.name for t in (await b.list_tools()).tools}
            assert {f"everything__{t}" for t in AUTO} <= names, names
            await a.list_tools()  # listed: A's plain calls may take the stdio relay's direct lane
            elicited = await a.call_tool("everything__trigger-elicitation-request", {})
            assert "Ada-a" in text(elicited), elicited
            sampled = await a.call_tool("everything__trigger-sampling-request", {"prompt": "hello"})
            assert "sampled-by-a" in text(sampled), sampled
            rooted = await a.call_tool("everything__get-roots-list", {})
            assert "file:///root-of-a" in text(rooted), rooted
            refused = await c.call_tool("everything__trigger-elicitation-request", {})
            assert "the agent did not declare the `elicitation` capability" in text(refused), refused
        # A 2026-07-28 agent is asked in input_required rounds; the upstream call waits meanwhile.
        async with Client(_serve(monad_home), **answers("d")) as d:
            assert d.protocol_version == "2026-07-28"
            assert "Ada-d" in text(await d.call_tool("everything__trigger-elicitation-request", {}))
            assert "sampled-by-d" in text(await d.call_tool("everything__trigger-sampling-request", {"prompt": "x"}))
            # server-everything keeps the roots it got for its session (monad's one session): A's.
            assert "file:///root-of-a" in text(await d.call_tool("everything__get-roots-list", {}))
        async with Client(_serve(monad_home)) as e:  # 2026-07-28, no capability declared
            refused = await e.call_tool("everything__trigger-elicitation-request", {})
            assert "the agent did not declare the `elicitation` capability" in text(refused), refused

    anyio.run(main)
    # In any order: server-everything may ask roots/list while A's first call is in flight, and
    # then (a race inside the server) may still ask again during get-roots-list.
    assert asked["b"] == [] and sorted(set(asked["a"])) == ["elicitation", "roots", "sampling"], asked
    assert asked["a"].count("elicitation") == asked["a"].count("sampling") == 1, asked
    assert asked["a"].count("roots") in (1, 2), asked
    assert asked["d"] == ["elicitation", "sampling"], asked
    events = [e for e in supervisor("journal", "--server", "everything", "--json").json()
              if e.get("kind") == "question"]
    details = [e["detail"] if isinstance(e["detail"], dict) else json.loads(e["detail"]) for e in events]
    outcomes = [(d["method"], d["outcome"]) for d in details]
    assert ("elicitation/create", "answered") in outcomes and ("sampling/createMessage", "answered") in outcomes
    assert ("roots/list", "answered") in outcomes and ("elicitation/create", "refused") in outcomes, outcomes
    # Each question names a call it came during. roots/list may come during A's first call (see
    # above), and then get-roots-list asks nothing: it answers from the roots it was given.
    about = {d["about"] for d in details}
    assert {"everything__trigger-elicitation-request", "everything__trigger-sampling-request"} <= about <= \
        {"everything__trigger-elicitation-request", "everything__trigger-sampling-request",
         "everything__get-roots-list"}, about
    assert "Ada-a" not in json.dumps(events)  # the answer itself is not journaled
    # server-everything may ask roots/list right after it connects. Outside any call it is
    # refused, and get-roots-list asks during its call; when one of A's calls is already in
    # flight (a slow start), it is A's to answer, and get-roots-list mostly asks nothing.
    # (The refusal is not in the server's log in every release: not waited for.)
    roots_about = {d["about"] for d in details if d["method"] == "roots/list"}
    assert roots_about and roots_about <= {"everything__trigger-elicitation-request",
                                           "everything__trigger-sampling-request",
                                           "everything__get-roots-list"}, roots_about
    # A's plain calls took the stdio relay's direct lane, which asked A on its connection.
    assert "served 3 tools/call (3 on the direct lane)" in (monad_home / "logs" / "daemon.log").read_text()


RESOURCESERVER = str(Path(__file__).resolve().parents[1] / "servers" / "resourceserver.py")


@contextlib.contextmanager
def _http_gateway(home: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """`monad mcp serve --http` running: its URL and the bearer header."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "monad_cli", "mcp", "serve", "--http", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        yield gateway_up(home, port)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_2026_server_behind_the_gateway_over_both_transports(supervisor: Any, monad_home: Path,
                                                               transport: str) -> None:
    """An SDK server speaking 2026-07-28 upstream (subscriptions are listen streams there),
    agents of both eras downstream, on the stdio relay and on the HTTP gateway: a subscribed
    resource's update, a list change and the new resource, a template read, a prompt, a
    completion."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp_types import PromptReference, ResourceListChangedNotification, ResourceUpdatedNotification

    write_atom(monad_home, "r", f"command = {json.dumps(sys.executable)}\nargs = {json.dumps([RESOURCESERVER])}\n"
                                'trust = {autoApproveTools = ["r__touch", "r__add_note"]}\n')
    wait_state(supervisor, "r", "connected", timeout=90)
    assert status_of(supervisor, "r")["protocolVersion"] == "2026-07-28"
    heard: list[Any] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, ResourceUpdatedNotification | ResourceListChangedNotification):
            heard.append(message)

    async def session(stack: contextlib.AsyncExitStack, url: str | None, headers: dict[str, str], **kw: Any) -> Any:
        if url is None:
            return await stack.enter_async_context(Client(_serve(monad_home), **kw))
        http = await stack.enter_async_context(httpx2.AsyncClient(headers=headers))
        return await stack.enter_async_context(Client(streamable_http_client(url, http_client=http), **kw))

    async def main(url: str | None, headers: dict[str, str]) -> None:
        async with contextlib.AsyncExitStack() as stack:
            legacy = await session(stack, url, headers, mode="legacy", message_handler=on_message)
            modern = await session(stack, url, headers)
            assert modern.protocol_version == "2026-07-28"
            await legacy.subscribe_resource("note://r/alpha")
            stream = await stack.enter_async_context(modern.listen(resource_subscriptions=["note://r/beta"],
                                                                   resources_list_changed=True))
            assert (await modern.call_tool("r__touch", {"uri": "note://r/alpha"})).content[0].text.startswith("touched")
            await modern.call_tool("r__touch", {"uri": "note://r/beta"})
            with anyio.fail_after(30):
                assert (await stream.__anext__()).uri == "note://r/beta"
                while not any(isinstance(m, ResourceUpdatedNotification) for m in heard):
                    await anyio.sleep(0.05)
            assert [str(m.params.uri) for m in heard if isinstance(m, ResourceUpdatedNotification)] == [
                "note://r/alpha"]
            assert "(version 1)" in (await legacy.read_resource("note://r/alpha")).contents[0].text
            await modern.call_tool("r__add_note", {"name": "gamma"})
            with anyio.fail_after(30):
                while not any(isinstance(m, ResourceListChangedNotification) for m in heard):
                    await anyio.sleep(0.05)
                await stream.__anext__()  # the modern agent hears the list change too
            for agent in (legacy, modern):
                uris = {str(r.uri) for r in (await agent.list_resources()).resources}
                assert {"note://r/alpha", "note://r/beta", "note://r/gamma"} <= uris
                assert (await agent.read_resource("note://r/dynamic/zed")).contents[0].text == "note zed"
                got = await agent.get_prompt("r__greet", {"name": "Ada"})
                assert "Hello, Ada!" in got.messages[0].content.text
                done = await agent.complete(PromptReference(name="r__greet"), {"name": "name", "value": "Al"})
                assert done.completion.values == ["Alan"]

    if transport == "stdio":
        anyio.run(main, None, {})
    else:
        with _http_gateway(monad_home) as (url, headers):
            anyio.run(main, url, headers)


def test_the_mcp_inspector_cli_through_monad_mcp_serve(supervisor: Any, monad_home: Path, tmp_path: Path) -> None:
    """A third-party client, the MCP Inspector's CLI, lists and reads resources and lists and
    gets prompts through `monad mcp serve`."""
    write_atom(monad_home, "r", f"command = {json.dumps(sys.executable)}\nargs = {json.dumps([RESOURCESERVER])}\n")
    wait_state(supervisor, "r", "connected", timeout=90)
    # The Inspector starts its server with a minimal environment: MONAD_HOME goes by -e.
    base = [inspector_bin(), "--cli", "-e", f"MONAD_HOME={monad_home}", "-e", "MONAD_NO_AUTOSTART=1",
            sys.executable, "-m", "monad_cli", "mcp", "serve"]
    env = {**os.environ, "MCP_CATALOG_PATH": str(tmp_path / "catalog.json")}

    def inspect(*flags: str) -> Any:
        r = subprocess.run([*base, *flags], capture_output=True, text=True, env=env, timeout=120)
        assert r.returncode == 0, (flags, r.stdout, r.stderr)
        return json.loads(r.stdout)

    listed = inspect("--method", "resources/list")["resources"]
    assert {"note://r/alpha", "note://r/beta"} <= {r["uri"] for r in listed}
    read = inspect("--method", "resources/read", "--uri", "note://r/dynamic/inspector")
    assert read["contents"][0]["text"] == "note inspector"
    prompts = inspect("--method", "prompts/list")["prompts"]
    assert "r__greet" in {p["name"] for p in prompts}
    got = inspect("--method", "prompts/get", "--prompt-name", "r__greet", "--prompt-args", "name=Ada")
    assert got["messages"][0]["content"]["text"] == "Hello, Ada!"


def test_questions_on_one_http_listener_reach_the_agent_whose_call_it_is(supervisor: Any, monad_home: Path) -> None:
    """Three agents share one HTTP gateway (one gateway session): a question goes to the
    agent whose call it is, on that call's own stream (handshake era) or in its
    input_required rounds (2026-07-28); the third agent, able to answer, is never asked."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp_types import CreateMessageResult, ElicitResult, TextContent

    _everything(monad_home, supervisor)
    asked: dict[str, list[str]] = {"a": [], "b": [], "c": []}

    def answers(who: str) -> dict[str, Any]:
        async def elicit(context: Any, params: Any) -> ElicitResult:
            asked[who].append("elicitation")
            return ElicitResult(action="accept", content={"name": f"Ada-{who}", "check": True})

        async def sample(context: Any, params: Any) -> CreateMessageResult:
            asked[who].append("sampling")
            return CreateMessageResult(role="assistant", content=TextContent(type="text", text=f"sampled-by-{who}"),
                                       model=f"model-{who}")

        return {"elicitation_callback": elicit, "sampling_callback": sample}

    def text(result: Any) -> str:
        return " ".join(getattr(c, "text", "") for c in result.content)

    async def main(url: str, headers: dict[str, str]) -> None:
        async with contextlib.AsyncExitStack() as stack:
            agents = {}
            for who, mode in (("a", "legacy"), ("b", "auto"), ("c", "legacy")):
                http = await stack.enter_async_context(httpx2.AsyncClient(headers=headers, timeout=60))
                agents[who] = await stack.enter_async_context(
                    Client(streamable_http_client(url, http_client=http), mode=mode, **answers(who)))
            assert agents["b"].protocol_version == "2026-07-28"
            a, b = agents["a"], agents["b"]
            assert "Ada-a" in text(await a.call_tool("everything__trigger-elicitation-request", {}))
            assert "sampled-by-b" in text(await b.call_tool("everything__trigger-sampling-request", {"prompt": "x"}))
            assert "Ada-b" in text(await b.call_tool("everything__trigger-elicitation-request", {}))
            assert "sampled-by-a" in text(await a.call_tool("everything__trigger-sampling-request", {"prompt": "y"}))

    with _http_gateway(monad_home) as (url, headers):
        anyio.run(main, url, headers)
    assert asked == {"a": ["elicitation", "sampling"], "b": ["sampling", "elicitation"], "c": []}, asked


def test_a_secret_in_a_uri_is_redacted_in_errors_and_the_journal(supervisor: Any, monad_home: Path) -> None:
    """An env value of a definition is a secret: a URI holding it comes back `***` in the
    agent's error and in the journal's event of the read."""
    from mcp import Client
    from mcp.shared.exceptions import MCPError

    secret = "sentinel-7c1f0d9a2b"
    write_atom(monad_home, "r", f"command = {json.dumps(sys.executable)}\nargs = {json.dumps([RESOURCESERVER])}\n"
                                f'env = {{API_TOKEN = "{secret}"}}\n')
    wait_state(supervisor, "r", "connected", timeout=90)
    errors: list[str] = []

    async def main() -> None:
        async with Client(_serve(monad_home), mode="legacy") as agent:
            for uri in (f"nothing://x?token={secret}", f"note://r/{secret}"):
                with pytest.raises(MCPError) as failed:
                    await agent.read_resource(uri)
                errors.append(failed.value.error.message)
            # A read routed by its template reaches the server and is journaled (just after the answer).
            await agent.read_resource(f"note://r/dynamic/{secret}")

    anyio.run(main)
    assert errors and all(secret not in e and "***" in e for e in errors), errors
    events = wait_for(lambda: [e for e in supervisor("journal", "--server", "r", "--json").json()
                               if e.get("kind") == "resource.read"], timeout=30)
    dumped = json.dumps(events)
    assert secret not in dumped and "***" in dumped, dumped


def _on_a_terminal(argv: list[str], env: dict[str, str], answers: dict[str, str], *,
                   timeout: float = 120) -> tuple[int, str]:
    """Run `argv` on a pseudo-terminal (stdin, stdout, stderr); answer each
    prompt ending in `: ` whose text holds a key of `answers` with its value, any other
    prompt with Enter. Returns (exit code, everything written to the terminal)."""
    import pty
    import select
    import time

    leader, follower = pty.openpty()
    proc = subprocess.Popen(argv, stdin=follower, stderr=follower, stdout=follower, env=env)
    os.close(follower)
    seen, pending = "", ""
    deadline = time.monotonic() + timeout
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.2)
            if not ready:
                continue
            try:
                chunk = os.read(leader, 4096).decode(errors="replace")
            except OSError:
                break
            seen += chunk
            pending += chunk
            if pending.rstrip(" ").endswith(":") and pending.endswith(": "):
                reply = next((v for k, v in answers.items() if k in pending.splitlines()[-1]), "")
                os.write(leader, reply.encode() + b"\n")
                pending = ""
        proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(leader)
    return proc.returncode, seen


def test_monad_mcp_call_asks_a_servers_form_on_a_terminal_and_refuses_without(supervisor: Any,
                                                                               monad_home: Path) -> None:
    _everything(monad_home, supervisor)
    env = {**os.environ, "MONAD_HOME": str(monad_home), "MONAD_NO_AUTOSTART": "1"}
    argv = [sys.executable, "-m", "monad_cli", "mcp", "call", "everything__trigger-elicitation-request", "--yes"]
    code, shown = _on_a_terminal(argv, env, {"String (string)": "Ada Lovelace"})
    assert code == 0, shown
    assert "`everything__trigger-elicitation-request` asks: Please provide inputs" in shown, shown
    assert "- Name: Ada Lovelace" in shown, shown  # the server got the typed answer back
    # Without a terminal, the question is refused and the call says why.
    r = supervisor("mcp", "call", "everything__trigger-elicitation-request", "--yes")
    assert r.code == 1 and "cannot answer questions" in r.out + r.err, r


def test_a_2026_servers_log_messages_reach_its_log_file_and_the_agents_that_asked(supervisor: Any,
                                                                                  monad_home: Path) -> None:
    from mcp import Client
    from mcp_types import LoggingMessageNotificationParams

    write_atom(monad_home, "r", f"command = {json.dumps(sys.executable)}\nargs = {json.dumps([RESOURCESERVER])}\n"
                                'trust = {autoApproveTools = ["r__say"]}\n')
    wait_state(supervisor, "r", "connected", timeout=90)
    logs: list[LoggingMessageNotificationParams] = []

    async def record(params: LoggingMessageNotificationParams) -> None:
        logs.append(params)

    async def main() -> None:
        async with Client(_serve(monad_home), mode="legacy", logging_callback=record) as agent:
            await agent.set_logging_level("info")
            assert (await agent.call_tool("r__say", {"text": "hello from r"})).content[0].text == "said"
            with anyio.fail_after(30):
                while not logs:
                    await anyio.sleep(0.05)

    anyio.run(main)
    assert [(p.level, p.logger, p.data) for p in logs] == [("info", "r/notes", "hello from r")]
    log_file = monad_home / "logs" / "servers" / "r.stderr.log"
    wait_for(lambda: "[notifications/message info notes] hello from r" in log_file.read_text(), timeout=30)


def test_ctrl_c_stops_serve_http_and_closes_an_agents_open_event_stream(supervisor: Any, monad_home: Path) -> None:
    """Ctrl-C on `monad mcp serve --http` while an agent holds its GET event stream open (the
    stream a 2025-11-25 agent keeps for server messages): the command exits and the stream
    is ended by the gateway, not left hanging on a listener that is gone. Started as a shell
    without job control starts a background job, with SIGINT ignored (`cmd &`; a suite run
    so had every `serve --http` outlive its SIGINT until killed): it stops all the same."""
    import threading

    import httpx2

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "monad_cli", "mcp", "serve", "--http", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    url = f"http://127.0.0.1:{port}/mcp"
    ended: dict[str, Any] = {}
    try:
        _, bearer = gateway_up(monad_home, port)
        headers = {**bearer, "Accept": "application/json, text/event-stream"}
        agent = httpx2.Client(headers=headers, timeout=httpx2.Timeout(10, read=None))
        r = agent.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "agent", "version": "1"}}})
        assert r.status_code == 200, r.text
        session = {"mcp-session-id": r.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
        assert agent.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                          headers=session).status_code == 202
        opened = threading.Event()

        def listen() -> None:
            try:
                with agent.stream("GET", url, headers={**session, "Accept": "text/event-stream"}) as stream:
                    ended["status"] = stream.status_code
                    opened.set()
                    for _ in stream.iter_bytes():
                        pass
                ended["how"] = "closed"
            except httpx2.HTTPError as e:  # cut mid-stream counts as ended too; a hang does not
                ended["how"] = type(e).__name__
            finally:
                opened.set()

        reader = threading.Thread(target=listen, daemon=True)
        reader.start()
        assert opened.wait(30) and ended.get("status") == 200, ended
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=60)  # a hang guard, not a timing
        except subprocess.TimeoutExpired:
            proc.kill()
            raise AssertionError("`monad mcp serve --http` did not exit on SIGINT") from None
    assert proc.returncode == 130 and "Traceback" not in err, err
    reader.join(60)  # a hang guard: the gateway ends the stream when its listener stops
    assert not reader.is_alive() and "how" in ended, ended
    with pytest.raises(httpx2.ConnectError):
        httpx2.get(url, timeout=5)
    assert supervisor("mcp", "status").code == 0  # the supervisor itself serves on
