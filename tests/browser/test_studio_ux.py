"""The Studio as people use it, in a real browser (Playwright driving Debian's chromium)
against the real supervisor and `mcp-server-time`: keyboard-only flows (add a server, try a
tool and answer its approval, remove a server with Enter landing on Cancel first), axe-core
finding no serious or critical violation on any view or dialog, nothing scrolling sideways at
400 and 375 px, and fifty servers with the filter."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LIGHTSERVER, LIGHTTOOLSERVER, wait_state, write_atom
from tests.studio_helpers import (
    browser,
    context,
    open_pane,
    open_studio,
    page,
    row_action,
    server_row,
    sign_in,
    state_of,
)

pytestmark = [pytest.mark.e2e, pytest.mark.browser]
__all__ = ["browser", "context", "page"]  # fixtures, used by name
TIME = ["mcp-server-time", "--local-timezone", "UTC"]
LONG = "a-very-long-server-name-that-goes-on-and-on-" + "x" * 19  # 64 characters, the most a name may have


def expect(locator: Any) -> Any:
    from playwright.sync_api import expect as pw_expect

    return pw_expect(locator)


def _open(monad: Any, page: Any) -> None:
    sign_in(page, open_studio(monad))
    expect(page.locator("#live")).to_have_attribute("data-state", "live")


def _time_atom(home: Path, name: str) -> None:
    write_atom(home, name, 'command = "mcp-server-time"\nargs = ["--local-timezone", "UTC"]\n')


def _focused(page: Any) -> str:
    """The focused element's accessible label: aria-label, else its text, else its id."""
    return str(page.evaluate("""() => { const e = document.activeElement;
        return e ? (e.getAttribute('aria-label') || e.textContent.trim() || e.id || e.tagName) : ''; }"""))


def _tab_to(page: Any, label: str, *, back: bool = False, limit: int = 80) -> None:
    """Press Tab (Shift+Tab with `back`) until the focused element's label is `label`."""
    for _ in range(limit):
        if _focused(page) == label:
            return
        page.keyboard.press("Shift+Tab" if back else "Tab")
    raise AssertionError(f"{label!r} not reached by keyboard; focus is on {_focused(page)!r}")


