"""The Studio's Agents page in Chromium (Playwright), against the real supervisor and agents'
config files in a temporary home folder: each agent and whether it is connected, the file it
will change and the entry shown before anything changes, Connect and Disconnect (what `monad
mcp connect` does), keyboard only, at 1280 px and 400 px, and axe-core on the page and its
dialog."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.browser.test_studio_ux import _axe_problems, _focused, _no_sideways, _spilled, _tab_to
from tests.clients import parse
from tests.studio_helpers import browser, context, open_studio, page, sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.browser]
__all__ = ["browser", "context", "page"]  # fixtures, used by name


def expect(locator: Any) -> Any:
    from playwright.sync_api import expect as pw_expect

    return pw_expect(locator)


def _agents(home: Path) -> dict[str, Path]:
    """Cursor with its own `time` (which monad runs too), Codex with a table of its own, Zed
    installed with no settings file yet."""
    cursor = home / ".cursor" / "mcp.json"
    cursor.parent.mkdir(parents=True)
    cursor.write_text('{\n  "mcpServers": {\n    "time": {"command": "mcp-server-time"}\n  },\n  "theme": "dark"\n}\n')
    codex = home / ".codex" / "config.toml"
    codex.parent.mkdir()
    codex.write_text('model = "o3"\n\n[mcp_servers.docs]\ncommand = "docs-mcp"\n')
    (home / ".config" / "zed").mkdir(parents=True)
    return {"cursor": cursor, "codex": codex, "zed": home / ".config" / "zed" / "settings.json"}


def _row(page: Any, title: str) -> Any:
    table = page.get_by_role("table", name="Agents")
    return table.get_by_role("row").filter(has=page.get_by_text(title, exact=True))


def _open_agents(monad: Any, page: Any) -> None:
    sign_in(page, open_studio(monad))
    expect(page.locator("#live")).to_have_attribute("data-state", "live")
    _tab_to(page, "Agents")
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Agents", exact=True)).to_be_visible()


def test_connect_and_disconnect_by_keyboard(monad: Any, page: Any, monad_home: Path) -> None:
    files = _agents(Path(os.environ["HOME"]))
    cursor_before = files["cursor"].read_bytes()
    assert monad("mcp", "add", "time", "--", "mcp-server-time").code == 0
    _open_agents(monad, page)
    kb = page.keyboard
    cursor = _row(page, "Cursor")
    expect(cursor.get_by_role("cell").nth(1)).to_have_text("~/.cursor/mcp.json")
    expect(cursor.get_by_role("cell").nth(2)).to_have_text("Not connected")
    expect(_row(page, "Goose").get_by_role("cell").nth(2)).to_have_text("Not found on this machine")
    expect(_row(page, "Zed").get_by_role("button", name="Connect Zed")).to_be_visible()
    problems = _axe_problems(page, "Agents")

    # Connect Cursor: the dialog names the file and shows the entry; nothing is written yet.
    _tab_to(page, "Connect Cursor")
    kb.press("Enter")
    dialog = page.get_by_role("dialog", name="Connect Cursor")
    expect(dialog).to_contain_text("monad will change ~/.cursor/mcp.json")
    # The entry as the file spells it: Cursor's JSON under `mcpServers`.
    entry = json.loads(dialog.get_by_label("The monad entry for Cursor").text_content() or "")["mcpServers"]["monad"]
    assert entry["args"][-2:] == ["mcp", "serve"] and entry["env"] == {"MONAD_HOME": str(monad_home)}
    assert _focused(page) == "Cancel" and files["cursor"].read_bytes() == cursor_before
    problems += _axe_problems(page, "the Connect dialog")
    kb.press("Enter")  # Cancel: Enter, Enter changes nothing
    expect(dialog).to_have_count(0)
    assert _focused(page) == "Connect Cursor" and files["cursor"].read_bytes() == cursor_before
    kb.press("Enter")
    dialog = page.get_by_role("dialog", name="Connect Cursor")
    _tab_to(page, "agent-replace")  # take out Cursor's own `time`: monad runs it
    kb.press("Space")
    _tab_to(page, "Connect")
    kb.press("Enter")
    expect(cursor.get_by_role("cell").nth(2)).to_have_text("Connected")
    expect(page.get_by_role("status").filter(has_text="wrote the monad entry into ~/.cursor/mcp.json")).to_be_visible()
    assert _focused(page) == "Disconnect Cursor"
    data = parse("cursor", files["cursor"].read_text())
    assert list(data["mcpServers"]) == ["monad"] and data["mcpServers"]["monad"] == entry and data["theme"] == "dark"

    # Codex, by the arrow keys: its own table stays; a second Connect is not offered.
    kb.press("ArrowDown")
    assert _focused(page) == "Connect Codex", _focused(page)
    kb.press("Enter")
    _tab_to(page, "Connect")
    kb.press("Enter")
    expect(_row(page, "Codex").get_by_role("cell").nth(2)).to_have_text("Connected")
    codex = parse("codex", files["codex"].read_text())
    assert set(codex["mcp_servers"]) == {"docs", "monad"} and codex["model"] == "o3"
    written = files["codex"].read_bytes()
    assert monad("mcp", "connect", "codex").code == 0 and files["codex"].read_bytes() == written  # the same code

    # Disconnect Cursor: the file without monad's entry, and with its own `time` put back (the
    # Connect took it out, as asked; a disconnect undoes that).
    _tab_to(page, "Disconnect Cursor", back=True)
    kb.press("Enter")
    dialog = page.get_by_role("dialog", name="Disconnect Cursor")
    expect(dialog).to_contain_text("takes out the entry named monad")
    _tab_to(page, "Disconnect")
    kb.press("Enter")
    expect(cursor.get_by_role("cell").nth(2)).to_have_text("Not connected")
    expect(page.get_by_role("status").filter(has_text="put back Cursor's own time")).to_be_visible()
    assert parse("cursor", files["cursor"].read_text()) == {"mcpServers": {"time": {"command": "mcp-server-time"}},
                                                            "theme": "dark"}
    assert problems == [], problems


@pytest.mark.parametrize("width", [375, 400])
def test_narrow_nothing_scrolls_sideways_and_the_badges_fit(browser: Any, monad: Any, monad_home: Path,
                                                            width: int) -> None:
    """Found by a new-user trial at 375 px: "Not found on this machine" ran out of the Status
    column over the Action one. A badge wraps within its cell; nothing scrolls sideways."""
    _agents(Path(os.environ["HOME"]))
    ctx = browser.new_context(viewport={"width": width, "height": 800})
    ctx.set_default_timeout(20_000)
    try:
        page = ctx.new_page()
        _open_agents(monad, page)
        expect(_row(page, "Cursor").locator("code.narrow")).to_have_text("~/.cursor/mcp.json")  # under the name
        expect(_row(page, "Cursor").locator("code.narrow")).to_be_visible()
        expect(_row(page, "Goose").locator(".badge")).to_have_text("Not found on this machine")
        _no_sideways(page, "Agents")
        spilled = _spilled(page, "table.agents-list th, table.agents-list td")
        assert not spilled, spilled
        _row(page, "Zed").get_by_role("button", name="Connect Zed").focus()
        page.keyboard.press("Enter")
        dialog = page.get_by_role("dialog", name="Connect Zed")
        expect(dialog).to_contain_text("~/.config/zed/settings.json")
        _no_sideways(page, "the Connect dialog")
        assert _axe_problems(page, f"Agents at {width} px") == []
        page.keyboard.press("Escape")
        expect(dialog).to_have_count(0)
    finally:
        ctx.close()


def test_connect_names_the_entries_it_leaves_because_monads_differ(monad: Any, page: Any) -> None:
    """Found by a new-user trial: a Connect that takes out Cursor's own entries (the box) left
    its `github`, whose name monad uses for another server, without a word, where `monad mcp
    connect --replace` warns (`differing`). The page's message names it and says what to do."""
    cursor = Path(os.environ["HOME"]) / ".cursor" / "mcp.json"
    cursor.parent.mkdir(parents=True)
    cursor.write_text(json.dumps({"mcpServers": {"time": {"command": "mcp-server-time"},
                                                 "github": {"command": "github-mcp-server", "args": ["stdio"]}}}))
    assert monad("mcp", "add", "time", "--", "mcp-server-time").code == 0
    assert monad("mcp", "add", "github", "--disabled", "--", "docker", "run", "github-mcp").code == 0
    _open_agents(monad, page)
    _row(page, "Cursor").get_by_role("button", name="Connect Cursor").click()
    dialog = page.get_by_role("dialog", name="Connect Cursor")
    dialog.locator("#agent-replace").check()
    dialog.get_by_role("button", name="Connect", exact=True).click()
    toast = page.get_by_role("status").locator(".toast").filter(has_text="took Cursor's own time out")
    expect(toast).to_contain_text("Cursor's own github stays in ~/.cursor/mcp.json: monad's github is defined "
                                  "differently")
    expect(toast).to_contain_text("monad mcp import cursor --force")
    expect(toast.locator("code").filter(has_text="github").first).to_be_visible()
    assert set(parse("cursor", cursor.read_text())["mcpServers"]) == {"github", "monad"}
    page.wait_for_timeout(9_000)  # a message with something to do stays until dismissed
    expect(toast).to_be_visible()
    toast.get_by_role("button", name="Dismiss message").click()
    expect(toast).to_have_count(0)


