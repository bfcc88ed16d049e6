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

from monad_cli.clients import jsonc
from monad_cli.clients.entries import (
    Candidate,
    Parts,
    Unimportable,
    allow_deny_tools,
    editor_references,
    leave_out,
    map_strings,
)
from monad_cli.clients.format import OAUTH_LOST, JsonFormat

KEY = "mcpServers"
_COMMON = {"command", "args", "env", "cwd", "type", "url", "headers", "disabled", "description"}
_GEMINI = {"httpUrl", "timeout", "includeTools", "excludeTools", "trust"}
_ANTIGRAVITY = {"serverUrl"}
_COPILOT = {"tools"}
_HTTP_TYPES = {None, "http", "streamable-http", "streamableHttp", "streamable_http"}
_TRANSPORT = {"command", "args", "env", "cwd", "url", "headers", "httpUrl", "serverUrl"}


class McpJson(JsonFormat):
    """The `mcpServers` object, in each client's dialect (`name`: the client)."""

    key = KEY

    def __init__(self, name: str, title: str, *, comments: bool = False, project: bool = False,
                 exports: bool = False) -> None:
        super().__init__(name, title)
        self.comments = comments  # Gemini strips comments before JSON.parse
        self.project = project
        self.export_as = name if exports else "mcp-json"
        self.off_switch = name != "mcp-json"  # `.mcp.json` has no `disabled`

    def candidate(self, name: str, entry: dict[str, Any], where: str) -> Candidate:
        client = self.name
        cand = Candidate(name=name, where=where)
        kind = entry.get("type")
        used = set(_COMMON) | {"gemini": _GEMINI, "antigravity": _ANTIGRAVITY, "copilot": _COPILOT}.get(client, set())
        if client == "copilot" and kind == "local":
            kind = "stdio"
        url_key: str | None = None  # the field monad's `url` comes from
        if client == "gemini" and "httpUrl" in entry:
            url_key = "httpUrl"
        elif client == "antigravity" and "serverUrl" in entry:
            url_key = "serverUrl"
        elif "url" in entry and (kind in _HTTP_TYPES or kind == "sse"):
            # A legacy HTTP+SSE server (`type: "sse"`, Gemini's `url`) is an http server to monad:
            # the supervisor falls back to SSE by itself (docs/supervisor.md "Legacy HTTP+SSE").
            url_key = "url"
        elif kind not in (None, "stdio"):
            cand.problem = f"`type` {kind!r} is not a transport monad knows (stdio, http)"
            return cand
        defn: dict[str, Any] = {"transport": "http", "url": entry[url_key]} if url_key else {"transport": "stdio"}
        fields = ("command", "args", "env", "cwd") if defn["transport"] == "stdio" else ("headers",)
        defn.update({k: entry[k] for k in fields if k in entry})
        # The fields of the transport monad did not take are left out, and said so: a `command`
        # beside a `url`, a `url` on a `type: "stdio"` entry, Gemini's `url` beside its `httpUrl`.
        used -= _TRANSPORT - {*fields, url_key}
        if entry.get("disabled") is True:
            defn["enabled"] = False
        if isinstance(entry.get("description"), str):
            defn["description"] = entry["description"]
        try:
            if client == "copilot" and "tools" in entry and entry["tools"] != ["*"]:
                tools = allow_deny_tools(entry["tools"], None, allow_field="tools", deny_field="", notes=cand.notes)
                if tools:
                    defn["tools"] = tools
            if client == "gemini":
                if "timeout" in entry:
                    defn["requestTimeoutMs"] = entry["timeout"]
                tools = allow_deny_tools(entry.get("includeTools"), entry.get("excludeTools"),
                                         allow_field="includeTools", deny_field="excludeTools", notes=cand.notes,
                                         call_form=True)
                if tools:
                    defn["tools"] = tools
                if entry.get("trust"):
                    cand.notes.append("left out `trust` (monad's approval gate decides; see `monad mcp trust`)")
            leave_out(cand, entry, used)
            cand.definition = map_strings(defn, editor_references) if client == "cursor" else defn
        except Unimportable as e:
            cand.problem = str(e)
        return cand

    def read(self, path: Path, source: str) -> list[Candidate]:
        """The servers of the file; Claude Code's per-project servers (`projects.PATH.mcpServers`)
        are reported, not imported."""
        out = super().read(path, source)
        data = self.load(jsonc.read_text(path, source), source) if self.name == "claude-code" else {}
        projects = data.get("projects") if isinstance(data, dict) else None
        for project, body in (projects.items() if isinstance(projects, dict) else ()):
            local = body.get(KEY) if isinstance(body, dict) else None
            for name in local if isinstance(local, dict) else ():
                out.append(Candidate(name=name, where=f"projects.{project}.{KEY}.{name}",
                                     problem=f"defined for the project `{project}` only; not imported "
                                             f"(import that project's `.mcp.json` if it has one)"))
        return out

    def client_entry(self, name: str, entry: dict[str, Any]) -> dict[str, Any]:
        """Claude Code writes `type` on stdio entries, Copilot CLI `type: "local"` and the
        `tools` it may use."""
        if self.name == "claude-code":
            return {"type": "stdio", **entry}
        if self.name == "copilot":
            return {"type": "local", **entry, "tools": ["*"]}
        return dict(entry)

    def export_entry(self, name: str, server: Parts) -> tuple[dict[str, Any], list[str]]:
        """Claude Code's spelling; Antigravity's `serverUrl`, Copilot's `type: "local"` and `tools`."""
        p, client = server, self.name
        out: dict[str, Any] = p.fields()
        if p.transport == "stdio":
            out = {"type": "local", **out} if client == "copilot" else out
        else:
            out = {"serverUrl": out.pop("url"), **out} if client == "antigravity" else {"type": "http", **out}
        if client == "copilot":
            out["tools"] = ["*"]
        return out, [OAUTH_LOST] if p.oauth else []


__all__ = ["McpJson"]
