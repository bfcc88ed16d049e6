"""Telemetry end to end, with real parts: a real OTLP/HTTP receiver decoding what the
supervisor's exporter sends (tests/otlp.py), an agent with its own OpenTelemetry SDK
(tests/telemetry_agent.py) → the real `monad mcp serve` → the real supervisor → a real SDK
server that answers the trace context it was sent (tests/servers/traceserver.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import gateway_up, wait_for, wait_state
from tests.otlp import OtlpReceiver, Span

pytestmark = pytest.mark.e2e
HERE = Path(__file__).resolve().parents[1]
TRACESERVER = str(HERE / "servers" / "traceserver.py")
AGENT = str(HERE / "telemetry_agent.py")
SERVER, CLIENT, INTERNAL = 2, 3, 1  # OTLP Span.SpanKind
SENTINEL_ARG = "sentinel-argument-7f3a9c"
SENTINEL_ENV = "sentinel-env-value-51d2e8"


def _atom(home: Path, name: str, *, env: dict[str, str] | None = None, auto: bool = True,
          args: tuple[str, ...] = ()) -> None:
    path = home / "atoms" / "mcp" / f"{name}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"command = {json.dumps(sys.executable)}", f"args = {json.dumps([TRACESERVER, *args])}", "timeout = 60"]
    if auto:
        tools = [f"{name}__{t}" for t in ("where", "echo", "fail", "secret")]
        lines.append(f"trust = {{autoApproveTools = {json.dumps(tools)}}}")
    if env:
        lines.append("[env]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in env.items()]
    path.write_text("\n".join(lines) + "\n")


def _telemetry_on(home: Path, monkeypatch: pytest.MonkeyPatch, endpoint: str, **extra: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "settings.toml").write_text("[telemetry]\nenabled = true\n" + "".join(
        f"{k} = {v}\n" for k, v in extra.items()))
    # The standard variables: where to send, and quickly (batches every 100 ms).
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
    monkeypatch.setenv("OTEL_METRIC_EXPORT_INTERVAL", "300")


def _agent(home: Path, tool: str, text: str = "", *flags: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, AGENT, tool, text, *flags], capture_output=True, text=True, timeout=120,
                          env={"MONAD_HOME": str(home), "PATH": str(Path(sys.executable).parent), **(env or {})})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def _named(spans: list[Span], name: str, trace_id: str) -> Span:
    found = [s for s in spans if s.name == name and s.trace_id == trace_id]
    assert len(found) == 1, [(s.name, s.trace_id) for s in spans]
    return found[0]


@pytest.mark.parametrize("lanes", ["direct", "sdk"])
def test_one_trace_from_the_agent_through_monad_to_the_server(monad: Any, monad_home: Path,
                                                              monkeypatch: pytest.MonkeyPatch, lanes: str) -> None:
    """The same spans whichever path the call takes: the direct lanes (a plain call), or the
    SDK's server and client (a call that asks for progress)."""
    with OtlpReceiver() as otlp:
        _telemetry_on(monad_home, monkeypatch, otlp.endpoint)
        _atom(monad_home, "traced")
        assert monad("daemon", "start").code == 0
        try:
            wait_state(monad, "traced", "connected", timeout=90)
            agent = _agent(monad_home, "traced__where", "", *(["--progress"] if lanes == "sdk" else []))
            trace_id = agent["traceId"]
            sent = next(s for s in agent["spans"] if s["name"].startswith("MCP send tools/call"))
            server = wait_for(lambda: next((s for s in otlp.spans() if s.trace_id == trace_id and s.kind == SERVER),
                                           None), timeout=30)
            client = wait_for(lambda: next((s for s in otlp.spans() if s.trace_id == trace_id and s.kind == CLIENT
                                            and s.name == "tools/call where"), None), timeout=30)
        finally:
            monad("daemon", "stop")

    # The gateway's SERVER span continues the agent's trace: its parent is the agent's request.
    assert server.name == "tools/call traced__where"
    assert server.parent_span_id == sent["spanId"]
    a = server.attributes
    assert a["mcp.method.name"] == "tools/call" and a["gen_ai.operation.name"] == "execute_tool"
    assert a["gen_ai.tool.name"] == "traced__where" and a["network.transport"] == "pipe"
    assert a["mcp.protocol.version"] == "2026-07-28" and a["jsonrpc.request.id"]
    assert a["monad.server"] == "traced" and a["monad.via"] == "gateway"
    assert a["monad.approval.decision"] == "approved" and a["monad.approval.decided_by"] == "trust.autoApproveTools"
    assert a["monad.call.outcome"] == "ok" and "error.type" not in a and isinstance(a["monad.call.id"], int)
    assert "monad.tool.exposed_name" not in a  # the agent called the exposed name: gen_ai.tool.name says it
    # The upstream request's CLIENT span is the server span's child, by the conventions' name.
    assert client.name == "tools/call where" and client.parent_span_id == server.span_id
    assert client.attributes["network.transport"] == "pipe" and client.attributes["monad.server"] == "traced"
    assert client.attributes["gen_ai.tool.name"] == "where" and client.attributes["jsonrpc.request.id"]
    # The upstream server got monad's span as the parent of its request (W3C traceparent):
    # on the direct lane monad's CLIENT span; on the SDK's path the SDK dispatcher's own
    # CLIENT span (its hook, `MCP send …`), a child of monad's.
    seen = json.loads(agent["text"])
    version, got_trace, parent, _flags = seen["traceparent"].split("-")
    assert (version, got_trace) == ("00", trace_id)
    if lanes == "direct":
        assert parent == client.span_id
    else:
        sdk = next(s for s in otlp.spans() if s.span_id == parent)
        assert sdk.name == "MCP send tools/call where" and sdk.parent_span_id == client.span_id
    log = (monad_home / "logs" / "daemon.log").read_text()
    assert ("(1 on the direct lane)" if lanes == "direct" else "(0 on the direct lane)") in log