def test_keyboard_only_add_try_approve_and_remove(monad: Any, page: Any, monad_home: Path) -> None:
    _time_atom(monad_home, "time")
    wait_state(monad, "time", "connected")
    _open(monad, page)
    kb = page.keyboard

    # Add a server.
    _tab_to(page, "Add server")
    kb.press("Enter")
    form = page.get_by_role("dialog", name="Add server")
    expect(form.get_by_label("Name")).to_be_focused()
    kb.type("clock")
    _tab_to(page, "f-command")
    kb.type("mcp-server-time")
    kb.press("Tab")  # Arguments: one input each, added with its button
    assert _focused(page) == "Add argument"
    kb.press("Enter")
    assert _focused(page) == "Argument 1"
    kb.type("--local-timezone")
    _tab_to(page, "Add argument")
    kb.press("Enter")
    kb.type("UTC")
    _tab_to(page, "Save")
    kb.press("Enter")
    expect(form).to_have_count(0)
    assert _focused(page) == "Add server"  # back where it opened from
    expect(state_of(page, "clock")).to_have_text("connected", timeout=30_000)

    # Arrow keys move within the list; Enter opens the pane; Escape closes it, focus on the row.
    _tab_to(page, "clock")
    kb.press("ArrowDown")
    assert _focused(page) == "time"
    kb.press("ArrowUp")
    assert _focused(page) == "clock"
    kb.press("Enter")
    pane = page.locator("#details")
    expect(pane.get_by_role("heading", name="clock")).to_be_focused()
    assert page.evaluate("location.hash") == "#/capabilities/mcp-servers/clock"
    kb.press("Escape")
    expect(pane).to_be_hidden()
    assert _focused(page) == "clock"

    # Edit from the row's menu: the form, Escape, focus back on the menu's button.
    _tab_to(page, "More actions for clock")
    kb.press("Enter")
    kb.press("ArrowDown")
    assert _focused(page) == "Edit clock"
    kb.press("Enter")
    edit = page.get_by_role("dialog", name="Edit clock")
    expect(edit.get_by_label("Command")).to_be_focused()
    kb.press("Escape")
    expect(edit).to_have_count(0)
    assert _focused(page) == "More actions for clock"

    # Try a tool: the form opens in the pane with focus on its first field; the approval takes
    # focus, answering it goes on to the result, which takes focus.
    _tab_to(page, "Tools", back=True)
    kb.press("Enter")
    _tab_to(page, "Try time__get_current_time")
    kb.press("Enter")
    panel = page.get_by_role("region", name="Try time__get_current_time")
    expect(panel.get_by_label("timezone")).to_be_focused()
    kb.type("UTC")
    kb.press("Enter")
    card = page.get_by_role("article", name="Approval for time__get_current_time")
    expect(card.get_by_role("button", name="Allow once")).to_be_focused()
    expect(page.locator("#approvals [aria-live]")).to_contain_text("time__get_current_time")
    kb.press("Enter")
    result = panel.get_by_label("Result of time__get_current_time")
    expect(result).to_be_focused()
    expect(result).to_contain_text('"timezone": "UTC"')
    kb.press("Escape")  # closes the Try panel; focus back on its Try button
    expect(panel).to_have_count(0)
    assert _focused(page) == "Try time__get_current_time"

    # Remove: the dialog opens on Cancel, so Enter keeps the server; Escape closes it too.
    _tab_to(page, "MCP servers", back=True)
    kb.press("Enter")
    _tab_to(page, "More actions for clock")
    kb.press("Enter")
    kb.press("End")
    assert _focused(page) == "Remove clock"
    kb.press("Enter")
    confirm = page.get_by_role("dialog", name="Remove clock?")
    expect(confirm.get_by_role("button", name="Cancel")).to_be_focused()
    kb.press("Enter")
    expect(confirm).to_have_count(0)
    assert (monad_home / "atoms" / "mcp" / "clock.toml").exists()
    assert _focused(page) == "More actions for clock"
    kb.press("Enter")
    kb.press("End")
    kb.press("Enter")
    expect(confirm.get_by_role("button", name="Cancel")).to_be_focused()
    kb.press("Escape")
    expect(confirm).to_have_count(0)
    assert (monad_home / "atoms" / "mcp" / "clock.toml").exists()
    kb.press("Enter")
    kb.press("End")
    kb.press("Enter")
    kb.press("Tab")
    assert _focused(page) == "Remove"
    kb.press("Enter")
    expect(server_row(page, "clock")).to_have_count(0)
    assert not (monad_home / "atoms" / "mcp" / "clock.toml").exists()


def _axe_problems(page: Any, where: str) -> list[str]:
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page)
    return [f"{where}: {v['id']} ({v['impact']}): {v['help']} — "
            + "; ".join(n["target"][0] if isinstance(n["target"][0], str) else str(n["target"]) for n in v["nodes"][:3])
            for v in results.response["violations"] if v["impact"] in ("serious", "critical")]


def test_no_serious_accessibility_violation_on_any_view_or_dialog(monad: Any, page: Any, monad_home: Path) -> None:
    _time_atom(monad_home, "time")
    assert monad("mcp", "add", "off", "--disabled", "--", "true").code == 0
    assert monad("mcp", "add", "broken", "--", "/nonexistent/mcp-server").code == 0
    wait_state(monad, "time", "connected")
    _open(monad, page)
    expect(state_of(page, "broken")).to_have_text("failed")
    problems = _axe_problems(page, "MCP servers")
    server_row(page, "time").get_by_role("button", name="More actions for time").click()
    problems += _axe_problems(page, "a row's menu")
    page.keyboard.press("Escape")
    server_row(page, "time").get_by_role("link", name="time").click()
    expect(page.locator("#details").get_by_role("table", name="Journal rows")).to_be_visible()
    problems += _axe_problems(page, "the details pane")
    page.get_by_role("button", name="Add server").click()
    problems += _axe_problems(page, "Add server")
    page.get_by_role("dialog", name="Add server").get_by_role("button", name="Cancel").click()
    row_action(page, "time", "Edit")
    expect(page.get_by_role("dialog", name="Edit time")).to_be_visible()
    problems += _axe_problems(page, "Edit")
    page.keyboard.press("Escape")
    row_action(page, "off", "Remove")
    expect(page.get_by_role("dialog", name="Remove off?")).to_be_visible()
    problems += _axe_problems(page, "Remove")
    page.keyboard.press("Escape")
    page.get_by_role("navigation", name="Sections").get_by_role("link", name="Tools").click()
    expect(page.get_by_role("button", name="Try time__get_current_time")).to_be_visible()
    problems += _axe_problems(page, "Tools")
    page.get_by_role("button", name="Try time__get_current_time").click()
    panel = page.get_by_role("region", name="Try time__get_current_time")
    panel.get_by_label("timezone").fill("UTC")
    panel.get_by_role("button", name="Call").click()
    expect(page.get_by_role("article", name="Approval for time__get_current_time")).to_be_visible()
    problems += _axe_problems(page, "Try, with an approval waiting")
    page.get_by_role("button", name="Allow once").click()
    expect(panel.get_by_role("group", name="Tool result")).to_be_visible()
    problems += _axe_problems(page, "a result")
    page.get_by_role("navigation", name="Sections").get_by_role("link", name="Transcript").click()
    expect(page.get_by_role("table", name="Calls")).to_be_visible()
    problems += _axe_problems(page, "Transcript")
    assert problems == [], "\n".join(problems)


