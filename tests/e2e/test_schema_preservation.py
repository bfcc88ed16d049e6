"""JSON Schema 2020-12 input schemas kept untouched end to end (SEP-1613, SEP-2106): what the
server advertised is what `/v1/tools` shows and what the gateway (`monad mcp serve`)
re-exposes, keyword for keyword, nulls and vendor keywords included; and a call that passes
`null` for an optional property reaches the server (SEP-2243 omits its `Mcp-Param` header)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LIGHTTOOLSERVER, wait_state
from tests.servers.lighttoolserver import RICH_SCHEMA

pytestmark = pytest.mark.e2e


def test_rich_schema_survives_the_tool_service_and_the_gateway(supervisor: Any, monad_home: Path) -> None:
    import anyio
    from mcp import Client, StdioServerParameters

    monad = supervisor
    r = monad("mcp", "add", "ts", "--", sys.executable, LIGHTTOOLSERVER, "--rich-schema")
    assert r.code == 0, r
    r = monad("mcp", "trust", "ts", "--auto-approve", "ts__rich")
    assert r.code == 0, r
    wait_state(monad, "ts", "connected")

    r = monad("mcp", "tools", "ts", "--json")
    assert r.code == 0, r
    listed = {t["name"]: t for t in r.json()}
    assert listed["ts__rich"]["inputSchema"] == RICH_SCHEMA

    params = StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve"],
                                   env={"MONAD_HOME": str(monad_home), "MONAD_NO_AUTOSTART": "1"})
    seen: dict[str, Any] = {}

    async def main() -> None:
        async with Client(params, mode="legacy") as legacy:
            seen["legacy"] = next(t for t in (await legacy.list_tools()).tools if t.name == "ts__rich")
        async with Client(params) as modern:
            assert modern.protocol_version == "2026-07-28"
            seen["modern"] = next(t for t in (await modern.list_tools()).tools if t.name == "ts__rich")
            # `note` is optional and nullable, `phone` is optional and not: a `null` for either
            # is the caller's to send, and the server's to judge (monad's check lets it pass).
            args = {"email": "a@example.org", "note": None, "name": "Ada", "phone": None}
            result = await modern.call_tool("ts__rich", args)
            seen["call"] = result

    anyio.run(main)
    for era in ("legacy", "modern"):
        assert seen[era].input_schema == RICH_SCHEMA, era
    assert not seen["call"].is_error, seen["call"]
    assert json.loads(seen["call"].content[0].text) == {"email": "a@example.org", "name": "Ada", "note": None,
                                                              "phone": None}