def test_connect_names_the_entries_it_leaves_because_monad_holds_them_without_some_fields(
        monad: Any, page: Any) -> None:
    """`monad mcp connect --replace` warns of Cursor's own entries that hold a field import left
    out (`partial`: a `command` beside the `url` monad kept): the page's Connect with the box
    took `clock` out and said nothing of `docs`, which stayed. Its message names them, the
    fields, and what to do, as the CLI words it; it stays until dismissed."""
    cursor = Path(os.environ["HOME"]) / ".cursor" / "mcp.json"
    cursor.parent.mkdir(parents=True)
    # Nothing listens on port 9 (discard): the imported servers only retry, no request leaves the machine.
    docs = {"command": "npx", "args": ["-y", "sentinel-docs-server"], "url": "http://127.0.0.1:9/docs"}
    cursor.write_text(json.dumps({"mcpServers": {"docs": docs, "clock": {"url": "http://127.0.0.1:9/clock"}}}))
    assert monad("mcp", "import", "cursor").code == 0
    _open_agents(monad, page)
    _row(page, "Cursor").get_by_role("button", name="Connect Cursor").click()
    dialog = page.get_by_role("dialog", name="Connect Cursor")
    dialog.locator("#agent-replace").check()
    dialog.get_by_role("button", name="Connect", exact=True).click()
    toast = page.get_by_role("status").locator(".toast").filter(has_text="took Cursor's own clock out")
    expect(toast).to_contain_text("Cursor's own docs stays in ~/.cursor/mcp.json: monad's docs holds it without some "
                                  "of its fields (docs: command, args), so it is not the same definition and Connect "
                                  "leaves it; take those fields out of ~/.cursor/mcp.json if Cursor does not need "
                                  "them, and monad mcp connect cursor --replace takes it out")
    expect(toast.locator("code").filter(has_text="command").first).to_be_visible()
    assert set(parse("cursor", cursor.read_text())["mcpServers"]) == {"docs", "monad"}
    assert _axe_problems(page, "Agents with the message") == []
    page.wait_for_timeout(9_000)  # a message with something to do stays until dismissed
    expect(toast).to_be_visible()