def _no_sideways(page: Any, where: str) -> None:
    width = page.evaluate("[document.scrollingElement.scrollWidth, innerWidth]")
    wide = page.evaluate("""() => [...document.querySelectorAll('body *')]
        .filter(e => e.getBoundingClientRect().right > innerWidth + 1 && e.offsetParent !== null)
        .slice(0, 6).map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))""")
    assert width[0] <= width[1], f"{where}: the page is {width[0]} px wide in a {width[1]} px window: {wide}"


@pytest.mark.parametrize("width", [375, 400])
def test_narrow_nothing_scrolls_sideways_and_long_names_fit(browser: Any, monad: Any, monad_home: Path,
                                                            width: int) -> None:
    """At 400 px and at 375 px (a small phone's width, where a new-user trial found the
    Agents page's badges running over their column: test_studio_agents.py)."""
    _time_atom(monad_home, "time")
    _time_atom(monad_home, LONG)
    assert monad("mcp", "add", "broken", "--", "/nonexistent/mcp-server-with-a-long-path/" + "y" * 80).code == 0
    wait_state(monad, "time", "connected")
    ctx = browser.new_context(viewport={"width": width, "height": 800})
    ctx.set_default_timeout(20_000)
    try:
        page = ctx.new_page()
        _open(monad, page)
        expect(state_of(page, LONG)).to_have_text("connected", timeout=30_000)
        _no_sideways(page, "MCP servers")
        link = server_row(page, LONG).get_by_role("link", name=LONG)
        expect(link).to_have_attribute("title", LONG)  # truncated, the whole name on hover
        link.click()
        pane = page.locator("#details")
        expect(pane.get_by_role("table", name="Journal rows")).to_be_visible()
        box = pane.bounding_box()
        assert box is not None and box["x"] == 0 and box["width"] <= width  # over the list
        _no_sideways(page, "the pane")
        pane.get_by_role("button", name=f"Close details of {LONG}").click()
        server_row(page, "time").get_by_role("button", name="More actions for time").click()
        _no_sideways(page, "a row's menu")
        page.keyboard.press("Escape")
        page.get_by_role("button", name="Add server").click()
        form = page.get_by_role("dialog", name="Add server")
        form.get_by_label("Name").fill("n" * 10_000)
        form.get_by_label("Command").fill("true")
        form.get_by_role("button", name="Save").click()
        expect(form.locator("#err-name")).to_be_visible()
        assert form.evaluate("d => d.scrollWidth <= d.clientWidth"), "the long name overflows its dialog"
        _no_sideways(page, "Add server with a 10,000-character name")
        form.get_by_role("button", name="Cancel").click()
        for view in ("Tools", "Transcript"):
            page.get_by_role("navigation", name="Sections").get_by_role("link", name=view).click()
            expect(page.get_by_role("heading", name=view, level=1)).to_be_visible()
            _no_sideways(page, view)
        page.get_by_role("navigation", name="Sections").get_by_role("link", name="Tools").click()
        page.locator("tbody[data-server='time']").get_by_role("button", name="Try time__get_current_time").click()
        panel = page.get_by_role("region", name="Try time__get_current_time")
        expect(panel.get_by_label("timezone")).to_be_focused()
        _no_sideways(page, "Try")
        page.keyboard.type("UTC")
        page.keyboard.press("Enter")
        card = page.get_by_role("article", name="Approval for time__get_current_time")
        expect(card.get_by_role("button", name="Allow once")).to_be_in_viewport()  # over the pane, in view
        _no_sideways(page, "an approval waiting")
        card.get_by_role("button", name="Allow once").click()
        expect(panel.get_by_label("Result of time__get_current_time")).to_be_in_viewport()
        _no_sideways(page, "a result")
        panel.get_by_role("button", name="Close").click()
        # Its exposed names are shortened to fit the 64-character limit (docs/tools.md).
        page.locator(f"tbody[data-server='{LONG}']").get_by_role("button").first.click()
        expect(page.locator(".try")).to_be_visible()
        _no_sideways(page, "Try of a long-named server's tool")
    finally:
        ctx.close()


