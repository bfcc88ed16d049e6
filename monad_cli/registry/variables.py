"""Gather the values a registry server (or a bundle) needs: given, asked, defaulted, or missing.

Order for each `Variable`: the value given on the command line (`--env`, `--header`,
`--arg`), else, on a terminal, the person's answer (a secret is read without echo; an empty
answer takes the default), else its `default`. A required variable with none of these is
missing, and `gather` raises one error naming every missing one, with the flag that gives
it. Values are checked against `choices` and `format` (number, boolean, filepath). An
`--env` or `--header` no variable names is the installer's to pass on as written.
A typed-in `$` is written `$$` (monad reads `$VAR` as a reference); a given value is kept as
written, so `--env 'TOKEN=${MY_TOKEN}'` stays a reference to the supervisor's variable.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence

from monad_cli.core.errors import InvalidInput
from monad_cli.registry.serverjson import Variable, literal

Ask = Callable[[Variable], str]


def check_value(var: Variable, value: str) -> str:
    """`value` as stored: a file path made absolute; `InvalidInput` naming the variable when
    it is not one of `choices` or not of its `format`."""
    if var.choices and value not in var.choices:
        raise InvalidInput(f"`{var.key}` must be one of {', '.join(var.choices)} ({var.where})")
    if var.format == "number":
        try:
            float(value)
        except ValueError:
            raise InvalidInput(f"`{var.key}` must be a number ({var.where})") from None
    elif var.format == "boolean" and value not in ("true", "false"):
        raise InvalidInput(f"`{var.key}` must be true or false ({var.where})")
    elif var.format == "filepath" and value and not value.startswith("$"):
        return os.path.abspath(os.path.expanduser(value))
    return value


def gather(variables: Sequence[Variable], given: Mapping[str, Mapping[str, str]], *,
           ask: Ask | None, server: str) -> dict[tuple[str, str], str]:
    """{(kind, key): value} for every variable that has one. `given` maps a kind (`env`,
    `header`, `arg`) to the values given for it; `ask` is None when there is no terminal.

    Raises `InvalidInput` naming every missing required variable (and how to give each), or
    a value that is not one of its `choices` or not of its `format`."""
    values: dict[tuple[str, str], str] = {}
    missing: list[Variable] = []
    for var in variables:
        supplied = given.get(var.kind, {}).get(var.key)
        if supplied is None and var.kind == "arg":  # an input's `{variable}` may come as --env too
            supplied = given.get("env", {}).get(var.key)
        if supplied is not None:
            values[(var.kind, var.key)] = check_value(var, supplied)
            continue
        if ask is not None:
            answer = ask(var)
            if answer:
                values[(var.kind, var.key)] = check_value(var, answer.replace("$", "$$"))
                continue
        if var.default is not None:  # the registry's text: literal, never a `$VAR` of the person's
            values[(var.kind, var.key)] = literal(var.default)
        elif var.required:
            missing.append(var)
    if missing:
        listed = "; ".join(f"`{v.key}`{' (secret)' if v.secret else ''}: {v.flag}" for v in missing)
        raise InvalidInput(f"server `{server}` needs values that were not given: {listed}")
    known = {v.key for v in variables if v.kind == "arg"}
    for key in given.get("arg", {}):  # an extra --env or --header is passed on as written
        if key not in known:
            raise InvalidInput(f"server `{server}` has no argument `{key}`; its arguments: "
                               f"{', '.join(f'`{k}`' for k in sorted(known)) or 'none'}")
    return values


__all__ = ["Ask", "check_value", "gather"]
