"""One rule (docs/atoms.md "Secrets"): a value monad holds as a secret is `***` wherever it
appears. Sentinel values held as an env file value, an env value, a header's bearer token
and a literal inside an argument; then every surface is read: the CLI (tables and `--json`),
the control API, the journal, the daemon and server logs, the Studio's transcript API, and
the gateway's tool results to an agent."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import LIGHTSERVER, wait_for, wait_state, write_atom
from tests.studio_helpers import StudioHTTP, open_studio

pytestmark = pytest.mark.e2e

IN_ENV_FILE = "SENTINEL-envfile-71c3a0"
BEARER = "SENTINEL-bearer-4e91d2"
IN_ARG = "SENTINEL-arg-0f5b8a"
SENTINELS = (IN_ENV_FILE, BEARER, IN_ARG)


def _clean(text: str, where: str) -> None:
    for s in SENTINELS:
        assert s not in text, f"{s} leaked into {where}: {text[:400]!r}"


def test_a_secret_is_masked_on_every_surface(monad: Any, monad_home: Path, http_testserver: Any) -> None:
    from monad_cli.cli.control import ControlClient
    from monad_cli.core.paths import paths

    url = http_testserver()
    assert monad("env", "set", "API_TOKEN", input=IN_ENV_FILE).code == 0
    auto = '["envsrv__env", "envsrv__echo", "web__echo"]'
    # The value of a secret (the env value SECOND_KEY: its name says secret) also appears
    # inside an argument, where no flag names it: `--say "token …"` (the server writes it to
    # its stderr at start).
    write_atom(monad_home, "envsrv", f"command = {json.dumps(sys.executable)}\n"
                                     f"args = {json.dumps([LIGHTSERVER, '--say', f'token {IN_ARG}'])}\n"
                                     f'env = {{API_TOKEN = "$API_TOKEN", SECOND_KEY = "{IN_ARG}"}}\n'
                                     f"trust = {{autoApproveTools = {auto}}}\n")
    write_atom(monad_home, "web", f'url = "{url}"\nheaders = {{Authorization = "Bearer {BEARER}"}}\n'
                                  f"trust = {{autoApproveTools = {auto}}}\n")
    studio = StudioHTTP(open_studio(monad)["url"])  # starts the supervisor
    studio.login()
    outputs: dict[str, str] = {}
    try:
        wait_state(monad, "envsrv", "connected", timeout=60)
        wait_state(monad, "web", "connected", timeout=60)

        def run(*argv: str) -> None:
            r = monad(*argv)
            assert r.code == 0, r
            outputs[" ".join(argv)] = r.out + r.err

        # A tool result holding a secret (the server echoes its own environment), and a
        # header's bare bearer token passed as an argument, and a value inside an argument.
        for fmt in ((), ("--json",)):
            run("mcp", "call", "envsrv__env", "--arg", "name=API_TOKEN", "--yes", *fmt)
            run("mcp", "call", "envsrv__env", "--arg", "name=SECOND_KEY", "--yes", *fmt)
            run("mcp", "call", "envsrv__echo", "--arg", f"text=the token is {BEARER}", "--yes", *fmt)
            run("mcp", "call", "web__echo", "--arg", f"text=token {IN_ARG}", "--yes", *fmt)
            run("mcp", "get", "envsrv", *fmt)
            run("mcp", "get", "web", *fmt)
            run("mcp", "status", "envsrv", *fmt)
            run("mcp", "status", *fmt)
            run("mcp", "list", *fmt)
            run("env", "list", *fmt)
            run("mcp", "tools", *fmt)
        assert outputs["mcp call envsrv__env --arg name=API_TOKEN --yes"].strip() == "***"
        assert outputs["mcp call envsrv__echo --arg text=the token is " + BEARER + " --yes"].strip() == \
            "the token is ***"
        shown = json.loads(outputs["mcp get envsrv --json"])["definition"]
        assert shown["args"][1:] == ["--say", "token ***"], shown
        assert json.loads(outputs["mcp status envsrv --json"])["stderrTail"][0] == "token ***"
        # (`monad mcp call` reads the NDJSON answer with progress; the plain JSON one is below.)
        run("journal", "--json")
        run("journal")

        # The control API itself, on the unix socket.
        client = ControlClient(paths())
        for path in ("/v1/settings/mcp-servers", "/v1/settings/mcp-servers/status?detail=1", "/v1/env",
                     "/v1/settings/mcp-servers/envsrv", "/v1/journal/calls?limit=50", "/v1/journal?limit=500"):
            outputs[f"API {path}"] = json.dumps(client.get(path))
        result = client.post("/v1/tools/call", {"name": "envsrv__env", "arguments": {"name": "API_TOKEN"},
                                                "approval": {"mode": "wait"}})
        assert result["content"][0]["text"] == "***", result
        outputs["API call"] = json.dumps(result)

        # The Studio's transcript and server list, on its own port.
        for path in ("/v1/journal/calls?limit=50", "/v1/settings/mcp-servers", "/v1/settings/mcp-servers/status"):
            r = studio.get(path)
            assert r.status_code == 200, r.text
            outputs[f"Studio {path}"] = r.text

        # The transcript holds the calls (their arguments and results), masked.
        transcript = outputs["Studio /v1/journal/calls?limit=50"]
        assert "the token is ***" in transcript and "token ***" in transcript, transcript[:2000]

        # An agent through the gateway: the stored secrets stay out of its context.
        async def agent() -> list[str]:
            from mcp import Client, StdioServerParameters

            params = StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve"],
                                           env={"MONAD_HOME": str(monad_home), "MONAD_NO_AUTOSTART": "1"})
            texts = []
            async with Client(params) as c:
                for name, args in (("envsrv__env", {"name": "API_TOKEN"}), ("envsrv__env", {"name": "SECOND_KEY"}),
                                   ("envsrv__echo", {"text": f"Bearer {BEARER}"}),
                                   ("web__echo", {"text": BEARER})):
                    res = await c.call_tool(name, args)
                    texts.append(json.dumps(res.model_dump(mode="json")))
                    assert not res.is_error, res
            return texts

        gateway = anyio.run(agent)
        assert [json.loads(t)["content"][0]["text"] for t in gateway] == ["***", "***", "***", "***"]
        outputs["gateway"] = "\n".join(gateway)
    finally:
        studio.close()
        monad("daemon", "stop")

    for where, text in outputs.items():
        _clean(text, where)
    wait_for(lambda: not (monad_home / "run" / "monad.pid").exists())
    for path in [*monad_home.glob("journal.db*"), *(monad_home / "logs").rglob("*")]:
        if path.is_file():
            _clean(path.read_bytes().decode("utf-8", "replace"), str(path.relative_to(monad_home)))


def test_redaction_units() -> None:
    from monad_cli.core.redact import redact_definition, restore_masked, secret_values

    defn = {"command": "srv", "args": ["--say", f"token {IN_ARG}", f"--api-key={IN_ARG}"],
            "env": {"K": IN_ARG}, "headers": {"Authorization": f"Bearer {BEARER}"}}
    assert BEARER in secret_values(defn)  # the bare token, not only `Bearer …`
    shown = redact_definition(defn)
    assert shown["args"] == ["--say", "token ***", "--api-key=***"]
    # An edit that sends the masked arguments back keeps the stored ones.
    assert restore_masked("args", shown["args"], defn["args"], secret_values(defn)) == defn["args"]
    # Extra secrets (the env file's values) are masked inside arguments too.
    assert redact_definition({"args": [f"x{IN_ENV_FILE}"]}, [IN_ENV_FILE])["args"] == ["x***"]
