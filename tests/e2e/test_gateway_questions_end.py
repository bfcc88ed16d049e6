"""Every question a server asks an agent through the gateway ends (docs/gateway.md "A
server's questions"): withdrawn by the server (the agent is told, notifications/cancelled),
or out of the gateway's `--approval-timeout` (the server gets `cancel` for an elicitation, an
error for a sampling; the agent's request is withdrawn too). Through the real supervisor,
`monad mcp serve` over stdio (the direct lane) and `--http` (the SDK's path), with the SDK's
client as a handshake-era agent whose person never answers."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import wait_state
from tests.e2e.test_gateway_approval_wait import _agent

pytestmark = pytest.mark.e2e
TOOLASK = str(Path(__file__).resolve().parents[1] / "servers" / "toolaskserver.py")


def _atom(home: Path) -> None:
    path = home / "atoms" / "mcp" / "ask.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"command = {json.dumps(sys.executable)}\nargs = {json.dumps([TOOLASK])}\ntimeout = 60\n"
                    "trust = {autoApproveTools = [\"ask__signup\", \"ask__withdraw\", \"ask__summarize\"]}\n")


class Silent:
    """An agent's person who never answers: each question waits until it is withdrawn."""

    def __init__(self) -> None:
        self.asked: list[float] = []
        self.withdrawn: list[float] = []
        self.start = time.monotonic()

    async def _wait(self) -> Any:
        self.asked.append(time.monotonic() - self.start)
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            self.withdrawn.append(time.monotonic() - self.start)
            raise

    async def elicit(self, context: Any, params: Any) -> Any:
        return await self._wait()

    async def sample(self, context: Any, params: Any) -> Any:
        return await self._wait()


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_question_nobody_answers_ends_at_the_approval_timeout(supervisor: Any, monad_home: Path,
                                                                transport: str) -> None:
    _atom(monad_home)
    wait_state(supervisor, "ask", "connected", timeout=90)
    person = Silent()
    out: dict[str, Any] = {}

    async def main() -> None:
        async with _agent(monad_home, transport, "legacy", 3, elicitation_callback=person.elicit,
                          sampling_callback=person.sample) as client:
            person.start = time.monotonic()
            signup = await client.call_tool("ask__signup", {})
            out["signup"] = (time.monotonic() - person.start, signup.content[0].text)
            if transport == "http":
                person.start = time.monotonic()
                summary = await client.call_tool("ask__summarize", {"text": "a long text"})
                out["summarize"] = (time.monotonic() - person.start, summary.content[0].text)
            await anyio.sleep(0.5)  # the withdrawal reaches the agent's callback

    anyio.run(main)
    seconds, text = out["signup"]
    assert text == "action: cancel" and 2.5 < seconds < 4.5, out  # over within ~4 s, a clean answer
    if transport == "http":
        seconds, text = out["summarize"]
        assert 2.5 < seconds < 4.5 and "did not answer within 3 s" in text, out
    # Each question the agent was asked was withdrawn from it: nothing stays pending.
    assert len(person.asked) == len(person.withdrawn) == len(out), (person.asked, person.withdrawn)
    details = [e["detail"] if isinstance(e["detail"], dict) else json.loads(e["detail"])
               for e in supervisor("journal", "--server", "ask", "--json").json() if e.get("kind") == "question"]
    assert [(d["about"], d["outcome"], d.get("action")) for d in details if d["about"] == "ask__signup"] == [
        ("ask__signup", "timeout", "cancel")], details


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_question_the_server_withdraws_is_withdrawn_from_the_agent(supervisor: Any, monad_home: Path,
                                                                     transport: str) -> None:
    _atom(monad_home)
    wait_state(supervisor, "ask", "connected", timeout=90)
    person = Silent()
    out: dict[str, Any] = {}

    async def main() -> None:
        async with _agent(monad_home, transport, "legacy", 60, elicitation_callback=person.elicit) as client:
            person.start = time.monotonic()
            result = await client.call_tool("ask__withdraw", {"after": 1})
            out["result"] = (time.monotonic() - person.start, result.content[0].text)
            with anyio.fail_after(5):
                while not person.withdrawn:
                    await anyio.sleep(0.05)

    anyio.run(main)
    seconds, text = out["result"]
    assert text == "withdrawn" and seconds < 5, out
    assert len(person.asked) == 1 and len(person.withdrawn) == 1 and person.withdrawn[0] < 5, person.__dict__
    details = [e["detail"] if isinstance(e["detail"], dict) else json.loads(e["detail"])
               for e in supervisor("journal", "--server", "ask", "--json").json() if e.get("kind") == "question"]
    assert [(d["about"], d["outcome"]) for d in details] == [("ask__withdraw", "cancelled")], details


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_2026_agents_question_is_bounded_by_the_same_timeout(supervisor: Any, monad_home: Path,
                                                               transport: str) -> None:
    """A 2026-07-28 agent gets the question as an input_required round; when its answer comes
    after `--approval-timeout 3`, the server had already been answered `cancel` at 3 s (the
    call went on without it), and the late round gets that result."""
    _atom(monad_home)
    wait_state(supervisor, "ask", "connected", timeout=90)
    asked: list[float] = []
    out: dict[str, Any] = {}

    async def slow_person(context: Any, params: Any) -> Any:
        import mcp_types as types

        asked.append(time.monotonic())
        await anyio.sleep(5)  # past the gateway's 3 s
        return types.ElicitResult(action="accept", content={"name": "late", "age": 1})

    async def main() -> None:
        async with _agent(monad_home, transport, "auto", 3, elicitation_callback=slow_person) as client:
            assert client.protocol_version == "2026-07-28"
            started = time.monotonic()
            result = await client.call_tool("ask__signup", {})
            out.update(seconds=time.monotonic() - started, text=result.content[0].text)

    anyio.run(main)
    assert len(asked) == 1 and out["text"] == "action: cancel" and 4.5 < out["seconds"] < 9, out
    details = [e["detail"] if isinstance(e["detail"], dict) else json.loads(e["detail"])
               for e in supervisor("journal", "--server", "ask", "--json").json() if e.get("kind") == "question"]
    assert [(d["outcome"], d.get("action")) for d in details if d["about"] == "ask__signup"] == [("timeout", "cancel")]


