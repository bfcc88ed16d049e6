"""`monad mcp export [--format mcp-json|codex|vscode|aura] [--reveal-secrets]`.

Every server monad defines (atoms, agents.json, enabled presets), as written (references
such as `${TOKEN}` stay references), in another client's format. Secret values (env and
header values, bearer tokens, URL query values, an argument after a secret-named flag)
print as `***` unless `--reveal-secrets`; a value made only of references is not a secret
and prints as it is. Stored OAuth state is never exported.
"""

from __future__ import annotations

from monad_cli.cli.clients.entries import shown_definition
from monad_cli.cli.clients.registry import EXPORT_FORMATS, get_client
from monad_cli.core.errors import InvalidInput
from monad_cli.core.paths import Paths

NO_OFF_SWITCH = ("mcp-json", "vscode")  # formats whose entries cannot be written disabled


def export_servers(paths: Paths, fmt: str, *, reveal: bool = False) -> tuple[str, list[str]]:
    """(the document's text, warnings): servers that could not be exported and, per server,
    the fields the format has no place for."""
    if fmt not in EXPORT_FORMATS:
        from monad_cli.cli.clients.registry import CLIENTS

        client = CLIENTS.get(fmt)
        if client is not None and client.format == "mcp_json":  # `--format cursor`: its file is mcp-json's
            raise InvalidInput(f"--format {fmt}: {client.title} reads the mcp-json format; use --format mcp-json")
        raise InvalidInput(f"--format must be one of {', '.join(EXPORT_FORMATS)}; got {fmt!r}")
    from monad_cli.cli.clients.importer import format_module
    from monad_cli.config.loader import load_definitions

    defs = load_definitions(paths, expand=False)
    warnings = [p.message for p in defs.problems if p.server is None]
    warnings += [f"server `{p.server}` is not exported: {p.message}" for p in defs.problems
                 if p.server is not None and p.server not in defs.specs]
    servers = []
    for name in sorted(defs.specs):
        if not defs.specs[name].enabled and fmt in NO_OFF_SWITCH:
            warnings.append(f"server `{name}` is disabled and the {fmt} format has no off switch; not exported")
        elif name in defs.raw:
            servers.append((name, shown_definition(defs.raw[name], reveal=reveal)))
    text, lost = format_module(get_client(fmt)).export_document(servers, client=fmt)
    for name, fields in lost.items():
        if fields:
            warnings.append(f"server `{name}`: left out of the {fmt} export (no equivalent there): "
                            f"{', '.join(f'`{f}`' if ' ' not in f else f for f in fields)}")
    return text, warnings


__all__ = ["export_servers"]
