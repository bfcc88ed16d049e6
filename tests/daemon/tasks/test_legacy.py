"""The 2025-11-25 shape of tasks, in-process: the task manager against the real
`@modelcontextprotocol/server-everything` from npm (its `simulate-research-query` tool is
`taskSupport: "required"`), over stdio, with a real journal (monad_cli/daemon/tasks/legacy.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, nullcontext
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from monad_cli.daemon.tasks.legacy import ElicitationInbox, InputGone, LegacyTaskWire, normalize_task
from monad_cli.daemon.tasks.manager import TaskManager
from monad_cli.journal.db import Journal
from tests.conftest import everything_bin
from tests.daemon.sessions.test_direct import monad_stdio

TOOL = "simulate-research-query"


class Link:
    """The server as the supervisor's actor shows it to the task manager."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.client: Client | None = None
        self.state = "connecting"
        self.reason: str | None = None
        self.tools: list[types.Tool] = []
        self.lane: Any = None

    @property
    def live(self) -> bool:
        return self.client is not None and self.state == "connected"

    def in_use(self) -> Any:  # always connected or not: nothing to start (an actor starts an idle one)
        return nullcontext()


async def until(predicate: Callable[[], Any], timeout: float = 30.0) -> Any:
    with anyio.fail_after(timeout):
        while not (value := predicate()):
            await anyio.sleep(0.05)
    return value


@asynccontextmanager
async def everything(tmp_path: Path) -> AsyncIterator[tuple[TaskManager, Link, Client]]:
    journal = Journal(tmp_path / "journal.db")
    link = Link("ev")
    manager = TaskManager(journal, {"ev": link}, redact=journal.scrub, request_timeout=lambda name: 20.0)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(manager.run)
            async with monad_stdio(tmp_path, everything_bin(), ["stdio"], mode="auto",
                                   extensions=manager.client_extensions("ev"),
                                   elicitation_callback=manager.elicitation_callback("ev")) as (client, conn):
                link.tools = list((await client.list_tools()).tools)
                link.client, link.lane, link.state = client, conn.lane, "connected"
                manager.on_actor_state(link)
                yield manager, link, client
                link.client, link.state = None, "stopped"
                manager.on_actor_state(link)
            tg.cancel_scope.cancel()
    finally:
        journal.close()


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    anyio.run(scenario)


def task_text(task: dict[str, Any]) -> str:
    return "".join(c.get("text", "") for c in task["result"]["content"])


