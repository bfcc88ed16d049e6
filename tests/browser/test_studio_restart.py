"""The Studio across supervisor restarts, in a real browser against the real supervisor:
a stopped supervisor is said within 5 s and the states shown lose their colour; a plain
`monad daemon start` (no `monad studio`) serves the page again on the same port and the same
tab goes live without a new sign-in; the kept state is a 0600 file with digests only."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.studio_helpers import browser, context, open_studio, page, sign_in, state_of

pytestmark = [pytest.mark.e2e, pytest.mark.browser]
__all__ = ["browser", "context", "page"]  # fixtures, used by name


def expect(locator: Any) -> Any:
    from playwright.sync_api import expect as pw_expect

    return pw_expect(locator)


def test_stop_is_said_within_5s_and_daemon_start_brings_the_same_tab_back(
        monad: Any, page: Any, monad_home: Path) -> None:
    assert monad("mcp", "add", "off", "--disabled", "--", "true").code == 0
    answer = open_studio(monad)
    sign_in(page, answer)
    live = page.locator("#live")
    expect(live).to_have_attribute("data-state", "live")
    expect(state_of(page, "off")).to_have_text("disabled")
    page.evaluate("window.studioTestMark = 1")
    cookie = page.context.cookies()[0]["value"]

    kept = monad_home / "studio.json"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    data = json.loads(kept.read_text())
    assert data["port"] == answer["port"] and len(data["sessions"]) == 1
    assert cookie not in kept.read_text()  # a digest, never the cookie itself

    assert monad("daemon", "stop").code == 0
    expect(live).to_have_attribute("data-state", "unreachable", timeout=5_000)
    expect(live).to_contain_text("The supervisor is not answering")
    # The state it can no longer vouch for is greyed out (its own colour gone).
    badge = page.locator(".badge.state-disabled").first
    assert badge.evaluate("e => getComputedStyle(e).borderTopStyle") == "dashed"

    # A plain `monad daemon start`: no `monad studio`, no new login URL.
    assert monad("daemon", "start").code == 0
    expect(live).to_have_attribute("data-state", "live", timeout=10_000)
    expect(state_of(page, "off")).to_have_text("disabled")
    assert page.evaluate("window.studioTestMark") == 1  # the same tab, not reloaded
    page.reload()
    expect(live).to_have_attribute("data-state", "live")  # the cookie is still a session


def test_a_crash_and_autostart_bring_it_back_and_signed_out_only_when_the_session_ended(
        monad: Any, page: Any, monad_home: Path) -> None:
    answer = open_studio(monad)
    sign_in(page, answer)
    live = page.locator("#live")
    expect(live).to_have_attribute("data-state", "live")
    pid = int((monad_home / "run" / "monad.pid").read_text())
    os.kill(pid, 9)  # a crash: nothing is cleaned up
    expect(live).to_have_attribute("data-state", "unreachable", timeout=5_000)
    # Any command that needs the supervisor starts it (autostart): the page comes back.
    assert monad("mcp", "status").code == 0
    expect(live).to_have_attribute("data-state", "live", timeout=10_000)
    # Moving the page to another port ends the old port's sessions: then, and only then, "Signed out".
    other = subprocess.run([sys.executable, "-m", "monad_cli", "studio", "--no-browser", "--json", "--port", "0"],
                           capture_output=True, text=True, timeout=60)
    assert other.returncode == 0, other.stderr
    assert json.loads(other.stdout)["port"] == answer["port"]  # `--port 0` keeps it where it is
    kept = json.loads((monad_home / "studio.json").read_text())
    kept["sessions"] = []
    (monad_home / "studio.json").write_text(json.dumps(kept))
    assert monad("daemon", "stop").code == 0
    expect(live).to_have_attribute("data-state", "unreachable", timeout=5_000)
    assert monad("daemon", "start").code == 0
    expect(live).to_have_attribute("data-state", "signed-out", timeout=10_000)
    expect(live).to_contain_text("Signed out")
