"""The page's Sign out button (issue 38 item 1): signed in the way `monad studio` does it (the
browser opens the 0600 redirect file), one click ends every session — this browser's and
another's — and both pages say "Signed out"."""

from __future__ import annotations

from typing import Any

import pytest

from tests.studio_helpers import browser, context, open_studio, page, sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.browser]
__all__ = ["browser", "context", "page"]  # fixtures, used by name


def expect(locator: Any) -> Any:
    from playwright.sync_api import expect as pw_expect

    return pw_expect(locator)


def test_sign_out_from_the_page_ends_every_session(monad: Any, page: Any, browser: Any) -> None:
    sign_in(page, open_studio(monad))
    live = page.get_by_role("status").filter(has_text="Live")
    expect(live).to_be_visible()
    other = browser.new_context()
    try:
        second = other.new_page()
        sign_in(second, open_studio(monad))
        expect(second.get_by_role("status").filter(has_text="Live")).to_be_visible()
        page.get_by_role("button", name="Sign out").click()
        for pg in (page, second):
            expect(pg.locator("#live")).to_have_attribute("data-state", "signed-out", timeout=20_000)
            expect(pg.locator("#live")).to_have_text("Signed out: run monad studio in a terminal for a new login URL")
        expect(page.get_by_role("button", name="Sign out")).to_be_hidden()
        assert page.request.get(page.url.split("/studio/")[0] + "/v1/health").status == 401
    finally:
        other.close()
