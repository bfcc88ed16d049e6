"""Issue 26, what the second round left, end to end with servers of our own
(tests/servers/wild3server.py) and the real supervisor: a 2026-07-28 server whose tools
change before its `subscriptions/listen` stream opens, and prompts and resources lists with
one bad item each."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import status_of, wait_for, wait_state
from tests.e2e.test_wild_named import tool_names

WILD3 = str(Path(__file__).resolve().parents[1] / "servers" / "wild3server.py")
pytestmark = pytest.mark.e2e


def add_wild3(monad: Any, name: str, *flags: str) -> None:
    r = monad("mcp", "add", name, "--", sys.executable, WILD3, *flags)
    assert r.code == 0, r


def test_a_change_before_the_listen_stream_opens_is_not_lost(supervisor: Any, tmp_path: Path) -> None:
    log = tmp_path / "requests.log"
    add_wild3(supervisor, "listener", "--change-before-listen", "--log-requests", str(log))
    row = wait_state(supervisor, "listener", "connected", timeout=60)
    assert row["protocolVersion"] == "2026-07-28", row
    # The server added `late` when the stream was asked for, before acknowledging it: no
    # event ever tells of it, only the listing once the stream is open does.
    wait_for(lambda: "listener__late" in tool_names(supervisor, "listener"), timeout=30)
    seen = log.read_text().splitlines()
    assert seen.index("subscriptions/listen") < len(seen) - 1 - seen[::-1].index("tools/list"), seen
    assert status_of(supervisor, "listener")["state"] == "connected"
