"""Where a stdio server runs: the `cwd` rule of `monad mcp add`, and the default directory.

The supervisor may have been started anywhere (by whichever command autostarted it), so a
server must never depend on the supervisor's own working directory:

- `monad mcp add NAME -- COMMAND ARGS` run in a directory records that directory as `cwd`
  when the command is a relative path (`./srv.py`, `bin/srv`), or an argument is a
  relative path that exists there (`python srv.py`, `--config=conf.json`, `.`). An
  explicit `--cwd` wins; `$VAR` values are left to expand in the supervisor.
- A server whose definition sets no `cwd` runs in its own directory under MONAD_HOME:
  `work/<name>/` (`sandbox/<name>/`, its scratch directory, for `sandbox = true`).

Both are shown by `monad mcp add` and `monad mcp get`; docs/atoms.md "cwd" says the same.
"""

from __future__ import annotations

import os
from pathlib import Path

from monad_cli.core.paths import Paths


def _relative_path_value(arg: str) -> str | None:
    """The part of an argument that could name a relative path, or None."""
    value = arg.split("=", 1)[1] if arg.startswith("-") and "=" in arg else arg
    if not value or value.startswith(("-", "/", "$", "~")) or "://" in value:
        return None
    return value


def cwd_to_record(command: str, args: list[str], here: str) -> tuple[str, str] | None:
    """`(cwd, why)` when a server added from `here` must keep `here` as its cwd, else None.

    `why` is one clause for the person, e.g. "`./srv.py` is a relative path"."""
    if "$" not in command and os.sep in command and not os.path.isabs(command):
        return here, f"the command `{command}` is a relative path"
    for arg in args:
        value = _relative_path_value(arg)
        if value is not None and os.path.exists(os.path.join(here, value)):
            return here, f"the argument `{arg}` is a relative path that exists here"
    return None


def default_workdir(paths: Paths, name: str, *, sandbox: bool = False) -> Path:
    """The directory a stdio server without `cwd` runs in (created 0700 at spawn)."""
    return paths.sandbox_dir(name) if sandbox else paths.server_workdir(name)
