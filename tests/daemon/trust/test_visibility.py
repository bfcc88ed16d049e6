"""MCP Apps' tool visibility in the tool service, in-process against a real server built with
the SDK's `mcp.server.apps`: what agents are listed and may call, what an app may call (its
own server's `"app"` tools, through the gate), and what the service tells its listeners
(the Studio's transcript) about calls and approvals."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.server import MCPServer
from mcp.server.apps import Apps

from monad_cli.config.schema import ServerSpec, validate
from monad_cli.core.errors import CallRefused, NotFound
from monad_cli.daemon.trust.call import ToolCall
from monad_cli.daemon.trust.service import ToolService
from monad_cli.journal import tools as jt
from monad_cli.journal.db import Journal
from tests.daemon.trust.test_service import Session, run

URI = "ui://srv/app.html"


def _apps_server(name: str) -> MCPServer:
    apps = Apps()

    @apps.tool(resource_uri=URI, visibility=["app"])
    def app_only(n: int) -> str:
        """Only for the app."""
        return f"app_only {n}"

    @apps.tool(resource_uri=URI, visibility=["model"])
    def model_only() -> str:
        """Only for agents."""
        return "model_only"

    @apps.tool(resource_uri=URI)
    def both() -> str:
        """For both (the default)."""
        return "both"

    apps.add_html_resource(URI, "<p>app</p>")
    return MCPServer(name, extensions=[apps])


def _spec(name: str, auto: list[str]) -> ServerSpec:
    return validate({"command": name, "trust": {"autoApproveTools": auto}}, name=name,
                    source=f"atoms/mcp/{name}.toml", environ={})


@asynccontextmanager
async def two_servers(tmp_path: Path) -> AsyncIterator[ToolService]:
    journal = Journal(tmp_path / "journal.db")
    try:
        async with Client(_apps_server("srv")) as a, Client(_apps_server("other")) as b:
            servers = {"srv": Session("srv", _spec("srv", ["srv__app_only", "srv__model_only"]), a,
                                      list((await a.list_tools()).tools)),
                       "other": Session("other", _spec("other", ["other__app_only", "other__both"]), b,
                                        list((await b.list_tools()).tools))}
            svc = ToolService(journal, servers, scrub=lambda text: text)
            for s in servers.values():
                assert svc.check_pin(s, s.tools) is None
            svc.changed()
            yield svc
    finally:
        journal.close()


def test_agents_never_see_app_only_tools_and_apps_call_only_their_own_app_tools(tmp_path: Path) -> None:
    async def main() -> None:
        async with two_servers(tmp_path) as svc:
            listed = [t["name"] for t in svc.listing()]
            assert listed == ["other__both", "other__model_only", "srv__both", "srv__model_only"]
            assert "srv__app_only" in svc.name_map().by_exposed  # still named: an app calls it
            with pytest.raises(NotFound, match="leaves out \"model\""):
                await svc.call(ToolCall("srv__app_only", {"n": 1}, via="gateway", approval={"mode": "yes"}))

            out = await svc.call(ToolCall("srv__app_only", {"n": 2}, via="app", app_of="srv",
                                          approval={"mode": "wait"}))
            assert out["content"][0]["text"] == "app_only 2" and out["decidedBy"] == "trust.autoApproveTools"
            with pytest.raises(CallRefused, match="not callable from an MCP App"):
                await svc.call(ToolCall("srv__model_only", {}, via="app", app_of="srv",
                                        approval={"mode": "yes"}))
            with pytest.raises(CallRefused, match="of server `other`"):
                await svc.call(ToolCall("other__both", {}, via="app", app_of="srv", approval={"mode": "yes"}))
            # Auto-approval is the only pre-approval: an app's call of `both` waits on the gate.
            outcome: dict[str, Any] = {}

            async def app_call() -> None:
                try:
                    await svc.call(ToolCall("srv__both", {}, via="app", app_of="srv",
                                            approval={"mode": "wait", "timeout": 30}))
                except CallRefused as e:
                    outcome["refused"] = e.message

            async with anyio.create_task_group() as tg:
                tg.start_soon(app_call)
                with anyio.fail_after(10):
                    while not svc.gate.listing():
                        await anyio.sleep(0.01)
                [pending] = svc.gate.listing()
                assert (pending["exposed"], pending["via"]) == ("srv__both", "app")
                svc.gate.decide(pending["id"], allow=False, by="denied in the Studio")
            assert "denied" in outcome["refused"]
            rows = [(r["exposed"], r["via"], r["outcome"]) for r in jt.calls(svc.journal)]
            # Every call has its rows, the ones refused before the gate too.
            assert rows == [("srv__app_only", "gateway", "refused"), ("srv__app_only", "app", "ok"),
                            ("srv__model_only", "app", "refused"), ("other__both", "app", "refused"),
                            ("srv__both", "app", "refused")]

    run(main)


def test_the_call_log_and_the_gate_tell_their_listeners(tmp_path: Path) -> None:
    heard: list[tuple[str, dict[str, Any]]] = []
    seen_inside: list[Any] = []

    async def main() -> None:
        async with two_servers(tmp_path) as svc:
            svc.calls.listeners.append(lambda kind, data: heard.append((kind, data)))
            svc.gate.listeners.append(lambda kind, data: heard.append((kind, data)))
            session = svc.servers["srv"]
            original = session.call_tool

            async def spying(call: ToolCall) -> Any:
                seen_inside.append(call.correlation())  # what a Task started by this call keeps of it
                return await original(call)

            session.call_tool = spying  # type: ignore[method-assign]
            await svc.call(ToolCall("srv__both", {}, via="studio", approval={"mode": "yes"}, ref="page-ref-1"))
            with pytest.raises(CallRefused):
                await svc.call(ToolCall("srv__both", {}, via="cli", approval={"mode": "wait", "timeout": 0.2}))

    run(main)
    kinds = [k for k, _ in heard]
    # A waiting caller announces the request again (its deadline may have moved): the page updates its card.
    assert kinds == ["call.started", "call.finished", "approval.pending", "approval.pending", "approval.closed",
                     "call.started", "call.finished"]
    started, finished = heard[0][1], heard[1][1]
    assert (started["exposed"], started["via"], started["arguments"], started["ref"]) == \
        ("srv__both", "studio", {}, "page-ref-1")
    assert finished["id"] == started["id"] and finished["outcome"] == "ok" and finished["decidedBy"] == "studio --yes"
    assert seen_inside == [{"callId": started["id"], "exposed": "srv__both", "via": "studio", "ref": "page-ref-1",
                            "decidedBy": "studio --yes"}]
    assert heard[2][1]["id"] == heard[3][1]["id"] == heard[4][1]["id"]
    assert heard[4][1]["decision"] == "timeout" and heard[6][1]["outcome"] == "refused"
