"""Small pieces the command modules share (options, the supervisor connection)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from monad_cli.core.errors import InvalidInput
from monad_cli.core.paths import paths

if TYPE_CHECKING:
    from monad_cli.cli.control import ControlClient

JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON (the same data as the table).")]


def supervisor(*, autostart: bool = True) -> ControlClient:
    """A client to the running supervisor, started in the background if needed."""
    from monad_cli.cli.control import connect

    return connect(paths(), autostart=autostart)


def running() -> ControlClient | None:
    """A client to the supervisor if one runs, else None; never starts one."""
    from monad_cli.cli.control import ControlClient

    client = ControlClient(paths())
    return client if client.is_running() else None


def quoted(name: str) -> str:
    """`name` as one URL path segment of the control API (`/` and all encoded)."""
    from urllib.parse import quote

    return quote(name, safe="")


def parse_pairs(items: list[str] | None, sep: str, what: str) -> dict[str, str]:
    """`K=V` (`sep` `=`) or `Name: value` (`sep` `:`, both sides stripped) options as a dict;
    `InvalidInput` naming the option `what` for one without `sep` or with an empty name."""
    out: dict[str, str] = {}
    for item in items or []:
        if sep not in item:
            # Never echo the value: it may be the secret that lacks its name.
            raise InvalidInput(f"every {what} needs the form {'K=V' if sep == '=' else '`Name: value`'}")
        k, v = item.split(sep, 1)
        k = k.strip()
        if not k:
            raise InvalidInput(f"{what} has an empty name")
        out[k] = v.strip() if sep == ":" else v
    return out


_ID_CHARS = frozenset("0123456789abcdefABCDEF-")


def id_argument(what: str, hint: str, **kwargs: Any) -> Any:
    """The argument of an approval or task id as typed by a person: hex digits (a prefix is
    fine), checked as it is parsed, so a bad id starts no supervisor (`InvalidInput`)."""

    def check(value: str) -> str:
        if not value or not set(value) <= _ID_CHARS:
            shown = value if len(value) <= 40 and value.isprintable() else "that value"
            raise InvalidInput(f"{what} `{shown}` is not a valid id (hex digits; see `{hint}`)")
        return value

    return typer.Argument(callback=check, **kwargs)