def test_the_transcripts_calls_fit_at_400_px_and_keep_their_columns_at_1920(browser: Any, monad: Any) -> None:
    """The Calls table ran 670 px wide in a 400 px window: it scrolled sideways inside its own
    view, a scrollbar the page-wide check (`_no_sideways`) does not see. In a narrow window
    each call is a card, its tool on top, then a labelled line per field; at 1920 px it is a
    row of columns, each short cell on one line."""
    assert monad("mcp", "add", "notes", "--", sys.executable, LIGHTSERVER).code == 0
    wait_state(monad, "notes", "connected")
    for text in ("hello", "a long argument value that goes on and on " * 3):
        assert monad("mcp", "call", "notes__echo", "--arg", f"text={text}", "--yes").code == 0
    ctx = browser.new_context(viewport={"width": 400, "height": 800})
    ctx.set_default_timeout(20_000)
    try:
        page = ctx.new_page()
        _open(monad, page)
        page.get_by_role("navigation", name="Sections").get_by_role("link", name="Transcript").click()
        table = page.get_by_role("table", name="Calls")
        rows = table.locator("tbody").get_by_role("row")
        expect(rows).to_have_count(2)
        _no_sideways(page, "Transcript")
        sideways = page.locator("#transcript-view").evaluate("v => [v.scrollWidth, v.clientWidth]")
        assert sideways[0] <= sideways[1], f"the Transcript view scrolls sideways: {sideways}"
        box = table.bounding_box()
        assert box is not None and box["x"] + box["width"] <= 400, box
        cells = rows.first.get_by_role("cell")  # still a table's cells to a screen reader
        time, tool = cells.nth(0).bounding_box(), cells.nth(2).bounding_box()
        assert time is not None and tool is not None and tool["y"] < time["y"], (time, tool)  # the tool on top
        expect(cells.nth(2)).to_have_text("notes__echo")
        label = cells.nth(0).evaluate("td => getComputedStyle(td, '::before').content")
        assert label == '"Time"', label
        assert _axe_problems(page, "Transcript at 400 px") == []

        page.set_viewport_size({"width": 1920, "height": 900})
        expect(table.get_by_role("columnheader", name="Arguments")).to_be_visible()
        time, tool = cells.nth(0).bounding_box(), cells.nth(2).bounding_box()
        assert time is not None and tool is not None
        assert tool["x"] > time["x"] + time["width"] and abs(tool["y"] - time["y"]) < 2, (time, tool)  # side by side
        lines = cells.nth(0).evaluate("td => { const r = document.createRange(); r.selectNodeContents(td); "
                                      "return r.getClientRects().length; }")
        assert lines == 1, lines  # the date and the time on one line
        assert cells.nth(0).evaluate("td => getComputedStyle(td, '::before').content") == "none"
    finally:
        ctx.close()


