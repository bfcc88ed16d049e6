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

from typing import Any

from monad_cli.clients.entries import Candidate, Parts, leave_out
from monad_cli.clients.format import JsonFormat

KEY = "context_servers"


class Zed(JsonFormat):
    key = KEY

    def candidate(self, name: str, entry: dict[str, Any], where: str) -> Candidate:
        cand = Candidate(name=name, where=where)
        defn: dict[str, Any] = {}
        command = entry.get("command")
        if isinstance(command, dict):  # the older, nested form
            defn.update(transport="stdio", command=command.get("path"))
            defn.update({k: command[k] for k in ("args", "env") if k in command})
            used = {"source", "command", "settings", "enabled"}
        elif isinstance(command, str):
            defn.update(transport="stdio", command=command)
            defn.update({k: entry[k] for k in ("args", "env") if k in entry})
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
        leave_out(cand, entry, used)
        if entry.get("settings"):
            cand.notes.append("left out `settings` (passed to a Zed extension, not to the server)")
        cand.definition = defn
        return cand

    def client_entry(self, name: str, entry: dict[str, Any]) -> dict[str, Any]:
        return {"source": "custom", **entry}

    def export_entry(self, name: str, server: Parts) -> tuple[dict[str, Any], list[str]]:
        p = server
        out: dict[str, Any] = {"source": "custom", **p.fields(cwd=False)}
        if p.transport == "stdio":  # Zed's flat form has `args`, even empty
            out = {"source": "custom", "command": p.command, "args": p.args, **out}
        if p.rest.pop("enabled", True) is False:
            out["enabled"] = False
        p.rest.pop("description", None)
        return out, p.lost()


__all__ = ["Zed"]
