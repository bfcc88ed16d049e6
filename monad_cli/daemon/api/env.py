"""Control API routes for MONAD_HOME/env, the variables `$VAR` expands from (docs/atoms.md
"Variables"). Names and sources only: no answer ever holds a value.

    GET    /v1/env[?name=X&name=Y]   {variables: [{name, source, servers}], problems: [...]}
                                     every name the env file sets or a definition references
                                     (or just the names asked); `source`: `env-file`,
                                     `environment` (the supervisor's own) or null (unset)
    PUT    /v1/env/{name}            {value} → {name, created, servers}: written to the file
                                     (locked, atomic, 0600), applied before the answer: the
                                     servers whose expanded definition changed reconnect
    DELETE /v1/env/{name}            → {name, servers}; 404 when the file does not set it

`monad env set/unset` write the file themselves (the supervisor may not run).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from monad_cli.config import envfile
from monad_cli.config.expansion import variable_users
from monad_cli.core.errors import InvalidInput
from monad_cli.core.order import by_name
from monad_cli.daemon.http import read_json_body, via

if TYPE_CHECKING:
    from monad_cli.daemon.port import DaemonPort


def env_routes(sup: DaemonPort) -> list[Route]:

    def listing(names: list[str] | None) -> dict[str, Any]:
        used = variable_users(sup.definitions.raw)
        if names is None:
            names = by_name(set(sup.variables.file) | set(used))
        return {"variables": [{"name": n, "source": sup.variables.source(n), "servers": used.get(n, [])}
                              for n in names],
                "problems": list(sup.env_problems)}

    async def list_env(request: Request) -> JSONResponse:
        await sup.reconcile()
        asked = request.query_params.getlist("name")
        for name in asked:
            envfile.check_name(name)
        return JSONResponse(listing(asked or None))

    async def applied(request: Request, what: str, name: str) -> dict[str, Any]:
        """Journal the change (the name only, never the value), apply it; `{name, servers}`."""
        if sup.journal is not None:
            sup.journal.record("edit", reason=f"variable `{name}` {what} in MONAD_HOME/env",
                               detail={"via": via(request), "action": f"env {what}", "variable": name})
        await sup.reconcile(force=True)
        return {"name": name, "servers": variable_users(sup.definitions.raw).get(name, [])}

    async def set_env(request: Request) -> JSONResponse:
        name = request.path_params["name"]
        envfile.check_name(name)
        body = await read_json_body(request)
        value = body.get("value")
        if not isinstance(value, str):
            raise InvalidInput('expected {"value": "..."} (a string)')
        if not value and body.get("allowEmpty") is not True:  # as `monad env set`: nothing typed is a slip
            raise InvalidInput(f'the value of `{name}` is empty; send "allowEmpty": true to set it empty, or '
                               f"remove it (DELETE /v1/env/{name})")
        existed = await anyio.to_thread.run_sync(lambda: envfile.set_variable(sup.paths, name, value))
        return JSONResponse({"name": name, "created": not existed, **await applied(request, "set", name)})

    async def unset_env(request: Request) -> JSONResponse:
        name = request.path_params["name"]
        await anyio.to_thread.run_sync(lambda: envfile.unset_variable(sup.paths, name))
        return JSONResponse(await applied(request, "unset", name))

    return [
        Route("/v1/env", list_env),
        Route("/v1/env/{name}", set_env, methods=["PUT"]),
        Route("/v1/env/{name}", unset_env, methods=["DELETE"]),
    ]