def test_errors_a_cli_trace_and_no_secret_in_any_export(monad: Any, monad_home: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """`error.type` for a tool error; `monad mcp call` starts a trace of its own; and the
    sentinel values (an argument, an env value, a result that holds both) are in no span,
    attribute, metric or label that monad exports, nor in `/metrics`, argument capture on."""
    with OtlpReceiver() as otlp:
        # Argument capture on: the journal's digest goes out, the values never do.
        _telemetry_on(monad_home, monkeypatch, otlp.endpoint, capture_arguments="true")
        _atom(monad_home, "traced", env={"TRACE_SECRET": SENTINEL_ENV})
        assert monad("daemon", "start").code == 0
        try:
            wait_state(monad, "traced", "connected", timeout=90)
            failed = _agent(monad_home, "traced__fail", SENTINEL_ARG)
            assert failed["isError"] and failed["text"] == SENTINEL_ARG
            echoed = _agent(monad_home, "traced__echo", SENTINEL_ARG)
            assert echoed["text"] == SENTINEL_ARG
            secret = _agent(monad_home, "traced__secret")
            # One rule (issue 30): a stored secret never reaches the agent, only `***` does.
            assert secret["text"] == "***"
            r = monad("mcp", "call", "traced__echo", "--arg", f"text={SENTINEL_ARG}")
            assert r.code == 0 and SENTINEL_ARG in r.out, r
            metrics = monad("metrics")
            assert metrics.code == 0, metrics
            wait_for(lambda: any(s.attributes.get("monad.via") == "cli" and s.kind == SERVER for s in otlp.spans()),
                     timeout=30)
            wait_for(lambda: "monad.tool.calls" in otlp.received.metrics, timeout=30)
        finally:
            monad("daemon", "stop")

    spans = otlp.spans()
    tool_error = _named(spans, "tools/call traced__fail", failed["traceId"])
    assert tool_error.attributes["error.type"] == "tool_error" and tool_error.status_code == 2  # STATUS_CODE_ERROR
    assert _named(spans, "tools/call fail", failed["traceId"]).attributes["error.type"] == "tool_error"
    assert tool_error.attributes["gen_ai.tool.call.arguments"].startswith("sha256:")
    cli = next(s for s in spans if s.attributes.get("monad.via") == "cli" and s.kind == SERVER)
    assert cli.name == "tools/call traced__echo" and cli.parent_span_id == ""  # a trace of its own
    assert any(s.kind == CLIENT and s.trace_id == cli.trace_id and s.parent_span_id == cli.span_id for s in spans)
    assert any(s.name == "connect traced" and s.kind == INTERNAL for s in spans)
    calls = otlp.received.metrics["monad.tool.calls"]
    assert {"monad.server": "traced", "monad.call.outcome": "tool-error", "monad.approval.decision": "approved",
            "monad.via": "gateway"} in calls
    assert "mcp.client.operation.duration" in otlp.received.metrics
    assert "mcp.server.operation.duration" in otlp.received.metrics
    assert {"network.transport": "pipe"} in otlp.received.metrics["mcp.server.session.duration"]
    # The upstream session's length, recorded when the supervisor's stop ended it.
    assert {"monad.server": "traced", "network.transport": "pipe"} in otlp.received.metrics[
        "mcp.client.session.duration"]
    assert otlp.received.metrics["monad.journal.write.duration"]
    # Every byte monad exported (spans, attributes, metrics, labels), and the exposition text.
    for secret in (SENTINEL_ARG, SENTINEL_ENV):
        assert not any(secret.encode() in body for body in otlp.received.bodies)
        assert secret not in metrics.out
    assert "monad_tool_calls_total" in metrics.out


def test_the_approval_gate_wait_is_a_span_of_the_trace(monad: Any, monad_home: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A gateway call that waits for a person: `approval {tool}` under the call's SERVER span,
    with the decision, who decided and the wait; the call's span says the same."""
    with OtlpReceiver() as otlp:
        _telemetry_on(monad_home, monkeypatch, otlp.endpoint)
        _atom(monad_home, "gated", auto=False)
        assert monad("daemon", "start").code == 0
        try:
            wait_state(monad, "gated", "connected", timeout=90)
            agent = subprocess.Popen([sys.executable, AGENT, "gated__where"], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True,
                                     env={"MONAD_HOME": str(monad_home), "PATH": str(Path(sys.executable).parent)})
            waiting = wait_for(lambda: monad("approvals", "--json").json(), timeout=60)[0]
            assert monad("approvals", "allow", waiting["id"]).code == 0
            out, err = agent.communicate(timeout=60)
            assert agent.returncode == 0, err[-3000:]
            trace_id = json.loads(out)["traceId"]
            gate = wait_for(lambda: next((s for s in otlp.spans() if s.trace_id == trace_id
                                          and s.name == "approval gated__where"), None), timeout=30)
            server = _named(otlp.spans(), "tools/call gated__where", trace_id)
            wait_for(lambda: "monad.approval.wait.duration" in otlp.received.metrics, timeout=30)
        finally:
            monad("daemon", "stop")
    assert gate.kind == INTERNAL and gate.parent_span_id == server.span_id
    assert gate.attributes["monad.approval.decision"] == "approved"
    assert gate.attributes["monad.approval.decided_by"] and gate.attributes["monad.approval.wait.duration"] > 0
    assert server.attributes["monad.approval.decided_by"] == gate.attributes["monad.approval.decided_by"]
    assert {"monad.approval.decision": "approved"} in otlp.received.metrics["monad.approval.wait.duration"]
    # The upstream call came after the gate, under the same SERVER span.
    assert _named(otlp.spans(), "tools/call where", trace_id).parent_span_id == server.span_id


def test_the_http_gateway_continues_the_trace_too(monad: Any, monad_home: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """`monad mcp serve --http`: the SDK's streamable HTTP server path, `network.transport = tcp`."""
    import signal

    from tests.conftest import free_port

    with OtlpReceiver() as otlp:
        _telemetry_on(monad_home, monkeypatch, otlp.endpoint)
        _atom(monad_home, "traced")
        assert monad("daemon", "start").code == 0
        port = free_port()
        http = subprocess.Popen([sys.executable, "-m", "monad_cli", "mcp", "serve", "--http", "--port", str(port)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            wait_state(monad, "traced", "connected", timeout=90)
            url, bearer = gateway_up(monad_home, port)
            token = bearer["Authorization"].removeprefix("Bearer ")
            agent = _agent(monad_home, "traced__where", env={"AGENT_HTTP_URL": url, "AGENT_HTTP_TOKEN": token})
            trace_id = agent["traceId"]
            sent = next(s for s in agent["spans"] if s["name"].startswith("MCP send tools/call"))
            server = wait_for(lambda: next((s for s in otlp.spans() if s.trace_id == trace_id and s.kind == SERVER),
                                           None), timeout=30)
            client = wait_for(lambda: next((s for s in otlp.spans() if s.trace_id == trace_id and s.kind == CLIENT
                                            and s.name == "tools/call where"), None), timeout=30)
        finally:
            http.send_signal(signal.SIGINT)
            try:
                http.communicate(timeout=20)
            except subprocess.TimeoutExpired:
                http.kill()
            monad("daemon", "stop")
    assert server.name == "tools/call traced__where" and server.parent_span_id == sent["spanId"]
    assert server.attributes["network.transport"] == "tcp" and server.attributes["monad.via"] == "gateway"
    assert client.parent_span_id == server.span_id
    assert json.loads(agent["text"])["traceparent"].split("-")[2] == client.span_id


def test_resources_prompts_and_completions_get_client_spans(monad: Any, monad_home: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """resources/read, prompts/get and completion/complete forwarded upstream get monad's
    CLIENT span under the gateway's SERVER span, by the conventions (`mcp.resource.uri` with
    its query values as `***`, `gen_ai.prompt.name`), and the upstream request carries it.
    The listings the gateway answers itself get a SERVER span of the same shape."""
    query_secret = "sentinel-query-3c9e41"
    uri = f"trace://where?key={query_secret}"
    with OtlpReceiver() as otlp:
        _telemetry_on(monad_home, monkeypatch, otlp.endpoint)
        _atom(monad_home, "traced", args=("--query", query_secret))  # not a secret monad knows: the URL's rule
        assert monad("daemon", "start").code == 0
        try:
            wait_state(monad, "traced", "connected", timeout=90)
            read = _agent(monad_home, f"resource:{uri}")
            prompt = _agent(monad_home, "prompt:traced__where")
            done = _agent(monad_home, "complete:traced__where")
            assert done["text"] == "trace"
            listed = _agent(monad_home, "list:")

            def client_of(agent: dict[str, Any], method: str) -> Span | None:
                return next((s for s in otlp.spans() if s.trace_id == agent["traceId"] and s.kind == CLIENT
                             and s.attributes.get("mcp.method.name") == method
                             and s.attributes.get("monad.server") == "traced"), None)

            reading = wait_for(lambda: client_of(read, "resources/read"), timeout=30)
            getting = wait_for(lambda: client_of(prompt, "prompts/get"), timeout=30)
            completing = wait_for(lambda: client_of(done, "completion/complete"), timeout=30)
            wait_for(lambda: sum(s.trace_id == listed["traceId"] and s.kind == SERVER for s in otlp.spans()) == 3,
                     timeout=30)
            spans = otlp.spans()
        finally:
            monad("daemon", "stop")

    def server_of(agent: dict[str, Any]) -> Span:
        return next(s for s in spans if s.trace_id == agent["traceId"] and s.kind == SERVER)

    assert reading.name == "resources/read"  # the URI is never in a span's name
    assert reading.attributes["mcp.resource.uri"] == "trace://where?key=***"
    assert getting.name == "prompts/get where" and getting.attributes["gen_ai.prompt.name"] == "where"
    assert completing.name == "completion/complete"
    for agent, client in ((read, reading), (prompt, getting), (done, completing)):
        server = server_of(agent)
        assert client.parent_span_id == server.span_id
        assert client.attributes["network.transport"] == "pipe" and client.attributes["mcp.protocol.version"]
        assert "error.type" not in client.attributes
    # The listings the gateway answers itself: the MCP SDK's middleware span (the conventions'
    # name and attributes) with monad's `network.transport`, the same shape as a call's.
    listings = {s.name: s for s in spans if s.trace_id == listed["traceId"] and s.kind == SERVER}
    assert set(listings) == {"tools/list", "prompts/list", "resources/list"}
    for method, span in listings.items():
        a = span.attributes
        assert a["mcp.method.name"] == method and a["network.transport"] == "pipe"
        assert a["mcp.protocol.version"] == "2026-07-28" and a["jsonrpc.request.id"] and "error.type" not in a
    # A read or get goes through the SDK's session, whose dispatcher opens its own CLIENT span
    # (`MCP send …`) under monad's and puts it in the upstream request.
    for agent, client, name in ((read, reading, "MCP send resources/read"), (prompt, getting, "MCP send prompts/get")):
        _version, got_trace, parent, _flags = json.loads(agent["text"])["traceparent"].split("-")
        assert got_trace == agent["traceId"]
        sdk = next(s for s in spans if s.span_id == parent)
        assert sdk.name.startswith(name) and sdk.parent_span_id == client.span_id, sdk
    assert not any(query_secret.encode() in body for body in otlp.received.bodies)


@pytest.mark.parametrize("lanes", ["direct", "sdk", "resource"])
def test_metrics_only_no_span_the_agents_context_goes_upstream_unchanged(monad: Any, monad_home: Path,
                                                                         monkeypatch: pytest.MonkeyPatch,
                                                                         lanes: str) -> None:
    """Telemetry on with no OTLP endpoint (a Prometheus scrape only): monad records no span of
    its own. The upstream server gets the agent's `traceparent` exactly as the agent sent it
    (the parent is the agent's `MCP send` span: no span of monad's, nor of the MCP SDK's inside
    monad, came in between), and no trace context when the agent sent none; the calls are in
    the metrics. `direct`: the gateway's and the session's direct lanes; `sdk`: a call asking
    for progress (the SDK's server and client paths); `resource`: resources/read (the SDK's
    client path)."""
    for var in [v for v in os.environ if v.startswith("OTEL_")]:
        monkeypatch.delenv(var)
    monad_home.mkdir(parents=True, exist_ok=True)
    (monad_home / "settings.toml").write_text("[telemetry]\nenabled = true\n")
    _atom(monad_home, "traced")
    what = {"direct": ("traced__where", ""), "sdk": ("traced__where", "", "--progress"),
            "resource": ("resource:trace://where", "")}[lanes]
    assert monad("daemon", "start").code == 0
    try:
        wait_state(monad, "traced", "connected", timeout=90)
        traced = _agent(monad_home, *what)
        untraced = _agent(monad_home, *what, "--no-trace")
        scraped = monad("metrics")
    finally:
        monad("daemon", "stop")
    method = "resources/read" if lanes == "resource" else "tools/call"
    sent = next(s for s in traced["spans"] if s["name"].startswith(f"MCP send {method}"))
    assert json.loads(traced["text"]) == {"traceparent": f"00-{traced['traceId']}-{sent['spanId']}-"
                                                         f"{traced['traceFlags']}"}, traced
    assert untraced["spans"] == [] and json.loads(untraced["text"]) == {}, untraced
    # The metrics: both requests timed on each side, under the same series as with spans.
    assert scraped.code == 0, scraped
    counts = {line.split("{", 1)[0]: line for line in scraped.out.splitlines()
              if line.startswith(("mcp_server_operation_duration_seconds_count{",
                                  "mcp_client_operation_duration_seconds_count{"))
              and f'mcp_method_name="{method}"' in line}
    server, client = counts["mcp_server_operation_duration_seconds_count"], counts[
        "mcp_client_operation_duration_seconds_count"]
    assert server.endswith(" 2.0") and client.endswith(" 2.0") and "error_type" not in server + client, counts
    if lanes != "resource":
        assert 'gen_ai_tool_name="traced__where"' in server and 'gen_ai_tool_name="where"' in client
        assert any(line.startswith("monad_tool_calls_total{") and 'monad_call_outcome="ok"' in line
                   and line.endswith(" 2.0") for line in scraped.out.splitlines()), scraped.out
    log = (monad_home / "logs" / "daemon.log").read_text()
    if lanes != "resource":  # each agent's session took the lane asked for
        assert log.count("1 tools/call (1 on the direct lane)" if lanes == "direct" else
                         "1 tools/call (0 on the direct lane)") == 2, log[-3000:]


SENTINEL_NAME = "sentinel-invented-9d41c7"  # what an agent hides in a tool name it makes up


def _rss_kib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmRSS:")).split()[1])


async def _invent(home: Path, names: list[str]) -> None:
    """One gateway client calling every name in turn (each answered: an error, -32602)."""
    from mcp import Client, MCPError, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve"],
                                   env={"MONAD_HOME": str(home), "MONAD_NO_AUTOSTART": "1"})
    async with Client(params) as client:
        for name in names:
            with pytest.raises(MCPError) as refused:
                await client.call_tool(name, {})
            assert refused.value.error.code == -32602


def test_invented_names_are_other_and_known_secrets_never_leave(monad: Any, monad_home: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 38 item 6. An agent's made-up tool or prompt name (`evil__<secret>`), on the direct
    lane, the SDK's path and from the CLI, is `_OTHER` in every span name, attribute and
    `/metrics` label; a secret monad holds (an atom's env value) in the URI an agent reads
    (through a template: a listed URI holding it would reach agents masked) is `***` in the
    exported span; and 5,000 made-up names grow neither `/metrics` nor the supervisor."""
    import anyio

    known_uri = f"trace://{SENTINEL_ENV}/where"
    with OtlpReceiver() as otlp:
        _telemetry_on(monad_home, monkeypatch, otlp.endpoint)
        _atom(monad_home, "traced", env={"TRACE_SECRET": SENTINEL_ENV}, args=("--template", "trace://{place}/where"))
        assert monad("daemon", "start").code == 0
        try:
            wait_state(monad, "traced", "connected", timeout=90)
            pid = int((monad_home / "run" / "monad.pid").read_text())
            invented = f"evil__{SENTINEL_NAME}"
            direct = _agent(monad_home, invented)
            sdk = _agent(monad_home, invented, "", "--progress")
            assert direct["error"] == sdk["error"] == -32602, (direct, sdk)
            prompt = _agent(monad_home, f"prompt:{invented}")
            assert prompt["error"] == -32602, prompt
            read = _agent(monad_home, f"resource:{known_uri}")
            assert json.loads(read["text"])["traceparent"], read
            assert monad("mcp", "call", invented, "--yes").code != 0
            anyio.run(_invent, monad_home, [f"warm__{i}-{SENTINEL_NAME}" for i in range(500)])
            before, rss_before = monad("metrics").out, _rss_kib(pid)
            # Both halves made up: neither the server label nor the tool may keep one.
            anyio.run(_invent, monad_home, [f"evil{i}__{i}-{SENTINEL_NAME}" for i in range(5000)])
            after, rss_after = monad("metrics").out, _rss_kib(pid)
            wait_for(lambda: any(s.attributes.get("monad.via") == "cli" for s in otlp.spans()), timeout=30)
            wait_for(lambda: _otlp_counts(otlp) >= 5500 + 2, timeout=60)
        finally:
            monad("daemon", "stop")

    spans = otlp.spans()
    for agent in (direct, sdk):
        server = _named(spans, "tools/call", agent["traceId"])
        assert server.kind == SERVER and server.attributes["gen_ai.tool.name"] == "_OTHER", server
    getting = _named(spans, "prompts/get", prompt["traceId"])
    assert getting.attributes["gen_ai.prompt.name"] == "_OTHER" and getting.attributes["error.type"] == "-32602"
    assert getting.status_message == ""  # the error's message (which names the prompt) is not exported
    cli = next(s for s in spans if s.attributes.get("monad.via") == "cli")
    assert cli.name == "tools/call" and cli.attributes["gen_ai.tool.name"] == "_OTHER"
    reading = next(s for s in spans if s.trace_id == read["traceId"] and s.kind == CLIENT
                   and s.attributes.get("monad.server") == "traced")
    assert reading.attributes["mcp.resource.uri"] == "trace://***/where"
    # No span name, nor any attribute, holds a made-up name (5,502 of them were sent).
    assert not [s.name for s in spans if "evil" in s.name or "warm__" in s.name]
    assert not [s for s in spans if any("evil" in str(v) or "warm__" in str(v) for v in s.attributes.values())]
    for secret in (SENTINEL_NAME, SENTINEL_ENV):
        assert not any(secret.encode() in body for body in otlp.received.bodies), secret
        assert secret not in before + after
    assert 'gen_ai_tool_name="_OTHER"' in after
    # 5,000 more made-up names: the same series (only their counts move), and no memory kept
    # for them (before: +29 MB of /metrics and +48 MB of the supervisor's memory).
    assert [line.rsplit(" ", 1)[0] for line in before.splitlines()] == [
        line.rsplit(" ", 1)[0] for line in after.splitlines()]
    assert rss_after - rss_before < 8 * 1024, (rss_before, rss_after)


def test_tool_search_meta_tools_are_recorded_by_name(monad: Any, monad_home: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """find_tool and call_tool, listed to an agent of `serve --tool-search`, are recorded by
    their names, not as `_OTHER`."""
    with OtlpReceiver() as otlp:
        _telemetry_on(monad_home, monkeypatch, otlp.endpoint)
        _atom(monad_home, "traced")
        assert monad("daemon", "start").code == 0
        try:
            wait_state(monad, "traced", "connected", timeout=90)
            env = {"AGENT_SERVE_FLAGS": "--tool-search"}
            found = _agent(monad_home, "find_tool", "trace context", env=env)
            assert not found["isError"] and "traced__where" in found["text"], found
            called = _agent(monad_home, "call_tool", "", env=env)
            wait_for(lambda: {found["traceId"], called["traceId"]} <= {
                s.trace_id for s in otlp.spans() if s.kind == SERVER}, timeout=30)
        finally:
            monad("daemon", "stop")
    spans = otlp.spans()
    for agent, name in ((found, "find_tool"), (called, "call_tool")):
        server = _named(spans, f"tools/call {name}", agent["traceId"])
        assert server.kind == SERVER and server.attributes["gen_ai.tool.name"] == name, server


def _otlp_counts(otlp: OtlpReceiver) -> int:
    """How many tools/call SERVER spans with `_OTHER` the receiver holds."""
    return sum(s.kind == SERVER and s.attributes.get("gen_ai.tool.name") == "_OTHER" for s in otlp.spans())