def test_fifty_servers_list_and_filter(monad: Any, page: Any, monad_home: Path) -> None:
    for i in range(50):
        write_atom(monad_home, f"srv-{i:02d}", 'command = "true"\nenabled = false\n')
    _time_atom(monad_home, "time")
    wait_state(monad, "time", "connected")
    _open(monad, page)
    rows = page.get_by_role("table", name="MCP servers").locator("tbody tr:not([hidden])")
    expect(rows).to_have_count(51)
    box = page.get_by_label("Filter servers by name, state or tool")
    box.fill("srv-07")
    expect(rows).to_have_count(1)
    expect(page.get_by_text("1 of 51 servers")).to_be_visible()
    box.fill("disabled")  # by state
    expect(rows).to_have_count(50)
    box.fill("get_current")  # by tool: only the server that has it
    expect(rows).to_have_count(1)
    expect(state_of(page, "time")).to_be_visible()
    box.fill("nothing-like-this")
    expect(page.get_by_text("No server matches the filter.")).to_be_visible()
    # The same filter in Tools: tools grouped by server.
    box.fill("time")
    page.get_by_role("navigation", name="Sections").get_by_role("link", name="Tools").click()
    tools_filter = page.get_by_label("Filter tools by server, name or description")
    expect(tools_filter).to_have_value("time")
    group = page.locator("tbody[data-server='time']")
    expect(group).to_be_visible()
    expect(group.get_by_role("rowheader")).to_have_text("time · 2")  # a filter that hides none: the count
    tools_filter.fill("convert")
    expect(page.get_by_role("button", name="Try time__convert_time")).to_be_visible()
    expect(page.get_by_role("button", name="Try time__get_current_time")).to_be_hidden()
    expect(group.get_by_role("rowheader")).to_have_text("time · 1 of 2")  # what is shown, of how many
    tools_filter.fill("")
    expect(group.get_by_role("rowheader")).to_have_text("time · 2")


def test_the_small_things_duplicate_name_edit_hint_labels(monad: Any, page: Any, monad_home: Path) -> None:
    assert monad("mcp", "add", "off", "--disabled", "--", "true").code == 0
    _open(monad, page)
    expect(state_of(page, "off")).to_have_text("disabled")
    page.get_by_role("button", name="Add server").click()
    form = page.get_by_role("dialog", name="Add server")
    # The checkbox's label shows the command as code, not between literal backticks.
    required = form.locator("label[for='f-required']")
    expect(required.locator("code")).to_have_text("monad daemon start")
    assert "`" not in required.inner_text()
    # A name that exists: what the page offers, not the CLI's `--force`.
    form.get_by_label("Name").fill("off")
    form.get_by_label("Command").fill("true")
    form.get_by_role("button", name="Save").click()
    error = form.locator("#err-name")
    expect(error).to_contain_text("exists already")
    assert "--force" not in error.inner_text()
    # A name taken in agents.json, or but for its case: said at Name too, not at the form's top
    # (a new-user trial saw nothing: the top had scrolled out of view, the focus stayed on Save).
    legacy = {"mcpServers": {"legacy": {"command": "true", "enabled": False}}}
    (monad_home / "agents.json").write_text(json.dumps(legacy))
    name = form.get_by_label("Name", exact=True)
    for taken, reason in (("legacy", "is already defined in `agents.json`"),
                          ("OFF", "differs from the existing server `off` only in case")):
        name.fill(taken)
        form.get_by_role("button", name="Save").click()
        expect(error).to_contain_text(reason)
        expect(name).to_have_attribute("aria-invalid", "true")
        expect(name).to_have_accessible_description(re.compile(reason))
        expect(name).to_be_focused()
        expect(form.locator("#err-form")).to_be_hidden()
    assert _axe_problems(page, "Add server, a name taken") == []
    form.get_by_role("button", name="Cancel").click()
    # The edit form says where it will write, not "Saved to" before anything is saved.
    row_action(page, "off", "Edit")
    edit = page.get_by_role("dialog", name="Edit off")
    expect(edit).to_contain_text("Defined in atoms/mcp/off.toml")
    assert "Saved to" not in edit.inner_text()
    edit.get_by_role("button", name="Cancel").click()
    # A message after an action lets clicks through around it and can be dismissed.
    server_row(page, "off").get_by_role("button", name="Enable off").click()
    toast = page.locator(".toast").filter(has_text="enabled off")
    expect(toast).to_be_visible()
    assert page.locator(".toasts").evaluate("e => getComputedStyle(e).pointerEvents") == "none"
    toast.get_by_role("button", name="Dismiss message").click()
    expect(toast).to_have_count(0)
    # The URL says which server is open: a reload opens it again.
    server_row(page, "off").get_by_role("link", name="off").click()
    page.reload()
    expect(page.locator("#details").get_by_role("heading", name="off", exact=True)).to_be_visible()


