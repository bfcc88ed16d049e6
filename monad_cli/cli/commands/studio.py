"""`monad studio`: the web page for MCP servers (docs/studio.md)."""

from __future__ import annotations

from typing import Annotated

import typer

from monad_cli.cli import render
from monad_cli.cli.commands._common import JsonOpt, supervisor
from monad_cli.core.errors import InvalidInput
from monad_cli.core.studio import DEFAULT_PORT, PORT_ENV, default_port


def studio(
    port: Annotated[int | None, typer.Option(
        "--port", min=0, max=65535, show_default=False,
        help=f"Port on 127.0.0.1 (default {DEFAULT_PORT}, or ${PORT_ENV}; 0: any free port). If the page is "
             f"already served on another port, it moves to this one.")] = None,
    no_browser: Annotated[bool, typer.Option("--no-browser", help="Only print the URL (and the login file).")]
        = False,
    sign_out: Annotated[bool, typer.Option(
        "--sign-out", help="End every Studio session (every browser signed in), and every login URL not used yet.")]
        = False,
    as_json: JsonOpt = False,
) -> None:
    """Open the Studio: live status of every MCP server; add, edit, enable, disable,
    authorize, reconnect and remove them.

    The supervisor (started in the background if needed) serves the page on 127.0.0.1 until
    `monad daemon stop`. Prints a one-time login URL (it works once, for one browser, for 10
    minutes; run this again for another) and opens the browser on a 0600 file under
    `MONAD_HOME/run/` that holds it, so the login token is on no command line another account
    could read; --no-browser only prints them. A session ends after 8 hours unused, 7 days
    after its sign-in, or at --sign-out. `--json` prints `{"url", "port", "started", "file"}`
    (`{"signedOut"}` with --sign-out).
    """
    if sign_out:
        ended = supervisor().post("/v1/studio/sign-out")["signedOut"]
        render.outcome({"signedOut": ended},
                       f"signed out {ended} Studio session{'' if ended == 1 else 's'}; every login URL handed "
                       f"out is spent (`monad studio` signs in again)", as_json=as_json)
        return
    try:
        fallback = default_port()
    except ValueError:
        raise InvalidInput(f"${PORT_ENV} must be a port number from 0 to 65535") from None
    answer = supervisor().post("/v1/studio", {"port": port, "defaultPort": fallback})
    url, file = answer["url"], answer.get("file")
    if as_json:
        render.data_json({"url": url, "port": answer["port"], "started": answer["started"], "file": file})
    else:
        render.line(url)
    if answer.get("movedFrom"):
        render.info(f"the Studio moved from port {answer['movedFrom']} to {answer['port']}; pages open on "
                    f"the old port have stopped (a login URL printed for it and not opened yet still works: "
                    f"it forwards here)")
    if file is None:
        # Never the URL itself on the browser's command line: /proc/PID/cmdline is public.
        render.info("the login file could not be written (see the supervisor's log); paste the URL into a browser")
        return
    if no_browser:
        if not as_json:
            render.info(f"or open {file} in a browser (it holds the same one-time URL, readable only by you)")
        return
    import webbrowser
    from pathlib import Path

    # The person's own browser: this process has their display; the supervisor may not. It
    # gets the file's path, never the token (a browser's argv is readable by every account).
    if not webbrowser.open(Path(file).as_uri()):
        render.info(f"no browser could be started; open the URL above, or {file}, yourself")
