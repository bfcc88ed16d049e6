"""Tool name collisions in the Studio (Chromium, Playwright), against the real supervisor and
two catalog servers whose tools map to one exposed name: the list's Reason counts them as
`monad mcp status` does, the details pane names each as `monad mcp status NAME` does, the
renamed tools say so in the pane and on the Tools page as `monad mcp tools` does, the other
side's row follows live, and axe-core finds nothing serious."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.browser.test_studio_ux import _axe_problems
from tests.conftest import wait_state
from tests.studio_helpers import browser, context, open_pane, open_studio, page, reason_of, sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.browser]
__all__ = ["browser", "context", "page"]  # fixtures, used by name
CATALOG = str(Path(__file__).resolve().parents[1] / "servers" / "catalogserver.py")
# `notes` + `_search` and `notes_` + `search` both read `notes___search` (core/tool_names.py).
SAID = ("tool name collision: notes/_search and notes_/search both map to notes___search; "
        "exposed as notes___search_")


def expect(locator: Any) -> Any:
    from playwright.sync_api import expect as pw_expect

    return pw_expect(locator)


def _add(monad: Any, tmp_path: Path, name: str, tool: str) -> None:
    catalog = tmp_path / f"{name}.json"
    catalog.write_text(json.dumps({"server": name, "tools": [
        {"name": tool, "description": "Search.", "inputSchema": {"type": "object", "properties": {}}}]}))
    assert monad("mcp", "add", name, "--", sys.executable, CATALOG, str(catalog)).code == 0


def test_a_collision_shows_in_the_list_the_pane_and_the_tools_page(monad: Any, page: Any, tmp_path: Path) -> None:
    _add(monad, tmp_path, "notes", "_search")
    wait_state(monad, "notes", "connected")
    sign_in(page, open_studio(monad))
    expect(page.get_by_role("status").filter(has_text="Live")).to_be_visible()
    expect(reason_of(page, "notes")).to_have_text("")

    # The second server comes while the page is open: both rows say it, the first one too
    # (its own state did not change: the collision is the other side's doing).
    _add(monad, tmp_path, "notes_", "search")
    for name in ("notes", "notes_"):
        expect(reason_of(page, name)).to_have_text("a name collision (see Details)", timeout=30_000)

    pane = open_pane(page, "notes")
    facts = pane.locator("dl.facts")
    expect(facts.get_by_role("listitem")).to_have_count(1)
    expect(facts.get_by_role("listitem")).to_contain_text(SAID)
    expect(facts.get_by_role("listitem").locator("code").filter(has_text="notes___search").first).to_be_visible()
    tools = pane.get_by_role("table", name="Tools of notes")
    expect(tools).to_contain_text("renamed: a name collision")
    problems = _axe_problems(page, "the details pane with a collision")

    page.get_by_role("link", name="Tools", exact=True).click()
    table = page.get_by_role("table", name="Tools", exact=True)
    renamed = table.get_by_role("row").filter(has_text="renamed: a name collision")
    expect(renamed).to_have_count(2)
    problems += _axe_problems(page, "the Tools page with renamed tools")
    assert problems == [], problems

    # Gone: the remaining side's row no longer says it, without a reload.
    assert monad("mcp", "remove", "notes_").code == 0
    page.get_by_role("link", name="MCP servers", exact=True).click()
    expect(reason_of(page, "notes")).to_have_text("", timeout=30_000)
    expect(renamed).to_have_count(0)
