"""`python scripts/conformance.py URL`: monad under the official `@modelcontextprotocol/conformance`
client scenarios, through the path that serves its users (docs/conformance.md).

The conformance CLI starts a scenario's server and runs this with its URL, the scenario name
in `MCP_CONFORMANCE_SCENARIO` and its data in `MCP_CONFORMANCE_CONTEXT` (JSON: `client_id`,
`client_secret`, `private_key_pem`, `signing_algorithm`, `toolCalls`, `headers`). What runs is
monad itself, under `MONAD_HOME` (a temporary one when unset):

- the definition: an atom for the URL written by `config.edits.add_server` (what `monad mcp
  add` writes), the scenario's credentials as `${VAR}` references to this process's
  environment, read back and validated as the supervisor does;
- the supervisor's services with their narrow dependencies: the journal, the `ToolService`
  (names, pins, the approval gate, the call journal), `SupervisorAuth` (the OAuth session)
  and one `ServerActor` holding the MCP session;
- what a person would do: `monad mcp authorize` (`auth.authorize.run_authorize`, with a
  headless browser that follows the authorization redirect to monad's loopback listener)
  when the server waits in `needs-auth`, again with the scope a step-up asked for;
  `monad mcp trust --auto-approve` for the listed tools; answering the forms a server asks
  for during a call.

Only the scenario-specific actions live here: which tools to call with which arguments
(`toolCalls` from the context, else every listed tool with arguments built from its schema;
`json-schema-2020-12-preservation` echoes the schema monad lists back), what a form answer
holds, and which auth flow a scenario's context means. The calls can be read back with
`monad journal --calls` under the same `MONAD_HOME`. Exit status 0 when every step worked.

Not part of the CLI: nothing imports this module.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import anyio

from monad_cli.auth.authorize import Say, run_authorize
from monad_cli.auth.session import SupervisorAuth
from monad_cli.config.edits import add_server, read_definition, update_server
from monad_cli.config.schema import ServerSpec, validate
from monad_cli.core.errors import MonadError
from monad_cli.core.paths import Paths
from monad_cli.core.redact import redact_text, secret_values
from monad_cli.core.states import LIVE, State
from monad_cli.core.task_forms import FormError, form_fields
from monad_cli.daemon.sessions.actor import ActorContext, ServerActor
from monad_cli.daemon.tasks.manager import TaskManager
from monad_cli.daemon.trust.call import ToolCall
from monad_cli.daemon.trust.inputs import InputHandler
from monad_cli.daemon.trust.service import ToolService
from monad_cli.journal.db import Journal

log = logging.getLogger("monad.conformance")
# The client ID metadata document URL the suite's CIMD scenario expects a client to offer.
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"
SECRET_VAR = "MONAD_CONFORMANCE_CLIENT_SECRET"
KEY_VAR = "MONAD_CONFORMANCE_PRIVATE_KEY"
MAX_AUTHORIZATIONS = 3  # the first grant and at most two step-ups (auth/scope-retry-limit)
SETTLED = {State.CONNECTED, State.DEGRADED, State.NEEDS_AUTH, State.FAILED, State.BACKOFF}
ECHO_TOOL, FOCAL_TOOL = "json_schema_echo", "json_schema_2020_12_tool"
WAIT_S = 60  # for a connect, a state, a redirect: the overall deadline comes first


def server_name(scenario: str) -> str:
    """A valid server name for a scenario (`auth/basic-cimd` → `auth-basic-cimd`; no `__`,
    the tool namespace separator)."""
    name = re.sub(r"_{2,}", "_", re.sub(r"[^A-Za-z0-9_-]+", "-", scenario)).strip("-_")[:64]
    return name or "conformance"


def definition(url: str, scenario: str, context: dict[str, Any]) -> dict[str, Any]:
    """The atom for a scenario: its URL, its headers, and what its context says about auth.

    A `client_id` with a `private_key_pem` or under `auth/client-credentials-*` is a client
    credentials client; a `client_id` otherwise is a pre-registered client of the browser
    flow. Secrets go in as `${VAR}` references (set in this process's environment)."""
    # Generous bounds: the suite starts every scenario at once, on whatever the machine has.
    defn: dict[str, Any] = {"schema": 1, "url": url, "timeout": WAIT_S}
    if isinstance(context.get("headers"), dict):
        defn["headers"] = {str(k): str(v) for k, v in context["headers"].items()}
    client_id = context.get("client_id")
    if client_id and (context.get("private_key_pem") or scenario.startswith("auth/client-credentials")):
        auth: dict[str, Any] = {"mode": "oauth", "flow": "client_credentials", "clientId": client_id}
        if context.get("private_key_pem"):
            os.environ[KEY_VAR] = str(context["private_key_pem"])
            auth["privateKey"] = "${" + KEY_VAR + "}"
            if context.get("signing_algorithm"):
                auth["signingAlgorithm"] = str(context["signing_algorithm"])
        else:
            os.environ[SECRET_VAR] = str(context.get("client_secret") or "")
            auth["clientSecret"] = "${" + SECRET_VAR + "}"
        defn["auth"] = auth
    elif client_id or scenario.startswith("auth/"):
        auth = {"mode": "oauth", "clientMetadataUrl": CLIENT_METADATA_URL}
        if client_id:
            auth["clientId"] = client_id
        if context.get("client_secret"):
            os.environ[SECRET_VAR] = str(context["client_secret"])
            auth["clientSecret"] = "${" + SECRET_VAR + "}"
        defn["auth"] = auth
    return defn


def example_arguments(schema: dict[str, Any]) -> dict[str, Any]:
    """Arguments for a tool nobody said how to call: each required property, from its
    `default`, `const`, first `enum` value or type."""
    props = schema.get("properties") or {}
    out: dict[str, Any] = {}
    for key in schema.get("required") or []:
        prop = props.get(key) if isinstance(props, dict) else None
        prop = prop if isinstance(prop, dict) else {}
        for word in ("default", "const"):
            if word in prop:
                out[key] = prop[word]
                break
        else:
            if prop.get("enum"):
                out[key] = prop["enum"][0]
                continue
            kind = prop.get("type")
            kind = next((k for k in kind if k != "null"), "string") if isinstance(kind, list) else kind
            out[key] = {"integer": 1, "number": 2, "boolean": True, "array": [], "object": {}}.get(
                str(kind), "monad")
    return out


def form_answer(request: dict[str, Any]) -> dict[str, Any]:
    """A person accepting a form: every property's default, else a value of its type."""
    try:
        _, props, _ = form_fields(request)
    except FormError as e:
        return {"action": "decline", "_reason": str(e)}
    content: dict[str, Any] = {}
    for key, prop in props.items():
        if "default" in prop:
            content[key] = prop["default"]
        elif prop.get("enum"):
            content[key] = prop["enum"][0]
        else:
            content[key] = {"boolean": True, "integer": 1, "number": 1}.get(str(prop.get("type")), "yes")
    return {"action": "accept", "content": content}


def headless_browser(url: str) -> None:
    """What a person's browser does with the authorization URL: load it (the suite's server
    approves at once) and follow its redirect to monad's loopback listener. In a thread: the
    listener runs on the event loop this must not block."""

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    def run() -> None:
        opener = urllib.request.build_opener(NoRedirect)
        try:
            opener.open(url, timeout=10)
            return  # no redirect: nothing reaches the listener, and authorize times out
        except urllib.error.HTTPError as e:
            location = e.headers.get("Location")
        except OSError as e:
            log.warning("headless browser: %s", e)
            return
        if location:
            try:
                urllib.request.urlopen(location, timeout=10).read()
            except OSError as e:
                log.warning("headless browser: the redirect failed: %s", e)

    threading.Thread(target=run, daemon=True).start()


class Host:
    """The supervisor's services for one server, wired as the supervisor wires them."""

    def __init__(self, paths: Paths, name: str) -> None:
        self.paths = paths
        self.name = name
        self.secrets: set[str] = set()
        self.journal = Journal(paths.journal_db, scrub=self.scrub)
        self.actors: dict[str, ServerActor] = {}
        # As Supervisor.open: the task manager's extension and its elicitation callback too.
        self.tasks = tasks = TaskManager(self.journal, self.actors, redact=self.scrub)
        self.tool_service = ToolService(self.journal, self.actors, scrub=self.scrub, start_task=tasks.start,
                                        run_task=tasks.run_call)
        self.auth = SupervisorAuth(paths, self.actors)
        self.changed = anyio.Event()
        self.context = ActorContext(paths=paths, journal=self.journal, scrub=self.scrub,
                                    check_pin=self.tool_service.check_pin, http_auth=self.auth.http_auth,
                                    client_extensions=lambda actor: tasks.client_extensions(actor.name),
                                    elicitation_callback=lambda actor: tasks.elicitation_callback(actor.name),
                                    on_tools_changed=lambda actor: self.tool_service.changed(),
                                    on_state_changed=self._poke)

    def scrub(self, text: str) -> str:
        return redact_text(text, self.secrets)

    def _poke(self, actor: ServerActor) -> None:
        self.tasks.on_actor_state(actor)
        self.changed.set()
        self.changed = anyio.Event()

    def load(self) -> ServerSpec:
        """The server's definition as the supervisor reads it (expanded, validated)."""
        source, raw = read_definition(self.paths, self.name)
        spec = validate(raw, name=self.name, source=source, environ=os.environ)
        self.secrets |= secret_values({"headers": spec.headers, "url": spec.url or "", "auth": spec.auth.table})
        return spec

    @property
    def actor(self) -> ServerActor:
        return self.actors[self.name]

    @property
    def spec(self) -> ServerSpec:
        spec = self.actor.spec
        assert spec is not None
        return spec

    async def settle(self, *, after: float = 0.0, timeout: float = WAIT_S) -> State:
        """The actor's state once it stopped moving (entered after `after`, epoch s)."""
        with anyio.move_on_after(timeout):
            while not (self.actor.state in SETTLED and self.actor.since > after):
                await self.changed.wait()
        return self.actor.state


class Scenario:
    """What a person and an agent do with one scenario's server (module docstring)."""

    def __init__(self, host: Host, scenario: str, context: dict[str, Any]) -> None:
        self.host = host
        self.scenario = scenario
        self.context = context
        self.authorizations = 0
        self.failures: list[str] = []

    def fail(self, what: str) -> None:
        self.failures.append(what)
        print(f"conformance: {what}", file=sys.stderr)

    async def authorize(self) -> bool:
        """`monad mcp authorize NAME [--scope ...]` with the scope a step-up asked for, then
        the reconnect the CLI asks the supervisor for; True once the server is live again."""
        host = self.host
        if self.authorizations >= MAX_AUTHORIZATIONS:
            self.fail(f"still not authorized after {self.authorizations} authorizations; giving up")
            return False
        self.authorizations += 1
        needed = host.auth.person_needed(host.name)
        scopes = needed.scope.split() if needed and needed.scope else []
        # No one pastes a redirect URL here: the stand-in browser delivers it to the listener.
        say = Say(info=lambda text: print(f"authorize: {text}", file=sys.stderr),
                  url=lambda url, kind: headless_browser(url) if kind == "authorization" else None, paste=False)
        try:
            await run_authorize(host.paths, host.name, flow="loopback", open_browser=False, scopes=scopes,
                                client_id=None, say=say, timeout=WAIT_S)
        except MonadError as e:
            self.fail(f"authorize: {e}")
            return False
        now = time.time()
        host.actor.reconnect()
        return await self.connect(after=now)

    async def connect(self, *, after: float = 0.0) -> bool:
        """Wait for the session; authorize whenever the server waits for a person."""
        host = self.host
        state = await host.settle(after=after)
        if state in LIVE:
            return True
        if state == State.NEEDS_AUTH and host.spec.auth.flow != "client_credentials":
            return await self.authorize()
        self.fail(f"server `{host.name}` is {state}: {host.actor.reason}")
        return False

    async def approve(self) -> bool:
        """`monad mcp trust NAME --auto-approve TOOL...` for every listed tool, then what the
        supervisor does with the edit (the definition changed: reconnect)."""
        names = [row["name"] for row in self.host.tool_service.listing(self.host.name)]

        def mutate(defn: dict[str, Any]) -> None:
            defn.setdefault("trust", {})["autoApproveTools"] = names

        update_server(self.host.paths, self.host.name, {}, mutate=mutate)
        now = time.time()
        self.host.actor.update(self.host.load())
        return await self.connect(after=now)

    def plan(self) -> list[tuple[str, dict[str, Any]]]:
        """(server tool name, arguments) to call, in order."""
        calls = self.context.get("toolCalls")
        if isinstance(calls, list):
            return [(str(c.get("name")), dict(c.get("arguments") or {})) for c in calls if isinstance(c, dict)]
        rows = self.host.tool_service.listing(self.host.name)
        if self.scenario == "json-schema-2020-12-preservation":
            focal = next((r for r in rows if r["tool"] == FOCAL_TOOL), None)
            # The schema as monad holds it (and lists it to agents), passed back verbatim.
            return [(ECHO_TOOL, {"schema": focal["inputSchema"] if focal else {}})]
        return [(r["tool"], example_arguments(r.get("inputSchema") or {})) for r in rows]

    def exposed(self, tool: str) -> str:
        return self.host.tool_service.name_map().exposed_name(self.host.name, tool) or f"{self.host.name}__{tool}"

    async def call(self, tool: str, arguments: dict[str, Any]) -> bool:
        """One tools/call through the tool service. When it failed because the server wants a
        person (a 401 that could not be refreshed, a 403 step-up), authorize and call again."""
        host = self.host
        while True:
            try:
                await host.tool_service.call(ToolCall(self.exposed(tool), arguments, via="conformance",
                                                      approval={"mode": "wait", "timeout": 5},
                                                      inputs=self.answer_for(tool)))
                return True
            except MonadError as e:
                if host.auth.person_needed(host.name) is None:
                    self.fail(f"call `{tool}`: {e}")
                    return False
            if not await self.authorize():
                return False

    def answer_for(self, tool: str) -> InputHandler:
        """The person's answers to the forms `tool` asks for. Answering the MRTR echo tool's
        form, an agent calls another tool meanwhile: its request must carry nothing of the
        first one's rounds (SEP-2322 "parallel isolation")."""

        async def answer(request: dict[str, Any], **_: Any) -> dict[str, Any]:
            if self.scenario == "sep-2322-client-request-state" and tool == "test_mrtr_echo_state":
                await self.call("test_mrtr_unrelated", {})
            return form_answer(request)

        return answer

    async def run(self) -> None:
        if not await self.connect():
            return
        if self.host.tool_service.listing(self.host.name) and not await self.approve():
            return
        for tool, arguments in self.plan():
            await self.call(tool, arguments)


async def run(url: str, home: Path, scenario: str, context: dict[str, Any]) -> int:
    paths = Paths(home)
    name = server_name(scenario)
    add_server(paths, name, definition(url, scenario, context), force=True)
    host = Host(paths, name)
    try:
        async with anyio.create_task_group() as tg:
            actor = ServerActor(name, host.load(), host.context)
            host.actors[name] = actor
            tg.start_soon(host.tasks.run)
            tg.start_soon(actor.run)
            try:
                job = Scenario(host, scenario, context)
                await job.run()
            finally:
                await actor.stop()
                tg.cancel_scope.cancel()
    finally:
        host.journal.close()
    return 1 if job.failures else 0


def main() -> int:
    if len(sys.argv) < 2:
        print("usage: python scripts/conformance.py URL", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(name)s: %(message)s")
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    home = os.environ.get("MONAD_HOME")
    # The suite kills a client after its --timeout (30 s by default): end a little before,
    # saying so. A run with a longer --timeout sets MONAD_CONFORMANCE_DEADLINE (seconds).
    deadline = float(os.environ.get("MONAD_CONFORMANCE_DEADLINE") or 27)

    async def bounded(where: Path) -> int:
        try:
            with anyio.fail_after(deadline):
                return await run(sys.argv[-1], where, scenario, context)
        except TimeoutError:
            print(f"conformance: scenario `{scenario}` did not finish within {deadline:g} s", file=sys.stderr)
            return 1

    if home:
        return anyio.run(bounded, Path(home))
    with tempfile.TemporaryDirectory(prefix="monad-conformance-") as tmp:
        os.environ["MONAD_HOME"] = tmp
        return anyio.run(bounded, Path(tmp))

if __name__ == "__main__":
    sys.exit(main())