def _spilled(page: Any, selector: str) -> list[str]:
    """Cells under `selector` whose content is wider than the cell, or runs past its edges."""
    return list(page.evaluate("""(sel) => [...document.querySelectorAll(sel)]
        .filter(c => c.offsetParent !== null)
        .flatMap(c => { const r = c.getBoundingClientRect(); const out = []; const what = c.textContent.trim();
          if (c.scrollWidth > c.clientWidth + 1)
            out.push(`${c.className} '${what}' needs ${c.scrollWidth} px of ${c.clientWidth}`);
          for (const e of c.querySelectorAll('button, .badge')) { const b = e.getBoundingClientRect();
            if (b.left < r.left - 1 || b.right > r.right + 1)
              out.push(`${c.className} '${e.textContent.trim()}' runs out of its cell`); }
          return out; })""", selector))


@pytest.mark.parametrize("width", [375, 400, 1280])
def test_server_rows_and_the_forms_check_boxes_fit(browser: Any, monad: Any, monad_home: Path, width: int) -> None:
    """Found by a new-user trial at 400 px: the TOOLS header ran into ACTIONS, a two-digit tool
    count sat under the Reconnect button and the state badge spilled out of its column. And in
    Add server, "Required" and "Enabled" were set in the Try form's monospace, the Required box
    alone on a line above its label."""
    import sys

    
    _time_atom(monad_home, "filesystem")  # a common ten-letter name: shown whole at 400 px too
    write_atom(monad_home, "many", f"command = {sys.executable!r}\nargs = [{LIGHTTOOLSERVER!r}, '--many', '12']\n"
                                   "timeout = 60\n")
    wait_state(monad, "many", "connected", timeout=90)
    ctx = browser.new_context(viewport={"width": width, "height": 800})
    ctx.set_default_timeout(20_000)
    try:
        page = ctx.new_page()
        _open(monad, page)
        count = server_row(page, "many").locator("td.col-3")
        if width > 640:
            expect(count).to_have_text("18")  # a two-digit count
        else:
            expect(count).to_be_hidden()  # in the details: the name gets the room
        expect(state_of(page, "filesystem")).to_have_text("connected", timeout=30_000)
        spilled = _spilled(page, "table.servers th, table.servers td")
        assert not spilled, spilled
        name = server_row(page, "filesystem").get_by_role("link", name="filesystem")
        assert name.evaluate("e => e.scrollWidth <= e.clientWidth"), "`filesystem` is cut short"
        page.get_by_role("button", name="Add server").click()
        form = page.get_by_role("dialog", name="Add server")
        body_font = page.evaluate("getComputedStyle(document.body).fontFamily")
        for label in ("Enabled", "Required"):
            box = form.get_by_label(label, exact=False).first
            text = form.locator(f"label[for='{box.get_attribute('id')}']")
            assert text.evaluate("e => getComputedStyle(e).fontFamily") == body_font, label
            box_at, text_at = box.bounding_box(), text.bounding_box()
            assert box_at and text_at and text_at["y"] <= box_at["y"] + box_at["height"], \
                f"{label}: its check box is on a line of its own ({box_at}, {text_at})"
    finally:
        ctx.close()


def test_a_server_whose_file_is_broken_offers_its_details_not_a_reconnect_that_fails(
        monad: Any, page: Any, monad_home: Path) -> None:
    """Found by a new-user trial: a malformed atom's row offered Reconnect, which the supervisor
    always refuses ("its definition is invalid"). Its first action is now Details (the reason
    and the file); once the file is fixed by hand, Reconnect is back. The refusal, asked from
    the menu, sets monad's backticked names as code."""
    _time_atom(monad_home, "time")
    path = write_atom(monad_home, "broken", "command = [\n")
    wait_state(monad, "time", "connected")
    _open(monad, page)
    expect(state_of(page, "broken")).to_have_text("failed")
    row = server_row(page, "broken")
    expect(row.get_by_role("button", name="Reconnect broken", exact=True)).to_have_count(0)
    row.get_by_role("button", name="Details broken", exact=True).click()
    pane = page.locator("#details")
    expect(pane).to_contain_text("malformed TOML")
    expect(pane).to_contain_text("atoms/mcp/broken.toml")
    expect(server_row(page, "time").get_by_role("button", name="Reconnect time", exact=True)).to_be_visible()
    # Asked anyway (its menu): the refusal's names are set as code, not wrapped in backticks.
    row.get_by_role("button", name="More actions for broken").click()
    page.get_by_role("menuitem", name="Reconnect broken").click()
    toast = page.locator(".toast.error").filter(has_text="not reconnecting")
    expect(toast.locator("code").first).to_have_text("broken")
    assert "`" not in toast.inner_text(), toast.inner_text()
    path.write_text('command = "mcp-server-time"\n')
    expect(state_of(page, "broken")).to_have_text("connected", timeout=30_000)
    expect(row.get_by_role("button", name="Reconnect broken", exact=True)).to_be_visible()


