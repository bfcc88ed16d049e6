"""`monad journal`: read the journal (state changes, config errors, supervisor events)."""

from __future__ import annotations

import re
import time
from datetime import datetime
from typing import Annotated

import typer

from monad_cli import render
from monad_cli.commands._common import JsonOpt
from monad_cli.errors import InvalidInput
from monad_cli.paths import paths

_REL = re.compile(r"(\d+(?:\.\d+)?)\s*([smhd])\Z")


def parse_since(value: str) -> float:
    """`30s`, `10m`, `2h`, `7d` ago, or an ISO 8601 time → epoch seconds."""
    m = _REL.match(value.strip())
    if m:
        return time.time() - float(m.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError:
        raise InvalidInput(f"--since {value!r}: use a duration like 10m, 2h, 7d or an ISO time "
                           f"like 2026-11-30T10:00") from None


def journal(
    server: Annotated[str | None, typer.Option("--server", "-s", help="Only this server's rows.")] = None,
    since: Annotated[str | None, typer.Option("--since", help="10m, 2h, 7d, or an ISO time.")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="At most this many rows (newest).")] = 200,
    as_json: JsonOpt = False,
) -> None:
    """What happened: every state change, config error and supervisor event, oldest first."""
    p = paths()
    if not p.journal_db.exists():
        if as_json:
            render.data_json([])
        else:
            render.info("the journal is empty (the supervisor has not run yet)")
        return
    from monad_cli.journal.db import Journal

    j = Journal(p.journal_db)
    try:
        rows = j.events(server=server, since=parse_since(since) if since else None, limit=limit)
    finally:
        j.close()
    if as_json:
        render.data_json(rows)
        return
    render.table([{**r, "time": render.when(r["ts"])} for r in rows],
                 [("time", "time"), ("server", "server"), ("kind", "kind"), ("state", "state"),
                  ("reason", "reason")], empty="no journal rows match")
