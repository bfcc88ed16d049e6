"""Debian's `prometheus` server scrapes the supervisor's `/metrics` (its bearer token read
from `run/metrics.token`, as docs/telemetry.md's scrape config says) and its query API
answers monad's series: a call counted by outcome, a server's state, the conventions'
duration histogram. Without the binary the test is skipped, saying so, except where
MONAD_REQUIRE_PROMETHEUS=1 (`.ci/run` installs it): there it fails."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.conftest import free_port, wait_for, wait_state

pytestmark = pytest.mark.e2e
LIGHTSERVER = str(Path(__file__).resolve().parents[1] / "servers" / "lightserver.py")


def _prometheus() -> str:
    found = shutil.which("prometheus")
    if found is None:
        if os.environ.get("MONAD_REQUIRE_PROMETHEUS") == "1":
            pytest.fail("Debian's `prometheus` is not installed (apt-get install prometheus; .ci/run does)")
        pytest.skip("Debian's `prometheus` is not installed (apt-get install prometheus)")
    return found


def _query(api: str, promql: str) -> list[dict[str, Any]]:
    response = httpx2.get(f"{api}/api/v1/query", params={"query": promql}, timeout=10)
    if response.status_code == 503:  # "Service Unavailable" while its storage starts
        return []
    answer = response.json()
    assert answer["status"] == "success", answer
    return list(answer["data"]["result"])


def test_prometheus_scrapes_monad(monad: Any, monad_home: Path, tmp_path: Path) -> None:
    binary = _prometheus()
    (monad_home / "atoms" / "mcp").mkdir(parents=True)
    (monad_home / "atoms" / "mcp" / "light.toml").write_text(
        f"command = {json.dumps(sys.executable)}\nargs = {json.dumps([LIGHTSERVER])}\n"
        f'trust = {{autoApproveTools = ["light__echo"]}}\n')
    (monad_home / "settings.toml").write_text("[telemetry]\nenabled = true\n")
    assert monad("daemon", "start").code == 0
    prom: subprocess.Popen[bytes] | None = None
    try:
        wait_state(monad, "light", "connected", timeout=90)
        where = monad("metrics", "--where", "--json")
        assert where.code == 0, where
        url, token_file = where.json()["url"], Path(where.json()["tokenFile"])
        assert url.startswith("http://127.0.0.1:") and url.endswith("/metrics")
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        # The listener's lock: no token, a wrong one, another path.
        assert httpx2.get(url, timeout=10).status_code == 401
        assert httpx2.get(url, headers={"Authorization": "Bearer nope"}, timeout=10).status_code == 401
        good = {"Authorization": f"Bearer {token_file.read_text().strip()}"}
        assert httpx2.get(url.replace("/metrics", "/other"), headers=good, timeout=10).status_code == 404
        r = monad("mcp", "call", "light__echo", "--arg", "text=hi")
        assert r.code == 0, r
        text = monad("metrics")
        assert text.code == 0 and "# TYPE monad_tool_calls_total counter" in text.out, text
        assert 'monad_tasks{monad_server="light",monad_task_state="queued"} 0.0' in text.out
        assert "monad_fleet_queued 0.0" in text.out  # no fleet: nothing waits

        api_port = free_port()
        target = url.removeprefix("http://").removesuffix("/metrics")
        config = tmp_path / "prometheus.yml"
        config.write_text(
            "global:\n  scrape_interval: 1s\n"
            "scrape_configs:\n"
            "  - job_name: monad\n"
            "    authorization:\n"
            f"      credentials_file: {token_file}\n"
            "    static_configs:\n"
            f"      - targets: ['{target}']\n")
        log = (tmp_path / "prometheus.log").open("wb")
        prom = subprocess.Popen([binary, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                                 f"--web.listen-address=127.0.0.1:{api_port}"], stdout=log, stderr=log)
        api = f"http://127.0.0.1:{api_port}"

        def series(promql: str) -> list[dict[str, Any]]:
            try:
                return _query(api, promql)
            except httpx2.TransportError:
                return []  # not listening yet

        calls = wait_for(lambda: series('monad_tool_calls_total{monad_call_outcome="ok"}'), timeout=90)
        state = wait_for(lambda: series('monad_server_state{monad_server="light"}'), timeout=60)
        duration = wait_for(lambda: series('mcp_client_operation_duration_seconds_count{monad_server="light"}'),
                            timeout=60)
        up = wait_for(lambda: series('up{job="monad"}'), timeout=60)
    finally:
        if prom is not None:
            prom.terminate()
            prom.wait(timeout=30)
        monad("daemon", "stop")

    assert up[0]["value"][1] == "1"  # the scrape with the token file succeeded
    call = calls[0]["metric"]
    assert (call["monad_server"], call["monad_via"], call["monad_approval_decision"]) == ("light", "cli", "approved")
    assert calls[0]["value"][1] == "1"
    assert state[0]["metric"]["monad_server_state"] == "connected" and state[0]["value"][1] == "1"
    assert duration[0]["metric"]["mcp_method_name"] == "tools/call" and duration[0]["value"][1] == "1"
