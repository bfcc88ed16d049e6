"""`monad mcp connect CLIENT [PATH] [--remove]`: point a client at monad's gateway.

Writes one server entry named `monad` running `monad mcp serve` (by the absolute path of
this `monad`) into the client's file, in its own format and key, and nothing else: the
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


def _others(mod: Any, client: str, text: str, source: str) -> Any:
    """What the file holds besides the `monad` entry, as the client would read it."""
    without = mod.connect(client, text, None, source) if text.strip() else ""
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


def connect_all(*, dry_run: bool = False, remove: bool = False) -> list[dict[str, Any]]:
    """`connect_client` for every installed client; one row each, with `error` (a message)
    instead of raising, so one bad file does not stop the others."""
    rows = []
    for name in installed_clients():
        try:
            rows.append({**connect_client(name, None, remove=remove, dry_run=dry_run), "error": None})
        except MonadError as e:
            rows.append({"client": name, "file": shown(resolve(name, None)), "entry": None, "removed": remove,
                         "changed": False, "dryRun": dry_run, "error": e.message})
    return rows


def connect_client(client_name: str, path: str | None, *, remove: bool = False,
                   dry_run: bool = False) -> dict[str, Any]:
    """Write (or with `remove`, delete) the `monad` entry. Returns
    `{"client", "file", "entry", "changed", "removed", "dryRun"}`; `entry` is what the file
    now holds (with `dry_run`: would hold; nothing is written).

    Raises `ConfigError` (exit 2) for a malformed client file, `Conflict` (exit 2) when the
    entry cannot be written without rewriting a person's text (Aura), `MonadError` otherwise.
    """
    from monad_cli.config.store import write_atomic

    client = get_client(client_name)
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
        result = {"client": client.name, "file": source, "entry": want, "removed": remove, "dryRun": dry_run}
        if new == text or dry_run:
            return {**result, "changed": new != text}
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


__all__ = ["connect_all", "connect_client", "installed_clients"]
