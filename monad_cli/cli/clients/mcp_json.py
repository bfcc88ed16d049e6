"""The `mcpServers` object: Claude Desktop, Claude Code, Cursor, Gemini CLI, Antigravity CLI,
Copilot CLI, plain `.mcp.json`.

    {"mcpServers": {"NAME": {"command": "...", "args": [...], "env": {...}, "cwd": "..."},
                    "NAME": {"type": "http", "url": "...", "headers": {...}}},
     ...every other key of the client's file...}

Dialects: a `url` with no `type` is streamable HTTP, except for Gemini CLI, whose `url` is
the legacy SSE endpoint and `httpUrl` the streamable one (both import as http) (`timeout` is its per-request
deadline in ms; `includeTools`/`excludeTools` are tool filters). Cursor writes `${env:NAME}`.
`type: "sse"` (the legacy HTTP+SSE transport) imports as an http server: the supervisor falls
back to SSE by itself (the spec's backwards-compatibility procedure, docs/supervisor.md).
Antigravity CLI (`~/.gemini/config/mcp_config.json`) names a remote's URL `serverUrl`.
Copilot CLI (`~/.copilot/mcp-config.json`) writes `type: "local"` for stdio and a `tools`
list on every entry (`["*"]`: all; else only these).
Claude Code's `~/.claude.json` also holds per-project servers (`projects.PATH.mcpServers`):
those are reported, not imported. Gemini's `settings.json` may carry comments (JSONC).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from monad_cli.cli.clients import jsonc
from monad_cli.cli.clients.entries import (
    Candidate,
    Unimportable,
    allow_deny_tools,
    check_references,
    editor_references,
    left_out,
    map_strings,
    split_definition,
)
from monad_cli.core.errors import ConfigError

KEY = "mcpServers"
COMMENTS = {"gemini"}  # clients whose file may hold comments (they strip them before JSON.parse)
_COMMON = {"command", "args", "env", "cwd", "type", "url", "headers", "disabled", "description"}
_GEMINI = {"httpUrl", "timeout", "includeTools", "excludeTools", "trust"}
_ANTIGRAVITY = {"serverUrl"}
_COPILOT = {"tools"}
_HTTP_TYPES = {None, "http", "streamable-http", "streamableHttp", "streamable_http"}


def _candidate(client: str, name: str, entry: Any) -> Candidate:
    where = f"{KEY}.{name}"
    cand = Candidate(name=name, where=where)
    if not isinstance(entry, dict):
        cand.problem = "the entry is not an object"
        return cand
    kind = entry.get("type")
    defn: dict[str, Any] = {}
    used = set(_COMMON) | {"gemini": _GEMINI, "antigravity": _ANTIGRAVITY, "copilot": _COPILOT}.get(client, set())
    if client == "copilot" and kind == "local":
        kind = "stdio"
    if client == "gemini" and "httpUrl" in entry:
        defn["transport"] = "http"
        defn["url"] = entry["httpUrl"]
    elif client == "antigravity" and "serverUrl" in entry:
        defn["transport"] = "http"
        defn["url"] = entry["serverUrl"]
    elif "url" in entry and (kind in _HTTP_TYPES or kind == "sse"):
        # A legacy HTTP+SSE server (`type: "sse"`, Gemini's `url`) is an http server to monad:
        # the supervisor falls back to SSE by itself (docs/supervisor.md "Legacy HTTP+SSE").
        defn["transport"] = "http"
        defn["url"] = entry["url"]
    elif kind in (None, "stdio"):
        defn["transport"] = "stdio"
    else:
        cand.problem = f"`type` {kind!r} is not a transport monad knows (stdio, http)"
        return cand
    fields = ("command", "args", "env", "cwd") if defn["transport"] == "stdio" else ("headers",)
    for key in fields:
        if key in entry:
            defn[key] = entry[key]
    if defn["transport"] == "http":
        used -= {"command", "args", "env", "cwd"}  # on an http entry these would be dropped: say so
    if entry.get("disabled") is True:
        defn["enabled"] = False
    if isinstance(entry.get("description"), str):
        defn["description"] = entry["description"]
    if client == "copilot" and "tools" in entry and entry["tools"] != ["*"]:
        try:
            tools = allow_deny_tools(entry["tools"], None, allow_field="tools", deny_field="", notes=cand.notes)
        except Unimportable as e:
            cand.problem = str(e)
            return cand
        if tools:
            defn["tools"] = tools
    if client == "gemini":
        if "timeout" in entry:
            defn["requestTimeoutMs"] = entry["timeout"]
        try:
            tools = allow_deny_tools(entry.get("includeTools"), entry.get("excludeTools"),
                                     allow_field="includeTools", deny_field="excludeTools", notes=cand.notes,
                                     call_form=True)
        except Unimportable as e:
            cand.problem = str(e)
            return cand
        if tools:
            defn["tools"] = tools
        if entry.get("trust"):
            cand.notes.append("left out `trust` (monad's approval gate decides; see `monad mcp trust`)")
    cand.notes = left_out(entry, used) + cand.notes
    try:
        fix = editor_references if client == "cursor" else check_references
        cand.definition = map_strings(defn, fix)
    except Unimportable as e:
        cand.problem = str(e)
    return cand


def read(client: str, path: Path, source: str) -> list[Candidate]:
    """The servers of the file at `path` (`source` is how messages name it).

    Raises `ConfigError` for a malformed file (with `file:line:col`) or a wrong shape.
    """
    data = jsonc.load(jsonc.read_text(path, source), source=source, comments=client in COMMENTS)
    if not isinstance(data, dict):
        raise ConfigError(f"`{source}`: expected a JSON object with `{KEY}`", file=source)
    servers = data.get(KEY, {})
    if not isinstance(servers, dict):
        raise ConfigError(f"`{source}`: `{KEY}` must be an object of servers", file=source)
    out = [_candidate(client, name, entry) for name, entry in servers.items()]
    projects = data.get("projects") if client == "claude-code" else None
    for project, body in (projects.items() if isinstance(projects, dict) else ()):
        local = body.get(KEY) if isinstance(body, dict) else None
        for name in local if isinstance(local, dict) else ():
            out.append(Candidate(name=name, where=f"projects.{project}.{KEY}.{name}",
                                 problem=f"defined for the project `{project}` only; not imported "
                                         f"(import that project's `.mcp.json` if it has one)"))
    return out


def client_entry(client: str, entry: dict[str, Any]) -> dict[str, Any]:
    """The `monad` entry in this client's spelling (Claude Code writes `type` on stdio entries,
    Copilot CLI `type: "local"` and the `tools` it may use)."""
    if client == "claude-code":
        return {"type": "stdio", **entry}
    if client == "copilot":
        return {"type": "local", **entry, "tools": ["*"]}
    return dict(entry)


def connect(client: str, text: str, entry: dict[str, Any] | None, source: str, *, name: str = "monad") -> str:
    """`text` with `mcpServers.NAME` (`monad`) set to `entry` (None removes it), all else kept."""
    if text.strip():
        jsonc.load(text, source=source, comments=client in COMMENTS)  # refuse a malformed file first
    return jsonc.set_member(text, (KEY, name),
                            None if entry is None else client_entry(client, entry), comments=client in COMMENTS)


def read_entry(client: str, text: str, source: str, name: str = "monad") -> Any:
    """The `<name>` entry as the client would read it (None when absent)."""
    data = jsonc.load(text, source=source, comments=client in COMMENTS) if text.strip() else {}
    servers = data.get(KEY) if isinstance(data, dict) else None
    return servers.get(name) if isinstance(servers, dict) else None


def export_entry(defn: dict[str, Any], client: str = "mcp-json") -> tuple[dict[str, Any], list[str]]:
    """One server in `.mcp.json` form (Claude Code's spelling; Antigravity's `serverUrl`,
    Copilot's `type: "local"` and `tools`) and the fields it cannot hold."""
    p = split_definition(defn)
    out: dict[str, Any]
    if p.transport == "stdio":
        out = {"type": "local", "command": p.command} if client == "copilot" else {"command": p.command}
        if p.args:
            out["args"] = p.args
        if p.env:
            out["env"] = p.env
        if p.cwd:
            out["cwd"] = p.cwd
    else:
        out = {"serverUrl": p.url} if client == "antigravity" else {"type": "http", "url": p.url}
        if p.all_headers():
            out["headers"] = p.all_headers()
    if client == "copilot":
        out["tools"] = ["*"]
    lost = list(p.rest)
    if p.oauth:
        lost.append("auth (OAuth: the client authorizes on its own)")
    return out, lost


def export_document(servers: list[tuple[str, dict[str, Any]]],
                    client: str = "mcp-json") -> tuple[str, dict[str, list[str]]]:
    """`{"mcpServers": {...}}` text and, per server, what was left out."""
    import json

    body: dict[str, Any] = {}
    lost: dict[str, list[str]] = {}
    for name, defn in servers:
        body[name], lost[name] = export_entry(defn, client)
    return json.dumps({KEY: body}, indent=2, ensure_ascii=False) + "\n", lost


__all__ = ["client_entry", "connect", "export_document", "export_entry", "read", "read_entry"]
