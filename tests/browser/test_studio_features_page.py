"""A call's progress, a server's resources and prompts, and the variables of MONAD_HOME/env in
the Studio page, in a real browser (Playwright driving Debian's chromium) against the real
supervisor and real servers (the SDK-written tests/servers/resourceserver.py,
lighttoolserver.py, and `@modelcontextprotocol/server-everything`), with the keyboard only, at
1280 and 400 px, axe-core finding no serious or critical violation, nothing scrolling
sideways, and no secret value anywhere in the page."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.test_studio_ux import _axe_problems, _focused, _no_sideways, _tab_to
from tests.conftest import LIGHTTOOLSERVER, SERVERS, everything_bin, status_of, wait_state, write_atom
from tests.e2e.test_env_file import _server_environ
from tests.studio_helpers import browser, open_studio, sign_in, state_of

pytestmark = [pytest.mark.e2e, pytest.mark.browser]
__all__ = ["browser"]  # a fixture, used by name
RESOURCESERVER = str(SERVERS / "resourceserver.py")
SECRET = "SENTINEL-features-page-9e41"
WIDTHS = [1280, 400]


def expect(locator: Any) -> Any:
    from playwright.sync_api import expect as pw_expect

    return pw_expect(locator)


@pytest.fixture(params=WIDTHS, ids=lambda w: f"{w}px")
def page(browser: Any, request: Any) -> Iterator[Any]:
    """A page `request.param` px wide whose uncaught script errors fail the test."""
    ctx = browser.new_context(viewport={"width": request.param, "height": 800}, accept_downloads=True)
    ctx.set_default_timeout(20_000)
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    yield pg
    ctx.close()
    assert not errors, f"script errors in the page: {errors}"


def _open(monad: Any, page: Any) -> None:
    sign_in(page, open_studio(monad))
    expect(page.locator("#live")).to_have_attribute("data-state", "live")


def _section(page: Any, name: str) -> None:
    """Go to a view of the header by keyboard: Tab to its link, Enter."""
    page.locator("body").focus()
    _tab_to(page, name)
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name=name, level=1)).to_be_visible()


def _no_secret(page: Any) -> None:
    values = page.evaluate("[...document.querySelectorAll('input, textarea, select')].map(e => e.value)")
    assert SECRET not in page.content() and not any(SECRET in v for v in values)


# -- 12: a running call's progress ---------------------------------------------------------------
def test_a_running_calls_progress_shows_live_and_goes_at_its_end(monad: Any, page: Any, monad_home: Path) -> None:
    write_atom(monad_home, "p", f"command = {json.dumps(sys.executable)}\n"
                                f"args = {json.dumps([LIGHTTOOLSERVER, '--progress'])}\ntimeout = 60\n"
                                '[trust]\nautoApproveTools = ["p__steps"]\n')
    write_atom(monad_home, "everything", f"command = {json.dumps(everything_bin())}\ntimeout = 60\n"
                                         '[trust]\nautoApproveTools = ["everything__trigger-long-running-operation"]\n')
    write_atom(monad_home, "tk", f"command = {json.dumps(sys.executable)}\n"
                                 f"args = {json.dumps([str(SERVERS / 'tasks_server.py')])}\ntimeout = 60\n")
    wait_state(monad, "p", "connected", timeout=60)
    wait_state(monad, "everything", "connected", timeout=60)
    wait_state(monad, "tk", "connected", timeout=60)
    _open(monad, page)
    kb = page.keyboard

    # Try, by keyboard: the progress (value, total, message) in a live region while it runs.
    _section(page, "Tools")
    _tab_to(page, "Try p__steps", limit=200)
    kb.press("Enter")
    panel = page.get_by_role("region", name="Try p__steps")
    expect(panel.get_by_label("n", exact=True)).to_be_focused()
    kb.type("3")
    kb.press("Tab")
    kb.type("1.5")
    kb.press("Enter")
    live = panel.locator(".progress-text")
    expect(live).to_have_attribute("aria-live", "polite")
    expect(live).to_have_text("1 of 3 · step 1", timeout=15_000)
    bar = panel.get_by_role("progressbar", name="Progress of p__steps")
    assert bar.get_attribute("max") == "3" and bar.get_attribute("value") == "1"
    expect(live).to_have_text("2 of 3 · step 2")
    expect(panel.locator(".call-status")).to_have_text("Running… (Stop cancels it)")
    _no_sideways(page, "a call in progress")
    assert _axe_problems(page, "a call in progress") == []
    result = panel.get_by_label("Result of p__steps")
    expect(result).to_be_focused(timeout=15_000)
    expect(result).to_contain_text("did 3 steps")
    # Ended: the outcome, not the last step.
    expect(bar).to_be_hidden()
    expect(panel.locator(".progress-text")).to_have_text("")
    kb.press("Escape")

    # A Task's card: the server's status message while it works, not once it completed (the
    # server still says "sleeping 3 s" in its last status).
    detached = monad("mcp", "call", "tk__slow", "--arg", "seconds=3", "--yes", "--detach")
    assert detached.code == 0, detached
    _section(page, "Transcript")
    card = page.get_by_role("article", name="Task tk__slow")
    expect(card.locator(".task-message")).to_have_text("sleeping 3 s")
    expect(card.locator(".task-state")).to_have_text("completed", timeout=30_000)
    expect(card.locator(".task-message")).to_be_hidden()
    expect(card).to_contain_text("slept 3")
    assert "sleeping" not in card.inner_text()

    # A call from a terminal: its row in the Transcript shows its progress while it runs.
    cli = subprocess.Popen([sys.executable, "-m", "monad_cli", "mcp", "call",
                            "everything__trigger-long-running-operation", "--arg", "duration=6", "--arg", "steps=3"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        row = page.get_by_role("table", name="Calls").locator("tbody tr").filter(
            has_text="everything__trigger-long-running-operation")
        expect(row.get_by_role("progressbar", name="Progress of everything__trigger-long-running-operation")) \
            .to_be_visible(timeout=20_000)
        expect(row.locator(".progress-text")).to_have_text("1 of 3")
        expect(row.locator(".progress-text")).to_have_text("2 of 3")
        _no_sideways(page, "the Transcript with a call in progress")
        assert cli.wait(60) == 0
        expect(row.locator(".badge")).to_have_text("ok")
        expect(row.get_by_role("progressbar")).to_have_count(0)
    finally:
        cli.kill()
        cli.wait()


# -- 13: resources and prompts -------------------------------------------------------------------
def _pane_by_keyboard(page: Any, name: str) -> Any:
    page.locator("body").focus()
    _tab_to(page, name)
    page.keyboard.press("Enter")
    pane = page.locator("#details")
    expect(pane.get_by_role("heading", name=name, exact=True)).to_be_focused()
    return pane


def test_a_servers_resources_and_prompts_are_browsed_by_keyboard(monad: Any, page: Any, monad_home: Path) -> None:
    write_atom(monad_home, "notes", f"command = {json.dumps(sys.executable)}\n"
                                    f"args = {json.dumps([RESOURCESERVER, '--media'])}\ntimeout = 60\n"
                                    f'[env]\nNOTE_SECRET = "{SECRET}"\n')
    write_atom(monad_home, "everything", f"command = {json.dumps(everything_bin())}\ntimeout = 60\n")
    wait_state(monad, "notes", "connected", timeout=60)
    wait_state(monad, "everything", "connected", timeout=60)
    _open(monad, page)
    kb = page.keyboard
    pane = _pane_by_keyboard(page, "notes")
    resources = pane.get_by_role("list", name="Resources of notes")
    expect(resources.get_by_role("listitem")).to_have_count(6)
    reader = pane.get_by_role("region", name="Resource read from notes")

    # A text resource: its text, focus on it; Close goes back to its Open button.
    _tab_to(page, "Open note://r/alpha")
    kb.press("Enter")
    expect(reader).to_be_focused()
    expect(reader.locator("pre")).to_have_text("the first note (version 0)")
    _tab_to(page, "Close the resource note://r/alpha")
    kb.press("Enter")
    expect(reader).to_be_hidden()
    assert _focused(page) == "Open note://r/alpha"

    # An image blob: shown inline from a data: URL, which the page's CSP allows.
    _tab_to(page, "Open note://r/logo.png")
    kb.press("Enter")
    image = reader.get_by_role("img")
    expect(image).to_be_visible()
    assert (image.get_attribute("src") or "").startswith("data:image/png;base64,iVBOR")
    page.wait_for_function("() => document.querySelector('#details .feature-output img').naturalWidth === 6")

    # Any other blob: its size and type, and a Download of its bytes.
    _tab_to(page, "Open note://r/data.bin")
    kb.press("Enter")
    expect(reader).to_contain_text("1000 bytes of application/octet-stream")
    _tab_to(page, "Download data.bin")
    with page.expect_download() as got:
        kb.press("Enter")
    download = got.value
    assert download.suggested_filename == "data.bin"
    assert Path(download.path()).read_bytes() == bytes(range(256)) * 3 + bytes(232)

    # HTML is text, never a page: no element from it, no script run.
    _tab_to(page, "Open note://r/page.html", back=True)
    kb.press("Enter")
    expect(reader.locator("pre")).to_contain_text('<img src=x onerror="window.pwned=1">')
    assert reader.locator("img, script, h1").count() == 0
    assert page.evaluate("() => window.pwned") is None

    # The server's own secret, as every answer has it: `***`.
    _tab_to(page, "Open note://r/env")
    kb.press("Enter")
    expect(reader.locator("pre")).to_have_text("NOTE_SECRET=***")
    _no_secret(page)

    # A template: its variable filled, the URI it reads shown as it is typed.
    template = pane.get_by_role("form", name="Template dynamic")
    _tab_to(page, template.get_by_label("name").get_attribute("id") or "")
    kb.type("Ada Lovelace")
    expect(template).to_contain_text("Reads note://r/dynamic/Ada%20Lovelace")
    kb.press("Enter")
    expect(reader).to_be_focused()
    expect(reader.locator("pre")).to_have_text("note Ada Lovelace")

    # A prompt: its argument filled, its messages, markup as text.
    prompt = pane.get_by_role("form", name="Prompt greet")
    _tab_to(page, prompt.get_by_label("name").get_attribute("id") or "")
    kb.type("<b>Ada</b>")
    kb.press("Enter")
    messages = pane.get_by_role("region", name="Prompt messages from notes")
    expect(messages).to_be_focused()
    listed = messages.get_by_role("list", name="Messages of greet")
    expect(listed.get_by_role("listitem")).to_have_text("user Hello, <b>Ada</b>!", use_inner_text=True)
    assert listed.locator("b").count() == 0
    _no_sideways(page, "a resource and a prompt read")
    assert _axe_problems(page, "a server's resources and prompts") == []
    kb.press("Escape")

    # server-everything: a blob from its template, a prompt's required argument checked first.
    pane = _pane_by_keyboard(page, "everything")
    blob = pane.get_by_role("form", name="Template Dynamic Blob Resource")
    _tab_to(page, blob.get_by_label("resourceId").get_attribute("id") or "", limit=200)
    kb.type("7")
    kb.press("Enter")
    reader = pane.get_by_role("region", name="Resource read from everything")
    expect(reader).to_contain_text("demo://resource/dynamic/blob/7")
    expect(reader.get_by_role("button", name="Download 7")).to_be_visible()
    expect(reader).to_contain_text("bytes of text/plain")
    args = pane.get_by_role("form", name="Prompt args-prompt")
    _tab_to(page, "Get prompt args-prompt", limit=200)
    kb.press("Enter")
    city = args.get_by_label("city")
    expect(city).to_have_attribute("aria-invalid", "true")
    _tab_to(page, city.get_attribute("id") or "", back=True)
    kb.type("Lyon")
    kb.press("Enter")
    messages = pane.get_by_role("region", name="Prompt messages from everything")
    expect(messages).to_be_focused()
    expect(messages).to_contain_text("What's weather in Lyon?")
    assert "undefined" not in messages.inner_text()  # `state` left empty: not sent
    _no_sideways(page, "server-everything's resources and prompts")
    assert _axe_problems(page, "server-everything's resources and prompts") == []


# -- 14: variables -------------------------------------------------------------------------------
def test_variables_are_listed_set_replaced_and_removed_never_shown(monad: Any, page: Any, monad_home: Path) -> None:
    from tests.conftest import LIGHTSERVER

    write_atom(monad_home, "docs", f"command = {json.dumps(sys.executable)}\nargs = {json.dumps([LIGHTSERVER])}\n"
                                   '[env]\nDOCS_KEY = "${DOCS_KEY}"\n')
    (monad_home / "env").write_text("OTHER=1\n")
    (monad_home / "env").chmod(0o600)
    _open(monad, page)
    expect(state_of(page, "docs")).to_have_text("failed", timeout=30_000)  # `$DOCS_KEY` is not set
    kb = page.keyboard
    _section(page, "Variables")
    table = page.get_by_role("table", name="Variables")
    row = table.locator("tr[data-name='DOCS_KEY']")
    expect(row).to_contain_text("not set")
    expect(row.get_by_role("link", name="docs")).to_be_visible()
    expect(table.locator("tr[data-name='OTHER']")).to_contain_text("MONAD_HOME/env")
    _no_sideways(page, "Variables")
    assert _axe_problems(page, "Variables") == []

    # Set: the row's button puts its name in the form; the value goes in a password input.
    _tab_to(page, "Set DOCS_KEY")
    kb.press("Enter")
    value = page.get_by_label("Value", exact=True)
    expect(value).to_be_focused()
    expect(value).to_have_attribute("type", "password")
    expect(page.get_by_label("Name", exact=True)).to_have_value("DOCS_KEY")
    kb.type(SECRET)
    kb.press("Enter")
    expect(row).to_contain_text("MONAD_HOME/env")
    expect(value).to_have_value("")
    # Found by a new-user trial: the row's buttons broke mid-word ("Repla|ce", "Remo|ve").
    lines = page.evaluate("""[...document.querySelectorAll('table.variables button')].map((b) => {
        const r = document.createRange(); r.selectNodeContents(b);
        return [b.textContent, new Set([...r.getClientRects()].map((c) => Math.round(c.top))).size]; })""")
    assert lines and all(n == 1 for _, n in lines), lines
    assert (monad_home / "env").read_text() == f"OTHER=1\nDOCS_KEY={SECRET}\n"
    wait_state(monad, "docs", "connected")
    assert _server_environ(status_of(monad, "docs")["pid"])["DOCS_KEY"] == SECRET
    _no_secret(page)

    # Replace, from the form itself, by keyboard.
    _tab_to(page, "Replace DOCS_KEY")
    kb.press("Enter")
    kb.type(SECRET + "-2")
    kb.press("Enter")
    expect(page.locator(".toast").filter(has_text="replaced")).to_be_visible()
    assert (monad_home / "env").read_text() == f"OTHER=1\nDOCS_KEY={SECRET}-2\n"
    _no_secret(page)
    # Nothing typed is not sent (a trial replaced a secret with nothing by one click on Save).
    _tab_to(page, "Replace DOCS_KEY")
    kb.press("Enter")
    kb.press("Enter")
    expect(page.locator("#var-value-error")).to_have_text("type its value (Remove takes a variable out)")
    assert _focused(page) == "var-value"
    assert (monad_home / "env").read_text() == f"OTHER=1\nDOCS_KEY={SECRET}-2\n"
    # A value typed into the name is refused before it is sent.
    _tab_to(page, "var-name", back=True)
    kb.type("DOCS_KEY=oops")
    kb.press("Enter")
    expect(page.locator("#var-name-error")).to_have_text("the name only: its value goes in Value")
    assert "oops" not in (monad_home / "env").read_text()
    assert _focused(page) == "var-name"
    kb.press("Control+A")
    kb.press("Delete")

    # Remove: the dialog opens on Cancel (Enter keeps it); Tab, Enter removes it.
    _tab_to(page, "Remove DOCS_KEY")
    kb.press("Enter")
    confirm = page.get_by_role("dialog", name="Remove DOCS_KEY?")
    expect(confirm).to_contain_text("docs use it")
    expect(confirm.get_by_role("button", name="Cancel")).to_be_focused()
    assert _axe_problems(page, "Remove a variable") == []
    kb.press("Enter")
    expect(confirm).to_have_count(0)
    assert "DOCS_KEY" in (monad_home / "env").read_text()
    assert _focused(page) == "Remove DOCS_KEY"
    kb.press("Enter")
    kb.press("Tab")
    kb.press("Enter")
    expect(row).to_contain_text("not set")
    assert (monad_home / "env").read_text() == "OTHER=1\n"
    expect(row.get_by_role("button", name="Remove DOCS_KEY")).to_have_count(0)
    _no_secret(page)
    assert base64.b64encode(SECRET.encode()).decode() not in page.content()
