"""Small pieces the command modules share (options, the supervisor connection)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from monad_cli.paths import paths

if TYPE_CHECKING:
    from monad_cli.control.client import ControlClient

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON (the same data as the table).")]


def supervisor(*, autostart: bool = True) -> ControlClient:
    """A client to the running supervisor, started in the background if needed."""
    from monad_cli.control.client import connect

    return connect(paths(), autostart=autostart)
