"""Whether `monad mcp authorize NAME` applies to a server, checked before the OAuth code (and
the MCP SDK it imports, ~3 s on a loaded machine) is loaded: a mistyped name or a stdio
server is one line at once. Stdlib and monad's config only."""

from __future__ import annotations

import os

from monad_cli.config.edits import read_definition
from monad_cli.config.schema import ServerSpec, validate
from monad_cli.core.errors import InvalidInput
from monad_cli.core.paths import Paths


def authorizable(paths: Paths, name: str) -> tuple[str, ServerSpec]:
    """Check the server can use OAuth (`auth.mode` is `none` or `oauth`). Writes nothing:
    `auth.mode = "oauth"` and a `--client-id` are written with the tokens, once the flow
    has succeeded (`DefinitionTokenStorage.commit`), so a failed flow changes nothing."""
    source, raw = read_definition(paths, name)
    spec = validate(raw, name=name, source=source, environ=os.environ)
    if spec.transport != "http":
        raise InvalidInput(f"server `{name}` is a stdio server; only http servers are authorized")
    mode = spec.auth.mode
    if mode not in ("none", "oauth"):
        raise InvalidInput(f"`{source}`: server `{name}`, field `auth.mode`: set it to `oauth` "
                           f"(not `{mode}`) to use `monad mcp authorize`")
    if spec.auth.flow == "client_credentials":
        raise InvalidInput(f"server `{name}` uses client credentials (`auth.flow` in `{source}`): the supervisor "
                           f"gets its tokens itself, there is nothing to authorize; see `monad mcp status {name}`")
    return source, spec


__all__ = ["authorizable"]
