"""`monad approvals`: pending tool-call approvals that callers are waiting on."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from monad_cli.cli import render
from monad_cli.cli.commands._common import JsonOpt, check_id, supervisor
from monad_cli.core.errors import InvalidInput

app = typer.Typer(help="Pending tool-call approvals: list, allow, deny.", invoke_without_command=True)


@app.callback()
def listing(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """List the pending approvals (id, server, tool, full arguments)."""
    if ctx.invoked_subcommand is not None:
        return
    pending = supervisor().get("/v1/approvals")["pending"]
    if as_json:
        render.data_json(pending)
        return
    render.table([{**p, "arguments": json.dumps(p["arguments"], ensure_ascii=False),
                   "created": render.when(p["created"])} for p in pending],
                 [("id", "id"), ("server", "server"), ("tool", "tool"), ("arguments", "arguments"),
                  ("via", "via"), ("created", "since")], empty="no pending approvals")


@app.command("allow")
def allow(
    approval_id: Annotated[str, typer.Argument(metavar="ID", help="Approval id (see `monad approvals`).")],
    session: Annotated[bool, typer.Option("--session", help="Also allow this tool until the supervisor "
                                                            "restarts.")] = False,
    always: Annotated[bool, typer.Option("--always", help="Also allow this tool from now on (until the "
                                                          "server's command/args/env names/cwd/url change).")]
        = False,
    as_json: JsonOpt = False,
) -> None:
    """Allow the waiting call (once, or --session / --always for later calls of that tool)."""
    if session and always:
        raise InvalidInput("choose one of --session and --always")
    scope = "session" if session else "always" if always else "once"
    check_id(approval_id, "approval", "monad approvals")
    answer = supervisor().post(f"/v1/approvals/{approval_id}", {"decision": "allow", "scope": scope})
    if as_json:
        render.data_json(answer)
    else:
        render.info(f"allowed `{answer['exposed']}` ({scope})")


@app.command("deny")
def deny(
    approval_id: Annotated[str, typer.Argument(metavar="ID", help="Approval id (see `monad approvals`).")],
    as_json: JsonOpt = False,
) -> None:
    """Deny the waiting call; the caller gets a refusal."""
    check_id(approval_id, "approval", "monad approvals")
    answer = supervisor().post(f"/v1/approvals/{approval_id}", {"decision": "deny"})
    if as_json:
        render.data_json(answer)
    else:
        render.info(f"denied `{answer['exposed']}`")