def test_reasons_in_the_list_and_the_journal_set_backticked_names_as_code_and_stay_text(
        monad: Any, page: Any, monad_home: Path) -> None:
    """Found by a new-user trial: the server list's reason cell and the pane's journal rows
    showed monad's backticked names with their backticks (toasts set them as code). A server's
    own words go in a reason too (its stderr), so hostile markup there stays text: no <img>
    is made, its onerror never runs."""
    hostile = "<img src=x onerror=window.pwned=1>"
    line = f"cannot open `{hostile}`; see `settings.toml`"
    code = f"import sys; print({line!r}, file=sys.stderr); sys.exit(3)"
    write_atom(monad_home, "bad", f"command = {json_str(sys.executable)}\nargs = [\"-c\", {json_str(code)}]\n")
    _open(monad, page)
    cell = server_row(page, "bad").locator("td.col-2")
    expect(cell.locator("code").first).to_have_text(hostile, timeout=30_000)
    expect(cell.locator("code").nth(1)).to_have_text("settings.toml")
    assert "`" not in cell.inner_text(), cell.inner_text()
    server_row(page, "bad").get_by_role("link", name="bad").click()
    pane = page.locator("#details")
    journal = pane.get_by_role("table", name="Journal rows")
    expect(journal.locator("td code").filter(has_text="settings.toml").first).to_be_visible()
    assert "`" not in journal.inner_text(), journal.inner_text()
    state = pane.locator("dl.facts dd").first
    expect(state.locator("code").first).to_have_text(hostile)
    assert page.locator("img").count() == 0
    assert page.evaluate("() => window.pwned") is None
    assert _axe_problems(page, "a reason with code") == []


