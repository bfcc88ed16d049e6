"""`monad journal`: read the journal (state changes, config errors, supervisor events);
`monad journal prune`: delete what is older than `[journal] keep` and give the space back.

Reading is read-only, on the standard library's sqlite3 (`journal.reader`): it costs what
`status` does. With a fleet's shared journal (docs/fleet.md), the same reader reads it
through psycopg. Pruning is `journal.retention`, on either too.
"""

from __future__ import annotations

import re
import time
from datetime import datetime
from typing import Annotated, Any

import typer

from monad_cli.cli import render
from monad_cli.cli.commands._common import JsonOpt
from monad_cli.core.errors import InvalidInput, MonadError
from monad_cli.core.paths import paths

_REL = re.compile(r"(\d+(?:\.\d+)?)\s*([smhd])\Z")
app = typer.Typer(invoke_without_command=True)  # its help: `journal`'s docstring


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


@app.callback()
def journal(
    ctx: typer.Context,
    server: Annotated[str | None, typer.Option("--server", "-s", help="Only this server's rows.")] = None,
    since: Annotated[str | None, typer.Option("--since", help="10m, 2h, 7d, or an ISO time.")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", min=1, help="At most this many rows (newest).")] = 200,
    calls: Annotated[bool, typer.Option("--calls", help="Tool calls instead: server, tool, argument digest, "
                                                        "approval decision and who made it, duration, "
                                                        "outcome.")] = False,
    host: Annotated[str | None, typer.Option("--host", help="Only rows this host wrote (a fleet's shared "
                                                           "journal holds every host's rows).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """What happened: every state change, config error and supervisor event, oldest first
    (or, with --calls, every tool call).

    With a shared journal (MONAD_JOURNAL_URL or settings.toml, see docs/fleet.md) the rows of
    every supervisor that uses it, each with its host. `monad journal prune` deletes what is
    older than the journal's `keep` setting (docs/supervisor.md "The journal's growth").
    """
    if ctx.invoked_subcommand is not None:
        return
    from monad_cli.journal import reader
    from monad_cli.journal.settings import load_journal_settings

    p = paths()
    settings = load_journal_settings(p)
    after = parse_since(since) if since else None

    def read(db: reader.Database) -> list[dict[str, Any]]:
        return (reader.calls if calls else reader.events)(db, server=server, since=after, host=host, limit=limit)

    if settings.fleet:
        _show(reader.from_shared(settings, read), calls=calls, fleet=True, as_json=as_json)
        return
    if not p.journal_db.exists():
        render.outcome([], "the journal is empty (the supervisor has not run yet)", as_json=as_json)
        return
    import sqlite3

    db = reader.open_local(p.journal_db)
    try:
        rows = read(db)
    except sqlite3.Error as e:
        raise MonadError(reader.damaged(p.journal_db, e) or f"cannot read the journal `{p.journal_db}`: {e}") from None
    finally:
        db.close()
    _show(rows, calls=calls, fleet=False, as_json=as_json)


@app.command("prune")
def prune(
    keep: Annotated[str | None, typer.Option("--keep", help="Keep this much instead of `keep` in settings.toml's "
                                                             "journal table (default 90d): 12h, 30d, 2w.")] = None,
    every_host: Annotated[bool, typer.Option("--every-host", help="In a fleet, prune every host's rows of the "
                                                                  "shared journal, not only this one's.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Delete old calls, events and finished tasks, and give the space back to the disk.

    Older than `keep` in settings.toml's journal table (default 90d). Approvals and pins are
    kept; in a fleet, so is every row not yet shipped, and this host's older calls and
    events are deleted from the shared PostgreSQL journal too (`--every-host`: everyone's).
    The supervisor does the same once a day (this host's rows only). A journal made by an
    older monad is rewritten once (VACUUM: it needs as much free space as the file takes).
    """
    from monad_cli.config.settings import parse_keep
    from monad_cli.journal import retention
    from monad_cli.journal.settings import load_journal_settings

    p = paths()
    settings = load_journal_settings(p)
    keep_s = parse_keep(keep, "--keep") if keep is not None else settings.keep_s
    if keep_s is None:
        render.info("`[journal] keep` is `forever`: nothing to prune (or pass --keep 90d)")
        return
    if every_host and not settings.fleet:
        raise InvalidInput("--every-host is for a fleet's shared journal; this journal is the local one "
                           "(see docs/fleet.md)")
    if not p.journal_db.exists() and not settings.fleet:
        render.info("the journal is empty (the supervisor has not run yet)")
        return
    import sqlite3

    done: dict[str, Any] = {}
    if p.journal_db.exists():
        try:
            done = retention.prune_file(p.journal_db, keep_s=keep_s, fleet=settings.fleet)
        except sqlite3.Error as e:
            raise MonadError(f"cannot prune the journal `{p.journal_db}`: {e}") from None
    if settings.fleet:
        done["shared"] = retention.prune_shared(settings, keep_s=keep_s, every_host=every_host)
    if as_json:
        render.data_json(done)
        return
    if "deleted" in done:
        deleted = ", ".join(f"{n} {table}" for table, n in done["deleted"].items()) or "nothing"
        render.info(f"deleted rows older than {render.when(done['cutoff'])}: {deleted}; "
                    f"{done['reclaimed']['bytes'] / 1048576:.1f} MiB given back ({done['reclaimed']['mode']})")
    if "shared" in done:
        shared = done["shared"]
        deleted = ", ".join(f"{n} {table}" for table, n in shared["deleted"].items()) or "nothing"
        render.info(f"deleted {shared['scope']}'s rows older than {render.when(shared['cutoff'])} from the shared "
                    f"journal {settings.shown}: {deleted} (PostgreSQL's autovacuum reuses the space)")


def _show(rows: list[dict[str, Any]], *, calls: bool, fleet: bool, as_json: bool) -> None:
    """Rows as JSON or a table; a shared journal's table names each row's host."""
    if as_json:
        render.data_json(rows)
        return
    host = [("host", "host")] if fleet else []
    if not calls:
        render.table([{**r, "time": render.when(r["ts"])} for r in rows],
                     [("time", "time"), *host, ("server", "server"), ("kind", "kind"), ("state", "state"),
                      ("reason", "reason")], empty="no journal rows match")
        return
    render.table([{**r, "time": render.when(r["ts"]),
                   "ms": f"{r['durationMs']:.0f}" if r["durationMs"] is not None else None} for r in rows],
                 [("time", "time"), *host, ("via", "via"), ("exposed", "exposed as"), ("server", "server"),
                  ("tool", "tool"), ("argsDigest", "args"), ("decision", "decision"), ("decidedBy", "by"),
                  ("ms", "ms"), ("outcome", "outcome"), ("error", "error")], empty="no tool calls journaled")
