"""The Studio's Add and Edit forms set the value of a `$VAR` they reference (docs/studio.md
"Edits, secrets and bad input"): a password input per variable, written to MONAD_HOME/env
before the definition, never shown back. Real browser, real supervisor, real server."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LIGHTSERVER, status_of
from tests.e2e.test_env_file import _server_environ
from tests.studio_helpers import browser, context, fill_args, open_studio, page, row_action, sign_in, state_of

pytestmark = [pytest.mark.e2e, pytest.mark.browser]
__all__ = ["browser", "context", "page"]  # fixtures, used by name
SECRET = "SENTINEL-studio-env-7c2e"


def expect(locator: Any) -> Any:
    from playwright.sync_api import expect as pw_expect

    return pw_expect(locator)


def _no_secret(page: Any) -> None:
    values = page.evaluate("[...document.querySelectorAll('input, textarea, select')].map(e => e.value)")
    assert SECRET not in page.content() and not any(SECRET in v for v in values)


def test_the_add_form_sets_a_referenced_variable_and_never_shows_it_back(
        monad: Any, page: Any, monad_home: Path) -> None:
    answer = open_studio(monad)
    sign_in(page, answer)
    expect(page.get_by_role("status").filter(has_text="Live")).to_be_visible()
    try:
        page.get_by_role("button", name="Add server").click()
        form = page.get_by_role("dialog", name="Add server")
        form.get_by_label("Name").fill("docs")
        form.get_by_label("Transport").select_option("stdio")
        form.get_by_label("Command").fill(sys.executable)
        fill_args(form, [LIGHTSERVER])
        form.get_by_role("button", name="Add variable").click()
        form.get_by_label("Variable name").fill("DOCS_KEY")
        form.get_by_label("Variable value").fill("${DOCS_KEY}")
        form.get_by_label("Variable value").press("Tab")  # `change`: the form looks for references
        value = form.get_by_label("Value of DOCS_KEY")
        expect(value).to_have_attribute("type", "password")
        expect(form.get_by_text("not set: type its value")).to_be_visible()
        value.fill(SECRET)
        form.get_by_role("button", name="Save").click()
        expect(form).to_be_hidden()
        expect(state_of(page, "docs")).to_have_text("connected", timeout=30_000)
        assert _server_environ(status_of(monad, "docs")["pid"])["DOCS_KEY"] == SECRET
        assert (monad_home / "env").read_text() == f"DOCS_KEY={SECRET}\n"
        assert "${DOCS_KEY}" in (monad_home / "atoms" / "mcp" / "docs.toml").read_text()
        _no_secret(page)

        # Editing: the reference is shown as written, the value's input is empty and says where
        # it is set; saved untouched, nothing changes.
        row_action(page, "docs", "Edit")
        form = page.get_by_role("dialog", name="Edit docs")
        expect(form.get_by_label("Variable value")).to_have_value("${DOCS_KEY}")
        expect(form.get_by_label("Value of DOCS_KEY")).to_have_value("")
        expect(form.get_by_text("set in MONAD_HOME/env")).to_be_visible()
        _no_secret(page)
        form.get_by_role("button", name="Save").click()
        expect(form).to_be_hidden()
        assert (monad_home / "env").read_text() == f"DOCS_KEY={SECRET}\n"
    finally:
        monad("daemon", "stop")
