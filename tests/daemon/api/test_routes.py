"""The control API's routes driven over a fake `DaemonPort` (daemon/port.py): no supervisor,
no actor, no MCP session — the routes need only what the port gives them."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from starlette.applications import Starlette
from starlette.middleware import Middleware

from monad_cli.config.loader import Definitions
from monad_cli.core.filters import ServerFilter
from monad_cli.core.paths import Paths
from monad_cli.daemon.api.daemon import daemon_routes
from monad_cli.daemon.api.servers import server_routes
from monad_cli.daemon.http import ErrorBoundary

SECRET = "SENTINEL-port-7f3a"


@dataclass
class FakeSpec:
    enabled: bool = True


@dataclass
class FakeActor:
    name: str
    spec: FakeSpec | None = field(default_factory=FakeSpec)
    reason: str | None = None
    config_error: str | None = None
    live: bool = False
    listed: bool = False
    tools: list[Any] = field(default_factory=list)
    reconnects: int = 0

    def reconnect(self) -> None:
        self.reconnects += 1


@dataclass
class FakePort:
    paths: Paths
    actors: dict[str, FakeActor]
    started_at: float = 1.5
    journal: Any = None
    tool_service: Any = None
    tasks: Any = None
    definitions: Definitions = field(default_factory=Definitions)
    file_problems: list[dict[str, Any]] = field(default_factory=list)
    server_filter: ServerFilter = field(default_factory=ServerFilter)
    stop_event: anyio.Event = field(default_factory=anyio.Event)
    reconciles: list[bool] = field(default_factory=list)

    async def reconcile(self, *, force: bool = False) -> None:
        self.reconciles.append(force)

    def status(self, *, name: str | None = None, detail: bool = False) -> list[dict[str, Any]]:
        rows = [{"name": n, "state": "connected", "reason": f"token {SECRET}", "detail": detail}
                for n in sorted(self.actors)]
        return [r for r in rows if name is None or r["name"] == name]

    def scrub(self, text: str) -> str:
        return text.replace(SECRET, "***")


def _app(port: FakePort) -> Starlette:
    return Starlette(routes=[*daemon_routes(port), *server_routes(port)],  # type: ignore[arg-type]
                     middleware=[Middleware(ErrorBoundary, scrub=port.scrub)])


def _call(port: FakePort, method: str, url: str, **kw: Any) -> httpx2.Response:
    async def go() -> httpx2.Response:
        transport = httpx2.ASGITransport(app=_app(port))
        async with httpx2.AsyncClient(transport=transport, base_url="http://control") as client:
            return await client.request(method, url, **kw)
    return anyio.run(go)


@pytest.fixture
def port(tmp_path: Path) -> FakePort:
    return FakePort(paths=Paths(home=tmp_path), actors={"a": FakeActor("a"), "off": FakeActor("off", FakeSpec(False)),
                                                        "broken": FakeActor("broken", None)})


def test_health_reads_the_port(port: FakePort, tmp_path: Path) -> None:
    r = _call(port, "GET", "/v1/health")
    assert r.status_code == 200
    assert r.json()["pid"] == os.getpid() and r.json()["home"] == str(tmp_path) and r.json()["startedAt"] == 1.5


def test_an_unknown_server_is_the_404_envelope(port: FakePort) -> None:
    r = _call(port, "GET", "/v1/settings/mcp-servers/nope/status")
    assert r.status_code == 404
    assert r.json()["error"]["code"] == "not_found"
    assert "`nope`" in r.json()["error"]["message"]


def test_reconnect_one_and_all(port: FakePort) -> None:
    assert _call(port, "POST", "/v1/mcp-servers/a/reconnect").json() == {"name": "a", "reconnecting": True,
                                                                         "configError": None}
    assert port.actors["a"].reconnects == 1
    answer = _call(port, "POST", "/v1/mcp-servers/reconnect").json()
    assert answer["reconnecting"] == ["a"]
    assert {s["name"]: s["reason"].split(";")[0] for s in answer["skipped"]} == {
        "broken": "its definition is invalid", "off": "disabled (enabled = false)"}
    assert port.reconciles[-1] is True  # reconnecting all re-reads the files first
    refused = _call(port, "POST", "/v1/mcp-servers/off/reconnect")
    assert refused.status_code == 409 and "`monad mcp enable off`" in refused.json()["error"]["message"]
    assert port.actors["a"].reconnects == 2 and port.actors["off"].reconnects == 0


def test_status_is_the_ports_rows_scrubbed_on_the_way_out_of_an_error(port: FakePort) -> None:
    rows = _call(port, "GET", "/v1/settings/mcp-servers/status?detail=1").json()["servers"]
    assert [r["name"] for r in rows] == ["a", "broken", "off"] and rows[0]["detail"] is True
    # The boundary scrubs error messages (answers are redacted by what the port gives).
    bad = _call(port, "GET", f"/v1/settings/mcp-servers/{SECRET}/status")
    assert bad.status_code == 404 and SECRET not in bad.text and "***" in bad.text


def test_stop_sets_the_ports_stop_event(port: FakePort) -> None:
    r = _call(port, "POST", "/v1/daemon/stop")
    assert r.json()["stopping"] is True
    assert port.stop_event.is_set()


@pytest.mark.parametrize(("body", "why"), [
    (b'{"name": "x", "definition": {"command": "\\ud800"}}', "request body: `definition.command` holds text that is "
                                                            "not Unicode"),
    (b'{"name": "x", "definition": {"timeout": NaN}}', "request body: `definition.timeout` is not a finite number"),
    (b'{"name": "x", "definition": {"args": ' + b"[" * 200 + b"]" * 200 + b"}}", "nested more than 128 levels"),
    (b'{"name": "x", "definition": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
     "request body is nested more than 128 levels deep"),
])
def test_a_body_nothing_downstream_can_take_is_refused_naming_where(port: FakePort, tmp_path: Path, body: bytes,
                                                                    why: str) -> None:
    """Found by a new-user trial: a lone surrogate in a body reached the journal and the Studio's
    transcript, which then could not be served; 100,000 brackets were an internal error."""
    r = _call(port, "POST", "/v1/settings/mcp-servers", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_input", r.text
    assert why in r.json()["error"]["message"]
    assert not (tmp_path / "atoms").exists() and port.reconciles == []  # nothing written


def test_the_studios_add_refuses_a_case_twin_of_an_enabled_preset(port: FakePort, tmp_path: Path) -> None:
    """The Studio's add goes through `config.edits.add_server` as `monad mcp add` does: `Browser`
    beside the enabled preset `browser` is refused with the same line, and nothing is written."""
    (tmp_path / "features").mkdir()
    (tmp_path / "features" / "presets.toml").write_text("browser = {enabled = true}\n")
    r = _call(port, "POST", "/v1/settings/mcp-servers", json={"name": "Browser", "definition": {"command": "x"}})
    assert r.status_code == 409 and r.json()["error"]["code"] == "conflict", r.text
    assert r.json()["error"]["message"] == (
        "server `Browser` differs from the enabled preset `browser` (`features/presets.toml`) only in case; choose "
        "another name, or add it as `browser` to replace the preset")
    assert not (tmp_path / "atoms" / "mcp" / "Browser.toml").exists() and port.reconciles == []
