"""The task manager in-process, with no supervisor: a real `mcp.Client` to the real tasks test
server over stdio, carrying the manager's client extension, and a journal in a tmp dir.

A task returned to a plain `Client.call_tool` (the path other supervisor code takes, e.g.
tool calls through the approval gate): the SDK hands it to monad's resolver, which journals
it, waits for its end and returns the tool result; cancelling the caller cancels the task.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, nullcontext
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError, StdioServerParameters

from monad_cli.daemon.tasks.manager import TaskManager
from monad_cli.journal.db import Journal
from monad_cli.journal.schema import TaskRow
from tests.conftest import SERVERS
from tests.daemon.sessions.test_direct import monad_stdio

INVOCATION = "dev.monad/invocationId"
SECRET = "sentinel-secret-3f9a1c"


class Link:
    """One server as the supervisor's actor shows it to the manager."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.client: Client | None = None
        self.state = "connecting"
        self.reason: str | None = None
        self.lane: Any = None

    @property
    def live(self) -> bool:
        return self.client is not None and self.state == "connected"

    def in_use(self) -> Any:  # always connected or not: nothing to start (an actor starts an idle one)
        return nullcontext()


def events(path: Path) -> list[str]:
    return [json.loads(line)["event"] for line in path.read_text().splitlines()] if path.exists() else []


async def until(predicate: Callable[[], Any], timeout: float = 20.0) -> Any:
    with anyio.fail_after(timeout):
        while not (value := predicate()):
            await anyio.sleep(0.02)
    return value


@asynccontextmanager
async def connected(tmp_path: Path, *server_args: str) -> AsyncIterator[tuple[TaskManager, Client, Path]]:
    """A running `TaskManager` and a live client of the tasks server named `ts`."""
    log = tmp_path / "server.log"
    journal = Journal(tmp_path / "journal.db", scrub=lambda s: s.replace(SECRET, "[redacted]"))
    link = Link("ts")
    manager = TaskManager(journal, {"ts": link}, redact=journal.scrub, request_timeout=lambda name: 20.0)
    params = StdioServerParameters(command=sys.executable, args=[
        str(SERVERS / "tasks_server.py"), "--log", str(log), "--poll-ms", "100", *server_args])
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(manager.run)
            async with monad_stdio(tmp_path, params.command, params.args,
                                   extensions=manager.client_extensions("ts")) as (client, conn):
                link.client, link.lane, link.state = client, conn.lane, "connected"
                manager.on_actor_state(link)
                yield manager, client, log
                link.client, link.state = None, "stopped"
                manager.on_actor_state(link)
            tg.cancel_scope.cancel()
    finally:
        journal.close()


def rows(manager: TaskManager) -> list[TaskRow]:
    return sorted(manager.store.rows(), key=lambda r: r.created_at)


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    anyio.run(scenario)


