"""The Tools page's "Find a tool for a task" box (issue 40), in a real browser against the
real supervisor: real servers' published tools (bench/search/catalog/, served by
tests/servers/catalogserver.py) ranked by the gateway's own index, and Try on a hit."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SERVERS, wait_state, write_atom
from tests.studio_helpers import browser, context, open_studio, page, sign_in

pytestmark = [pytest.mark.e2e, pytest.mark.browser]
__all__ = ["browser", "context", "page"]  # fixtures, used by name
CATALOG = Path(__file__).resolve().parents[2] / "bench" / "search" / "catalog"


def expect(locator: Any) -> Any:
    from playwright.sync_api import expect as pw_expect

    return pw_expect(locator)


def test_the_search_box_ranks_tools_for_a_task(monad: Any, monad_home: Path, page: Any) -> None:
    for name in ("git", "github", "slack"):
        args = [str(SERVERS / "catalogserver.py"), str(CATALOG / f"{name}.json")]
        write_atom(monad_home, name, f"command = {json.dumps(sys.executable)}\nargs = {json.dumps(args)}\n")
    sign_in(page, open_studio(monad))
    for name in ("git", "github", "slack"):
        wait_state(monad, name, "connected", timeout=90)
    expect(page.get_by_role("status").filter(has_text="Live")).to_be_visible()
    page.get_by_role("navigation", name="Sections").get_by_role("link", name="Tools").click()
    box = page.get_by_role("searchbox", name="Find a tool for a task, in plain words")
    box.fill("what changed in my working tree?")
    hits = page.get_by_role("list", name="Tools found for the task").get_by_role("listitem")
    expect(hits.first).to_contain_text(re.compile(r"git__git_(diff_unstaged|status)"))
    assert hits.count() == 10
    box.fill("post a message to the #general channel")
    expect(hits.first).to_contain_text("slack__slack_post_message")
    hits.first.get_by_role("button", name="Try slack__slack_post_message (found)").click()
    expect(page.get_by_role("region", name="Try slack__slack_post_message")).to_be_visible()
    box.fill("qqzx vvkw")  # no tool's words: a sentence, not item 1 of the ranked list
    expect(page.get_by_role("status").filter(has_text="No tool matches the task.")).to_be_visible()
    expect(page.get_by_role("list", name="Tools found for the task")).to_be_hidden()
    box.fill("")
    expect(page.get_by_role("list", name="Tools found for the task")).to_be_hidden()
    expect(page.get_by_text("No tool matches the task.")).to_be_hidden()
    monad("daemon", "stop")
