"""`monad mcp connect CLIENT [PATH] [--remove] [--per-server]`: point a client at monad's gateway.

Writes one server entry named `monad` running `monad mcp serve` (by the absolute path of
this `monad`) into the client's file, in its own format and key, and nothing else (with
`--per-server`: one entry per monad server, named as the server, running `monad mcp serve
NAME`, in place of the client's own entry of that name): the
JSON formats are edited in place (`jsonc.set_member`), Codex's TOML through tomlkit, Aura
gets a file of its own. The result is parsed back with the client's rules and must hold
exactly the intended entry and everything the file held before, or nothing is written.

The client may rewrite its file at any moment (Claude Code does), and monad's lock does
not bind it: the file is re-read just before the atomic replace and the edit redone if it
changed meanwhile (three tries). A symlinked file is written through to its target.

The client's own entries for servers monad also runs stay unless `replace`: each such server
would then run twice (once by the client, once behind the gateway), so the result names
them (`duplicates`) and `replace` takes them out in the same write. `remove` on a file that
then holds only what `connect` itself would have created from nothing deletes the file.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from monad_cli.cli.clients.entries import monad_entry
from monad_cli.cli.clients.importer import format_module
from monad_cli.cli.clients.registry import get_client, resolve, shown
from monad_cli.core.errors import MonadError

_TRIES = 3


def _read(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("utf-8-sig")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        from monad_cli.core.errors import ConfigError

        raise ConfigError(f"`{shown(path)}` is not UTF-8 text") from None


def _others(mod: Any, client: str, text: str, source: str, names: dict[str, dict[str, Any]] | None = None) -> Any:
    """What the file holds besides the `monad` entry (or the entries `names`), as the client would read it."""
    without = text
    for kw in (names or {"monad": {}}).values():
        without = mod.connect(client, without, None, source, **kw) if without.strip() else ""
    if client == "aura" or not without.strip():
        return {}
    if mod.__name__.endswith("codex"):
        data = mod.load(without, source)
    elif hasattr(mod, "load_document"):
        data = mod.load_document(without, source)
    else:
        from monad_cli.cli.clients import jsonc

        data = jsonc.load(without, source=source, comments=client in ("vscode", "gemini"))
    if isinstance(data, dict):  # an empty server table left by the edit says nothing
        for key in ("mcpServers", "servers", "mcp_servers", "mcp", "context_servers", "extensions"):
            if data.get(key) == {}:
                data.pop(key)
        if data.get("mcp") == {"servers": {}}:
            data.pop("mcp")
    return data


def duplicates(client_name: str, file: Path, source: str) -> list[str]:
    """Names of the client's own entries (not `monad`, not monad's gateway) for servers monad
    also defines: the same name, or the same definition under another name."""
    from monad_cli.cli.clients.entries import is_monad_gateway
    from monad_cli.cli.clients.importer import same_definition
    from monad_cli.config.loader import load_definitions
    from monad_cli.core.paths import paths

    if not file.exists() or file.is_dir():
        return []
    mine = load_definitions(paths(), expand=False)
    out = []
    for cand in format_module(get_client(client_name)).read(client_name, file, source):
        if cand.name == "monad" or is_monad_gateway(cand.definition) or cand.where.startswith("projects."):
            continue  # a project-scoped entry of Claude Code is not the client's global one
        if cand.name in mine.raw or (cand.definition is not None and any(
                same_definition(raw, cand.definition, cand.name) for raw in mine.raw.values())):
            out.append(cand.name)
    return out


def installed_clients() -> list[str]:
    """The clients this machine has, found by their usual config file: the file exists, or
    its own folder does (the client is installed, with no MCP file yet). Project files
    (`.mcp.json`, Aura's) are not looked for."""
    from monad_cli.cli.clients.registry import CLIENTS, PROJECT_CLIENTS

    home = Path.home()
    found = []
    for name in CLIENTS:
        if name in PROJECT_CLIENTS:
            continue
        file = resolve(name, None)
        if file.exists() or (file.parent != home and file.parent.is_dir()):
            found.append(name)
    return found


def connect_all(*, dry_run: bool = False, remove: bool = False, replace: bool = False,
                serve_args: Sequence[str] = ()) -> list[dict[str, Any]]:
    """`connect_client` for every installed client; one row each, with `error` (a message)
    instead of raising, so one bad file does not stop the others."""
    rows = []
    for name in installed_clients():
        try:
            rows.append({**connect_client(name, None, remove=remove, replace=replace and name != "aura",
                                          dry_run=dry_run, serve_args=serve_args), "error": None})
        except MonadError as e:
            rows.append({"client": name, "file": shown(resolve(name, None)), "entry": None, "removed": remove,
                         "changed": False, "dryRun": dry_run, "duplicates": [], "replaced": [], "deleted": False,
                         "error": e.message})
    return rows


def connect_client(client_name: str, path: str | None, *, remove: bool = False, replace: bool = False,
                   dry_run: bool = False, per_server: Sequence[str] | None = None,
                   serve_args: Sequence[str] = ()) -> dict[str, Any]:
    """Write (or with `remove`, delete) the `monad` entry. Returns
    `{"client", "file", "entry", "changed", "removed", "dryRun", "duplicates", "replaced",
    "deleted"}`; `entry` is what the file now holds (with `dry_run`: would hold; nothing is
    written), `duplicates` the client's own entries for servers monad runs too (taken out when
    `replace`: then `replaced` lists them), `deleted` whether `remove` deleted the file monad
    had created.

    `per_server`: instead, one entry per named server, each running `monad mcp serve NAME`
    under the server's own name, in place of the client's own entry of that name (its tool
    names and permission rules stay the client's: docs/gateway.md); `entries` maps each name
    to what the file now holds (with `dry_run`: would hold; nothing is written). With `remove`,
    only entries that run monad are taken out.

    Raises `ConfigError` (exit 2) for a malformed client file, `Conflict` (exit 2) when the
    entry cannot be written without rewriting a person's text (Aura), `InvalidInput` for
    `replace` with Aura or with `remove`, `MonadError` otherwise.
    """
    client = get_client(client_name)
    if per_server is not None:
        return _connect_per_server(client_name, path, list(per_server), remove=remove, dry_run=dry_run)
    from monad_cli.config.store import write_atomic
    from monad_cli.core.errors import InvalidInput

    if replace and (remove or client.name == "aura"):
        raise InvalidInput("--replace goes with connect, not --remove" if remove else
                           "--replace is not for aura (each server is a file of its own there; delete it)")
    mod = format_module(client)
    file = resolve(client_name, path)
    if client.name == "aura":
        file = mod.target(file)
        if not remove:
            mod.check_target(file)
    real = file.resolve() if file.is_symlink() else file
    source = shown(file)
    entry = None if remove else monad_entry(serve_args=serve_args)
    want = None if entry is None else mod.client_entry(client_name, entry)
    dups = [] if remove or client.name == "aura" else duplicates(client_name, real, source)
    for _ in range(_TRIES):
        old = _read(real)
        text = old or ""
        if replace:
            for name in dups:
                text = mod.connect(client_name, text, None, source, name=name)
        new = mod.connect(client_name, text, entry, source)
        got = mod.read_entry(client_name, new, source) if new.strip() else None
        if got != want or _others(mod, client_name, new, source) != _others(mod, client_name, text, source):
            raise MonadError(f"editing `{source}` did not give the intended result; nothing was written "
                             f"(please report this with the file's shape)")
        result = {"client": client.name, "file": source, "entry": want, "removed": remove, "dryRun": dry_run,
                  "duplicates": [] if replace else dups, "replaced": dups if replace else [], "deleted": False}
        if new == (old or "") or dry_run:
            return {**result, "changed": new != (old or "")}
        if _read(real) != old:
            continue  # the client wrote meanwhile: redo the edit on its new text
        if old is not None and (not new.strip() or (remove and new == _created(mod, client_name, source))):
            # Aura: monad's own file, nothing else in it; or a file `connect` created from
            # nothing, now back to the empty shell it wrote (`{"mcpServers": {}}`).
            os.unlink(real)
            result["deleted"] = True
        else:
            mode = stat.S_IMODE(real.stat().st_mode) if old is not None else 0o600
            write_atomic(real, new.encode(), mode=mode)
        return {**result, "changed": True}
    raise MonadError(f"`{source}` kept changing while monad edited it (is {client.title} writing it?); "
                     f"nothing was written, try again")


def _created(mod: Any, client: str, source: str) -> str:
    """What the file holds when `connect` created it and `connect --remove` took the entry out."""
    return str(mod.connect(client, mod.connect(client, "", monad_entry(), source), None, source))



def _connect_per_server(client_name: str, path: str | None, servers: list[str], *, remove: bool,
                        dry_run: bool = False) -> dict[str, Any]:
    from monad_cli.config.store import write_atomic
    from monad_cli.core.errors import InvalidInput

    client = get_client(client_name)
    if client.name == "aura":
        raise InvalidInput("aura: --per-server is not supported (Aura reads one file per server monad does not "
                           "own); connect it without --per-server")
    if not servers:
        raise InvalidInput("--per-server: monad has no enabled server to write (see `monad mcp status`)")
    mod = format_module(client)
    import inspect

    if "name" not in inspect.signature(mod.connect).parameters:
        raise InvalidInput(f"{client_name}: --per-server is not supported for this client's file format yet; "
                           f"connect it without --per-server")
    file = resolve(client_name, path)
    real = file.resolve() if file.is_symlink() else file
    source = shown(file)
    named = "name" in inspect.signature(mod.client_entry).parameters  # an entry that says its own name (Goose)
    ours = {n: mod.client_entry(client_name, monad_entry(n), *((n,) if named else ())) for n in servers}
    names = {n: {"name": n} for n in servers}
    for _ in range(_TRIES):
        old = _read(real)
        text = old or ""
        new, want = text, {}
        for n in servers:
            current = mod.read_entry(client_name, new, source, name=n) if new.strip() else None
            if remove and current != ours[n]:
                want[n] = current  # the client's own entry: not monad's to remove
                continue
            new = mod.connect(client_name, new, None if remove else monad_entry(n), source, name=n)
            want[n] = None if remove else ours[n]
        got = {n: mod.read_entry(client_name, new, source, name=n) if new.strip() else None for n in servers}
        if got != want or _others(mod, client_name, new, source, names) != _others(mod, client_name, text, source,
                                                                                  names):
            raise MonadError(f"editing `{source}` did not give the intended result; nothing was written "
                             f"(please report this with the file's shape)")
        result = {"client": client.name, "file": source, "entries": want, "removed": remove, "dryRun": dry_run}
        if new == text or dry_run:
            return {**result, "changed": new != text}
        if _read(real) != old:
            continue  # the client wrote meanwhile: redo the edit on its new text
        mode = stat.S_IMODE(real.stat().st_mode) if old is not None else 0o600
        write_atomic(real, new.encode(), mode=mode)
        return {**result, "changed": True}
    raise MonadError(f"`{source}` kept changing while monad edited it (is {client.title} writing it?); "
                     f"nothing was written, try again")


__all__ = ["connect_all", "connect_client", "duplicates", "installed_clients"]