def test_plain_call_tool_is_resolved_through_the_journal(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with connected(tmp_path) as (manager, client, log):
            with anyio.fail_after(20):
                result = await client.call_tool("slow", {"seconds": 0.3, "label": "plain"})
            assert result.content[0].text == "slept 0.3 plain"  # type: ignore[union-attr]
            assert set(result.meta or {}) == {"io.modelcontextprotocol/related-task"}
            with anyio.move_on_after(1.0):  # the caller gives up: the task is cancelled
                await client.call_tool("slow", {"seconds": 60, "label": "abandoned"})
            await until(lambda: any(r.state == "cancelled" for r in manager.store.rows()))
            assert [[r.tool, r.state, r.adopted, r.deliveries, r.cancel_requested] for r in rows(manager)] == [
                ["slow", "completed", True, 1, False], ["slow", "cancelled", True, 0, True]]
            assert [e for e in events(log) if e in ("run", "cancel")] == ["run", "run", "cancel"]
            journal = manager.ledger.journal.events(kinds=["task"])
            first = rows(manager)[0].id[:12]
            reasons = [e["reason"] for e in journal if first in e["reason"]]
            assert reasons[:2] == [f"task {first} `slow` adopted from tools/call",
                                   f"task {first} (slow) working via tools/call"]
            # Whichever comes first ends it: the listen stream's notification or a poll.
            assert reasons[2:] in ([f"task {first} (slow) completed via notification"],
                                   [f"task {first} (slow) completed via tasks/get"])

    run(scenario)


def test_a_task_that_already_ended_is_fetched_before_it_is_returned(tmp_path: Path) -> None:
    # The same invocation id twice: the server deduplicates and answers the second call with
    # the bare handle of the finished task (status `completed`, no result), which the
    # resolver must complete with tasks/get rather than report as an empty end.
    async def scenario() -> None:
        async with connected(tmp_path) as (manager, client, log):
            meta: Any = {INVOCATION: "same-invocation"}
            with anyio.fail_after(20):
                first = await client.call_tool("slow", {"seconds": 0.1, "label": "once"}, meta=meta)
                again = await client.call_tool("slow", {"seconds": 0.1, "label": "once"}, meta=meta)
            assert first.content[0].text == again.content[0].text == "slept 0.1 once"  # type: ignore[union-attr]
            assert events(log).count("run") == 1 and events(log).count("dedupe") == 1
            assert [(r.state, r.deliveries) for r in rows(manager)] == [("completed", 1), ("completed", 1)]
            assert rows(manager)[0].task_id == rows(manager)[1].task_id

    run(scenario)


def test_a_failed_task_raises_its_error(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with connected(tmp_path) as (manager, client, _log):
            with anyio.fail_after(20), pytest.raises(MCPError) as info:
                await client.call_tool("fail", {"kind": "error", "message": f"no luck {SECRET}"})
            assert "no luck" in info.value.error.message
            (row,) = rows(manager)
            assert row.state == "failed" and row.deliveries == 1
            assert SECRET not in (row.error or "") and "[redacted]" in (row.error or "")

    run(scenario)


def test_start_show_and_cancel_through_the_manager_api(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with connected(tmp_path) as (manager, _client, log):
            # 2 s: the task is still working when `start` returns, however slow the machine.
            done = await manager.start("ts", "slow", {"seconds": 2, "label": "api"}, correlation={"by": "test"})
            assert done["state"] == "working" and done["correlation"] == {"by": "test"}
            shown = await manager.show(done["id"][:10], wait=10, deliver=True)
            assert shown["state"] == "completed" and shown["delivered"] is True
            assert shown["result"]["content"][0]["text"] == "slept 2 api"
            assert (await manager.show(done["id"], deliver=True))["delivered"] is False  # taken once
            sync = await manager.start("ts", "quick", {"text": "now"})  # never a task
            assert sync["state"] == "completed" and sync["taskId"] is None
            long = await manager.start("ts", "slow", {"seconds": 60})
            assert long["state"] == "working"
            await manager.cancel(long["id"])
            await until(lambda: (manager.store.get(long["id"]) or long).state == "cancelled")
            assert "cancel" in events(log)
            assert [t["id"] for t in manager.list_tasks(state="done")] == [long["id"], sync["id"], done["id"]]
            assert manager.list_tasks(state="active") == []

    run(scenario)


def test_input_required_is_answered_with_tasks_update(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with connected(tmp_path) as (manager, _client, log):
            row = await manager.start("ts", "ask", {})
            asked = await manager.show(row["id"], wait=10, deliver=True)
            assert asked["state"] == "input_required" and list(asked["inputRequests"]) == ["profile"]
            assert asked["delivered"] is True and asked["pendingKind"] == "input"
            answered = await manager.answer(row["id"], {"profile": {"name": "Ada", "age": "36"}})
            assert answered["inputRequests"] == {} and answered["answeredKeys"] == ["profile"]
            done = await manager.show(row["id"], wait=10, deliver=True)
            assert done["state"] == "completed" and done["delivered"] is True
            assert json.loads(done["result"]["content"][0]["text"]) == {
                "action": "accept", "content": {"age": 36, "name": "Ada"}}
            assert events(log).count("update") == 1

    run(scenario)


def test_an_ack_is_taken_whatever_else_it_holds(tmp_path: Path) -> None:
    # The acks of tasks/update and tasks/cancel are read for nothing: one whose `resultType`
    # is no string (a sloppy server) still acknowledges, rather than failing the answer with
    # a validation error after the server took it.
    async def scenario() -> None:
        async with connected(tmp_path, "--ack", '{"resultType": 1, "taskId": "x"}') as (manager, _client, log):
            row = await manager.start("ts", "ask", {})
            assert (await manager.show(row["id"], wait=10))["state"] == "input_required"
            answered = await manager.answer(row["id"], {"profile": {"name": "Ada", "age": "36"}})
            assert answered["answeredKeys"] == ["profile"]
            assert (await manager.show(row["id"], wait=10))["state"] == "completed"
            long = await manager.start("ts", "slow", {"seconds": 60})
            await manager.cancel(long["id"])
            await until(lambda: (manager.store.get(long["id"]) or long).state == "cancelled")
            reasons = [e["reason"] for e in manager.ledger.journal.events(kinds=["task"])]
            assert f"task {long['id'][:12]} tasks/cancel acknowledged" in reasons
            assert events(log).count("update") == events(log).count("cancel") == 1

    run(scenario)


def test_a_server_that_is_not_live_is_refused(tmp_path: Path) -> None:
    from monad_cli.core.errors import NotConnected, NotFound

    async def scenario() -> None:
        journal = Journal(tmp_path / "journal.db")
        link = Link("ts")
        link.state, link.reason = "backoff", "connection refused"
        manager = TaskManager(journal, {"ts": link}, redact=lambda s: s)
        with pytest.raises(NotConnected, match="server `ts` is backoff: connection refused"):
            await manager.start("ts", "slow", {})
        with pytest.raises(NotFound, match="server `nope` is not defined"):
            await manager.start("nope", "slow", {})
        assert manager.store.rows() == []  # nothing written for a refused call
        journal.close()

    run(scenario)
