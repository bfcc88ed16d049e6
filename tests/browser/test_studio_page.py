"""The Studio page in a real browser (Playwright driving Debian's chromium) against the real
supervisor and real servers (`mcp-server-time`, the test servers, the test authorization
servers): live state, adding from the page, CLI and hand edits appearing live, disable /
enable / reconnect / remove, editing a server with a secret header, bad input next to its
field, Authorize (loopback in a new tab, and the device flow), the stream dropping and
coming back, and a second browser with a spent login URL."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.auth_helpers import DEVICE_AS, OAUTH_AS, Servers, assert_no_sentinel, stats
from tests.conftest import LIGHTSERVER, _stop_supervisor, wait_for
from tests.studio_helpers import (
    browser,
    context,
    fill_args,
    journal_rows,
    open_pane,
    open_studio,
    page,
    reason_of,
    row_action,
    server_row,
    sign_in,
    state_of,
    tools_of,
)

pytestmark = [pytest.mark.e2e, pytest.mark.browser]
__all__ = ["browser", "context", "page"]  # fixtures, used by name
TIME = ["mcp-server-time", "--local-timezone", "UTC"]
SECRET = "SENTINEL-studio-5e1f"


def expect(locator: Any) -> Any:
    from playwright.sync_api import expect as pw_expect

    return pw_expect(locator)


def _atom(home: Path, name: str) -> Path:
    return home / "atoms" / "mcp" / f"{name}.toml"


def _open(monad: Any, page: Any) -> dict[str, Any]:
    answer = open_studio(monad)
    sign_in(page, answer)
    expect(page.get_by_role("status").filter(has_text="Live")).to_be_visible()
    # Set once: if anything reloaded the page, the mark would be gone.
    page.evaluate("window.studioTestMark = 1")
    return answer


def _not_reloaded(page: Any) -> None:
    assert page.evaluate("window.studioTestMark") == 1


@pytest.fixture
def servers(monad_home: Path) -> Any:
    s = Servers()
    yield s
    # The supervisor first: a test server stopping would wait for its open sessions.
    _stop_supervisor(monad_home)
    s.stop()


def test_live_state_add_from_the_page_and_cli_and_hand_edits_show_without_reload(
        monad: Any, page: Any, monad_home: Path) -> None:
    assert monad("mcp", "add", "time", "--", *TIME).code == 0
    # The first load, from the login on: no 4xx/5xx and no console error. A browser with a window
    # asks each HTML page's /favicon.ico unless the page names its icon (headless asks none).
    problems: list[str] = []
    pages_without_icon: list[str] = []

    def answered(r: Any) -> None:
        if r.status >= 400:
            problems.append(f"{r.status} {r.url}")
        elif (r.url.startswith("http") and "text/html" in (r.headers.get("content-type") or "")
              and '<link rel="icon"' not in r.text()):
            pages_without_icon.append(r.url.split("?")[0])

    page.on("response", answered)
    page.on("console", lambda m: problems.append(f"console: {m.text}") if m.type == "error" else None)
    _open(monad, page)
    expect(state_of(page, "time")).to_have_text("connected", timeout=30_000)
    expect(tools_of(page, "time")).to_have_text("2")
    assert problems == [] and pages_without_icon == [], (problems, pages_without_icon)
    page.remove_listener("response", answered)
    # Transport, protocol and source are in the pane, beside the list.
    pane = open_pane(page, "time")
    facts = pane.locator("dl.facts")
    expect(facts).to_contain_text("stdio")
    expect(facts).to_contain_text("2026-07-28")
    expect(facts).to_contain_text("atoms/mcp/time.toml")
    pane.get_by_role("button", name="Close details of time").click()
    expect(pane).to_be_hidden()

    # Add from the page: the form, then the row goes connected by itself.
    page.get_by_role("button", name="Add server").click()
    form = page.get_by_role("dialog", name="Add server")
    form.get_by_label("Name").fill("clock")
    form.get_by_label("Transport").select_option("stdio")
    form.get_by_label("Command").fill("mcp-server-time")
    fill_args(form, ["--local-timezone", "UTC"])
    form.get_by_label("Timeout").fill("30")
    form.get_by_label("Start", exact=True).select_option("on-demand")
    form.get_by_label("Stop when idle after").fill("5m")
    form.get_by_role("button", name="Save").click()
    expect(form).to_be_hidden()
    # On demand: started once to learn its tools, then `idle`, still listing them.
    expect(state_of(page, "clock")).to_have_text("idle", timeout=30_000)
    expect(server_row(page, "clock").get_by_role("cell").nth(3)).to_have_text("2")
    expect(server_row(page, "clock").get_by_role("cell").nth(2)).to_contain_text("lists from 20")
    text = _atom(monad_home, "clock").read_text()
    assert 'command = "mcp-server-time"' in text and '"--local-timezone", "UTC"' in text and "timeout = 30" in text
    assert 'start = "on-demand"' in text and 'idleStop = "5m"' in text
    edit = [r for r in journal_rows(monad_home, "edit") if r["server"] == "clock"]
    assert len(edit) == 1 and edit[0]["detail"]["via"] == "studio" and edit[0]["detail"]["action"] == "added"

    # A CLI add, a hand-written atom, and a hand edit that breaks it: all live.
    assert monad("mcp", "add", "from-cli", "--disabled", "--", "true").code == 0
    expect(state_of(page, "from-cli")).to_have_text("disabled")
    _atom(monad_home, "by-hand").write_text(f'command = "{sys.executable}"\nargs = ["{LIGHTSERVER}"]\n')
    expect(state_of(page, "by-hand")).to_have_text("connected", timeout=30_000)
    _atom(monad_home, "by-hand").write_text("command = 5\n")
    # monad's backticked names are set as code (the cell's text holds no backticks).
    expect(reason_of(page, "by-hand")).to_contain_text(
        "runs its last good definition; config error: atoms/mcp/by-hand.toml: server by-hand, field command")
    expect(reason_of(page, "by-hand").locator("code").first).to_have_text("atoms/mcp/by-hand.toml")
    _atom(monad_home, "by-hand").unlink()
    expect(server_row(page, "by-hand")).to_have_count(0)
    # A server that cannot start says why.
    assert monad("mcp", "add", "broken", "--", "/nonexistent/mcp-server").code == 0
    expect(state_of(page, "broken")).to_have_text("failed")
    expect(reason_of(page, "broken")).to_contain_text("/nonexistent/mcp-server")
    # Then its atom breaks too: nothing runs, so the reason says why it failed, not "runs".
    _atom(monad_home, "broken").write_text(_atom(monad_home, "broken").read_text() + "bogus = 3\n")
    expect(reason_of(page, "broken")).to_contain_text("/nonexistent/mcp-server does not exist; install it, or fix "
                                                      "command in atoms/mcp/broken.toml; config error: ")
    expect(reason_of(page, "broken")).not_to_contain_text("runs")
    # A whole file that cannot be read is listed above the table; the rows stay.
    (monad_home / "agents.json").write_text("{not json")
    problems = page.get_by_role("list", name="Configuration problems")
    expect(problems).to_contain_text("`agents.json:1:2`: malformed JSON")
    (monad_home / "agents.json").unlink()
    expect(problems).to_be_hidden()
    _not_reloaded(page)
    names = page.get_by_role("table", name="MCP servers").locator("tbody").get_by_role("row")
    expect(names).to_have_count(4)  # one row per server: broken, clock, from-cli, time


def test_details_disable_enable_reconnect_and_remove(monad: Any, page: Any, monad_home: Path) -> None:
    assert monad("mcp", "add", "ts", "--", *TIME).code == 0
    assert monad("mcp", "add", "noisy", "--", "sh", "-c", "echo hello from stderr >&2; exit 3").code == 0
    _open(monad, page)
    expect(state_of(page, "ts")).to_have_text("connected", timeout=30_000)
    row = server_row(page, "ts")

    # A row opens to its tools, its stderr tail and its journal rows, in the pane beside it.
    details = open_pane(page, "ts")
    tools = details.get_by_role("table", name="Tools of ts")
    tool = tools.get_by_role("row").filter(has=page.get_by_role("cell", name="ts__get_current_time", exact=True))
    expect(tool.get_by_role("cell").nth(1)).to_have_text("Get current time in a specific timezone")
    expect(tool.get_by_role("cell").nth(2)).to_contain_text("timezone: string (required)")
    expect(details.get_by_role("table", name="Journal rows")).to_contain_text("connected")
    assert page.evaluate("location.hash") == "#/capabilities/mcp-servers/ts"  # the URL says which
    open_pane(page, "noisy")
    expect(details.locator("pre.stderr")).to_contain_text("hello from stderr")
    expect(row.get_by_role("link", name="ts")).to_have_attribute("aria-current", "false")
    page.go_back()  # back: ts again
    expect(details.get_by_role("heading", name="ts", exact=True)).to_be_visible()
    page.go_forward()
    expect(details.get_by_role("heading", name="noisy", exact=True)).to_be_visible()
    assert monad("mcp", "remove", "noisy").code == 0
    expect(details).to_be_hidden()  # its server is gone

    row_action(page, "ts", "Disable")  # from the row's menu
    expect(state_of(page, "ts")).to_have_text("disabled")
    assert "enabled = false" in _atom(monad_home, "ts").read_text()
    row.get_by_role("button", name="Enable ts").click()  # the primary action of a disabled server
    expect(state_of(page, "ts")).to_have_text("connected", timeout=30_000)
    assert "enabled = true" in _atom(monad_home, "ts").read_text()

    row.get_by_role("button", name="Reconnect ts").click()
    wait_for(lambda: any(r["kind"] == "action" and r["server"] == "ts" for r in journal_rows(monad_home)))
    expect(state_of(page, "ts")).to_have_text("connected", timeout=30_000)

    # Remove asks first; Cancel keeps everything.
    row_action(page, "ts", "Remove")
    confirm = page.get_by_role("dialog", name="Remove ts?")
    expect(confirm).to_contain_text("atoms/mcp/ts.toml")
    confirm.get_by_role("button", name="Cancel").click()
    expect(confirm).to_be_hidden()
    assert _atom(monad_home, "ts").exists()
    row_action(page, "ts", "Remove")
    page.get_by_role("dialog", name="Remove ts?").get_by_role("button", name="Remove").click()
    expect(row).to_have_count(0)
    assert not _atom(monad_home, "ts").exists()
    expect(page.get_by_text("No servers yet")).to_be_visible()
    kinds = [(r["detail"]["action"], r["detail"]["via"]) for r in journal_rows(monad_home, "edit")]
    assert kinds == [("edited", "studio"), ("edited", "studio"), ("removed", "studio")]
    _not_reloaded(page)


def test_edit_with_a_secret_header_saved_unchanged_keeps_it_and_the_page_never_holds_it(
        monad: Any, page: Any, monad_home: Path, http_testserver: Any) -> None:
    url = http_testserver()
    assert monad("mcp", "add", "remote", "--url", f"{url}?key={SECRET}-q",
                 "--header", f"X-Api-Key: {SECRET}-h").code == 0
    assert monad("mcp", "add", "local", "--env", f"API_TOKEN={SECRET}-e", "--", sys.executable, LIGHTSERVER).code == 0
    before = {n: _atom(monad_home, n).read_text() for n in ("remote", "local")}
    _open(monad, page)
    expect(state_of(page, "remote")).to_have_text("connected", timeout=30_000)
    expect(state_of(page, "local")).to_have_text("connected", timeout=30_000)

    row_action(page, "remote", "Edit")
    form = page.get_by_role("dialog", name="Edit remote")
    expect(form.get_by_label("URL")).to_have_value(f"{url}?key=***")
    expect(form.get_by_label("Header name")).to_have_value("X-Api-Key")
    value = form.get_by_label("Header value")
    expect(value).to_have_value("")
    expect(value).to_have_attribute("placeholder", "***")
    _assert_no_secret(page)
    form.get_by_role("button", name="Save").click()
    expect(form).to_be_hidden()
    assert _atom(monad_home, "remote").read_text() == before["remote"]  # unchanged, secret and all

    # Changing another field keeps the secret too, and the server reconnects with it.
    row_action(page, "remote", "Edit")
    form = page.get_by_role("dialog", name="Edit remote")
    form.get_by_label("Timeout").fill("20")
    form.get_by_role("button", name="Save").click()
    expect(form).to_be_hidden()
    text = _atom(monad_home, "remote").read_text()
    assert "timeout = 20" in text and f'X-Api-Key = "{SECRET}-h"' in text and f"key={SECRET}-q" in text
    assert "***" not in text
    expect(state_of(page, "remote")).to_have_text("connected", timeout=30_000)

    # An env value typed anew replaces the secret; the others stay.
    row_action(page, "local", "Edit")
    form = page.get_by_role("dialog", name="Edit local")
    expect(form.get_by_label("Variable name")).to_have_value("API_TOKEN")
    form.get_by_role("button", name="Add variable").click()
    form.get_by_label("Variable name").nth(1).fill("MODE")
    form.get_by_label("Variable value").nth(1).fill("fast")
    form.get_by_role("button", name="Save").click()
    expect(form).to_be_hidden()
    text = _atom(monad_home, "local").read_text()
    assert f'API_TOKEN = "{SECRET}-e"' in text and 'MODE = "fast"' in text and "***" not in text

    expect(open_pane(page, "local").get_by_role("table", name="Journal rows")).to_be_visible()
    _assert_no_secret(page)
    monad("daemon", "stop")  # before the HTTP test server: it would wait for the open session


def _assert_no_secret(page: Any) -> None:
    dom = page.content()
    values = page.evaluate("[...document.querySelectorAll('input, textarea, select')].map(e => e.value)")
    assert SECRET not in dom and not any(SECRET in v for v in values)
    assert page.evaluate("document.cookie") == ""  # the session cookie is HttpOnly


def test_bad_input_gets_the_cli_reason_next_to_the_field_and_nothing_is_written(
        monad: Any, page: Any, monad_home: Path) -> None:
    cli = monad("mcp", "add", "bad name!", "--", "true")
    assert cli.code == 2
    _open(monad, page)
    page.get_by_role("button", name="Add server").click()
    form = page.get_by_role("dialog", name="Add server")
    # Empty name and empty command: both said at once, each next to its field; focus on the first.
    form.get_by_role("button", name="Save").click()
    for label, reason in (("Name", "the server's name is empty"), ("Command", "the command is empty")):
        box = form.get_by_label(label, exact=True)
        expect(box).to_have_attribute("aria-invalid", "true")
        expect(box).to_have_accessible_description(re.compile(reason))
    expect(form.get_by_label("Name", exact=True)).to_be_focused()
    # A bad name with the command still empty: the supervisor's reason for the name comes with
    # the form's own for the command (a new-user trial saw the name's only after filling it).
    form.get_by_label("Name").fill("bad name!")
    form.get_by_role("button", name="Save").click()
    expect(form.locator("#err-name")).to_have_text(re.compile("^the name may only contain"))
    expect(form.locator("#err-command")).to_have_text(re.compile("^the command is empty"))
    expect(form.get_by_label("Name", exact=True)).to_be_focused()
    # A bad name, a bad variable name and a bad timeout: the supervisor's reasons all come back
    # from one Save, each next to its field (a new-user trial got one per Save).
    form.get_by_label("Name").fill("bad name!")
    form.get_by_label("Command").fill("true")
    form.get_by_role("button", name="Add variable").click()
    form.get_by_label("Variable name").fill("BAD NAME")
    form.get_by_label("Variable value").fill("x")
    form.get_by_label("Timeout").fill("9999")
    form.get_by_label("Stop when idle after").fill("soon")
    form.get_by_role("button", name="Save").click()
    expect(form.get_by_label("Command", exact=True)).not_to_have_attribute("aria-invalid", "true")
    # The keyboard goes to the first problem, and each invalid field is described by its reason.
    expect(form.get_by_label("Name", exact=True)).to_be_focused()
    expect(form.get_by_label("Stop when idle after")).to_have_attribute("aria-invalid", "true")
    expect(form.get_by_label("Stop when idle after")).to_have_accessible_description(re.compile("^must be a duration"))
    # Beside its field, only what is wrong and what to do: not the server and field it names,
    # which the place says (a new-user trial read "server `bad name!`, field `timeout`: ...").
    error = form.locator("#err-name")
    expect(error).to_have_text(cli.err.strip().removeprefix("error: server name `bad name!`: "))
    expect(form.get_by_label("Name", exact=True)).to_have_attribute("aria-invalid", "true")
    pair = form.locator(".pair").filter(has=page.get_by_label("Variable name"))
    expect(pair.locator(".field-error")).to_have_text("not a valid environment variable name (no `=` or spaces)")
    expect(form.locator("#err-timeout")).to_have_text(
        "must be a number of seconds more than 0 and at most 600, got 9999")
    expect(form.get_by_label("Timeout")).to_have_attribute("aria-invalid", "true")

    form.get_by_label("Name", exact=True).fill("ok-name")
    form.get_by_role("button", name="Remove variable").click()
    form.get_by_role("button", name="Save").click()
    expect(form.locator("#err-timeout")).to_contain_text("must be a number of seconds more than 0 and at most 600")
    expect(error).to_be_hidden()
    assert not list((monad_home / "atoms" / "mcp").glob("*.toml"))
    assert journal_rows(monad_home, "edit") == []
    form.get_by_role("button", name="Cancel").click()
    expect(form).to_be_hidden()


def test_edit_of_a_hand_written_bad_value_shows_it_and_never_rewrites_it(
        monad: Any, page: Any, monad_home: Path) -> None:
    # A new-user trial: Edit showed `start = "ondemand"` as "the default", and Save with nothing
    # changed sent `start: null`, deleting the line; `transport = "htp"` showed a blank select
    # and the URL hidden, and Save sent `transport: ""`.
    hand = (f'# written by hand\ncommand = "{sys.executable}"\nargs = ["{LIGHTSERVER}"]\n'
            'start = "ondemand"  # a typo\ntimeout = 30\n')
    typo = '# by hand too\ntransport = "htp"\nurl = "https://server.invalid/mcp"\n'
    _atom(monad_home, "hand").parent.mkdir(parents=True, exist_ok=True)
    _atom(monad_home, "hand").write_text(hand)
    _atom(monad_home, "typo").write_text(typo)
    _open(monad, page)
    expect(server_row(page, "hand")).to_have_count(1)

    row_action(page, "hand", "Edit")
    form = page.get_by_role("dialog", name="Edit hand")
    start = form.get_by_label("Start", exact=True)
    expect(start).to_have_value("ondemand")
    expect(start.locator("option:checked")).to_have_text("ondemand (invalid)")
    # Said there without the file, server and field, which the place says.
    expect(start).to_have_accessible_description(re.compile("^must be one of always, on-demand, got 'ondemand'"))
    # Saved unchanged, then with another field changed: refused with the reason at Start, and
    # the file is as written (the bad value is never silently replaced).
    form.get_by_role("button", name="Save").click()
    expect(form.locator("#err-start")).to_contain_text("got 'ondemand'")
    form.get_by_label("Timeout").fill("20")
    form.get_by_role("button", name="Save").click()
    expect(form.locator("#err-start")).to_contain_text("got 'ondemand'")
    expect(start).to_have_attribute("aria-invalid", "true")
    expect(form).to_be_visible()
    assert _atom(monad_home, "hand").read_text() == hand
    # Chosen right, it saves, the other lines and comments kept.
    start.select_option("on-demand")
    form.get_by_role("button", name="Save").click()
    expect(form).to_be_hidden()
    text = _atom(monad_home, "hand").read_text()
    assert 'start = "on-demand"' in text and "timeout = 20" in text and "# written by hand" in text, text
    assert f'args = ["{LIGHTSERVER}"]' in text, text

    row_action(page, "typo", "Edit")
    form = page.get_by_role("dialog", name="Edit typo")
    transport = form.get_by_label("Transport")
    expect(transport).to_have_value("htp")
    expect(transport.locator("option:checked")).to_have_text("htp (invalid)")
    expect(form.get_by_label("URL")).to_have_value("https://server.invalid/mcp")  # shown: it has a URL
    expect(form.locator("#err-transport")).to_contain_text("got 'htp'")
    form.get_by_role("button", name="Save").click()
    expect(form.locator("#err-transport")).to_contain_text("got 'htp'")
    assert _atom(monad_home, "typo").read_text() == typo
    assert [r["server"] for r in journal_rows(monad_home, "edit")] == ["hand"]


def test_authorize_opens_the_authorization_server_in_a_new_tab(monad: Any, page: Any, context: Any,
                                                              monad_home: Path, servers: Servers) -> None:
    base = servers.start(OAUTH_AS)
    assert monad("mcp", "add", "remote", "--url", f"{base}/mcp", "--oauth").code == 0
    _open(monad, page)
    expect(state_of(page, "remote")).to_have_text("needs-auth", timeout=30_000)
    with context.expect_page() as new_tab:
        server_row(page, "remote").get_by_role("button", name="Authorize remote").click()
    tab = new_tab.value
    # The authorization server approves at once and sends the tab to the supervisor's
    # one-shot listener on 127.0.0.1, which takes the code.
    tab.wait_for_url(re.compile(r"http://127\.0\.0\.1:\d+/callback/"))
    expect(tab.get_by_text("Authorization received")).to_be_visible()
    assert tab.evaluate("window.opener") is None  # the authorization server gets no handle on the Studio
    dialog = page.get_by_role("dialog", name="Authorize remote")
    expect(dialog.get_by_role("status")).to_contain_text("Authorized")
    expect(state_of(page, "remote")).to_have_text("connected", timeout=30_000)
    s = stats(base)
    assert s["authorize"] == 1 and s["code_exchange"] == 1 and s["resources"] == [f"{base}/mcp"]
    assert "SENTINEL-access-" in _atom(monad_home, "remote").read_text()
    auth = [r for r in journal_rows(monad_home, "auth") if r["server"] == "remote"]
    assert len(auth) == 1 and auth[0]["detail"]["via"] == "studio" and "from the Studio" in auth[0]["reason"]
    # No token in the page, the journal (WAL included), daemon.log or any other file but the atom.
    assert_no_sentinel(monad_home, page.content(), json.dumps(journal_rows(monad_home)))
    dialog.get_by_role("button", name="Close").click()
    expect(dialog).to_be_hidden()


def test_authorize_with_the_device_flow_shows_the_code_and_url(monad: Any, page: Any, monad_home: Path,
                                                              servers: Servers) -> None:
    pending_then_ok = ",".join(["pending"] * 10 + ["ok"])
    base = servers.start(DEVICE_AS, "--device", "--interval", "0.2", "--poll-script", pending_then_ok)
    _atom(monad_home, "dev").parent.mkdir(parents=True, exist_ok=True)
    _atom(monad_home, "dev").write_text(f'url = "{base}/mcp"\n[auth]\nmode = "oauth"\nflow = "device"\n')
    _open(monad, page)
    expect(state_of(page, "dev")).to_have_text("needs-auth", timeout=30_000)
    pages_before = len(page.context.pages)
    server_row(page, "dev").get_by_role("button", name="Authorize dev").click()
    dialog = page.get_by_role("dialog", name="Authorize dev")
    expect(dialog.locator("code.user-code")).to_have_text("WDJB-MJHT")
    expect(dialog.get_by_role("link", name=f"{base}/device")).to_have_attribute("href", f"{base}/device")
    assert len(page.context.pages) == pages_before  # the device flow opens no tab
    expect(dialog.get_by_role("status")).to_contain_text("Authorized", timeout=30_000)
    expect(state_of(page, "dev")).to_have_text("connected", timeout=30_000)
    assert "WDJB-MJHT" not in (monad_home / "logs" / "daemon.log").read_text()
    assert_no_sentinel(monad_home, page.content())


def test_the_page_says_when_the_stream_is_down_and_reconnects_by_itself(monad: Any, page: Any) -> None:
    assert monad("mcp", "add", "a", "--disabled", "--", "true").code == 0
    _open(monad, page)
    expect(state_of(page, "a")).to_have_text("disabled")
    live = page.locator("#live")
    # Drop the stream (window.stop() ends it for good) and keep it from coming back for now.
    page.route("**/v1/events", lambda route: route.abort())
    page.evaluate("window.stop()")
    expect(live).to_have_attribute("data-state", "reconnecting")
    expect(live).to_contain_text("reconnecting")
    assert monad("mcp", "add", "b", "--disabled", "--", "true").code == 0  # happens while it is down
    page.unroute("**/v1/events")
    expect(live).to_have_attribute("data-state", "live", timeout=20_000)
    expect(state_of(page, "b")).to_have_text("disabled")  # caught up from the new stream's snapshot
    _not_reloaded(page)
    # When the supervisor goes away, the page says so (tests/browser/test_studio_restart.py: within 5 s).
    assert monad("daemon", "stop").code == 0
    expect(live).to_have_attribute("data-state", "unreachable")


def test_a_second_browser_with_the_same_url_gets_nothing(monad: Any, page: Any, browser: Any) -> None:
    answer = _open(monad, page)
    cookies = page.context.cookies()
    assert [(c["name"], c["httpOnly"], c["sameSite"]) for c in cookies] == [
        (f"monad_studio_{answer['port']}", True, "Strict")]
    other = browser.new_context()
    try:
        stranger = other.new_page()
        response = stranger.goto(answer["url"])
        assert response is not None and response.status == 401
        expect(stranger.get_by_text("used already or has expired")).to_be_visible()
        assert other.cookies() == []
        response = stranger.goto(f"http://127.0.0.1:{answer['port']}/studio/")
        assert response is not None and response.status == 401
    finally:
        other.close()


def test_lists_sort_names_regardless_of_case(monad: Any, page: Any, monad_home: Path) -> None:
    """Found by a new-user trial: servers `alpha`, `Beta`, `gamma` showed as Beta, alpha, gamma.
    The server list, the Tools view's groups and the Variables view sort as a person reads,
    and as the CLI lists them (tests/e2e/test_name_order.py)."""
    from tests.conftest import wait_state, write_atom

    for name in ("gamma", "Beta", "alpha"):
        write_atom(monad_home, name, 'command = "mcp-server-time"\n')
    write_atom(monad_home, "Zed", 'command = "true"\nenabled = false\n'
                                  'env = { A = "$bKey", B = "$BKey", C = "$aKey" }\n')
    for name in ("gamma", "Beta", "alpha"):
        wait_state(monad, name, "connected")
    sign_in(page, open_studio(monad))
    rows = page.get_by_role("table", name="MCP servers").locator("tbody tr")
    expect(rows).to_have_count(4)
    assert [r.get_attribute("data-name") for r in rows.all()] == ["alpha", "Beta", "gamma", "Zed"]
    sections = page.get_by_role("navigation", name="Sections")
    sections.get_by_role("link", name="Tools").click()
    groups = page.locator("tbody[data-server]")
    expect(groups).to_have_count(3)
    assert [g.get_attribute("data-server") for g in groups.all()] == ["alpha", "Beta", "gamma"]
    sections.get_by_role("link", name="Variables").click()
    variables = page.locator("#variables-view tbody tr[data-name]")
    expect(variables).to_have_count(3)
    assert [v.get_attribute("data-name") for v in variables.all()] == ["aKey", "BKey", "bKey"]
