"""`monad approvals`: pending tool-call approvals that callers are waiting on, and the standing
ones (session and always) that let a tool's calls run unasked, which `revoke` takes back."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from monad_cli.cli import render
from monad_cli.cli.commands._common import JsonOpt, id_argument, supervisor
from monad_cli.core.errors import InvalidInput

ApprovalId = Annotated[str, id_argument("approval", "monad approvals", metavar="ID",
                                        help="Approval id (see `monad approvals`).")]
app = typer.Typer(help="Tool-call approvals: pending ones (list, allow, deny) and standing ones (revoke).",
                  invoke_without_command=True)


@app.callback()
def listing(ctx: typer.Context, as_json: JsonOpt = False,
            standing_only: Annotated[bool, typer.Option("--standing", help="Only the standing approvals "
                                                                          "(with --json: their list).")] = False,
            ) -> None:
    """List the pending approvals (id, server, tool, full arguments), then the standing ones:
    each tool allowed for the session or always, by whom, and whether it still applies (an
    approval holds for the tool as it was defined when approved: a server that changes the
    tool is asked about again). `--json`: the pending ones; `--standing --json`: the standing."""
    if ctx.invoked_subcommand is not None:
        return
    answer = supervisor().get("/v1/approvals")
    pending, standing = answer["pending"], answer.get("standing", [])
    if as_json:
        render.data_json(standing if standing_only else pending)
        return
    if not standing_only:
        render.table([{**p, "arguments": json.dumps(p["arguments"], ensure_ascii=False),
                       "created": render.when(p["created"])} for p in pending],
                     [("id", "id"), ("server", "server"), ("tool", "tool"), ("arguments", "arguments"),
                      ("via", "via"), ("created", "since")], empty="no pending approvals")
    if standing or standing_only:
        render.table([{**g, "applies": "yes" if g["current"] else "no: the tool or the server changed"}
                      for g in standing],
                     [("exposed", "standing approval"), ("scope", "scope"), ("decidedBy", "by"),
                      ("applies", "applies")], empty="no standing approvals")


@app.command("allow")
def allow(
    approval_id: ApprovalId,
    session: Annotated[bool, typer.Option("--session", help="Also allow this tool until the supervisor "
                                                            "restarts.")] = False,
    always: Annotated[bool, typer.Option("--always", help="Also allow this tool from now on (until the "
                                                          "server's command/args/env names/cwd/url or the "
                                                          "tool's definition change).")]
        = False,
    as_json: JsonOpt = False,
) -> None:
    """Allow the waiting call (once, or --session / --always for later calls of that tool)."""
    if session and always:
        raise InvalidInput("choose one of --session and --always")
    scope = "session" if session else "always" if always else "once"
    answer = supervisor().post(f"/v1/approvals/{approval_id}", {"decision": "allow", "scope": scope})
    render.outcome(answer, f"allowed `{answer['exposed']}` ({scope})", as_json=as_json)


@app.command("revoke")
def revoke(
    name: Annotated[str | None, typer.Argument(metavar="SERVER__TOOL", help="The tool whose standing approval "
                                                                            "to take back.")] = None,
    server: Annotated[str | None, typer.Option("--server", help="Every standing approval of this server's "
                                                                "tools.")] = None,
    session: Annotated[bool, typer.Option("--session", help="Only the session approval.")] = False,
    always: Annotated[bool, typer.Option("--always", help="Only the always approval.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Take back a standing approval: the tool's next call asks again (journaled).

    Example: monad approvals revoke time__get_current_time"""
    if (name is None) == (server is None):
        raise InvalidInput("name one tool (SERVER__TOOL) or one --server")
    if session and always:
        raise InvalidInput("choose one of --session and --always (neither: both)")
    body: dict[str, str] = {"name": name} if name is not None else {"server": str(server)}
    if session or always:
        body["scope"] = "session" if session else "always"
    answer = supervisor().post("/v1/approvals/revoke", body)
    render.outcome(answer, f"revoked {answer['revoked']} standing approval{'s' if answer['revoked'] != 1 else ''} "
                   f"of `{name or server}`", as_json=as_json)


@app.command("deny")
def deny(approval_id: ApprovalId, as_json: JsonOpt = False) -> None:
    """Deny the waiting call; the caller gets a refusal."""
    answer = supervisor().post(f"/v1/approvals/{approval_id}", {"decision": "deny"})
    render.outcome(answer, f"denied `{answer['exposed']}`", as_json=as_json)
