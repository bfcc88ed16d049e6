"""Telemetry's switch and settings: off by default and then the OpenTelemetry SDK is not
even imported by a supervisor serving calls (the CLI's and the gateway's); bad settings are
one-line errors; the Prometheus names follow OpenTelemetry's compatibility rules."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import wait_for

LIGHTSERVER = str(Path(__file__).resolve().parents[1] / "servers" / "lightserver.py")
TELEMETRY_MODULES = ("opentelemetry.sdk", "opentelemetry.exporter", "prometheus_client",
                     "monad_cli.daemon.telemetry.recorder", "monad_cli.daemon.telemetry.sdk")


def _light(home: Path) -> None:
    path = home / "atoms" / "mcp" / "light.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"command = {json.dumps(sys.executable)}\nargs = {json.dumps([LIGHTSERVER])}\n"
                    f'trust = {{autoApproveTools = ["light__echo"]}}\n')


@pytest.mark.e2e
def test_off_by_default_the_sdk_is_never_imported(monad: Any, monad_home: Path) -> None:
    """A supervisor run in the foreground under `python -X importtime` serves a CLI call and
    a gateway call (direct lane and SDK path); its imports hold no OpenTelemetry SDK."""
    from mcp import Client, StdioServerParameters

    _light(monad_home)
    env = {**os.environ, "MONAD_NO_AUTOSTART": "1"}
    for var in [v for v in env if v.startswith("OTEL_")]:
        del env[var]
    # A file, not a pipe: the import log alone would fill a pipe nobody reads while it runs.
    log = (monad_home.parent / "importtime.log").open("w")
    proc = subprocess.Popen([sys.executable, "-X", "importtime", "-m", "monad_cli", "daemon", "run"],
                            stderr=log, stdout=subprocess.DEVNULL, env=env)
    try:
        wait_for(lambda: monad("mcp", "status", "light", "--json", env=env).out.count('"connected"'), timeout=60)
        r = monad("mcp", "call", "light__echo", "--arg", "text=hi", "--yes", env=env)
        assert r.code == 0 and r.out.strip() == "hi", r

        async def through_the_gateway() -> None:
            params = StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve"],
                                           env={"MONAD_HOME": str(monad_home), "MONAD_NO_AUTOSTART": "1"})
            async with Client(params) as client:
                plain = await client.call_tool("light__echo", {"text": "direct"})

                async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                    pass

                sdk = await client.call_tool("light__echo", {"text": "sdk"}, progress_callback=on_progress)
                assert (plain.content[0].text, sdk.content[0].text) == ("direct", "sdk")

        anyio.run(through_the_gateway)
        off = monad("metrics", env=env)
        assert off.code != 0 and off.err.count("\n") == 1 and "telemetry is off" in off.err, off
        assert "Traceback" not in off.err
        where = monad("metrics", "--where", env=env)
        assert where.code != 0 and "telemetry is off" in where.err, where
    finally:
        monad("daemon", "stop", env=env)
        proc.wait(timeout=60)
        log.close()
    err = (monad_home.parent / "importtime.log").read_text()
    modules = {line.rsplit("|", 1)[1].strip() for line in err.splitlines()
               if line.startswith("import time:") and "|" in line}
    assert "monad_cli.daemon.gateway.direct" in modules  # the measurement works
    assert not [m for m in modules if m.startswith(TELEMETRY_MODULES)], sorted(
        m for m in modules if m.startswith(TELEMETRY_MODULES))


@pytest.mark.parametrize("body,env,message", [
    ("[telemetry]\nenabeld = true\n", {}, "`telemetry.enabeld` is not a known setting"),
    ("[telemetry]\nenabled = \"yes\"\n", {}, "`telemetry.enabled` must be a bool"),
    ("[telemetry]\nenabled = true\nprometheus_port = 70000\n", {}, "must be a port from 0 to 65535"),
    ("[telemetry]\nenabled = true\nprometheus_port = true\n", {}, "`telemetry.prometheus_port` must be an integer"),
    ("telemetry = 1\n", {}, "`telemetry` must be a table"),
    ("", {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
     "monad exports OTLP over `http/protobuf` only"),
])
def test_bad_settings_are_one_line_errors(monad_home: Path, body: str, env: dict[str, str], message: str) -> None:
    from monad_cli.core.errors import ConfigError
    from monad_cli.core.paths import paths
    from monad_cli.daemon.telemetry.settings import load_telemetry_settings

    monad_home.mkdir(parents=True, exist_ok=True)
    (monad_home / "settings.toml").write_text(body)
    with pytest.raises(ConfigError) as e:
        load_telemetry_settings(paths(), env)
    assert message in e.value.message and "\n" not in e.value.message


def test_a_bad_table_stops_the_supervisor_start_saying_why(monad: Any, monad_home: Path) -> None:
    monad_home.mkdir(parents=True, exist_ok=True)
    (monad_home / "settings.toml").write_text("[telemetry]\nenabled = 1\n")
    r = monad("daemon", "start")
    assert r.code != 0 and "`telemetry.enabled` must be a bool" in r.err and "Traceback" not in r.err, r
    assert r.err.count("\n") == 1


def test_what_turns_it_on(monad_home: Path) -> None:
    from monad_cli.core.paths import paths
    from monad_cli.daemon.telemetry.settings import load_telemetry_settings

    assert not load_telemetry_settings(paths(), {}).enabled  # nothing: off
    on = load_telemetry_settings(paths(), {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318",
                                           "OTEL_SERVICE_NAME": "agents-gw"})
    assert on.enabled and on.endpoint == "http://127.0.0.1:4318" and on.service_name == "agents-gw"
    assert not load_telemetry_settings(paths(), {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318",
                                                 "OTEL_SDK_DISABLED": "true"}).enabled
    monad_home.mkdir(parents=True, exist_ok=True)
    (monad_home / "settings.toml").write_text("[telemetry]\nenabled = true\nprometheus_port = 9464\n"
                                              "capture_arguments = true\n")
    table = load_telemetry_settings(paths(), {})
    assert table.enabled and table.endpoint is None and table.prometheus and table.prometheus_port == 9464
    assert table.capture_arguments


def test_every_instrument_is_documented_and_the_dashboard_uses_documented_series() -> None:
    """Each instrument the recorder makes, by its OpenTelemetry name and by the Prometheus
    name the library's reader writes for it, is the docs' table, row for row; the Grafana
    dashboard queries only documented series."""
    import re

    from opentelemetry.exporter.prometheus import PrometheusMetricReader
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from prometheus_client import CollectorRegistry, generate_latest

    from monad_cli.daemon.telemetry.recorder import Recorder

    registry = CollectorRegistry()
    otel = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[otel, PrometheusMetricReader(
        disable_target_info=True, scope_info_enabled=False, registry=registry)])
    r = Recorder(listed=lambda method, name: True, meter_provider=provider, tracer_provider=TracerProvider())
    r.observe_servers(lambda: {"a": "connected"}, tasks=lambda: {"a": (1, 0)}, fleet_queued=lambda: 0)
    with r.server_request("tools/call", "a__t", request_id=1, protocol_version=None, meta=None, transport="pipe"):
        r.call_ended(server="a", exposed="a__t", via="gateway", outcome="ok", decision="approved",
                     decided_by="cli --yes", call_id=1, arguments={})
    with r.client_request("tools/call", "t", server="a", transport="stdio", protocol_version=None, address=None):
        pass
    with r.approval("a__t", "a") as decided:
        decided("approved", "cli --yes")
    r.session_ended("a", "stdio", 1.0, error=None)
    r.gateway_session_ended("pipe", 1.0)
    r.restarted("a", "failed")
    r.refreshed("a", "ok")
    r.journal_write.record(0.001)
    data = otel.get_metrics_data()
    assert data is not None
    instruments = {m.name for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics}
    exposed = set(re.findall(r"^# TYPE (\S+) ", generate_latest(registry).decode(), re.M))

    root = Path(__file__).resolve().parents[2]
    documented = dict(re.findall(r"^\| `([a-z.]+)` \| `([a-z_]+)` \|", (root / "docs" / "telemetry.md").read_text(),
                                 re.M))
    assert {"mcp.client.operation.duration", "mcp.server.operation.duration", "mcp.client.session.duration",
            "monad.tool.calls", "monad.servers", "monad.server.state"} <= instruments
    assert instruments == set(documented), instruments ^ set(documented)
    assert set(documented.values()) == exposed, set(documented.values()) ^ exposed
    dashboard = json.loads((root / "docs" / "grafana-dashboard.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    # Label names sit in `by (...)` and `{...}`: what is left are the series.
    bare = [re.sub(r"by \([^)]*\)|\{[^}]*\}", "", e) for e in exprs]
    used = {re.sub(r"_(bucket|count|sum)$", "", m) for e in bare for m in re.findall(r"\b((?:monad|mcp)_[a-z_]+)", e)}
    assert used and used <= set(documented.values()), used - set(documented.values())


@pytest.mark.e2e
def test_a_server_that_dies_is_counted_in_restarts_and_by_state(monad: Any, monad_home: Path) -> None:
    path = monad_home / "atoms" / "mcp" / "dies.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"command = {json.dumps(sys.executable)}\nargs = [\"-c\", \"raise SystemExit(3)\"]\n")
    (monad_home / "settings.toml").write_text("[telemetry]\nenabled = true\n")
    assert monad("daemon", "start").code == 0
    try:
        restarted = 'monad_server_restarts_total{monad_restart_reason="failed",monad_server="dies"}'
        text = wait_for(lambda: (r := monad("metrics")).code == 0 and restarted in r.out and r.out, timeout=60)
    finally:
        monad("daemon", "stop")
    states = [line for line in text.splitlines() if line.startswith('monad_server_state{monad_server="dies"')]
    assert len(states) == 1 and states[0].endswith(" 1.0")  # one series: its state now
    assert any(line.startswith("monad_servers{") for line in text.splitlines())


SHADOWED = ("opentelemetry.sdk", "opentelemetry.exporter", "prometheus_client")


def _without_the_extra(tmp_path: Path) -> dict[str, str]:
    """An environment whose Python finds no telemetry extra, as after a plain `pip install -e .`:
    a PYTHONPATH dir that shadows its packages with modules that fail to import as a missing
    one does (the OpenTelemetry API stays: the MCP SDK needs it)."""
    shim = tmp_path / "no-telemetry-extra"
    for module in SHADOWED:
        package = shim.joinpath(*module.split("."))
        package.mkdir(parents=True)
        (package / "__init__.py").write_text(f"raise ModuleNotFoundError({f'No module named {module!r}'!r}, "
                                             f"name={module!r})\n")
    return {"PYTHONPATH": str(shim)}


@pytest.mark.e2e
@pytest.mark.parametrize("how", ["settings", "environment"])
def test_without_the_extra_the_supervisor_serves_and_says_why(monad: Any, monad_home: Path, tmp_path: Path,
                                                              how: str) -> None:
    """Telemetry asked for (settings.toml, or an OTLP endpoint in the environment) with the
    extra not installed: the supervisor starts and serves calls; `monad daemon status`,
    `monad metrics` and logs/daemon.log say telemetry is off, why, and a command that installs
    the extra into this Python from this checkout (monad-cli is not on the public index)."""
    env = _without_the_extra(tmp_path)
    _light(monad_home)
    if how == "settings":
        (monad_home / "settings.toml").write_text("[telemetry]\nenabled = true\n")
    else:
        env["OTEL_EXPORTER_OTLP_ENDPOINT"] = "http://127.0.0.1:4318"
    root = Path(__file__).resolve().parents[2]
    install = f"{sys.executable} -m pip install -e '{root}[telemetry]'"
    asked = "`telemetry.enabled` is true in settings.toml" if how == "settings" else "OTEL_EXPORTER_OTLP_* is set"
    started = monad("daemon", "start", env=env)
    assert started.code == 0, started
    try:
        wait_for(lambda: monad("mcp", "status", "light", "--json").out.count('"connected"'), timeout=60)
        r = monad("mcp", "call", "light__echo", "--arg", "text=hi", "--yes")
        assert r.code == 0 and r.out.strip() == "hi", r
        status = monad("daemon", "status")
        assert status.code == 0, status
        assert f"telemetry is off: {asked}, but the telemetry extra is not installed" in status.err, status
        assert f"install it with `{install}`" in status.err and "Traceback" not in status.err, status
        telemetry = monad("daemon", "status", "--json").json()["telemetry"]
        missing = telemetry["reason"].partition("(no `")[2].partition("`)")[0]
        assert missing in SHADOWED and telemetry == {
            "on": False, "reason": f"{asked}, but the telemetry extra is not installed (no `{missing}`); "
                                   f"install it with `{install}` and restart the supervisor (docs/telemetry.md)"}
        off = monad("metrics")
        assert off.code != 0 and f"install it with `{install}`" in off.err and off.err.count("\n") == 1, off
    finally:
        monad("daemon", "stop")
    log = (monad_home / "logs" / "daemon.log").read_text()
    assert f"telemetry stays off: {asked}, but the telemetry extra is not installed" in log
    assert install in log
    # The command it gives works: pip resolves it, from this checkout, extra included.
    import shlex

    dry = subprocess.run([*shlex.split(install), "--dry-run"], capture_output=True,
                         text=True, timeout=300)
    assert dry.returncode == 0 and "monad-cli" in dry.stdout + dry.stderr, dry.stderr[-2000:]


def test_a_taken_prometheus_port_stops_the_start_saying_which(monad: Any, monad_home: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        monad_home.mkdir(parents=True, exist_ok=True)
        (monad_home / "settings.toml").write_text(f"[telemetry]\nenabled = true\nprometheus_port = {port}\n")
        r = monad("daemon", "start")
    assert r.code != 0 and "Traceback" not in r.err, r
    assert f"cannot listen on 127.0.0.1:{port} for /metrics" in r.err and "telemetry.prometheus_port" in r.err, r
    assert not (monad_home / "run" / "monad.pid").exists()  # cleaned up as after any stop
