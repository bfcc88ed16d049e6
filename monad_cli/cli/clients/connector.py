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
    else:
        from monad_cli.cli.clients import jsonc

        data = jsonc.load(without, source=source, comments=client in ("vscode", "gemini"))
    if isinstance(data, dict):  # an empty server table left by the edit says nothing
        for key in ("mcpServers", "servers", "mcp_servers"):
            if data.get(key) == {}:
                data.pop(key)
        if data.get("mcp") == {"servers": {}}:
            data.pop("mcp")
    return data


def connect_client(client_name: str, path: str | None, *, remove: bool = False,
                   per_server: Sequence[str] | None = None) -> dict[str, Any]:
    """Write (or with `remove`, delete) the `monad` entry. Returns
    `{"client", "file", "entry", "changed", "removed"}`; `entry` is what the file now holds.

    `per_server`: instead, one entry per named server, each running `monad mcp serve NAME`
    under the server's own name, in place of the client's own entry of that name (its tool
    names and permission rules stay the client's: docs/gateway.md); `entries` maps each name
    to what the file now holds. With `remove`, only entries that run monad are taken out.

    Raises `ConfigError` (exit 2) for a malformed client file, `Conflict` (exit 2) when the
    entry cannot be written without rewriting a person's text (Aura), `MonadError` otherwise.
    """
    client = get_client(client_name)
    if per_server is not None:
        return _connect_per_server(client_name, path, list(per_server), remove=remove)
    from monad_cli.config.store import write_atomic

    mod = format_module(client)
    file = resolve(client_name, path)
    if client.name == "aura":
        file = mod.target(file)
        if not remove:
            mod.check_target(file)
    real = file.resolve() if file.is_symlink() else file
    source = shown(file)
    entry = None if remove else monad_entry()
    want = None if entry is None else mod.client_entry(client_name, entry)
    for _ in range(_TRIES):
        old = _read(real)
        text = old or ""
        new = mod.connect(client_name, text, entry, source)
        got = mod.read_entry(client_name, new, source) if new.strip() else None
        if got != want or _others(mod, client_name, new, source) != _others(mod, client_name, text, source):
            raise MonadError(f"editing `{source}` did not give the intended result; nothing was written "
                             f"(please report this with the file's shape)")
        result = {"client": client.name, "file": source, "entry": want, "removed": remove}
        if new == text:
            return {**result, "changed": False}
        if _read(real) != old:
            continue  # the client wrote meanwhile: redo the edit on its new text
        if not new.strip() and old is not None:
            os.unlink(real)  # Aura: monad's own file, nothing else in it
        else:
            mode = stat.S_IMODE(real.stat().st_mode) if old is not None else 0o600
            write_atomic(real, new.encode(), mode=mode)
        return {**result, "changed": True}
    raise MonadError(f"`{source}` kept changing while monad edited it (is {client.title} writing it?); "
                     f"nothing was written, try again")


def _connect_per_server(client_name: str, path: str | None, servers: list[str], *, remove: bool) -> dict[str, Any]:
    from monad_cli.config.store import write_atomic
    from monad_cli.core.errors import InvalidInput

    client = get_client(client_name)
    if client.name == "aura":
        raise InvalidInput("aura: --per-server is not supported (Aura reads one file per server monad does not "
                           "own); connect it without --per-server")
    if not servers:
        raise InvalidInput("--per-server: monad has no enabled server to write (see `monad mcp status`)")
    mod = format_module(client)
    file = resolve(client_name, path)
    real = file.resolve() if file.is_symlink() else file
    source = shown(file)
    ours = {n: mod.client_entry(client_name, monad_entry(n)) for n in servers}
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
        result = {"client": client.name, "file": source, "entries": want, "removed": remove}
        if new == text:
            return {**result, "changed": False}
        if _read(real) != old:
            continue  # the client wrote meanwhile: redo the edit on its new text
        mode = stat.S_IMODE(real.stat().st_mode) if old is not None else 0o600
        write_atomic(real, new.encode(), mode=mode)
        return {**result, "changed": True}
    raise MonadError(f"`{source}` kept changing while monad edited it (is {client.title} writing it?); "
                     f"nothing was written, try again")


__all__ = ["connect_client"]
