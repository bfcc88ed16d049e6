"""Where a definition's `$VAR` values come from, as the CLI can tell: MONAD_HOME/env (read
here), then the supervisor's environment (asked through `GET /v1/env` when a supervisor
runs; when none runs, the one a supervisor started from this shell would have). Names and
sources only, never values."""

from __future__ import annotations

import os
from typing import Any

from monad_cli.cli.commands._common import running
from monad_cli.core.order import by_name
from monad_cli.core.paths import paths

UNKNOWN = "unknown"  # the supervisor is not running: only the env file could be read


def users() -> dict[str, list[str]]:
    """Variable name → the servers whose definitions (as written) reference it."""
    from monad_cli.config.expansion import variable_users
    from monad_cli.config.loader import load_definitions

    return variable_users(load_definitions(paths(), expand=False).raw)


def listing() -> tuple[list[dict[str, Any]], list[str]]:
    """(`[{name, source, servers}]`, the env file's problems), from the supervisor if it runs."""
    client = running()
    if client is not None:
        answer = client.get("/v1/env")
        return answer["variables"], answer["problems"]
    from monad_cli.config.envfile import FROM_FILE, read_env_file

    read = read_env_file(paths())
    used = users()
    names = by_name(set(read.values) | set(used))
    return ([{"name": n, "source": FROM_FILE if n in read.values else UNKNOWN, "servers": used.get(n, [])}
             for n in names], read.problems)


def sources(names: list[str]) -> dict[str, str | None]:
    """Name → `env-file`, `environment` or None (set in neither place). Without a running
    supervisor, this process's environment stands in for the supervisor's: a supervisor
    started from here would inherit it."""
    from monad_cli.config.envfile import FROM_ENVIRONMENT, FROM_FILE, read_env_file

    in_file = read_env_file(paths()).values
    out: dict[str, str | None] = {n: FROM_FILE for n in names if n in in_file}
    rest = [n for n in names if n not in out]
    if not rest:
        return out
    client = running()
    if client is not None:
        from urllib.parse import urlencode

        answer = client.get("/v1/env?" + urlencode([("name", n) for n in rest]))
        out.update({v["name"]: v["source"] for v in answer["variables"]})
    else:
        out.update({n: FROM_ENVIRONMENT if n in os.environ else None for n in rest})
    return {n: out.get(n) for n in names}
