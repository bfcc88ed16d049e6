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


@pytest.mark.parametrize("name,unit,expected", [
    ("mcp.client.operation.duration", "s", "mcp_client_operation_duration_seconds"),
    ("monad.tool.calls", "{call}", "monad_tool_calls"),
    ("monad.server.state", "1", "monad_server_state"),
])
def test_prometheus_names(name: str, unit: str, expected: str) -> None:
    from monad_cli.daemon.telemetry.prometheus import label_name, metric_name

    assert metric_name(name, unit) == expected
    assert label_name("monad.approval.decision") == "monad_approval_decision"


def test_every_instrument_is_documented_and_the_dashboard_uses_documented_series() -> None:
    import re

    root = Path(__file__).resolve().parents[2]
    source = (root / "monad_cli" / "daemon" / "telemetry" / "recorder.py").read_text()
    instruments = set(re.findall(r'create_(?:histogram|counter|observable_gauge|observable_counter)\(\s*"([a-z.]+)"',
                                 source))
    instruments |= set(re.findall(r'\b(?:sdk_)?h\("([a-z.]+)"', source))  # monad's aggregated ones, and the SDK's
    assert {"mcp.client.operation.duration", "mcp.server.operation.duration", "mcp.client.session.duration",
            "monad.tool.calls", "monad.servers", "monad.server.state"} <= instruments
    doc = (root / "docs" / "telemetry.md").read_text()
    documented = dict(re.findall(r"^\| `([a-z.]+)` \| `([a-z_]+)` \|", doc, re.M))
    assert instruments == set(documented), instruments ^ set(documented)
    from monad_cli.daemon.telemetry.prometheus import metric_name

    units = {"s": [n for n in instruments if n.endswith(".duration")]}
    for name, prom in documented.items():
        expected = metric_name(name, "s" if name in units["s"] else None)
        assert prom in (expected, expected + "_total"), (name, prom)
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


@pytest.mark.parametrize("how", ["environment", "settings"])
def test_without_the_extra_installed(monad_home: Path, how: str) -> None:
    """OTEL_* variables meant for another program leave monad off (a warning in its log);
    `enabled = true` in settings.toml is a one-line error saying what to install."""
    monad_home.mkdir(parents=True, exist_ok=True)
    if how == "settings":
        (monad_home / "settings.toml").write_text("[telemetry]\nenabled = true\n")
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"} if how == "environment" else {}
    script = (
        "import sys\n"
        "sys.modules['opentelemetry.sdk'] = None  # as if the extra were not installed\n"
        "from monad_cli.core.errors import ConfigError\n"
        "from monad_cli.core.paths import paths\n"
        "from monad_cli.daemon import telemetry\n"
        "try:\n"
        f"    t = telemetry.start(paths(), {env!r}, states=dict)\n"
        "    print('on' if t.on else 'off')\n"
        "except ConfigError as e:\n"
        "    print('error:', e.message)\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "MONAD_HOME": str(monad_home)})
    assert proc.returncode == 0, proc.stderr
    if how == "environment":
        assert proc.stdout.strip() == "off"
    else:
        assert proc.stdout.startswith("error: `telemetry.enabled` is true in settings.toml, but the telemetry extra "
                                      "is not installed (no `opentelemetry.sdk"), proc.stdout
        assert "run pip install 'monad-cli[telemetry]'" in proc.stdout and proc.stdout.count("\n") == 1


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
