"""The status table of `monad mcp list` and `monad mcp status`: rows from the supervisor, or
from the files alone when none runs, as the table shows them."""

from __future__ import annotations

from typing import Any

from monad_cli.cli import render
from monad_cli.core.order import name_key
from monad_cli.core.paths import paths

STATUS_COLUMNS = [("name", "name"), ("transport", "transport"), ("state", "state"), ("tools", "tools"),
                  ("protocolVersion", "protocol"), ("source", "source"), ("reason", "reason")]


def local_rows() -> list[dict[str, Any]]:
    """Rows from the files alone (no supervisor): state `unknown`."""
    from monad_cli.config.loader import load_definitions

    defs = load_definitions(paths(), expand=False)
    rows: list[dict[str, Any]] = []
    for name, source in sorted(defs.sources.items(), key=lambda kv: name_key(kv[0])):
        spec = defs.specs.get(name)
        problem = defs.problem_for(name)
        rows.append({"name": name, "transport": spec.transport if spec else None,
                     "state": ("failed" if problem and not spec else
                               "disabled" if spec and not spec.enabled else "unknown"),
                     "reason": problem.message if problem else "supervisor not running",
                     "tools": None, "protocolVersion": None, "source": source,
                     "enabled": spec.enabled if spec else None, "required": spec.required if spec else None})
    for p in defs.problems:
        if p.server is None:
            render.warn(p.message)
    return rows


def journal_warning(journal: dict[str, Any] | None) -> str | None:
    """The line that says the journal is degraded and why (docs/fleet.md; docs/supervisor.md
    "A full disk"), or that rows were lost to a full disk, or None."""
    if not journal:
        return None
    held, lost = journal.get("held") or 0, journal.get("lost") or 0
    lost_text = (f"; {lost} row(s) did not fit in memory and are lost (counted in `monad journal`)"
                 if lost else "")
    if journal.get("state") != "degraded":
        return f"journal: {lost} row(s) were lost while its disk was full (see `monad journal`)" if lost else None
    if held or journal.get("heldSince"):
        return (f"journal degraded: {journal.get('reason')}; {held} row(s) held in memory, written when the "
                f"disk has room again{lost_text} (servers and calls keep running)")
    queued = journal.get("queued") or 0
    since = f" since {render.when(journal['oldestQueued'])}" if journal.get("oldestQueued") else ""
    return (f"journal degraded: {journal.get('reason')}; {queued} row(s) queued locally{since}, flushed when "
            f"the shared journal is back (servers and calls keep running)")


def store_warnings(journal: dict[str, Any] | None) -> list[str]:
    """The lines that say the tasks store's writes or `daemon.log` are held in memory (a full
    disk: docs/supervisor.md "A full disk"), or that some were lost or refused meanwhile."""
    out: list[str] = []
    tasks = (journal or {}).get("tasks") or {}
    refused = f"; {tasks['refused']} new task(s) refused" if tasks.get("refused") else ""
    lost = f"; {tasks['lost']} change(s) did not fit in memory and are lost" if tasks.get("lost") else ""
    if tasks.get("state") == "degraded":
        out.append(f"tasks store degraded: {tasks.get('reason')}; {tasks.get('heldRows') or 0} task row(s) held "
                   f"in memory, written when the disk has room again{refused}{lost}")
    elif refused or lost:
        out.append(f"tasks store: while its disk was full{refused}{lost}")
    log = (journal or {}).get("log") or {}
    lost = f"; {log['lost']} line(s) did not fit in memory and are lost" if log.get("lost") else ""
    if log.get("state") == "degraded":
        out.append(f"daemon log degraded: {log.get('reason')}; {log.get('held') or 0} line(s) held in memory, "
                   f"written when the disk has room again{lost}")
    elif lost:
        out.append(f"daemon log: {log['lost']} line(s) were lost while its disk was full")
    return out


def show_status(answer: dict[str, Any], as_json: bool) -> None:
    """`GET /v1/settings/mcp-servers/status`'s answer (`servers`; `problems` and `journal` when
    given): warnings (file problems, a degraded journal, tasks store or log) on stderr, then the rows."""
    rows, journal = answer["servers"], answer.get("journal")
    for p in answer.get("problems") or []:
        render.warn(p["message"])
    if warning := journal_warning(journal):
        render.warn(warning)
    for warning in store_warnings(journal):
        render.warn(warning)
    if as_json:
        render.data_json(rows)
    else:
        render.table([_row_text(r) for r in rows], STATUS_COLUMNS,
                     # The home named: a mistyped MONAD_HOME is a new, empty one, not "nothing here".
                     empty=f"no servers defined in `{paths().home}`; add one with `monad mcp add NAME -- COMMAND`")


def _row_text(row: dict[str, Any]) -> dict[str, Any]:
    """A status row as the table shows it."""
    out = dict(row)
    if row.get("configError"):  # a server whose file went bad keeps its last good definition
        # ... which runs, unless the server has failed (its command gone, say): then why, first.
        ran = "runs its last good definition" if row["state"] != "failed" else row.get("reason") or "failed"
        out["reason"] = f"{ran}; config error: {row['configError']}"
    elif row.get("lastAttemptReason") and row["state"] == "connecting":  # retrying: why the last one failed
        out["reason"] = f"{row.get('reason') or row['state']}; last attempt: {row['lastAttemptReason']}"
    if row.get("toolsRefused"):
        out["tools"] = "refused"
    if row["state"] == "idle":  # what an agent is shown comes from lists this old
        out["reason"] = f"{out.get('reason') or 'on demand'} (idle for {render.age(row.get('stoppedAt'))}, " \
                        f"lists {render.age(row.get('listedAt'))} old)"
    if collisions := row.get("collisions"):  # state, shown in the row (said once, in the log, when it appeared)
        what = "a name collision" if len(collisions) == 1 else f"{len(collisions)} name collisions"
        said = f"{what} (see `monad mcp status {row['name']}`)"
        out["reason"] = f"{out['reason']}; {said}" if out.get("reason") else said
    return out


_STATE_WORDS = {"failed": "has failed", "needs-auth": "needs authorization", "connecting": "is still connecting",
                "backoff": "is waiting to retry", "disabled": "is disabled", "filtered": "is filtered out",
                "degraded": "is degraded", "idle": "is idle (on demand)"}


def state_words(state: str) -> str:
    """A state as words after a server's name: `has failed`, `is waiting to retry`."""
    return _STATE_WORDS.get(state, f"is {state}")


def not_ready(row: dict[str, Any]) -> str:
    """One line for a server that is not connected: what it is doing, why, and, while it
    retries, why the last attempt failed (`server `x` is still connecting: starting (attempt
    3); the last attempt timed out after 10 s …`)."""
    text = f"server `{row['name']}` {state_words(row['state'])}: {row.get('reason') or 'no reason given'}"
    if row["state"] == "disabled":  # `wait` and `call` stop here: say how to turn it on
        text += f"; `monad mcp enable {row['name']}` turns it on"
    last = row.get("lastAttemptReason")
    if last and last not in text:
        text += f"; the last attempt {last}" if last.startswith(("timed out", "failed")) else \
            f"; the last attempt failed: {last}"
    return text
