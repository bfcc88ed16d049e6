"""`monad mcp reconnect NAME` on a server a reconnect cannot change (disabled, an invalid
definition) says why and exits non-zero, through the real CLI and supervisor (issue 30)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import light_cmd, wait_for, wait_state, write_atom

pytestmark = pytest.mark.e2e


def test_reconnect_refuses_a_disabled_or_invalid_server_and_says_why(supervisor: Any, monad_home: Path) -> None:
    monad = supervisor
    assert monad("mcp", "add", "off", "--disabled", "--", *light_cmd()).code == 0
    write_atom(monad_home, "broken", 'schema = 1\ntransport = "stdio"\ncommand = "x"\ntimeout = "soon"\n')
    wait_state(monad, "off", "disabled")
    wait_state(monad, "broken", "failed")

    r = monad("mcp", "reconnect", "off")
    assert r.code != 0, r
    assert r.err.startswith("error: not reconnecting `off`: disabled") and "`monad mcp enable off`" in r.err, r
    assert "reconnecting `off`" not in r.err.replace("not reconnecting `off`", "")

    r = monad("mcp", "reconnect", "broken")
    assert r.code != 0, r
    assert "not reconnecting `broken`: its definition is invalid" in r.err and "timeout" in r.err, r
    # It names the file to fix, not `monad mcp get` (which only repeats the reason).
    assert r.err.rstrip().endswith("; it connects live once `atoms/mcp/broken.toml` is fixed"), r
    assert len(r.err.strip().splitlines()) == 1, r

    r = monad("mcp", "reconnect", "broken", "--json")
    assert r.code != 0 and r.out == "", r

    # Pinning a server that is not connected says its state in words ("is backoff", before).
    assert monad("mcp", "add", "refuses", "--url", "http://127.0.0.1:9/mcp").code == 0
    wait_state(monad, "refuses", "backoff")
    # It goes on trying (connecting, then backoff again, 0.2 s first in tests): a pin that
    # lands while it connects says so instead; the words for backoff are this test's.
    r = wait_for(lambda: (x := monad("mcp", "pin", "refuses")) and "waiting to retry" in x.err and x, timeout=30)
    assert r.code == 1 and "server `refuses` is waiting to retry, so its tool set is unknown" in r.err, r

    # a server that can connect still reconnects, exit 0
    assert monad("mcp", "add", "ok", "--", *light_cmd()).code == 0
    wait_state(monad, "ok", "connected")
    r = monad("mcp", "reconnect", "ok")
    assert r.code == 0 and "reconnecting `ok`" in r.err, r
    r = monad("mcp", "reconnect", "--all")
    assert r.code == 0 and "not reconnecting `off`: disabled" in r.err, r

    # A broken edit of a running server: the reconnect uses the last good definition, and says so.
    atom = monad_home / "atoms" / "mcp" / "ok.toml"
    atom.write_text(atom.read_text() + 'timeout = "soon"\n')
    r = monad("mcp", "reconnect", "ok")
    assert r.code == 0 and "reconnects with its last good definition; the edit is not applied" in r.err, r
    assert "timeout" in r.err
