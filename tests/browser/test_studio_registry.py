"""The Studio's Registry view in Chromium (Playwright), against the real supervisor and a
loopback registry (tests/servers/registry.py): search, a server's details, Install with a
form for its variables (a secret in a password input, never shown back), the installed
server connecting in the MCP servers view; the keyboard, and axe-core on the view."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.browser.test_studio_ux import _axe_problems, _no_sideways
from tests.registry_helpers import (
    REGISTRY_SCRIPT,
    TIME_VERSION,
    hostile_entries,
    memory_server,
    publish,
    remote_server,
    time_server,
)
from tests.studio_helpers import browser, context, open_studio, page, sign_in, state_of

pytestmark = [pytest.mark.e2e, pytest.mark.browser]
__all__ = ["browser", "context", "page"]  # fixtures, used by name
SECRET = "SENTINEL-studio-registry-9d1e"


def expect(locator: Any) -> Any:
    from playwright.sync_api import expect as pw_expect

    return pw_expect(locator)


@pytest.fixture
def registry(servers: Any, http_testserver: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    folder = tmp_path / "registry"
    for doc in (time_server(), memory_server(), remote_server(http_testserver())):
        publish(folder, doc)
    # A hostile entry: a shell for a runner, and a `javascript:` website.
    hostile = next(doc for name, doc, _ in hostile_entries(tmp_path / "ran") if name == "shell-hint")
    publish(folder, {**hostile, "websiteUrl": "javascript:document.title='pwned'"})
    base = servers.start(REGISTRY_SCRIPT, str(folder), "--page", "2")
    monkeypatch.setenv("MONAD_REGISTRY_URL", base)
    return str(base)


def _open(monad: Any, page: Any) -> None:
    sign_in(page, open_studio(monad))
    expect(page.get_by_role("status").filter(has_text="Live")).to_be_visible()
    page.get_by_role("navigation", name="Sections").get_by_role("link", name="Registry").click()


def _links(page: Any) -> Any:
    return page.get_by_role("table", name="Registry servers").get_by_role("link")


def _no_secret(page: Any) -> None:
    values = page.evaluate("[...document.querySelectorAll('input, textarea, select')].map(e => e.value)")
    assert SECRET not in page.content() and not any(SECRET in v for v in values)


def test_search_details_and_install_a_remote_with_a_secret(monad: Any, page: Any, registry: str,
                                                           monad_home: Path) -> None:
    _open(monad, page)
    try:
        # Every server, over the registry's pages of two: "More servers" loads the rest.
        expect(_links(page)).to_have_count(2)
        page.get_by_role("button", name="More servers").click()
        expect(_links(page)).to_have_count(4)
        expect(page.get_by_role("button", name="More servers")).to_be_hidden()
        problems = _axe_problems(page, "Registry")

        search = page.get_by_role("searchbox", name="Search the registries")
        search.fill("weather")
        search.press("Enter")
        expect(_links(page)).to_have_count(1)
        _links(page).first.focus()
        page.keyboard.press("Enter")
        pane = page.locator("#registry-details")
        expect(pane.get_by_role("heading", name="com.example/weather")).to_be_focused()
        expect(pane.get_by_text("Weather, hosted")).to_be_visible()
        expect(pane.get_by_label("Version of com.example/weather")).to_have_value("2.0.0")
        form = pane.get_by_role("form", name="Install com.example/weather")
        key = form.get_by_label("X-API-Key")
        expect(key).to_have_attribute("type", "password")
        expect(form.get_by_label("X-Region")).to_be_visible()
        problems += _axe_problems(page, "the Registry details and Install form")

        # Without the required secret: the installer's own error, nothing written.
        form.get_by_role("button", name="Install").click()
        expect(form.get_by_role("alert")).to_contain_text("X-API-Key")
        assert not (monad_home / "atoms" / "mcp" / "weather.toml").exists()

        key.fill(SECRET)
        form.get_by_label("X-Region").select_option("us-east-1")
        form.get_by_label("Server name").fill("forecast")
        form.get_by_role("button", name="Install").click()
        expect(form.get_by_role("status")).to_contain_text("Installed com.example/weather 2.0.0 as forecast")
        expect(key).to_have_value("")
        _no_secret(page)
        atom = tomllib.loads((monad_home / "atoms" / "mcp" / "forecast.toml").read_text())
        assert atom["headers"] == {"X-API-Key": SECRET, "X-Region": "us-east-1"}
        problems += _axe_problems(page, "after Install")

        # Escape closes the pane, and the focus goes back to the server's link.
        page.keyboard.press("Escape")
        expect(pane).to_be_hidden()
        expect(_links(page).first).to_be_focused()

        # It connects, as every server does.
        page.get_by_role("navigation", name="Sections").get_by_role("link", name="MCP servers").click()
        expect(state_of(page, "forecast")).to_have_text("connected", timeout=60_000)
        _no_secret(page)
        assert problems == [], "\n".join(problems)
    finally:
        monad("daemon", "stop")


def test_install_mcp_server_time_from_the_view_and_see_it_connect(monad: Any, page: Any, registry: str,
                                                                  monad_home: Path) -> None:
    _open(monad, page)
    try:
        search = page.get_by_role("searchbox", name="Search the registries")
        # A hostile entry: the list says why it is refused, the details make no link of `javascript:`.
        search.fill("shell-hint")
        search.press("Enter")
        table = page.get_by_role("table", name="Registry servers")
        expect(_links(page)).to_have_count(1)
        expect(table).to_contain_text("refused: `runtimeHint` `/bin/sh` is not the runner of a pypi package")
        _links(page).first.click()
        pane = page.locator("#registry-details")
        expect(pane.get_by_role("list", name="Packages and remotes")).to_contain_text("refused: `runtimeHint`")
        expect(pane.get_by_role("form")).to_have_count(0)
        assert pane.locator("a[href^='javascript']").count() == 0 and "pwned" not in page.title()

        search.fill("time")
        search.press("Enter")
        command = f"uvx mcp-server-time=={TIME_VERSION} --local-timezone UTC"
        expect(table).to_contain_text(command)  # the exact command line, as `monad mcp search` shows it
        _links(page).filter(has_text="io.github.modelcontextprotocol/time").click()
        expect(pane.get_by_role("link", name="https://github.com/modelcontextprotocol/servers")).to_be_visible()
        expect(pane.get_by_role("list", name="Packages and remotes")).to_contain_text(
            f"pypi mcp-server-time@{TIME_VERSION} (stdio)")
        expect(pane.get_by_role("list", name="Packages and remotes")).to_contain_text(command)
        form = pane.get_by_role("form", name="Install io.github.modelcontextprotocol/time")
        expect(form.get_by_label("local-timezone")).to_have_attribute("placeholder", "UTC")
        form.get_by_role("button", name="Install").click()
        expect(form.get_by_role("status")).to_contain_text("as time")
        expect(form.get_by_role("status")).to_contain_text(f"It runs {command}.")
        atom = tomllib.loads((monad_home / "atoms" / "mcp" / "time.toml").read_text())
        assert atom["args"][-3:] == [f"mcp-server-time=={TIME_VERSION}", "--local-timezone", "UTC"], atom
        form.get_by_role("link", name="time").click()  # the link in the message opens the server
        expect(page.locator("#details").get_by_role("heading", name="time")).to_be_visible()
        # The first run downloads the package (the atom allows 120 s to connect).
        expect(state_of(page, "time")).to_have_text("connected", timeout=240_000)
    finally:
        monad("daemon", "stop")


def test_at_400px_the_details_go_over_the_list_and_nothing_scrolls_sideways(browser: Any, monad: Any,
                                                                             registry: str) -> None:
    ctx = browser.new_context(viewport={"width": 400, "height": 800})
    ctx.set_default_timeout(20_000)
    try:
        page = ctx.new_page()
        _open(monad, page)
        expect(_links(page)).to_have_count(2)
        _no_sideways(page, "Registry")
        _links(page).first.click()
        form = page.get_by_role("form", name="Install com.example/weather")
        expect(form.get_by_label("X-API-Key")).to_be_visible()
        _no_sideways(page, "the Registry details")
        page.keyboard.press("Escape")
        expect(page.locator("#registry-details")).to_be_hidden()
    finally:
        ctx.close()
        monad("daemon", "stop")
