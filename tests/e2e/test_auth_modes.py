"""The static auth modes of remote servers (`bearer`, `headers`) against a real HTTP server
that checks them, with redaction everywhere; and `needs-auth` vs `failed` in status."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.auth_helpers import DEVICE_AS, Servers, assert_no_sentinel
from tests.conftest import wait_state, write_atom

pytestmark = pytest.mark.e2e
TOKEN = "SENTINEL-bearer-0b1c2d3e4f"
HEADER_VALUE = "SENTINEL-header-9a8b7c6d"



def test_bearer_and_headers_modes_connect_and_never_leak(supervisor: Any, monad_home: Path,
                                                         servers: Servers) -> None:
    monad = supervisor
    base = servers.start(DEVICE_AS, "--accept-bearer", TOKEN, "--accept-header", f"X-Api-Key={HEADER_VALUE}")
    write_atom(monad_home, "bearer", f'schema = 1\nurl = "{base}/mcp"\n[auth]\nmode = "bearer"\n'
                                      f'token = "{TOKEN}"\n')
    # agents.json home, with the token from the environment would also work; here literal.
    (monad_home / "agents.json").write_text(json.dumps({"mcpServers": [
        {"name": "keyed", "url": f"{base}/mcp?x=1", "auth": {"mode": "headers",
                                                             "headers": {"X-Api-Key": HEADER_VALUE}}}]}))
    write_atom(monad_home, "wrong", f'schema = 1\nurl = "{base}/mcp?wrong=1"\n[auth]\nmode = "bearer"\n'
                                     f'token = "SENTINEL-not-the-token"\n')
    write_atom(monad_home, "none", f'schema = 1\nurl = "{base}/mcp?none=1"\n')
    outputs: list[str] = []
    for name in ("bearer", "keyed"):
        row = wait_state(monad, name, "connected")
        assert row["tools"] == 1
        outputs.append(json.dumps(row))
    # A rejected credential is needs-auth (the HTTP status is in the reason), not failed.
    for name, hint in (("wrong", "rejected the credentials in `auth.token`"), ("none", "monad mcp authorize none")):
        row = wait_state(monad, name, "needs-auth")
        assert "401" in row["reason"] and hint in row["reason"], row
        outputs.append(json.dumps(row))
    for argv in (("mcp", "status", "--json"), ("mcp", "list", "--json"), ("mcp", "get", "bearer"),
                 ("mcp", "get", "keyed", "--json"), ("mcp", "get", "wrong", "--json"), ("journal", "--json")):
        r = monad(*argv)
        assert r.code == 0, r
        outputs += [r.out, r.err]
    shown = json.loads(monad("mcp", "get", "keyed", "--json").out)["definition"]
    assert shown["auth"]["headers"] == {"X-Api-Key": "***"}
    assert json.loads(monad("mcp", "get", "bearer", "--json").out)["definition"]["auth"]["token"] == "***"
    monad("daemon", "stop")
    assert_no_sentinel(monad_home, *outputs)


def test_unreachable_oauth_server_is_failed_not_needs_auth(supervisor: Any, monad_home: Path,
                                                           servers: Servers) -> None:
    """A server that answers 500 is `failed`/`backoff` with the HTTP status; only a 401 is needs-auth."""
    monad = supervisor
    base = servers.start(DEVICE_AS)
    write_atom(monad_home, "broken", f'schema = 1\nurl = "{base}/nothing-here"\n[auth]\nmode = "oauth"\n')
    row = wait_state(monad, "broken", "backoff")
    assert "404" in row["reason"]
