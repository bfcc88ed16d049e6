"""Zed's `settings.json`: the `context_servers` object (JSON with comments).

    {"context_servers": {
        "NAME": {"source": "custom", "command": "npx", "args": ["-y", "pkg"], "env": {...}},
        "NAME": {"source": "custom", "url": "https://...", "headers": {...}},
        "NAME": {"source": "extension", "settings": {...}}}}

Zed's older form nests the command: `"command": {"path": "...", "args": [...], "env": {...}}`;
both are read, the flat one is written. A server provided by a Zed extension
(`source: "extension"`, or `settings` alone) names no command: reported, not imported.
`enabled: false` (Zed's off switch) imports as `enabled = false`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from monad_cli.cli.clients import jsonc
from monad_cli.cli.clients.entries import (
    Candidate,
    Unimportable,
    check_references,
    left_out,
    map_strings,
    split_definition,
)

KEY = "context_servers"


def _candidate(name: str, entry: Any) -> Candidate:
    cand = Candidate(name=name, where=f"{KEY}.{name}")
    if not isinstance(entry, dict):
        cand.problem = "the entry is not an object"
        return cand
    defn: dict[str, Any] = {}
    command = entry.get("command")
    if isinstance(command, dict):  # the older, nested form
        defn.update(transport="stdio", command=command.get("path"))
        for key in ("args", "env"):
            if key in command:
                defn[key] = command[key]
        used = {"source", "command", "settings", "enabled"}
    elif isinstance(command, str):
        defn.update(transport="stdio", command=command)
        for key in ("args", "env"):
            if key in entry:
                defn[key] = entry[key]
        used = {"source", "command", "args", "env", "settings", "enabled"}
    elif isinstance(entry.get("url"), str):
        defn.update(transport="http", url=entry["url"])
        if "headers" in entry:
            defn["headers"] = entry["headers"]
        used = {"source", "url", "headers", "settings", "enabled"}
    else:
        cand.problem = ("a server from a Zed extension (no `command` or `url`): Zed runs it; add it to monad "
                        "by its command with `monad mcp add`")
        return cand
    if entry.get("enabled") is False:
        defn["enabled"] = False
    cand.notes = left_out(entry, used)
    if entry.get("settings"):
        cand.notes.append("left out `settings` (passed to a Zed extension, not to the server)")
    try:
        cand.definition = map_strings(defn, check_references)
    except Unimportable as e:
        cand.problem = str(e)
    return cand


def load_document(text: str, source: str) -> Any:
    return jsonc.load(text, source=source, comments=True) if text.strip() else {}


def read(client: str, path: Path, source: str) -> list[Candidate]:
    """The servers of Zed's `settings.json`. `ConfigError` for a malformed file or a wrong shape."""
    return [_candidate(name, entry) for name, entry in jsonc.servers_in(path, source, KEY).items()]


def client_entry(client: str, entry: dict[str, Any]) -> dict[str, Any]:
    return {"source": "custom", **entry}


def connect(client: str, text: str, entry: dict[str, Any] | None, source: str, *, name: str = "monad") -> str:
    """`text` with `context_servers.NAME` (`monad`) set to `entry` (None removes it); comments and
    all else kept."""
    return jsonc.set_server(text, source, KEY, name, None if entry is None else client_entry(client, entry))


def read_entry(client: str, text: str, source: str, name: str = "monad") -> Any:
    return jsonc.server_of(text, source, KEY, name)


def export_document(servers: list[tuple[str, dict[str, Any]]],
                    client: str = "") -> tuple[str, dict[str, list[str]]]:
    """`{"context_servers": {...}}` text and what each server lost."""
    import json

    body: dict[str, Any] = {}
    lost: dict[str, list[str]] = {}
    for name, defn in servers:
        p = split_definition(defn)
        out: dict[str, Any] = {"source": "custom"}
        if p.transport == "stdio":
            out["command"] = p.command
            out["args"] = p.args
            if p.env:
                out["env"] = p.env
        else:
            out["url"] = p.url
            if p.all_headers():
                out["headers"] = p.all_headers()
        rest = dict(p.rest)
        if rest.pop("enabled", True) is False:
            out["enabled"] = False
        rest.pop("description", None)
        body[name] = out
        lost[name] = list(rest) + (["cwd"] if p.cwd else []) + \
            (["auth (OAuth: the client authorizes on its own)"] if p.oauth else [])
    return json.dumps({KEY: body}, indent=2, ensure_ascii=False) + "\n", lost


__all__ = ["client_entry", "connect", "export_document", "load_document", "read", "read_entry"]
