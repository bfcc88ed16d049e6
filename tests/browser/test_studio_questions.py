"""A server's questions during a call made from the Studio's Try form, in Chromium (Playwright
driving Debian's chromium) against the real supervisor and a real SDK server that asks
(`tests/servers/toolaskserver.py`): a form's typed fields, a URL with its host in bold, the
answer sent back to the server; sampling refused with the reason; axe-core on the dialogs.
And the Authorize card of a call waiting for its server's authorization
(tests/servers/oauth_as.py): its link is the authorization server's URL, and the call goes on
once the tokens arrive."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.auth_helpers import OAUTH_AS
from tests.browser.test_studio_tools_page import _open, _try, expect
from tests.browser.test_studio_ux import _axe_problems
from tests.conftest import SERVERS, wait_state, write_atom
from tests.studio_helpers import browser, context, page

pytestmark = [pytest.mark.e2e, pytest.mark.browser]
__all__ = ["browser", "context", "page"]  # fixtures, used by name
ASKSERVER = str(SERVERS / "toolaskserver.py")


def test_try_asks_a_servers_form_and_url_and_refuses_sampling(monad: Any, page: Any, monad_home: Path) -> None:
    write_atom(monad_home, "ask", f"command = {json.dumps(sys.executable)}\nargs = {json.dumps([ASKSERVER])}\n"
                                  'timeout = 60\n[trust]\nautoApproveTools = ["ask__signup", "ask__connect", '
                                  '"ask__summarize"]\n')
    assert monad("daemon", "start").code == 0
    try:
        wait_state(monad, "ask", "connected", timeout=60)
        _open(monad, page)
        problems: list[str] = []

        # Form mode: one typed field per property; the typed answer reaches the server.
        panel = _try(page, "ask__signup")
        panel.get_by_role("button", name="Call").click()
        dialog = page.get_by_role("dialog", name="ask asks (during ask__signup)")
        expect(dialog).to_be_visible(timeout=30_000)
        expect(dialog).to_contain_text("Sign up for the example service")
        problems += _axe_problems(page, "a form question")
        dialog.get_by_label("name", exact=True).fill("Ada")
        expect(dialog.get_by_label("age", exact=True)).to_have_attribute("type", "number")  # typed
        dialog.get_by_role("button", name="Send answer").click()
        expect(dialog.get_by_label("age", exact=True)).to_have_attribute("aria-invalid", "true")  # required
        dialog.get_by_label("age", exact=True).fill("36")
        dialog.get_by_label("newsletter", exact=True).check()
        dialog.get_by_role("button", name="Send answer").click()
        expect(dialog).to_be_hidden()
        expect(panel.get_by_role("region", name="Result of ask__signup")).to_contain_text(
            "action: accept; name=Ada; age=36; newsletter=True", timeout=30_000)

        # URL mode: the whole URL, its host in bold, a link the person may follow; the page
        # opens nothing itself, and the action goes back.
        panel = _try(page, "ask__connect")
        panel.get_by_role("button", name="Call").click()
        dialog = page.get_by_role("dialog", name="ask asks (during ask__connect)")
        expect(dialog).to_be_visible(timeout=30_000)
        expect(dialog.locator(".url-host strong")).to_have_text("calendar.example.com")
        expect(dialog).to_contain_text("https://calendar.example.com/connect?session=e42")
        link = dialog.get_by_role("link", name="Open the page")
        expect(link).to_have_attribute("href", "https://calendar.example.com/connect?session=e42")
        expect(link).to_have_attribute("rel", "noopener noreferrer")
        problems += _axe_problems(page, "a URL question")
        assert len(page.context.pages) == 1  # nothing opened
        dialog.get_by_role("button", name="I opened it").click()
        expect(panel.get_by_role("region", name="Result of ask__connect")).to_contain_text("action: accept",
                                                                                            timeout=30_000)

        # Sampling: no model in a page; refused, the server told why.
        panel = _try(page, "ask__summarize")
        panel.get_by_label("text", exact=True).fill("a long text")
        panel.get_by_role("button", name="Call").click()
        expect(panel.get_by_role("region", name="Result of ask__summarize")).to_contain_text(
            "the Studio answers forms and URLs (elicitation/create), not `sampling/createMessage`",
            timeout=30_000)
        assert problems == [], problems
        # Each question is journaled with its outcome, never the answer's content.
        events = [e for e in monad("journal", "--server", "ask", "--json").json() if e["kind"] == "question"]
        seen = [(e["detail"]["about"], e["detail"]["outcome"], e["detail"].get("action")) for e in events]
        assert sorted(seen) == [("ask__connect", "answered", "accept"), ("ask__signup", "answered", "accept"),
                                ("ask__summarize", "refused", None)], seen
        assert "Ada" not in json.dumps(events)
    finally:
        monad("daemon", "stop")


def test_a_call_waiting_for_authorization_shows_an_authorize_card(monad: Any, page: Any, monad_home: Path,
                                                                  servers: Any) -> None:
    """An agent's gateway call to a server in `needs-auth`: the agent only says it will open
    the URL; the person authorizes from the Studio's card instead (Chromium follows the link
    to the authorization server, which redirects to the supervisor's loopback callback), and
    the agent's call goes on."""
    import threading

    import anyio

    from tests.e2e.test_auth_on_demand import _agent_call

    base = servers.start(OAUTH_AS)
    write_atom(monad_home, "remote", f'transport = "http"\nurl = "{base}/mcp"\n'
                                     'trust = {autoApproveTools = ["remote__echo"]}\n')
    assert monad("daemon", "start").code == 0
    try:
        wait_state(monad, "remote", "needs-auth", timeout=60)
        _open(monad, page)
        asked: list[str] = []
        answers: list[Any] = []
        agent = threading.Thread(target=lambda: answers.append(
            anyio.run(lambda: _agent_call(monad_home, asked, follow=False))))
        agent.start()
        card = page.get_by_role("article", name="Authorization for remote__echo")
        expect(card).to_be_visible(timeout=30_000)
        expect(card).to_contain_text("an agent, through the gateway")
        expect(card.locator(".url-host strong")).to_have_text(base.removeprefix("http://"))
        link = card.get_by_role("link", name="Authorize remote")
        href = link.get_attribute("href")
        assert href is not None and href.startswith(f"{base}/authorize?")
        problems = _axe_problems(page, "an Authorize card")
        assert problems == [], problems
        # The server's own Authorize (as the MCP servers view asks it) joins the call's run:
        # the same URL, not a second flow that would leave the card's link stale.
        from monad_cli.cli.control import ControlClient
        from monad_cli.core.paths import paths

        run = ControlClient(paths(), timeout=60).post("/v1/mcp-servers/remote/authorize", {})
        assert run["url"] == href, run
        with page.context.expect_page() as opened:
            link.click()
        tab = opened.value
        tab.wait_for_load_state()
        expect(card).to_be_hidden(timeout=30_000)  # the tokens arrived: the call goes on
        agent.join(timeout=60)
        assert answers == [(False, "hello through the gateway")], answers
        assert asked == [href]  # the agent was shown the same URL
    finally:
        monad("daemon", "stop")