def test_a_required_task_tool_runs_as_a_2025_11_25_task(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with everything(tmp_path) as (manager, _link, client):
            assert client.protocol_version == "2025-11-25"
            started = await manager.start("ev", TOOL, {"topic": "tides"})
            assert started["taskId"] and started["state"] == "working", started
            assert started["ttlMs"] == 300000 and started["pollIntervalMs"] == 1000  # renamed from ttl/pollInterval
            done = await until(lambda: (t := manager.view(manager.store.get(started["id"])))  # type: ignore[arg-type]
                               ["state"] == "completed" and t)
            assert "# Research Report: tides" in task_text(done)
            assert done["result"]["_meta"] == {"io.modelcontextprotocol/related-task": {"taskId": done["taskId"]}}
            reasons = [e["reason"] for e in manager.ledger.journal.events(kinds=["task"])]
            assert f"task {started['id'][:12]} created as server task {done['taskId']} (2025-11-25 tasks)" in reasons
            assert f"task {started['id'][:12]} ({TOOL}) completed via tasks/get" in reasons
            # The caller who waits (`monad mcp call` without --detach) goes the same way.
            result = await manager.run_call("ev", TOOL, {"topic": "reefs"})
            assert "# Research Report: reefs" in result.content[0].text  # type: ignore[union-attr]

    run(scenario)


def test_its_elicitation_becomes_the_task_input_and_the_answer_goes_back(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with everything(tmp_path) as (manager, _link, _client):
            started = await manager.start("ev", TOOL, {"topic": "python", "ambiguous": True})
            asked = await until(lambda: (t := manager.view(manager.store.get(started["id"])))  # type: ignore[arg-type]
                                ["inputs"] and t)
            assert asked["state"] == "input_required" and asked["deliveryPending"] and asked["pendingKind"] == "input"
            [only] = asked["inputs"]
            assert only["mode"] == "form" and "multiple interpretations" in only["message"]
            assert only["fields"] == [{"name": "interpretation", "type": "string", "title": "Clarification",
                                       "required": True, "choices": ["programming", "snake", "comedy"]}]
            with pytest.raises(Exception, match="must be one of programming, snake, comedy"):
                await manager.answer(started["id"], {only["key"]: {"interpretation": "lizard"}})
            answered = await manager.answer(started["id"], {only["key"]: {"interpretation": "snake"}})
            assert answered["answeredKeys"] == [only["key"]] and not answered["inputs"]
            done = await until(lambda: (t := manager.view(manager.store.get(started["id"])))  # type: ignore[arg-type]
                               ["state"] == "completed" and t)
            assert "# Research Report: python (snake)" in task_text(done)
            # An answer for a question nobody waits for any more is refused, not sent.
            with pytest.raises(InputGone):
                manager.servers["ev"].inbox.answer(done["taskId"], {only["key"]: {"action": "accept"}})

    run(scenario)


def test_cancel_list_resume_and_a_foreign_elicitation(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with everything(tmp_path) as (manager, link, client):
            first = await manager.start("ev", TOOL, {"topic": "a"})
            second = await manager.start("ev", TOOL, {"topic": "b"})
            st = manager.servers["ev"]
            assert isinstance(st.wire, LegacyTaskWire) and st.wire.cancels and st.wire.lists
            listed = {t["taskId"]: t for t in await st.wire.list_tasks()}
            assert {first["taskId"], second["taskId"]} <= set(listed)
            assert listed[first["taskId"]]["ttlMs"] == 300000
            # tasks/cancel answers the cancelled task; the row ends with it.
            cancelled = await manager.cancel(first["id"])
            assert cancelled["state"] == "cancelled" and cancelled["cancelRequested"], cancelled
            # The connection goes and comes back: the open row is resumed (tasks/list, then polls).
            link.client, link.state = None, "connecting"
            manager.on_actor_state(link)
            await anyio.sleep(0.2)
            link.client, link.state = client, "connected"
            manager.on_actor_state(link)
            done = await until(lambda: (t := manager.view(manager.store.get(second["id"])))  # type: ignore[arg-type]
                               ["state"] == "completed" and t)
            assert done["recoveries"] == 1 and "# Research Report: b" in task_text(done)
            # An elicitation that belongs to no task of ours is refused, not answered for someone.
            refused = await client.call_tool("trigger-elicitation-request", {})
            text = " ".join(c.text for c in refused.content if isinstance(c, types.TextContent))
            assert "monad answers elicitation/create only for the input of a running task" in text

    run(scenario)


def test_a_2025_task_is_spelled_as_sep_2663() -> None:
    wire = {"taskId": "t1", "status": "working", "ttl": 60000, "pollInterval": 500, "createdAt": "x",
            "lastUpdatedAt": "y", "_meta": {"io.modelcontextprotocol/related-task": {"taskId": "t1"}}}
    assert normalize_task(wire) == {"taskId": "t1", "status": "working", "ttlMs": 60000, "pollIntervalMs": 500,
                                    "createdAt": "x", "lastUpdatedAt": "y"}
    assert normalize_task({"taskId": "t", "status": "completed", "ttl": None}) == \
        {"taskId": "t", "status": "completed", "ttlMs": None}
    with pytest.raises(ValueError, match="not a task"):
        normalize_task({"status": "working"})


def test_the_inbox_holds_a_question_until_it_is_answered() -> None:
    async def scenario() -> None:
        inbox = ElicitationInbox()
        listed: list[dict[str, Any]] = []
        answers: list[dict[str, Any]] = []
        request = {"method": "elicitation/create", "params": {"mode": "url", "message": "m",
                                                              "url": "https://example.com/x"}}

        async def ask() -> None:
            answers.append(await inbox.ask("t1", request, lambda: listed.append(inbox.requests("t1"))))

        async with anyio.create_task_group() as tg:
            tg.start_soon(ask)
            await until(lambda: listed)
            [key] = listed[0]
            assert listed[0][key] == request
            with pytest.raises(InputGone, match="nope"):
                inbox.answer("t1", {"nope": {"action": "accept"}})
            inbox.answer("t1", {key: {"action": "accept"}})
        assert answers == [{"action": "accept"}] and inbox.requests("t1") == {} and not inbox.asked

    run(scenario)
