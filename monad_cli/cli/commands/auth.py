"""`monad mcp authorize` and `monad mcp logout` (docs/auth.md), registered on the `mcp` group.

Kept in their own module so the OAuth code stays out of commands/mcp.py; like every command
module it imports the SDK and httpx2 only inside command bodies.
"""

from __future__ import annotations

import contextlib
from typing import Annotated, Any

import typer

from monad_cli.cli import render
from monad_cli.cli.commands._common import JsonOpt, quoted, running
from monad_cli.core.errors import MonadError
from monad_cli.core.paths import paths


def authorize(
    name: Annotated[str, typer.Argument(help="Server name (an http server).")],
    flow: Annotated[str | None, typer.Option(
        "--flow", help="`loopback`: a browser and a redirect to 127.0.0.1 (default). `device`: RFC 8628, "
                       "for machines without a browser: type a code on any device.")] = None,
    no_browser: Annotated[bool, typer.Option(
        "--no-browser", help="Only print the authorization URL; then paste the URL the browser was "
                             "redirected to (or let the redirect arrive).")] = False,
    scope: Annotated[list[str] | None, typer.Option(
        "--scope", help="A scope to ask for (repeatable; overrides `auth.scopes`).")] = None,
    client_id: Annotated[str | None, typer.Option(
        "--client-id", help="A client ID registered with the authorization server, for servers without "
                            "dynamic registration; saved as `auth.clientId`.")] = None,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds to wait for the person.")] = 300.0,
    as_json: JsonOpt = False,
) -> None:
    """Authorize monad to use a remote server (OAuth 2.1 as the MCP spec says).

    Discovers the authorization server, registers monad if needed, gets tokens and stores
    them in the server's definition file (mode 0600). The supervisor refreshes them from
    then on; run this again if `monad mcp status` shows `needs-auth`.
    """
    from monad_cli.auth.target import authorizable

    authorizable(paths(), name)  # a wrong name or server is said before the SDK loads
    import anyio

    from monad_cli.auth.authorize import Say, run_authorize

    def show_url(url: str, kind: str) -> None:
        # Always printed, also when a browser is opened (it may not open, or open elsewhere); on stderr under --json so
        # stdout stays one JSON document.
        (render.info if as_json else render.line)(url)

    say = Say(info=render.info, url=show_url)
    outcome = anyio.run(lambda: run_authorize(paths(), name, flow=flow, open_browser=not no_browser,
                                              scopes=scope or [], client_id=client_id, say=say, timeout=timeout))
    _journal(name, f"authorized ({outcome.flow} flow, scope: {outcome.scope or '(none)'})",
             {"flow": outcome.flow, "scope": outcome.scope, "expiresAt": outcome.expires_at,
              "authorizationServer": outcome.authorization_server})
    reconnected = _reconnect(name)
    if as_json:
        render.data_json({"name": name, "source": outcome.source, "flow": outcome.flow, "scope": outcome.scope,
                          "expiresAt": outcome.expires_at, "authorizationServer": outcome.authorization_server,
                          "reconnecting": reconnected})
        return
    expiry = f", expires {render.when(outcome.expires_at)}" if outcome.expires_at else ""
    render.info(f"authorized server `{name}` (scope: {outcome.scope or '(none)'}{expiry}); tokens stored in "
                f"{outcome.source}" + ("; reconnecting it" if reconnected else ""))


def logout(name: Annotated[str, typer.Argument(help="Server name.")], as_json: JsonOpt = False) -> None:
    """Remove the server's stored tokens and OAuth state (the configuration stays).

    The server moves to `needs-auth` until `monad mcp authorize NAME`. Tokens are not
    revoked at the authorization server.
    """
    from monad_cli.auth.storage import clear_state, read_grant

    had = read_grant(paths(), name)
    clear_state(paths(), name)
    _journal(name, "logged out: stored tokens removed", None)
    reconnected = _reconnect(name)
    removed = bool(had.access_token or had.refresh_token)
    render.outcome({"name": name, "removed": removed, "reconnecting": reconnected},
                   f"{'removed the stored tokens of' if removed else 'no tokens were stored for'} server `{name}`",
                   as_json=as_json)


def _journal(name: str, reason: str, detail: dict[str, Any] | None) -> None:
    """A journal row for the person's own action (never a token: none is passed in)."""
    from monad_cli.journal.db import Journal

    with contextlib.suppress(Exception):  # the grant is stored: a journal problem must not fail the command
        journal = Journal(paths().journal_db)
        try:
            journal.record("auth", server=name, reason=reason, detail=detail)
        finally:
            journal.close()


def _reconnect(name: str) -> bool:
    """Ask a running supervisor to reconnect `name` (it re-reads the grant). Never starts one."""
    client = running()
    if client is None:
        return False
    try:
        client.post(f"/v1/mcp-servers/{quoted(name)}/reconnect")
    except MonadError:
        return False
    return True

