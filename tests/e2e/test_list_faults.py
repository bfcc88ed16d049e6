"""Lists that break (issue 26), end to end with servers of our own
(tests/servers/listfaultserver.py) and the real supervisor: a 2026-07-28 server whose tools
change before its `subscriptions/listen` stream opens, and prompts and resources lists with
one bad item each."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import status_of, wait_for, wait_state
from tests.e2e.test_reported_server_bugs import tool_names

LIST_FAULTS = str(Path(__file__).resolve().parents[1] / "servers" / "listfaultserver.py")
pytestmark = pytest.mark.e2e


def add_list_faults(monad: Any, name: str, *flags: str) -> None:
    r = monad("mcp", "add", name, "--", sys.executable, LIST_FAULTS, *flags)
    assert r.code == 0, r


def test_a_change_before_the_listen_stream_opens_is_not_lost(supervisor: Any, tmp_path: Path) -> None:
    log = tmp_path / "requests.log"
    add_list_faults(supervisor, "listener", "--change-before-listen", "--log-requests", str(log))
    row = wait_state(supervisor, "listener", "connected", timeout=60)
    assert row["protocolVersion"] == "2026-07-28", row
    # The server added `late` when the stream was asked for, before acknowledging it: no
    # event ever tells of it, only the listing once the stream is open does.
    wait_for(lambda: "listener__late" in tool_names(supervisor, "listener"), timeout=30)
    seen = log.read_text().splitlines()
    assert seen.index("subscriptions/listen") < len(seen) - 1 - seen[::-1].index("tools/list"), seen
    assert status_of(supervisor, "listener")["state"] == "connected"


def test_a_bad_prompt_resource_and_template_cost_that_item_only(supervisor: Any, monad_home: Path) -> None:
    import anyio
    from mcp import Client, StdioServerParameters

    add_list_faults(supervisor, "lists", "--bad-items")
    wait_state(supervisor, "lists", "connected", timeout=60)
    serve = StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve"],
                                  env={"MONAD_HOME": str(monad_home), "MONAD_NO_AUTOSTART": "1"})

    async def agent() -> dict[str, Any]:
        async with Client(serve) as gateway:
            prompts = [p.name for p in (await gateway.list_prompts()).prompts]
            resources = [str(r.uri) for r in (await gateway.list_resources()).resources]
            templates = [t.uri_template for t in (await gateway.list_resource_templates()).resource_templates]
            got = await gateway.get_prompt("lists__greet")
            read = await gateway.read_resource("memo://notes/1")
            return {"prompts": prompts, "resources": resources, "templates": templates,
                    "prompt": got.messages[0].content.text,  # type: ignore[union-attr]
                    "read": read.contents[0].text}  # type: ignore[union-attr]

    seen = anyio.run(agent)
    # The rest stays usable: the good prompt, resource and template are listed, got and read.
    assert seen["prompts"] == ["lists__greet"] and seen["resources"] == ["memo://notes/1"], seen
    assert seen["templates"] == ["memo://notes/{id}"], seen
    assert seen["prompt"] == "hello" and seen["read"] == "note one", seen
    # Each bad one is left out with a reason naming it, in `status`.
    row = status_of(supervisor, "lists")
    assert row["state"] == "connected", row
    left = row["leftOut"]
    assert any(r.startswith("prompt `broken_prompt` left out: arguments") for r in left), left
    assert any(r.startswith("resource `no_uri` left out: uri: Field required") for r in left), left
    assert any(r.startswith("resource template `no_template` left out: uriTemplate: Field required")
               for r in left), left
    assert len(left) == 3, left
    # Not mixed into its tools: a re-listing of tools leaves them where they are.
    assert "lists__echo" in tool_names(supervisor, "lists")
    r = supervisor("mcp", "status", "lists")
    assert r.code == 0 and "server `lists`: prompt `broken_prompt` left out" in r.err, r


SHAPELESS = ("prompts/list", "resources/list", "resources/templates/list")


def test_a_servers_shapeless_answer_leaves_that_server_out_not_every_servers_list(supervisor: Any,
                                                                                monad_home: Path) -> None:
    """Found by a new-user trial: one stdio server answering `resources/templates/list` with `{}`
    failed the merged listing for every server with JSON-RPC error code 0 ("unhandled errors in
    a TaskGroup"), and the Studio's resources route with HTTP 500 and a pydantic traceback.
    The listing leaves that server out, saying so once; the route answers its one-line error."""
    import anyio
    from mcp import Client, StdioServerParameters

    from monad_cli.cli.control import ControlClient
    from monad_cli.core.errors import ToolCallFailed
    from monad_cli.core.paths import Paths

    add_list_faults(supervisor, "good")
    add_list_faults(supervisor, "odd", *(f"--shapeless={m}" for m in SHAPELESS))
    wait_state(supervisor, "good", "connected", timeout=60)
    wait_state(supervisor, "odd", "connected", timeout=60)
    serve = StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve"],
                                  env={"MONAD_HOME": str(monad_home), "MONAD_NO_AUTOSTART": "1"})

    async def agent() -> dict[str, Any]:
        async with Client(serve) as gateway:
            return {"templates": [(t.uri_template, (t.meta or {}).get("monad/server"))
                                  for t in (await gateway.list_resource_templates()).resource_templates],
                    "resources": [(str(r.uri), (r.meta or {}).get("monad/server"))
                                  for r in (await gateway.list_resources()).resources],
                    "prompts": [p.name for p in (await gateway.list_prompts()).prompts]}

    async def per_server() -> list[Any]:
        from mcp.shared.exceptions import MCPError

        own = StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve", "odd"],
                                    env={"MONAD_HOME": str(monad_home), "MONAD_NO_AUTOSTART": "1"})
        errors = []
        async with Client(own) as entry:
            for listing in (entry.list_resource_templates, entry.list_resources, entry.list_prompts):
                with pytest.raises(MCPError) as failed:
                    await listing()
                errors.append(failed.value.error)
        return errors

    seen = anyio.run(agent)
    assert seen == {"templates": [("memo://notes/{id}", "good")], "resources": [("memo://notes/1", "good")],
                    "prompts": ["good__greet"]}, seen
    # Its own entry (`monad mcp serve odd`) says why, instead of lists that look empty.
    errors = anyio.run(per_server)
    assert [e.code for e in errors] == [-32603] * 3, errors
    assert errors[0].message == ("server `odd`: listing resource templates failed: the server's "
                                 "ListResourceTemplatesResult is not of the shape the protocol defines: "
                                 "resourceTemplates: Field required"), errors[0]
    # The Studio's route (the control API's, on either port): the server's one-line error, not a 500.
    with pytest.raises(ToolCallFailed) as failed:
        ControlClient(Paths(monad_home)).get("/v1/mcp-servers/odd/resources")
    message = failed.value.message
    assert message.startswith("server `odd`: listing resources failed: the server's ListResourcesResult is not "
                              "of the shape the protocol defines: resources: Field required"), message
    with pytest.raises(ToolCallFailed) as failed:
        ControlClient(Paths(monad_home)).get("/v1/mcp-servers/odd/prompts")
    assert "prompts: Field required" in failed.value.message, failed.value.message
    assert ControlClient(Paths(monad_home)).get("/v1/mcp-servers/good/resources")["templates"][0]["uriTemplate"] \
        == "memo://notes/{id}"
    # One line each in the daemon log, naming the server and what was wrong; no traceback.
    logged = (monad_home / "logs" / "daemon.log").read_text()
    assert "Traceback" not in logged and "TaskGroup" not in logged, logged[-3000:]
    for title, key in (("ListResourceTemplatesResult", "resourceTemplates"), ("ListResourcesResult", "resources"),
                       ("ListPromptsResult", "prompts")):
        assert ("server odd: listing " in logged and
                f"the server's {title} is not of the shape the protocol defines: {key}: Field required" in logged), \
            logged[-3000:]
    # And `monad mcp status odd` names them.
    left = status_of(supervisor, "odd")["leftOut"]
    assert any(r.startswith("resources/templates/list answer left out: resourceTemplates: Field required")
               for r in left), left


def test_a_servers_error_code_0_on_a_read_or_a_prompt_is_answered_minus_32603(supervisor: Any,
                                                                               monad_home: Path) -> None:
    """A server failing resources/read or prompts/get with JSON-RPC error code 0 (undefined in
    JSON-RPC 2.0 section 5.1; an SDK server's answer to its handler's exception) passed through
    the gateway unchanged, as tools/call and the listings no longer do. The agent gets -32603
    with the server's one line, its own code named, and a secret in it masked."""
    import anyio
    from mcp import Client, StdioServerParameters
    from mcp.shared.exceptions import MCPError

    secret = "SENTINEL-code-zero-7c41"
    assert supervisor("env", "set", "FAULT_NOTE", input=secret).code == 0
    r = supervisor("mcp", "add", "zero", "--env", "FAULT_NOTE=${FAULT_NOTE}", "--", sys.executable, LIST_FAULTS,
                   "--code-zero=resources/read", "--code-zero=prompts/get")
    assert r.code == 0, r
    wait_state(supervisor, "zero", "connected", timeout=60)

    async def agent(*names: str) -> list[Any]:
        serve = StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve", *names],
                                      env={"MONAD_HOME": str(monad_home), "MONAD_NO_AUTOSTART": "1"})
        errors = []
        async with Client(serve) as gateway:
            prompt = "greet" if names else "zero__greet"
            for request in (lambda: gateway.read_resource("memo://notes/1"), lambda: gateway.get_prompt(prompt)):
                with pytest.raises(MCPError) as failed:
                    await request()
                errors.append(failed.value.error)
        return errors

    said = "server `zero`: unhandled errors in a TaskGroup (1 sub-exception); note *** (MCP error 0)"
    for names in ((), ("zero",)):  # the whole gateway, and the server's own entry
        errors = anyio.run(agent, *names)
        assert [(e.code, e.message) for e in errors] == [(-32603, said)] * 2, errors
