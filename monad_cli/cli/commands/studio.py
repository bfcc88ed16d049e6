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
    no_browser: Annotated[bool, typer.Option("--no-browser", help="Only print the URL.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Open the Studio: live status of every MCP server; add, edit, enable, disable,
    authorize, reconnect and remove them.

    The supervisor (started in the background if needed) serves the page on 127.0.0.1 until
    `monad daemon stop`. Prints a one-time login URL (it works once, for one browser; run this
    again for another) and opens it in the browser unless --no-browser. `--json` prints
    `{"url", "port", "started"}`.
    """
    try:
        fallback = default_port()
    except ValueError:
        raise InvalidInput(f"${PORT_ENV} must be a port number from 0 to 65535") from None
    answer = supervisor().post("/v1/studio", {"port": port, "defaultPort": fallback})
    url = answer["url"]
    if as_json:
        render.data_json({"url": url, "port": answer["port"], "started": answer["started"]})
    else:
        render.line(url)
    if answer.get("movedFrom"):
        render.info(f"the Studio moved from port {answer['movedFrom']} to {answer['port']}; pages open on "
                    f"the old port have stopped (a login URL printed for it and not opened yet still works: "
                    f"it forwards here)")
    if not no_browser:
        import webbrowser

        # The person's own browser: this process has their display; the supervisor may not.
        if not webbrowser.open(url):
            render.info("no browser could be started; open the URL yourself")
