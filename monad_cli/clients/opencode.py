"""OpenCode's `opencode.json`: the `mcp` object (JSON with comments, as OpenCode reads it).

    {"$schema": "https://opencode.ai/config.json",
     "mcp": {"NAME": {"type": "local", "command": ["npx", "-y", "pkg"], "environment": {...},
                      "enabled": true, "timeout": 5000},
             "NAME": {"type": "remote", "url": "...", "headers": {...}, "enabled": false}}}

`command` is one list (the executable, then its arguments); `environment` is the env.
OpenCode writes a variable as `{env:NAME}`: it imports as `${NAME}` and monad's references
export as `{env:NAME}`. `timeout` is milliseconds for fetching the tool list. A remote's
`oauth` table is left out (monad authorizes on its own: `monad mcp authorize`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from monad_cli.clients.entries import Candidate, Parts, Unimportable, leave_out, map_strings
from monad_cli.clients.format import JsonFormat

KEY = "mcp"
_ENV_REF = re.compile(r"\{env:([A-Za-z_][A-Za-z0-9_]*)\}")
_MONAD_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def _from_opencode(value: str, fld: str) -> str:
    if "{file:" in value:
        raise Unimportable(f"field `{fld}` uses `{{file:…}}`, which monad does not read; put the value in an "
                           f"environment variable and write `${{NAME}}`")
    return _ENV_REF.sub(lambda m: "${" + m.group(1) + "}", value.replace("$", "$$"))


def _to_opencode(value: str) -> str:
    parts = value.split("$$")
    return "$".join(_MONAD_REF.sub(lambda m: "{env:" + (m.group(1) or m.group(2)) + "}", p) for p in parts)


class OpenCode(JsonFormat):
    key = KEY

    def candidate(self, name: str, entry: dict[str, Any], where: str) -> Candidate:
        cand = Candidate(name=name, where=where)
        kind = entry.get("type")
        defn: dict[str, Any] = {}
        if kind == "local":
            command = entry.get("command")
            if not isinstance(command, list) or not command or not all(isinstance(c, str) for c in command):
                cand.problem = "field `command` must be a non-empty list (the executable and its arguments)"
                return cand
            defn.update(transport="stdio", command=command[0])
            if command[1:]:
                defn["args"] = command[1:]
            if isinstance(entry.get("environment"), dict):
                defn["env"] = entry["environment"]
            used = {"type", "command", "environment", "enabled", "timeout"}
        elif kind == "remote":
            defn.update(transport="http", url=entry.get("url"))
            if isinstance(entry.get("headers"), dict):
                defn["headers"] = entry["headers"]
            used = {"type", "url", "headers", "enabled", "timeout"}
        else:
            cand.problem = f"`type` {kind!r} is not one OpenCode writes (local, remote)"
            return cand
        if entry.get("enabled") is False:
            defn["enabled"] = False
        if isinstance(entry.get("timeout"), (int, float)) and not isinstance(entry["timeout"], bool):
            defn["timeout"] = min(600.0, max(1.0, entry["timeout"] / 1000))
        leave_out(cand, entry, used)
        try:
            cand.definition = map_strings(defn, _from_opencode)
        except Unimportable as e:
            cand.problem = str(e)
        return cand

    def client_entry(self, name: str, entry: dict[str, Any]) -> dict[str, Any]:
        """monad's entry as OpenCode spells it: one `command` list, `environment`."""
        out: dict[str, Any] = {"type": "local", "command": [entry["command"], *entry.get("args", [])]}
        if entry.get("env"):
            out["environment"] = dict(entry["env"])
        out["enabled"] = True
        return out

    def export_entry(self, name: str, server: Parts) -> tuple[dict[str, Any], list[str]]:
        """References as `{env:NAME}`."""
        p = server
        out: dict[str, Any]
        if p.transport == "stdio":
            out = {"type": "local", "command": [_to_opencode(c) for c in [p.command or "", *p.args]]}
            if p.env:
                out["environment"] = {k: _to_opencode(v) for k, v in p.env.items()}
        else:
            out = {"type": "remote", "url": _to_opencode(p.url or "")}
            if p.all_headers():
                out["headers"] = {k: _to_opencode(v) for k, v in p.all_headers().items()}
        out["enabled"] = p.rest.pop("enabled", True) is not False
        if "timeout" in p.rest:
            out["timeout"] = int(float(p.rest.pop("timeout")) * 1000)
        p.rest.pop("description", None)
        return out, p.lost()

    def export_text(self, entries: dict[str, dict[str, Any]]) -> str:
        doc = {"$schema": "https://opencode.ai/config.json", KEY: entries}
        return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


__all__ = ["OpenCode"]
