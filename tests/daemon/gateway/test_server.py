"""The gateway's own task group (`Gateway.run`) and the work handed to it (`Gateway._spawn`)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from monad_cli.daemon.gateway.server import Gateway
from monad_cli.daemon.gateway.session import GatewayWrappers
from monad_cli.journal.db import Journal


def test_a_read_journaled_before_the_gateway_runs_is_written_and_so_are_later_ones(tmp_path: Path) -> None:
    """The control API serves before `Gateway.run` starts (daemon/supervisor.py): a read it
    routes then is journaled once the gateway's task group is up, and the catalog's writer
    is not left marked as due, which would keep every later read out of the journal."""
    journal = Journal(tmp_path / "journal.db")
    # The tool service's parts the gateway reads: its actors by name (none) and its journal.
    gateway = Gateway(SimpleNamespace(servers={}, journal=journal), scrub=str, wrappers=GatewayWrappers())

    async def read(uri: str) -> None:
        with pytest.raises(MCPError):  # no such server: refused, and journaled as such
            await gateway.catalog.through("srv", "resource.read", {"uri": uri}, lambda client, meta: None)

    async def main() -> None:
        await read("demo://early")  # before `run`: the supervisor's start, control API up
        async with anyio.create_task_group() as tg:
            tg.start_soon(gateway.run)
            await anyio.sleep(0.05)
            await read("demo://later")
            await anyio.sleep(0.2)  # JOURNAL_DELAY_S and more
            tg.cancel_scope.cancel()

    anyio.run(main)
    journal.close()
    with sqlite3.connect(tmp_path / "journal.db") as db:
        rows: list[Any] = db.execute("SELECT detail FROM events WHERE kind = 'resource.read' ORDER BY id").fetchall()
    assert [r[0].count("demo://") for r in rows] == [1, 1]
    assert "demo://early" in rows[0][0] and "demo://later" in rows[1][0]
