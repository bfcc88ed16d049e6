"""The agents on this machine through the control API (daemon/api/clients.py), as the Studio's
Agents page uses it: each client's state, the file it would change and the entry; Connect and
Disconnect through the same code as `monad mcp connect`, journaled; only usual files."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.clients import FIXTURES, parse
from tests.studio_helpers import StudioHTTP, journal_rows, open_studio

pytestmark = pytest.mark.e2e


def _client() -> Any:
    from monad_cli.cli.control import ControlClient
    from monad_cli.core.paths import paths

    return ControlClient(paths())


def _rows() -> dict[str, dict[str, Any]]:
    return {row["name"]: row for row in _client().get("/v1/clients")["clients"]}


def test_list_connect_and_disconnect(supervisor: Any, monad_home: Path) -> None:
    home = Path(os.environ["HOME"])
    cursor = home / ".cursor" / "mcp.json"
    cursor.parent.mkdir()
    cursor.write_text('{"mcpServers": {"time": {"command": "mcp-server-time"}}, "theme": "dark"}\n')
    (home / ".config" / "zed").mkdir(parents=True)  # installed, no settings file yet
    codex = home / ".codex" / "config.toml"
    codex.parent.mkdir()
    codex.write_text("[mcp_servers.x\n")  # malformed
    assert supervisor("mcp", "add", "time", "--", "mcp-server-time").code == 0

    rows = _rows()
    assert "mcp-json" not in rows and "aura" not in rows  # project files: not the page's
    assert rows["cursor"]["state"] == "not-connected" and rows["cursor"]["file"] == "~/.cursor/mcp.json"
    assert rows["cursor"]["entry"]["args"][-2:] == ["mcp", "serve"] and rows["cursor"]["duplicates"] == ["time"]
    assert rows["zed"]["state"] == "not-connected" and rows["zed"]["entry"]["source"] == "custom"
    assert rows["codex"]["state"] == "unreadable" and "config.toml:1:" in rows["codex"]["detail"]
    # Each entry as its file spells it: Codex's TOML table, Cursor's JSON.
    assert rows["codex"]["entryText"].startswith("[mcp_servers.monad]\ncommand = ")
    assert json.loads(rows["cursor"]["entryText"])["mcpServers"]["monad"] == rows["cursor"]["entry"]
    assert rows["goose"]["state"] == "not-installed"

    answer = _client().post("/v1/clients/cursor/connect", {"replace": True})
    assert answer["changed"] is True and answer["replaced"] == ["time"] and answer["client"]["state"] == "connected"
    data = json.loads(cursor.read_text())
    assert list(data["mcpServers"]) == ["monad"] and data["theme"] == "dark"
    assert data["mcpServers"]["monad"] == rows["cursor"]["entry"]  # what the page showed before
    again = _client().post("/v1/clients/cursor/connect", {})
    assert again["changed"] is False
    answer = _client().post("/v1/clients/cursor/disconnect", {})
    assert answer["changed"] is True and answer["client"]["state"] == "not-connected"
    # What the replace took out is put back: Cursor runs its own `time` again.
    assert answer["restored"] == ["time"], answer
    assert parse("cursor", cursor.read_text()) == {"mcpServers": {"time": {"command": "mcp-server-time"}},
                                                   "theme": "dark"}
    _client().post("/v1/clients/zed/connect", {})
    assert "monad" in parse("zed", (home / ".config" / "zed" / "settings.json").read_text())["context_servers"]
    _client().post("/v1/clients/zed/disconnect", {})
    assert not (home / ".config" / "zed" / "settings.json").exists()  # connect created it: gone again
    rows = [r for r in journal_rows(monad_home, "client")]
    assert [(r["detail"]["client"], r["detail"]["action"]) for r in rows] == [
        ("cursor", "connected"), ("cursor", "disconnected"), ("zed", "connected"), ("zed", "disconnected")]
    assert rows[0]["reason"] == "connected Cursor (`~/.cursor/mcp.json`) through the control API"


def test_refusals(supervisor: Any, monad_home: Path) -> None:
    from monad_cli.core.errors import MonadError

    for path, body, says in (("/v1/clients/nosuch/connect", {}, "no agent `nosuch`"),
                             ("/v1/clients/mcp-json/connect", {}, "no agent `mcp-json`"),
                             ("/v1/clients/cursor/connect", {"replace": "yes"}, "`replace` must be true or false")):
        with pytest.raises(MonadError) as refused:
            _client().post(path, body)
        assert says in refused.value.message, refused.value.message
    # A malformed file is refused with its position, and left as it was.
    gemini = Path(os.environ["HOME"]) / ".gemini" / "settings.json"
    gemini.parent.mkdir()
    shutil.copy(FIXTURES / "gemini-settings.json", gemini)
    gemini.write_text(gemini.read_text() + "}")
    text = gemini.read_text()
    with pytest.raises(MonadError) as refused:
        _client().post("/v1/clients/gemini/connect", {})
    assert "settings.json:" in refused.value.message and gemini.read_text() == text


def test_the_studio_port_needs_the_page_to_change_a_file(supervisor: Any, monad_home: Path) -> None:
    cursor = Path(os.environ["HOME"]) / ".cursor" / "mcp.json"
    cursor.parent.mkdir()
    studio = StudioHTTP(open_studio(supervisor)["url"])
    try:
        studio.login()
        assert studio.request("POST", "/v1/clients/cursor/connect", body={}, origin=None).status_code == 403
        assert studio.request("POST", "/v1/clients/cursor/connect", body={},
                              origin="http://evil.example").status_code == 403
        assert not cursor.exists()
        r = studio.request("POST", "/v1/clients/cursor/connect", body={})
        assert r.status_code == 200 and r.json()["client"]["state"] == "connected", r.text
        [row] = journal_rows(monad_home, "client")
        assert row["detail"]["via"] == "studio" and row["reason"].endswith("from the Studio")
    finally:
        studio.close()


def test_the_start_imports_no_agent_format_until_asked(monad_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every agent's file format (`monad_cli.clients`) is the Agents page's, not the start's:
    the supervisor imports it at the first `GET /v1/clients`, not when it builds the routes."""
    from monad_cli.cli.control import start_supervisor
    from monad_cli.core.paths import paths

    monkeypatch.setenv("PYTHONPROFILEIMPORTTIME", "1")  # its imports into its log (daemon.log)

    def imported() -> set[str]:
        return {line.rsplit("|", 1)[1].strip() for line in paths().daemon_log.read_text().splitlines()
                if line.startswith("import time:") and "|" in line}

    start_supervisor(paths())
    started = imported()
    assert "monad_cli.daemon.api.clients" in started  # the measurement works: the routes are built
    assert not {m for m in started if m.startswith("monad_cli.clients")}, sorted(started)
    assert "cursor" in _rows()
    assert "monad_cli.clients.connector" in imported()
