"""Telemetry around a remote OAuth server (the SDK's own authorization server,
tests/servers/oauth_as.py, whose every token starts with `SENTINEL`): a refresh counted by
outcome, the upstream CLIENT span over `tcp` with the server's address, and no token in any
byte exported over OTLP, in `/metrics`, or anywhere under MONAD_HOME."""

from __future__ import annotations

import time
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.auth_helpers import OAUTH_AS, SENTINEL, Servers, assert_no_sentinel, install_browser, stats
from tests.conftest import wait_for, wait_state
from tests.otlp import OtlpReceiver

pytestmark = pytest.mark.e2e
CLIENT = 3


def test_a_refresh_is_counted_and_no_token_is_exported(monad: Any, monad_home: Path, servers: Servers,
                                                      tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = servers.start(OAUTH_AS, "--ttl", "3")
    install_browser(tmp_path, monkeypatch)
    assert monad("mcp", "add", "remote", "--url", f"{base}/mcp").code == 0
    assert monad("mcp", "authorize", "remote", env={"MONAD_NO_AUTOSTART": "1"}).code == 0
    atom = monad_home / "atoms" / "mcp" / "remote.toml"
    with OtlpReceiver() as otlp:
        (monad_home / "settings.toml").write_text("[telemetry]\nenabled = true\n")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", otlp.endpoint)
        monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "100")
        monkeypatch.setenv("OTEL_METRIC_EXPORT_INTERVAL", "300")
        assert monad("daemon", "start").code == 0
        try:
            wait_state(monad, "remote", "connected")
            expires = float(tomllib.loads(atom.read_text())["auth"]["grant"]["expiresAt"])
            wait_for(lambda: time.time() > expires, timeout=15)
            r = monad("mcp", "call", "remote__echo", "--arg", "text=hi", "--yes")
            assert r.code == 0 and r.out.strip() == "hi", r
            text = monad("metrics")
            assert text.code == 0, text
            client = wait_for(lambda: next((s for s in otlp.spans() if s.kind == CLIENT
                                            and s.name == "tools/call echo"), None), timeout=30)
        finally:
            monad("daemon", "stop")
    # The refreshes the authorization server answered (with a 3 s token: at connect, for the
    # call, and maybe for a ping after `monad metrics` read the count) are counted, as `ok`.
    line = 'monad_oauth_refreshes_total{monad_oauth_outcome="ok",monad_server="remote"} '
    counted = [float(x.removeprefix(line)) for x in text.out.splitlines() if x.startswith(line)]
    assert counted and 1 <= counted[0] <= stats(base)["refresh"], (counted, stats(base))
    assert client.attributes["network.transport"] == "tcp" and client.attributes["server.address"] == "127.0.0.1"
    assert client.attributes["server.port"] == int(base.rsplit(":", 1)[1])
    assert not any(SENTINEL.encode() in body for body in otlp.received.bodies)
    assert_no_sentinel(monad_home, text.out)
