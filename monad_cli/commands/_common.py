"""Small pieces the command modules share (options, the supervisor connection)."""

from __future__ import annotations

from typing import Annotated

import typer

from monad_cli.control.client import ControlClient, connect
from monad_cli.paths import paths

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON (the same data as the table).")]


def supervisor(*, autostart: bool = True) -> ControlClient:
    """A client to the running supervisor, started in the background if needed."""
    return connect(paths(), autostart=autostart)
