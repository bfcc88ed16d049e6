"""VS Code's `mcp.json`: the `servers` object, with `inputs` beside it (JSON with comments).

    {"inputs": [{"type": "promptString", "id": "api-key", "password": true}],
     "servers": {"NAME": {"type": "stdio", "command": "...", "args": [...], "env": {...}},
                 "NAME": {"type": "http", "url": "...", "headers": {...}}}}

A user `settings.json` that still holds the older `"mcp": {"servers": {...}}` is read too.
`${env:NAME}` becomes `${NAME}` and `${userHome}` `${HOME}`; a server using `${input:ID}` or
the editor's workspace variables is reported as not importable, naming the field, and so is
one with `envFile` (variables monad would not see). `type: "sse"` (legacy HTTP+SSE) imports
as http: the supervisor falls back to SSE by itself.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from monad_cli.cli.clients import jsonc
from monad_cli.cli.clients.entries import (
    Candidate,
    Unimportable,
    editor_references,
    left_out,
    map_strings,
    split_definition,
)
from monad_cli.core.errors import ConfigError

_BARE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)|\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _servers_key(data: Any) -> tuple[str, ...]:
    if isinstance(data, dict) and "servers" not in data and isinstance(data.get("mcp"), dict):
        return ("mcp", "servers")
    return ("servers",)


def _candidate(name: str, entry: Any, prefix: str) -> Candidate:
    cand = Candidate(name=name, where=f"{prefix}.{name}")
    if not isinstance(entry, dict):
        cand.problem = "the entry is not an object"
        return cand
    kind = entry.get("type") or ("http" if "url" in entry else "stdio")
    if kind == "sse":
        kind = "http"  # the supervisor falls back to the legacy HTTP+SSE transport by itself
    if kind not in ("stdio", "http"):
        cand.problem = f"`type` {kind!r} is not a transport monad knows (stdio, http)"
        return cand
    if "envFile" in entry:
        cand.problem = ("field `envFile`: monad does not read env files; copy the variables into `env` "
                        "(or the supervisor's environment as `${NAME}`) and import again")
        return cand
    keep = ("command", "args", "env", "cwd") if kind == "stdio" else ("url", "headers")
    defn: dict[str, Any] = {"transport": kind, **{k: entry[k] for k in keep if k in entry}}
    cand.notes = left_out(entry, {"type", *keep})
    try:
        cand.definition = map_strings(defn, editor_references)
    except Unimportable as e:
        cand.problem = str(e)
    return cand


def read(client: str, path: Path, source: str) -> list[Candidate]:
    """The servers of a VS Code `mcp.json` (or `settings.json`). `ConfigError` for a bad file."""
    data = jsonc.load(jsonc.read_text(path, source), source=source, comments=True)
    if not isinstance(data, dict):
        raise ConfigError(f"`{source}`: expected a JSON object with `servers`", file=source)
    keys = _servers_key(data)
    servers: Any = data
    for key in keys:
        servers = servers.get(key, {}) if isinstance(servers, dict) else None
    if not isinstance(servers, dict):
        raise ConfigError(f"`{source}`: `{'.'.join(keys)}` must be an object of servers", file=source)
    return [_candidate(name, entry, ".".join(keys)) for name, entry in servers.items()]


def client_entry(client: str, entry: dict[str, Any]) -> dict[str, Any]:
    return {"type": "stdio", **entry}


def connect(client: str, text: str, entry: dict[str, Any] | None, source: str, name: str = "monad") -> str:
    """`text` with `servers.<name>` set to `entry` (None removes it); comments and all else kept."""
    data = jsonc.load(text, source=source, comments=True) if text.strip() else {}
    value = None if entry is None else client_entry(client, entry)
    return jsonc.set_member(text, (*_servers_key(data), name), value, comments=True)


def read_entry(client: str, text: str, source: str, name: str = "monad") -> Any:
    data = jsonc.load(text, source=source, comments=True) if text.strip() else {}
    servers: Any = data
    for key in _servers_key(data):
        servers = servers.get(key) if isinstance(servers, dict) else None
    return servers.get(name) if isinstance(servers, dict) else None


def _editor(value: str) -> str:
    """monad references in VS Code's spelling: `$X`/`${X}` → `${env:X}` (`$$` stays literal)."""
    parts = value.split("$$")
    return "$$".join(_BARE.sub(lambda m: "${env:" + (m.group(1) or m.group(2)) + "}", p) for p in parts)


def export_document(servers: list[tuple[str, dict[str, Any]]]) -> tuple[str, dict[str, list[str]]]:
    """`{"servers": {...}}` text with references as `${env:NAME}`, and what each server lost."""
    import json

    body: dict[str, Any] = {}
    lost: dict[str, list[str]] = {}
    for name, defn in servers:
        p = split_definition(defn)
        out: dict[str, Any] = {"type": p.transport}
        if p.transport == "stdio":
            out["command"] = _editor(p.command or "")
            if p.args:
                out["args"] = [_editor(a) for a in p.args]
            if p.env:
                out["env"] = {k: _editor(v) for k, v in p.env.items()}
            if p.cwd:
                out["cwd"] = _editor(p.cwd)
        else:
            out["url"] = _editor(p.url or "")
            if p.all_headers():
                out["headers"] = {k: _editor(v) for k, v in p.all_headers().items()}
        body[name] = out
        lost[name] = list(p.rest) + (["auth (OAuth: the client authorizes on its own)"] if p.oauth else [])
    return json.dumps({"servers": body}, indent=2, ensure_ascii=False) + "\n", lost


__all__ = ["client_entry", "connect", "export_document", "read", "read_entry"]
