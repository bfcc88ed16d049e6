"""`monad mcp export CLIENT [--reveal-secrets]`: every server in the format CLIENT's file takes.

Every server monad defines (atoms, agents.json, enabled presets), as written (references
such as `${TOKEN}` stay references). Secret values (env and header values whose name or
shape says secret, bearer tokens, URL query values, an argument after a secret-named flag)
print as `***` unless
`reveal`; a value made only of references is not a secret and prints as it is. Stored
OAuth state is never exported. One loop for every format: each gives one entry per server
(`ClientFormat.export_entry`) and the document around them (`export_text`).
"""

from __future__ import annotations

from monad_cli.clients.entries import shown_definition, split_definition
from monad_cli.clients.registry import CLIENTS, get_client
from monad_cli.core.paths import Paths


def export_servers(paths: Paths, client_name: str, *, reveal: bool = False) -> tuple[str, list[str]]:
    """(the document's text, warnings): servers that could not be exported and, per server,
    the fields the format has no place for. `client_name` is any client: the clients that
    read the `.mcp.json` format get that one. Raises `InvalidInput` for an unknown client."""
    from monad_cli.config.loader import held_secrets_of, load_definitions

    fmt = CLIENTS[get_client(client_name).export_as]
    defs = load_definitions(paths, expand=False)
    warnings = [p.message for p in defs.problems if p.server is None]
    warnings += [f"server `{p.server}` is not exported: {p.message}" for p in defs.problems
                 if p.server is not None and p.server not in defs.specs]
    entries = {}
    # A value equal to a secret held elsewhere (the same token as a plain-named header) is one too.
    known = set() if reveal else held_secrets_of(paths, defs.raw.values())
    for name in sorted(defs.specs):
        if not defs.specs[name].enabled and not fmt.off_switch:
            warnings.append(f"server `{name}` is disabled and the {fmt.name} format has no off switch; not exported")
            continue
        if name not in defs.raw:
            continue
        server = split_definition(shown_definition(defs.raw[name], reveal=reveal, secrets=known))
        if server.rest.get("enabled") is True and not fmt.off_switch:
            # What `monad mcp enable` writes: the default, and the only state exported there.
            del server.rest["enabled"]
        entries[name], lost = fmt.export_entry(name, server)
        lost = [*server.rest, *lost]  # what the entry took out of `rest` it holds
        if lost:
            warnings.append(f"server `{name}`: left out of the {fmt.name} export (no equivalent there): "
                            f"{', '.join(f'`{f}`' if ' ' not in f else f for f in lost)}")
    return fmt.export_text(entries), warnings


__all__ = ["export_servers"]