def test_an_agent_that_leaves_ends_its_session_and_its_pending_question(supervisor: Any, monad_home: Path) -> None:
    """An agent that leaves (the SDK's client closes the relay's stdin) while a server's
    question to it is pending (askserver's `ask://name` read asks its name) ends its session
    at once: the read is cancelled (journaled `cancelled`), not held until `--approval-timeout`
    (60 s here) runs out."""
    askserver = str(Path(__file__).resolve().parents[1] / "servers" / "askserver.py")
    path = monad_home / "atoms" / "mcp" / "ask.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"command = {json.dumps(sys.executable)}\nargs = {json.dumps([askserver])}\ntimeout = 60\n")
    wait_state(supervisor, "ask", "connected", timeout=90)
    asked = anyio.Event()

    async def person(context: Any, params: Any) -> Any:
        asked.set()
        await anyio.sleep_forever()

    async def main() -> None:
        async with _agent(monad_home, "stdio", "legacy", 60, elicitation_callback=person) as client, \
                anyio.create_task_group() as tg:
            tg.start_soon(client.read_resource, "ask://name")
            with anyio.fail_after(30):
                await asked.wait()
            tg.cancel_scope.cancel()  # the agent leaves, its question unanswered

    anyio.run(main)
    left = time.monotonic()
    reads: list[dict[str, Any]] = []
    while time.monotonic() - left < 10 and not reads:
        reads = [e for e in supervisor("journal", "--server", "ask", "--json").json()
                 if e.get("kind") == "resource.read"]
        time.sleep(0.2)
    assert [e["detail"]["outcome"] for e in reads] == ["cancelled"], reads


def test_a_question_withdrawn_from_a_cli_or_studio_caller_is_journaled(supervisor: Any, monad_home: Path) -> None:
    """The control API's call with `questions` (what `monad mcp call` on a terminal and the
    Studio's Try form use): the server asks, the caller sees the question, the server
    withdraws it; the call ends and the journal's `question` event says `cancelled`."""
    from monad_cli.cli.control import ControlClient
    from monad_cli.core.paths import Paths

    _atom(monad_home)
    wait_state(supervisor, "ask", "connected", timeout=90)
    body = {"name": "ask__withdraw", "arguments": {"after": 1}, "via": "cli", "approval": {"mode": "yes"},
            "progress": True, "questions": True}
    items = list(ControlClient(Paths(monad_home), timeout=30).stream("POST", "/v1/tools/call", body))
    assert [i["question"]["request"]["method"] for i in items if "question" in i] == ["elicitation/create"], items
    assert items[-1]["result"]["content"][0]["text"] == "withdrawn", items
    details = [e["detail"] if isinstance(e["detail"], dict) else json.loads(e["detail"])
               for e in supervisor("journal", "--server", "ask", "--json").json() if e.get("kind") == "question"]
    assert [(d["about"], d["outcome"], d.get("via")) for d in details] == [
        ("ask__withdraw", "cancelled", "cli")], details
