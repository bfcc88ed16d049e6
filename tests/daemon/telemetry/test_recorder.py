"""`daemon/telemetry/recorder.py`: what a tools/call's SERVER span carries once the call ended
(`Recorder.call_ended`), on the OpenTelemetry SDK's own tracer and meter, exported to its
in-memory exporter."""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from monad_cli.daemon.telemetry.recorder import Recorder


def _server_span(agent_name: str, outcome: str) -> tuple[dict[str, Any], Recorder, StatusCode]:
    """The attributes of the SERVER span of a gateway call the agent made as `agent_name` to
    the exposed tool `srv__echo`, ended with `outcome`; the recorder; the span's status."""
    out = InMemorySpanExporter()
    tracers = TracerProvider()
    tracers.add_span_processor(SimpleSpanProcessor(out))
    rec = Recorder(listed=lambda method, name: True, tracer_provider=tracers, meter_provider=MeterProvider())
    with rec.server_request("tools/call", agent_name, request_id=7, protocol_version="2025-11-25", meta=None,
                            transport="pipe"):
        rec.call_ended(server="srv", exposed="srv__echo", via="gateway", outcome=outcome, decision="approved",
                       decided_by="trust.autoApproveTools", call_id=42, arguments={"text": "hi"})
    [span] = out.get_finished_spans()
    return dict(span.attributes or {}), rec, span.status.status_code


def test_the_exposed_name_is_not_said_twice() -> None:
    attributes, rec, status = _server_span("srv__echo", "ok")
    # The agent called the exposed name: `gen_ai.tool.name` (and the span's name) say it.
    assert attributes["gen_ai.tool.name"] == "srv__echo" and "monad.tool.exposed_name" not in attributes
    assert {k: attributes[k] for k in ("monad.server", "monad.via", "monad.approval.decision",
                                       "monad.approval.decided_by", "monad.call.id", "monad.call.outcome")} == {
        "monad.server": "srv", "monad.via": "gateway", "monad.approval.decision": "approved",
        "monad.approval.decided_by": "trust.autoApproveTools", "monad.call.id": 42, "monad.call.outcome": "ok"}
    assert "error.type" not in attributes and status is StatusCode.UNSET
    assert rec.calls == {("srv", "ok", "approved", "gateway"): 1}


def test_a_single_server_gateway_names_the_exposed_tool() -> None:
    # `monad mcp serve srv`: the agent calls `echo`, the exposed tool is `srv__echo`.
    attributes, _rec, status = _server_span("echo", "timeout")
    assert attributes["gen_ai.tool.name"] == "echo" and attributes["monad.tool.exposed_name"] == "srv__echo"
    assert attributes["monad.call.outcome"] == "timeout" and attributes["error.type"] == "timeout"
    assert status is StatusCode.ERROR


def test_a_resolved_upstream_tool_is_recorded_without_a_look_up() -> None:
    """The CLIENT span of a tools/call names the tool the call path resolved from the server's
    own listing as it is; a name that was not resolved still goes through `listed`."""
    out = InMemorySpanExporter()
    tracers = TracerProvider()
    tracers.add_span_processor(SimpleSpanProcessor(out))
    asked: list[str] = []
    rec = Recorder(listed=lambda method, name: bool(asked.append(name)), tracer_provider=tracers,
                   meter_provider=MeterProvider())
    for resolved in (True, False):
        with rec.client_request("tools/call", "echo", server="srv", transport="stdio", protocol_version=None,
                                address=None, resolved=resolved):
            pass
    first, second = out.get_finished_spans()
    assert (first.name, dict(first.attributes or {})["gen_ai.tool.name"]) == ("tools/call echo", "echo")
    assert (second.name, dict(second.attributes or {})["gen_ai.tool.name"]) == ("tools/call", "_OTHER")
    assert asked == ["echo"]  # only the unresolved one was looked up
