"""The Registry view's API on the Studio's port (docs/registry.md "In the Studio"), against
the real supervisor and a loopback registry (tests/servers/registry.py, pages of two):
search walks every registry's pages through one cursor, details list what each package
asks for, and Install writes the atom `monad mcp add NAME` writes — a secret header given
once, never in any answer, the journal or the page's data, and the server connects."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import wait_for, wait_state
from tests.registry_helpers import (
    REGISTRY_SCRIPT,
    TIME_VERSION,
    memory_server,
    oci_and_npm_server,
    publish,
    remote_server,
    time_server,
)
from tests.studio_helpers import StudioHTTP, journal_rows, open_studio

pytestmark = pytest.mark.e2e
SENTINEL = "sk-sentinel-studio-reg-41c9"


def _registries(servers: Any, tmp_path: Path, remote_url: str) -> tuple[str, str]:
    first, second = tmp_path / "first", tmp_path / "second"
    for doc in (time_server(), memory_server(), remote_server(remote_url)):
        publish(first, doc)
    publish(second, oci_and_npm_server())
    return (servers.start(REGISTRY_SCRIPT, str(first), "--page", "2"),
            servers.start(REGISTRY_SCRIPT, str(second), "--page", "2"))


def test_search_details_and_install_with_a_secret_never_shown(
        monad: Any, servers: Any, http_testserver: Any, tmp_path: Path, monad_home: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = _registries(servers, tmp_path, http_testserver())
    monad_home.mkdir(parents=True, exist_ok=True)
    (monad_home / "settings.toml").write_text(f'[registry]\nurls = ["{first}", "{second}"]\n')
    monkeypatch.delenv("MONAD_REGISTRY_URL", raising=False)
    studio = StudioHTTP(open_studio(monad)["url"])  # starts the supervisor
    studio.login()
    answers: list[str] = []

    def get(path: str) -> dict[str, Any]:
        r = studio.get(path)
        answers.append(r.text)
        assert r.status_code == 200, (r.status_code, r.text)
        return dict(r.json())

    try:
        # Search: pages of two from the first registry, then the second's, one cursor.
        names: list[str] = []
        page = get("/v1/registry/servers?search=")
        pages = 1
        while True:
            names += [s["name"] for s in page["servers"]]
            if page["nextCursor"] is None:
                break
            page = get(f"/v1/registry/servers?search=&cursor={page['nextCursor']}")
            pages += 1
        assert names == ["com.example/weather", "io.github.modelcontextprotocol/memory",
                         "io.github.modelcontextprotocol/time", "io.github.example/database"], names
        assert pages == 3 and page["registries"] == [first, second]
        assert [s["name"] for s in get("/v1/registry/servers?search=weather")["servers"]] == ["com.example/weather"]
        # A registry that cannot be reached is a problem of the page; the next one answers.
        settings = (monad_home / "settings.toml").read_text()
        (monad_home / "settings.toml").write_text(f'[registry]\nurls = ["http://127.0.0.1:9", "{second}"]\n')
        page = get("/v1/registry/servers?search=")
        assert [s["name"] for s in page["servers"]] == ["io.github.example/database"], page
        assert "`http://127.0.0.1:9` cannot be reached" in page["problems"][0], page
        (monad_home / "settings.toml").write_text(settings)
        r = studio.get("/v1/registry/servers?search=&cursor=garbage")
        assert r.status_code == 400 and "cursor" in r.json()["error"]["message"], r.text

        # Details: versions, repository, and the variables of each way to run it.
        time_ = get("/v1/registry/server?name=io.github.modelcontextprotocol/time")["server"]
        assert time_["version"] == TIME_VERSION and time_["repository"]["subfolder"] == "src/time"
        assert [v["version"] for v in time_["versions"]] == [TIME_VERSION]
        assert time_["options"][0]["variables"][0]["key"] == "local-timezone"
        weather = get("/v1/registry/server?name=com.example/weather")["server"]
        headers = {v["key"]: v for v in weather["options"][0]["variables"]}
        assert headers["X-API-Key"]["isSecret"] and headers["X-API-Key"]["isRequired"]
        assert headers["X-Region"]["choices"] == ["us-east-1", "eu-west-1"]
        r = studio.get("/v1/registry/server?name=com.example/nothing")
        assert r.status_code == 404 and "com.example/nothing" in r.json()["error"]["message"], r.text

        # Install: the same refusal as `monad mcp add` without the secret, nothing written.
        r = studio.request("POST", "/v1/registry/install", body={"name": "com.example/weather"})
        assert r.status_code == 400 and "`X-API-Key` (secret)" in r.json()["error"]["message"], r.text
        assert not (monad_home / "atoms" / "mcp" / "weather.toml").exists()
        # Without the session nothing answers; a foreign page cannot install (the Studio's
        # Origin check), even with the session.
        r = studio.get("/v1/registry/servers?search=", cookie=False)
        assert r.status_code in (401, 403) and "com.example" not in r.text, r.text
        r = studio.request("POST", "/v1/registry/install", origin="http://evil.example",
                           body={"name": "com.example/weather", "values": {"header": {"X-API-Key": SENTINEL}}})
        assert r.status_code == 403, r.text
        assert not (monad_home / "atoms" / "mcp" / "weather.toml").exists()

        r = studio.request("POST", "/v1/registry/install", body={
            "name": "com.example/weather", "version": "2.0.0", "option": "remotes[0]",
            "values": {"header": {"X-API-Key": SENTINEL, "X-Region": "us-east-1"}}})
        answers.append(r.text)
        assert r.status_code == 201, r.text
        summary = r.json()
        assert summary["name"] == "weather" and summary["version"] == "2.0.0"
        key = next(v for v in summary["variables"] if v["key"] == "X-API-Key")
        assert key == {"key": "X-API-Key", "kind": "header", "secret": True, "set": True, "value": None}
        atom = tomllib.loads((monad_home / "atoms" / "mcp" / "weather.toml").read_text())
        assert atom["headers"] == {"X-API-Key": SENTINEL, "X-Region": "us-east-1"}
        assert atom["registry"]["version"] == "2.0.0" and atom["trust"]["pinOnFirstUse"] is True

        # It connects, and is pinned on first use, as one installed by `monad mcp add` is.
        wait_state(monad, "weather", "connected", timeout=60)
        wait_for(lambda: (monad("mcp", "get", "weather", "--json").json()["definition"].get("trust") or {})
                 .get("pinnedToolHash"), timeout=60)
        answers.append(studio.get("/v1/settings/mcp-servers/weather").text)
        answers.append(studio.get("/v1/settings/mcp-servers/status").text)
        answers.append(studio.get("/studio/").text)
        rows = journal_rows(monad_home, "edit")
        installed = [r for r in rows if r["detail"] and r["detail"].get("action") == "installed"]
        assert installed and installed[0]["detail"]["via"] == "studio", rows
        answers.append(json.dumps(rows, default=str))
        # Taken: the same Conflict as `monad mcp add` gives.
        r = studio.request("POST", "/v1/registry/install", body={
            "name": "com.example/weather", "values": {"header": {"X-API-Key": SENTINEL}}})
        answers.append(r.text)
        assert r.status_code == 409 and "weather" in r.json()["error"]["message"], r.text
        for text in answers:
            assert SENTINEL not in text
    finally:
        studio.close()
        monad("daemon", "stop")
