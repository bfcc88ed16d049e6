"""`monad env ...`: the variables `$VAR` references expand from (MONAD_HOME/env, 0600).

The file comes first, then the supervisor's own environment, so a definition's value never
depends on which shell started the supervisor (docs/atoms.md "Variables"). `set` and
`unset` write the file themselves (locked, atomic); a running supervisor sees the change
and reconnects exactly the servers whose expanded definition changed. No command prints a
value.

No `from __future__ import annotations`: see mcp.py (typer evaluates string annotations).
"""

import sys
from typing import Annotated, Any

import typer

from monad_cli.cli import render
from monad_cli.cli.commands._common import JsonOpt
from monad_cli.cli.commands._variables import listing, users
from monad_cli.core.errors import InvalidInput
from monad_cli.core.paths import paths

app = typer.Typer(help="Set the variables `$VAR` in server definitions expand from (MONAD_HOME/env).",
                  no_args_is_help=True)

NameArg = Annotated[str, typer.Argument(help="Variable name: letters, digits and `_`.")]


def _read_value(name: str) -> str:
    """The value from a terminal without echo, else from stdin (one trailing newline dropped)."""
    if sys.stdin is not None and sys.stdin.isatty():
        import getpass

        try:
            return getpass.getpass(f"value of {name} (not shown): ")
        except EOFError:
            raise InvalidInput(f"no value given for `{name}`") from None
    data = sys.stdin.read() if sys.stdin is not None else ""
    return data[:-1] if data.endswith("\n") else data


def _applied(servers: list[str]) -> str:
    if not servers:
        return "no server references it yet"
    return (f"used by {', '.join(f'`{s}`' for s in servers)}; a running supervisor reconnects "
            f"those whose definition changed")


@app.command("set")
def set_(
    name: NameArg,
    allow_empty: Annotated[bool, typer.Option("--allow-empty", help="Accept an empty value (refused "
                                              "otherwise: nothing typed is usually a slip).")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Set NAME in MONAD_HOME/env: the value is read without echo on a terminal, else from stdin.

    Examples:

      monad env set DOCS_KEY

      monad env set GITHUB_TOKEN < token.txt
    """
    from monad_cli.config.envfile import check_name, set_variable

    check_name(name)
    value = _read_value(name)
    if not value and not allow_empty:
        raise InvalidInput(f"the value of `{name}` is empty; pass --allow-empty to set it empty, or "
                           f"`monad env unset {name}` to remove it")
    existed = set_variable(paths(), name, value)
    servers = users().get(name, [])  # the servers whose definitions (as written) reference it
    verb = "updated" if existed else "set"
    render.outcome({"name": name, "created": not existed, "servers": servers},
                   f"{verb} `{name}` in MONAD_HOME/env; {_applied(servers)}", as_json=as_json)


@app.command("unset")
def unset(name: NameArg, as_json: JsonOpt = False) -> None:
    """Remove NAME from MONAD_HOME/env (the environment of the supervisor may still set it)."""
    from monad_cli.config.envfile import unset_variable

    unset_variable(paths(), name)
    servers = users().get(name, [])
    render.outcome({"name": name, "servers": servers}, f"removed `{name}` from MONAD_HOME/env; {_applied(servers)}",
                   as_json=as_json)


@app.command("list")
def list_(as_json: JsonOpt = False) -> None:
    """Names only: every variable MONAD_HOME/env sets or a definition references, where its
    value comes from, and which servers use it. Never a value."""
    variables, problems = listing()
    for problem in problems:
        render.warn(problem)
    if as_json:
        render.data_json(variables)
        return
    render.table([_row_text(v) for v in variables],
                 [("name", "name"), ("source", "source"), ("servers", "servers")],
                 empty="no variables: set one with `monad env set NAME`")


def _row_text(v: dict[str, Any]) -> dict[str, Any]:
    from monad_cli.config.envfile import SOURCE_WORDS

    source = v.get("source")
    shown = SOURCE_WORDS.get(source or "", "not set") if source != "unknown" else \
        "not in MONAD_HOME/env (the supervisor is not running to say more)"
    return {"name": v["name"], "source": shown, "servers": ", ".join(v.get("servers") or []) or "-"}
