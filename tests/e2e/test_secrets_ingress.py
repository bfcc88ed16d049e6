"""Issue 38, items 2 and 3: a hostile server echoes the secrets monad handed it in everything
it sends (tests/servers/leakserver.py: stderr, tool descriptions and schema defaults, results,
log and progress messages, an elicitation's question, an error, resource names, URIs,
descriptions and contents, templates, prompts, completions) over stdio and over HTTP; none
of them reaches an agent (the stdio relay and the HTTP gateway), the CLI, the control API,
the Studio, the journal (every table), the logs, the spans or `/metrics`. And the other
half: a value that is not a secret (`MODE=plain`) is never `***` — not the server's name,
its atom's path, its tools' names, a call's arguments or its results."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import end_test_server, free_port, wait_for, wait_state, write_atom
from tests.e2e.test_gateway_features import _http_gateway, _serve
from tests.e2e.test_telemetry import _telemetry_on
from tests.otlp import OtlpReceiver
from tests.studio_helpers import StudioHTTP, open_studio

pytestmark = pytest.mark.e2e
LEAKSERVER = str(Path(__file__).resolve().parents[1] / "servers" / "leakserver.py")
IN_ENV_FILE = "SENTINEL-envfile-71c3a0"  # `monad env set LEAK_TOKEN`, referenced as $LEAK_TOKEN
IN_ATOM = "SENTINEL-atomkey-9d2f11"  # an atom env value whose name says secret
IN_HEADER = "SENTINEL-header-4e91d2"  # an http server's bearer token
SENTINELS = (IN_ENV_FILE, IN_ATOM, IN_HEADER)
AUTO = ["leak__leak", "leak__loud", "leak__ask", "leak__fail", "web__leak", "web__loud", "web__ask", "web__fail"]


def _clean(text: str, where: str) -> None:
    for s in SENTINELS:
        assert s not in text, f"{s} leaked into {where}: {text[max(0, text.find(s) - 300):text.find(s) + 100]!r}"


async def _agent_session(client: Any, heard: list[str], server: str, scheme: str) -> None:
    """Everything an agent can ask of `server`'s features through the gateway, each answer
    (and every message heard meanwhile) put into `heard`."""
    from mcp_types import PromptReference

    def keep(what: Any) -> None:
        heard.append(json.dumps(what.model_dump(mode="json") if hasattr(what, "model_dump") else what, default=str))

    keep(await client.list_tools())
    keep(await client.list_resources())
    keep(await client.list_resource_templates())
    keep(await client.list_prompts())
    keep(await client.read_resource(f"{scheme}://item/x"))
    keep(await client.get_prompt(f"{server}__leak", {"topic": "weather"}))
    keep(await client.complete(PromptReference(type="ref/prompt", name=f"{server}__leak"),
                               {"name": "topic", "value": "w"}))
    keep(await client.call_tool(f"{server}__leak", {}))

    async def progress(done: float, total: float | None, message: str | None) -> None:
        heard.append(f"progress {message}")

    keep(await client.call_tool(f"{server}__loud", {}, progress_callback=progress))
    keep(await client.call_tool(f"{server}__ask", {}))
    keep(await client.call_tool(f"{server}__fail", {}))


def _client_kw(heard: list[str]) -> dict[str, Any]:
    from mcp_types import ElicitResult

    async def on_log(params: Any) -> None:
        heard.append(f"log {params.model_dump_json()}")

    async def on_elicit(context: Any, params: Any) -> Any:
        heard.append(f"question {params.model_dump_json()}")
        return ElicitResult(action="decline")

    async def on_message(message: Any) -> None:
        heard.append(f"message {message!r}")

    return {"logging_callback": on_log, "elicitation_callback": on_elicit, "message_handler": on_message,
            "log_level": "debug"}


def test_a_server_echoing_its_secrets_gets_none_of_them_out(monad: Any, monad_home: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    port = free_port()
    web = subprocess.Popen([sys.executable, LEAKSERVER, "--http", str(port), "--scheme", "web"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           env={**os.environ, "LEAK_TOKEN": IN_HEADER})
    outputs: dict[str, str] = {}
    with OtlpReceiver() as otlp, contextlib.ExitStack() as stack:
        stack.callback(end_test_server, web)
        _telemetry_on(monad_home, monkeypatch, otlp.endpoint)
        assert monad("env", "set", "LEAK_TOKEN", input=IN_ENV_FILE).code == 0
        write_atom(monad_home, "leak", f"command = {json.dumps(sys.executable)}\nargs = {json.dumps([LEAKSERVER])}\n"
                                       f'env = {{LEAK_TOKEN = "$LEAK_TOKEN", LEAK_API_KEY = "{IN_ATOM}"}}\n'
                                       f"trust = {{autoApproveTools = {json.dumps(AUTO)}}}\ntimeout = 60\n")
        write_atom(monad_home, "web", f'url = "http://127.0.0.1:{port}/mcp"\n'
                                      f'headers = {{Authorization = "Bearer {IN_HEADER}"}}\n'
                                      f"trust = {{autoApproveTools = {json.dumps(AUTO)}}}\ntimeout = 60\n")
        studio = StudioHTTP(open_studio(monad)["url"])  # starts the supervisor
        stack.callback(lambda: monad("daemon", "stop"))
        stack.callback(studio.close)
        studio.login()
        wait_state(monad, "leak", "connected", timeout=90)
        wait_state(monad, "web", "connected", timeout=90)

        # Agents: the stdio relay and the HTTP gateway, each asking both servers everything.
        async def agents(url: str, headers: dict[str, str]) -> list[str]:
            heard: list[str] = []
            async with Client(_serve(monad_home), **_client_kw(heard)) as c:
                await _agent_session(c, heard, "leak", "leak")
                await _agent_session(c, heard, "web", "web")
            async with httpx2.AsyncClient(headers=headers) as http, \
                    Client(streamable_http_client(url, http_client=http), **_client_kw(heard)) as c:
                await _agent_session(c, heard, "leak", "leak")
                await _agent_session(c, heard, "web", "web")
            return heard

        with _http_gateway(monad_home) as (url, headers):
            heard = anyio.run(agents, url, headers)
        joined = "\n".join(heard)
        # The agent got the answers, masked: the result, the question, the log, the resource.
        for shown in ("the secret is ***", "Is *** ", "log: ***", "item x: ***", "Prompt about ***",
                      "Talk about weather and ***"):
            assert shown in joined, (shown, joined[:3000])
        outputs["agents"] = joined

        # The CLI, the control API and the Studio.
        for argv in (("mcp", "tools", "--json"), ("mcp", "tools"), ("mcp", "status", "leak", "--json"),
                     ("mcp", "status", "web", "--json"), ("mcp", "status"), ("mcp", "call", "leak__leak", "--yes"),
                     ("mcp", "call", "web__fail", "--yes", "--json"), ("journal", "--json"), ("metrics",)):
            r = monad(*argv)
            outputs[" ".join(argv)] = r.out + r.err
        assert outputs["mcp call leak__leak --yes"].strip() == "the secret is *** ***", outputs
        for path in ("/v1/settings/mcp-servers/status?detail=1", "/v1/journal/calls?limit=100",
                     "/v1/journal?limit=500", "/v1/mcp-servers/leak/tools", "/v1/mcp-servers/web/tools"):
            r = studio.get(path)
            assert r.status_code == 200, (path, r.text)
            outputs[f"Studio {path}"] = r.text
        spans = wait_for(lambda: (found := otlp.spans()) and len(found) > 10 and found, timeout=30)
        outputs["spans"] = repr(spans)
        outputs["daemon.log (live)"] = (monad_home / "logs" / "daemon.log").read_text()

    for where, text in outputs.items():
        _clean(text, where)
    wait_for(lambda: not (monad_home / "run" / "monad.pid").exists())
    with contextlib.closing(sqlite3.connect(monad_home / "journal.db")) as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        assert {"tool_sets", "server_lists", "tool_calls", "events"} <= set(tables), tables
        for table in tables:
            _clean(repr(db.execute(f'SELECT * FROM "{table}"').fetchall()), f"journal table {table}")
    for path in (monad_home / "logs").rglob("*"):
        if path.is_file():
            _clean(path.read_bytes().decode("utf-8", "replace"), str(path.relative_to(monad_home)))
    assert "starting with ***" in (monad_home / "logs" / "servers" / "leak.stderr.log").read_text()


def test_a_value_that_is_not_a_secret_is_never_masked(monad: Any, monad_home: Path) -> None:
    """`MODE=plain` is not a secret: the server `plain`, its atom, its tools, a call by name
    with an argument, and a result holding "plain" are shown as they are."""
    from tests.conftest import LIGHTSERVER

    r = monad("mcp", "add", "plain", "--env", "MODE=plain", "--", sys.executable, LIGHTSERVER)
    assert r.code == 0, r
    assert "***" not in r.out + r.err, r
    atom = monad_home / "atoms" / "mcp" / "plain.toml"
    atom.write_text(atom.read_text() + '\n[trust]\nautoApproveTools = ["plain__echo"]\n')
    try:
        assert monad("daemon", "start").code == 0
        status = wait_state(monad, "plain", "connected", timeout=90)
        assert status["name"] == "plain" and "***" not in json.dumps(status), status
        listing = monad("mcp", "status")
        assert "plain" in listing.out and "***" not in listing.out, listing
        got = monad("mcp", "get", "plain", "--json").json()
        assert got["definition"]["env"] == {"MODE": "plain"}, got
        assert got["source"].endswith("atoms/mcp/plain.toml"), got
        tools = monad("mcp", "tools", "--json").json()
        names = {t["name"] for t in (tools if isinstance(tools, list) else tools["tools"])}
        assert {"plain__add", "plain__echo"} <= names, names
        added = monad("mcp", "call", "plain__add", "--arg", "a=2", "--arg", "b=3", "--yes")
        assert added.code == 0 and added.out.strip() == "5", added
        echoed = monad("mcp", "call", "plain__echo", "--arg", "text=a plain answer", "--yes")
        assert echoed.out.strip() == "a plain answer", echoed

        async def agent() -> str:
            from mcp import Client

            async with Client(_serve(monad_home)) as c:
                names = [t.name for t in (await c.list_tools()).tools]
                assert "plain__add" in names, names
                result = await c.call_tool("plain__echo", {"text": "a plain answer"})
                return str(result.content[0].text)  # type: ignore[union-attr]

        assert anyio.run(agent) == "a plain answer"
    finally:
        monad("daemon", "stop")


MALFORMSERVER = str(Path(__file__).resolve().parents[1] / "servers" / "malformserver.py")
CUT_SECRET = "SENTINEL-malform-5b1c9e"
BAD_TOOLS = ["bad__malformed", "bad__broken", "bad__garbled"]


def _no_piece(text: str, where: str) -> None:
    """Not even a piece of `CUT_SECRET` of `MIN_SCRUB_LEN` characters (a cut one, half of
    one) is in `text`."""
    for i in range(len(CUT_SECRET) - 7):
        piece = CUT_SECRET[i:i + 8]
        assert piece not in text, f"{piece!r} of the secret leaked into {where}: " \
                                  f"{text[max(0, text.find(piece) - 200):text.find(piece) + 100]!r}"


def test_what_fails_to_parse_and_a_line_cut_in_pieces_carry_no_piece_of_a_secret(
        monad: Any, monad_home: Path) -> None:
    """An HTTP server answers a call with a response that is not a JSON-RPC message, a 500
    and a body that is not JSON, each quoting its bearer token: the SDK's parse error
    quoted the answer through pydantic, cut short in the middle (`...ENTINEL-malform-…`),
    to the agent and the CLI, and its traceback wrote the whole token to daemon.log. A
    stdio server writes a 100 KiB stderr line of its secret over and over: the log is
    written in 64 KiB pieces, and a secret across a cut once left both halves there."""
    from tests.conftest import LIGHTSERVER

    port = free_port()
    web = subprocess.Popen([sys.executable, MALFORMSERVER, "--http", str(port)], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, env={**os.environ, "LEAK_TOKEN": CUT_SECRET})
    outputs: dict[str, str] = {}
    try:
        write_atom(monad_home, "bad", f'url = "http://127.0.0.1:{port}/mcp"\n'
                                      f'headers = {{Authorization = "Bearer {CUT_SECRET}"}}\ntimeout = 60\n'
                                      f"trust = {{autoApproveTools = {json.dumps(BAD_TOOLS)}}}\n")
        write_atom(monad_home, "loud", f"command = {json.dumps(sys.executable)}\n"
                                       f"args = {json.dumps([LIGHTSERVER, '--say', CUT_SECRET * 4500])}\n"
                                       f'env = {{LEAK_API_KEY = "{CUT_SECRET}"}}\ntimeout = 60\n')
        assert monad("daemon", "start").code == 0
        wait_state(monad, "bad", "connected", timeout=90)
        wait_state(monad, "loud", "connected", timeout=90)
        for tool in ("malformed", "broken", "garbled"):
            for extra in ((), ("--json",)):
                r = monad("mcp", "call", f"bad__{tool}", "--yes", *extra)
                assert r.code != 0, r
                outputs[f"mcp call bad__{tool} {extra}"] = r.out + r.err
        assert "Failed to parse JSON response" in outputs["mcp call bad__malformed ()"], outputs
        # One line, without pydantic's frame (a new-user trial: its whole report, links and all),
        # in the CLI and the journal alike.
        journaled = {c["tool"]: c["error"] for c in monad("journal", "--calls", "--json").json()}
        for said in (outputs["mcp call bad__malformed ()"], outputs["mcp call bad__garbled ()"],
                     journaled["malformed"], journaled["garbled"]):
            assert len(said.strip().splitlines()) == 1, said
            assert "validation error" not in said and "pydantic" not in said and "[type=" not in said, said
        assert ("Failed to parse JSON response: JSONRPCRequest.method: Field required; JSONRPCNotification.method: "
                "Field required; JSONRPCResponse.result: Input should be an object; JSONRPCError.error: Field "
                "required (MCP error -32700)") in journaled["malformed"], journaled

        async def agent() -> str:
            from mcp import Client

            heard = []
            async with Client(_serve(monad_home)) as c:
                for tool in ("malformed", "broken", "garbled"):
                    try:
                        heard.append(repr(await c.call_tool(f"bad__{tool}", {})))
                    except Exception as e:  # an MCP error is how it fails: its text is what is checked
                        heard.append(repr(e))
            return "\n".join(heard)

        outputs["agent"] = anyio.run(agent)
        assert "Failed to parse JSON response: JSONRPCRequest.method: Field required; " in outputs["agent"], outputs
        assert "validation error" not in outputs["agent"] and "pydantic" not in outputs["agent"], outputs["agent"]
        outputs["status"] = monad("mcp", "status", "loud", "--json").out
        outputs["journal"] = monad("journal", "--json").out
    finally:
        monad("daemon", "stop")
        end_test_server(web)
    for path in (monad_home / "logs").rglob("*"):
        if path.is_file():
            outputs[str(path.relative_to(monad_home))] = path.read_bytes().decode("utf-8", "replace")
    assert "***" in outputs["logs/servers/loud.stderr.log"], outputs["logs/servers/loud.stderr.log"][:300]
    for where, text in outputs.items():
        _no_piece(text, where)
