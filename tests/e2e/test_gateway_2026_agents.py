"""2026-07-28 agents through `monad mcp serve` (stdio relay and HTTP gateway), with real SDK
clients of that era and `tests/servers/askserver.py`, which asks during `resources/read` and
`prompts/get` and logs at debug and info when asked:

- a server's question during a read or a prompt get reaches the agent in input_required
  rounds, as during a tool call, and its answer goes back; an agent that declared nothing is
  refused naming the capability;
- log messages reach a 2026-07-28 request that asked for them (`_meta` logLevel), at that
  level or above, on that request's stream, and no request that did not ask;
- debug-level messages of a 2026-07-28 server reach its log file;
- a server that does not announce list changes is not listed again for every read or get.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import status_of, wait_for, wait_state, write_atom
from tests.e2e.test_gateway_features import _http_gateway, _serve

pytestmark = [pytest.mark.e2e, pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]
ASKSERVER = str(Path(__file__).resolve().parents[1] / "servers" / "askserver.py")


def _ask(home: Path, supervisor: Any) -> None:
    write_atom(home, "ask", f"command = {json.dumps(sys.executable)}\nargs = {json.dumps([ASKSERVER])}\n"
                            'trust = {autoApproveTools = ["ask__shout", "ask__capabilities", "ask__sample"]}\n')
    wait_state(supervisor, "ask", "connected", timeout=90)
    assert status_of(supervisor, "ask")["protocolVersion"] == "2026-07-28"


async def _agent(stack: contextlib.AsyncExitStack, home: Path, url: str | None, headers: dict[str, str],
                 **kw: Any) -> Any:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    if url is None:
        return await stack.enter_async_context(Client(_serve(home), **kw))
    http = await stack.enter_async_context(httpx2.AsyncClient(headers=headers, timeout=60))
    return await stack.enter_async_context(Client(streamable_http_client(url, http_client=http), **kw))


def _run(home: Path, transport: str, main: Any) -> None:
    if transport == "stdio":
        anyio.run(main, None, {})
    else:
        with _http_gateway(home) as (url, headers):
            anyio.run(main, url, headers)


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_servers_question_during_a_read_or_a_prompt_reaches_a_2026_agent(supervisor: Any, monad_home: Path,
                                                                          transport: str) -> None:
    from mcp.shared.exceptions import MCPError
    from mcp_types import ElicitResult

    _ask(monad_home, supervisor)
    asked: list[str] = []

    async def elicit(context: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"name": f"Ada{len(asked)}"})

    async def main(url: str | None, headers: dict[str, str]) -> None:
        async with contextlib.AsyncExitStack() as stack:
            agent = await _agent(stack, monad_home, url, headers, elicitation_callback=elicit)
            assert agent.protocol_version == "2026-07-28"
            read = await agent.read_resource("ask://name")
            assert read.contents[0].text == "hello Ada1", read
            got = await agent.get_prompt("ask__ask")
            assert got.messages[0].content.text == "Hello, Ada2!", got
            legacy = await _agent(stack, monad_home, url, headers, mode="legacy", elicitation_callback=elicit)
            assert (await legacy.get_prompt("ask__ask")).messages[0].content.text == "Hello, Ada3!"  # on its channel
            mute = await _agent(stack, monad_home, url, headers)  # declared no elicitation
            with pytest.raises(MCPError) as refused:
                await mute.read_resource("ask://name")
            assert "the agent did not declare the `elicitation` capability" in refused.value.error.message

    _run(monad_home, transport, main)
    assert asked == ["What is your name?"] * 3, asked
    def questions() -> list[dict[str, Any]] | None:
        events = [e for e in supervisor("journal", "--server", "ask", "--json").json() if e.get("kind") == "question"]
        return events if len(events) >= 4 else None

    events = wait_for(questions, timeout=30)
    details = [e["detail"] if isinstance(e["detail"], dict) else json.loads(e["detail"]) for e in events]
    outcomes = sorted((d["about"], d["outcome"]) for d in details)
    assert outcomes == [("ask://name", "answered"), ("ask://name", "refused"), ("ask__ask", "answered"),
                        ("ask__ask", "answered")], outcomes
    assert "Ada1" not in json.dumps(events)  # the answer itself is not journaled
    # askserver announces no list changes: the gateway listed it once to route, not per request.
    stderr = (monad_home / "logs" / "servers" / "ask.stderr.log").read_text()
    assert stderr.count("askserver: resources/list") == 1 and stderr.count("askserver: prompts/list") == 1, stderr


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_log_messages_reach_the_2026_requests_that_asked(supervisor: Any, monad_home: Path, transport: str) -> None:
    from mcp_types import LoggingMessageNotificationParams

    _ask(monad_home, supervisor)
    from mcp_types import ElicitResult

    heard: dict[str, list[tuple[str, str | None, Any]]] = {"debug": [], "info": [], "none": [], "rounds": []}

    async def elicit(context: Any, params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"name": "Ada"})

    def record(who: str) -> Any:
        async def callback(params: LoggingMessageNotificationParams) -> None:
            heard[who].append((params.level, params.logger, params.data))

        return callback

    async def main(url: str | None, headers: dict[str, str]) -> None:
        async with contextlib.AsyncExitStack() as stack:
            debug = await _agent(stack, monad_home, url, headers, log_level="debug", logging_callback=record("debug"))
            info = await _agent(stack, monad_home, url, headers, log_level="info", logging_callback=record("info"))
            none = await _agent(stack, monad_home, url, headers, logging_callback=record("none"))
            assert debug.protocol_version == info.protocol_version == "2026-07-28"
            assert (await debug.call_tool("ask__shout", {"text": "one"})).content[0].text == "shouted"
            assert (await info.call_tool("ask__shout", {"text": "two"})).content[0].text == "shouted"
            assert (await none.call_tool("ask__shout", {"text": "three"})).content[0].text == "shouted"
            assert (await debug.read_resource("ask://log")).contents[0].text == "logged"
            # An agent that can answer questions: its calls run in input_required rounds.
            rounds = await _agent(stack, monad_home, url, headers, log_level="info", logging_callback=record("rounds"),
                                  elicitation_callback=elicit)
            assert (await rounds.call_tool("ask__shout", {"text": "four"})).content[0].text == "shouted"

    _run(monad_home, transport, main)
    # Each request's messages came on its own stream, before its answer (no wait needed).
    assert heard["debug"] == [("debug", "ask/ask", "debug: one"), ("info", "ask/ask", "info: one"),
                              ("debug", "ask/ask", "debug: read"), ("info", "ask/ask", "info: read")], heard
    assert heard["info"] == [("info", "ask/ask", "info: two")], heard
    assert heard["none"] == [], heard
    assert heard["rounds"] == [("info", "ask/ask", "info: four")], heard
    # Every level reaches the server's log file, whoever asked (the actor's client asks at debug).
    log_file = monad_home / "logs" / "servers" / "ask.stderr.log"
    wait_for(lambda: "[notifications/message debug ask] debug: three" in log_file.read_text(), timeout=30)


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_2026_server_sees_each_agents_own_capabilities(supervisor: Any, monad_home: Path, transport: str) -> None:
    """At 2026-07-28 a server reads its client's capabilities from each request's `_meta`:
    behind monad it sees those of the agent the request is for (elicitation, sampling, roots
    as that agent declared them), in a tools/call, a resources/read and a completion/complete
    alike, never monad's own session's (which offers all three)."""
    from mcp_types import CreateMessageResult, ElicitResult, ListRootsResult, PromptReference, TextContent

    _ask(monad_home, supervisor)

    async def elicit(context: Any, params: Any) -> ElicitResult:
        return ElicitResult(action="decline")

    async def sample(context: Any, params: Any) -> CreateMessageResult:
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text="-"), model="none")

    async def roots(context: Any) -> ListRootsResult:
        return ListRootsResult(roots=[])

    seen: dict[str, list[Any]] = {}

    async def main(url: str | None, headers: dict[str, str]) -> None:
        async with contextlib.AsyncExitStack() as stack:
            agents = {
                "asks": await _agent(stack, monad_home, url, headers, elicitation_callback=elicit,
                                     sampling_callback=sample),
                "mute": await _agent(stack, monad_home, url, headers),
                "legacy-roots": await _agent(stack, monad_home, url, headers, mode="legacy",
                                             list_roots_callback=roots),
            }
            assert agents["asks"].protocol_version == agents["mute"].protocol_version == "2026-07-28"
            # Concurrently, so a request for one agent cannot take another's by being last.
            async with anyio.create_task_group() as tg:
                for name, agent in agents.items():
                    async def ask(name: str = name, agent: Any = agent) -> None:
                        called = await agent.call_tool("ask__capabilities", {})
                        assert not called.is_error, called
                        read = await agent.read_resource("ask://capabilities")
                        done = await agent.complete(PromptReference(name="ask__ask"), {"name": "x", "value": ""})
                        seen[name] = [json.loads(called.content[0].text), json.loads(read.contents[0].text),
                                      json.loads(done.completion.values[0])]
                    tg.start_soon(ask)

    _run(monad_home, transport, main)
    relayed = ("elicitation", "sampling", "roots")
    for name, views in seen.items():
        assert all(isinstance(v, dict) for v in views), (name, views)
        kinds = [sorted(k for k in v if k in relayed) for v in views]
        expected = {"asks": ["elicitation", "sampling"], "mute": [], "legacy-roots": ["roots"]}[name]
        assert kinds == [expected] * 3, (name, views)
    assert seen["asks"][0]["elicitation"] == seen["asks"][1]["elicitation"] != {}, seen


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_servers_missing_capability_error_after_a_question_reaches_the_agent_as_it_is(
        supervisor: Any, monad_home: Path, transport: str) -> None:
    """A 2026-07-28 server asks a question (an input_required round), then answers -32021
    "missing required client capability": the agent, which answered the question but did not
    declare `sampling`, gets that protocol error as the server gave it (code, message, data),
    in a tools/call, a resources/read and a prompts/get alike, not a tool error nor a -32603.
    An agent that declared `sampling` gets the result."""
    from mcp.shared.exceptions import MCPError
    from mcp_types import CreateMessageResult, ElicitResult, TextContent

    _ask(monad_home, supervisor)
    asked: list[str] = []

    async def elicit(context: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"name": "Ada"})

    async def sample(context: Any, params: Any) -> CreateMessageResult:
        return CreateMessageResult(role="assistant", content=TextContent(type="text", text="-"), model="none")

    errors: list[Any] = []

    async def main(url: str | None, headers: dict[str, str]) -> None:
        async with contextlib.AsyncExitStack() as stack:
            agent = await _agent(stack, monad_home, url, headers, elicitation_callback=elicit)
            assert agent.protocol_version == "2026-07-28"
            with pytest.raises(MCPError) as called:
                await agent.call_tool("ask__sample", {})
            with pytest.raises(MCPError) as read:
                await agent.read_resource("ask://sample")
            with pytest.raises(MCPError) as got:
                await agent.get_prompt("ask__sample")
            errors.extend([called.value.error, read.value.error, got.value.error])
            both = await _agent(stack, monad_home, url, headers, elicitation_callback=elicit,
                                sampling_callback=sample)
            result = await both.call_tool("ask__sample", {})
            assert not result.is_error and result.content[0].text == "sampled for Ada", result
            assert (await both.read_resource("ask://sample")).contents[0].text == "sampled for Ada"
            assert (await both.get_prompt("ask__sample")).messages[0].content.text == "Hello, sampled for Ada!"

    _run(monad_home, transport, main)
    assert asked == ["What is your name?"] * 6, asked  # each request asked first, then needed sampling
    for error in errors:
        assert error.code == -32021, error
        assert error.message.endswith("This request needs the sampling capability"), error
        assert error.data == {"requiredCapabilities": {"sampling": {}}}, error