def json_str(text: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's)."""
    return json.dumps(text)


def test_at_1920px_the_page_uses_the_width_and_a_hash_stays_on_one_line(
        browser: Any, monad: Any, monad_home: Path) -> None:
    """Found by a new-user trial at 1920 px: the page stopped at ~1590 px (a max-width), and the
    pane's journal wrapped a pin mismatch's sha256 hashes mid-hash over a dozen lines. The page
    now spans the window; a hash is one line, cut with `…`, whole in the DOM (copy, screen
    readers) and its `title`."""
    pinned = "sha256:" + "ab" * 32
    write_atom(monad_home, "pinned", 'command = "mcp-server-time"\n\n[trust]\n'
                                     f'pinnedToolHash = "{pinned}"\n')
    _time_atom(monad_home, "time")
    wait_state(monad, "pinned", "degraded")
    ctx = browser.new_context(viewport={"width": 1920, "height": 1000})
    ctx.set_default_timeout(20_000)
    try:
        page = ctx.new_page()
        _open(monad, page)
        tools = server_row(page, "pinned").locator("td.col-3")
        expect(tools).to_have_text("refused")
        assert tools.evaluate("e => e.scrollHeight <= parseFloat(getComputedStyle(e).lineHeight) * 1.5 + 12"), \
            "the tool count's `refused` wraps"
        pane = open_pane(page, "pinned")
        split = page.locator("#view .split").bounding_box()
        assert split is not None and split["x"] + split["width"] >= 1920 - 40, f"the page stops at {split}"
        journal = pane.get_by_role("table", name="Journal rows")
        hashes = journal.locator("code.hash")
        expect(hashes.first).to_be_visible()
        for where in (journal, pane.locator("dl.facts dd").first):
            for code in where.locator("code.hash").all():
                text = code.text_content() or ""
                assert text.startswith("sha256:") and len(text) == 71 and code.get_attribute("title") == text, text
                lines = code.evaluate("e => e.getClientRects().length")
                box = code.bounding_box()
                assert lines == 1 and box is not None and box["height"] < 24, f"{text} takes {lines} lines ({box})"
        assert journal.locator("code.hash").filter(has_text=pinned).count() == 1
        spilled = _spilled(page, "table.journal td, table.servers td:not(.col-2)")  # a reason is cut with `…`
        assert not spilled, spilled
        _no_sideways(page, "at 1920 px")
    finally:
        ctx.close()


def test_an_empty_argument_can_be_entered_and_is_written(monad: Any, page: Any, monad_home: Path) -> None:
    """Found by a new-user trial: the Add form's one-line-per-argument box dropped empty lines,
    so `--flag ""` could not be entered. Each argument is an input now; an empty one is an
    empty argument, in the middle or last, and the atom says so. Pasting lines makes one
    argument per line."""
    import tomllib

    from tests.studio_helpers import fill_args

    _open(monad, page)
    page.get_by_role("button", name="Add server").click()
    form = page.get_by_role("dialog", name="Add server")
    form.get_by_label("Name").fill("flagged")
    form.get_by_label("Command").fill("true")
    fill_args(form, ["--label", "", "--flag", ""])
    expect(form.get_by_label("Argument 2", exact=True)).to_have_attribute("placeholder", "(empty argument)")
    # Lines pasted into one input: one argument each (the copy's last line break adds none).
    form.get_by_role("button", name="Add argument").click()
    form.get_by_label("Argument 5", exact=True).evaluate("""(input) => {
        const data = new DataTransfer(); data.setData('text/plain', 'one\\ntwo\\n');
        const paste = new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true });
        input.dispatchEvent(paste); }""")
    expect(form.get_by_label("Argument 6", exact=True)).to_have_value("two")
    expect(form.get_by_label("Argument 7", exact=True)).to_have_count(0)
    form.get_by_role("button", name="Save").click()
    expect(form).to_have_count(0)
    atom = monad_home / "atoms" / "mcp" / "flagged.toml"
    assert tomllib.loads(atom.read_text())["args"] == ["--label", "", "--flag", "", "one", "two"]

    # Edit shows each, empty ones included; Remove takes one out, the rest stay as they were.
    row_action(page, "flagged", "Edit")
    edit = page.get_by_role("dialog", name="Edit flagged")
    expect(edit.locator(".arg-value")).to_have_count(6)
    expect(edit.get_by_label("Argument 4", exact=True)).to_have_value("")
    for _ in range(2):
        edit.get_by_role("button", name="Remove argument 5").click()
    edit.get_by_label("Argument 1", exact=True).fill("--name")
    edit.get_by_role("button", name="Save").click()
    expect(edit).to_have_count(0)
    assert tomllib.loads(atom.read_text())["args"] == ["--name", "", "--flag", ""]


def test_a_change_of_view_by_url_closes_an_open_dialog_without_its_action(
        monad: Any, page: Any, monad_home: Path) -> None:
    assert monad("mcp", "add", "off", "--disabled", "--", "true").code == 0
    _open(monad, page)
    page.get_by_role("button", name="Add server").click()
    form = page.get_by_role("dialog", name="Add server")
    form.get_by_label("Name").fill("clock")
    form.get_by_label("Command").fill("mcp-server-time")
    page.evaluate("location.hash = '#/tools'")  # typed in the address bar, or a link
    expect(form).to_have_count(0)
    expect(page.locator("#tools-view")).to_be_visible()
    assert not (monad_home / "atoms" / "mcp" / "clock.toml").exists()  # not saved
    page.go_back()  # back to the list; a removal asked there is not done when the view goes
    expect(state_of(page, "off")).to_have_text("disabled")
    row_action(page, "off", "Remove")
    confirm = page.get_by_role("dialog", name="Remove off?")
    expect(confirm).to_be_visible()
    page.go_forward()
    expect(confirm).to_have_count(0)
    expect(page.locator("#tools-view")).to_be_visible()
    assert (monad_home / "atoms" / "mcp" / "off.toml").exists()
    page.go_back()
    expect(state_of(page, "off")).to_have_text("disabled")
