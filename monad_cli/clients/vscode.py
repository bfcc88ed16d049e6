"""VS Code's `mcp.json`: the `servers` object, with `inputs` beside it (JSON with comments).

    {"inputs": [{"type": "promptString", "id": "api-key", "password": true}],
     "servers": {"NAME": {"type": "stdio", "command": "...", "args": [...], "env": {...}},
                 "NAME": {"type": "http", "url": "...", "headers": {...}}}}

A user `settings.json` that still holds the older `"mcp": {"servers": {...}}` is read too.
`${env:NAME}` becomes `${NAME}` and `${userHome}` `${HOME}`; `${input:ID}` becomes a
reference to the variable `ID` (upper-cased, `-` as `_`), and the summary names the input
it stands for (monad cannot prompt while a server starts). `envFile` is read (dotenv lines,
`${workspaceFolder}` being the folder above `.vscode/`) into `env`, under the entry's own
`env`. A server using the editor's other workspace variables is reported as not importable,
naming the field. `type: "sse"` (legacy HTTP+SSE) imports as http: the supervisor falls
back to SSE by itself.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from monad_cli.clients import jsonc
from monad_cli.clients.entries import (
    Candidate,
    Parts,
    Unimportable,
    editor_references,
    input_variable,
    leave_out,
    map_strings,
)
from monad_cli.clients.format import OAUTH_LOST, JsonFormat
from monad_cli.core.errors import ConfigError

_BARE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?\}")
_DEFAULTED = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*:-[^}]*\}")


_INPUT = re.compile(r"\$\{input:([^}]*)\}")


def read_env_file(text: str) -> dict[str, str]:
    """dotenv lines (`KEY=VALUE`, `export KEY=VALUE`, quotes, `#` comments) as monad env
    values: a `$` in a value is literal there, so it is written `$$`."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, value = line.removeprefix("export ").split("=", 1)
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        elif " #" in value:
            value = value.split(" #", 1)[0].rstrip()
        out[key.strip()] = value.replace("$", "$$")
    return out


def _env_file(entry: dict[str, Any], workspace: Path | None, folder: Path) -> tuple[dict[str, str], str]:
    """The variables of the entry's `envFile` and a note naming it; `Unimportable` when it cannot be read."""
    import os

    raw = entry["envFile"]
    if not isinstance(raw, str) or not raw:
        raise Unimportable("field `envFile` must be a path")
    text = raw.replace("${userHome}", str(Path.home()))
    if "${workspaceFolder}" in text:
        if workspace is None:
            raise Unimportable(f"field `envFile` uses `${{workspaceFolder}}` ({raw}), which only a workspace's "
                               f"`.vscode/mcp.json` can fill in")
        text = text.replace("${workspaceFolder}", str(workspace))
    text = re.sub(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: os.environ.get(m.group(1), ""), text)
    if "${" in text:
        raise Unimportable(f"field `envFile` ({raw}) uses a variable only the editor can fill in")
    path = Path(text).expanduser()
    if not path.is_absolute():
        path = (workspace or folder) / path
    try:
        values = read_env_file(jsonc.read_text(path, str(path)))
    except ConfigError as e:
        raise Unimportable(f"field `envFile`: {e.message}") from None
    except OSError as e:
        raise Unimportable(f"field `envFile`: cannot read `{path}` ({e.strerror or e})") from None
    return values, f"read {len(values)} variable(s) from `envFile` into `env` (kept in the 0600 atom)"


def _candidate(name: str, entry: Any, prefix: str, inputs: dict[str, Any] | None = None,
               workspace: Path | None = None, folder: Path = Path()) -> Candidate:
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
    keep = ("command", "args", "env", "cwd") if kind == "stdio" else ("url", "headers")
    defn: dict[str, Any] = {"transport": kind, **{k: entry[k] for k in keep if k in entry}}
    leave_out(cand, entry, {"type", "envFile", *keep})
    try:
        if "envFile" in entry:
            if kind != "stdio":
                raise Unimportable("field `envFile` is for stdio servers")
            values, note = _env_file(entry, workspace, folder)
            own: dict[str, Any] = defn["env"] if isinstance(defn.get("env"), dict) else {}
            defn["env"] = {**values, **own}
            cand.notes.append(note)
        cand.definition = map_strings(defn, editor_references)
    except Unimportable as e:
        cand.problem = str(e)
        return cand
    used = sorted(set(_INPUT.findall(json.dumps(entry))))
    for input_id in used:
        about = (inputs or {}).get(input_id) or {}
        what = f" ({about['description']})" if isinstance(about.get("description"), str) else ""
        secret = ", a secret," if about.get("password") else ""
        cand.notes.append(f"`${{input:{input_id}}}`{what}{secret} is read from `${{{input_variable(input_id)}}}`: "
                          f"set `{input_variable(input_id)}` in the supervisor's environment")
    return cand


class VSCode(JsonFormat):
    """VS Code's `mcp.json` (or the `mcp.servers` of an older user `settings.json`)."""

    key = "servers"
    off_switch = False  # VS Code has no `disabled`: an export leaves disabled servers out

    def servers_path(self, data: Any) -> tuple[str, ...]:
        if isinstance(data, dict) and "servers" not in data and isinstance(data.get("mcp"), dict):
            return ("mcp", "servers")
        return ("servers",)

    def read(self, path: Path, source: str) -> list[Candidate]:
        data = self.load(jsonc.read_text(path, source), source)
        servers = self.servers(data, source)
        prefix = ".".join(self.servers_path(data))
        inputs = {i["id"]: i for i in data.get("inputs") or [] if isinstance(i, dict) and isinstance(i.get("id"), str)}
        # A workspace's `.vscode/mcp.json`: `${workspaceFolder}` is the folder above `.vscode`.
        workspace = path.parent.parent if path.parent.name == ".vscode" else None
        return [_candidate(name, entry, prefix, inputs, workspace, path.parent) for name, entry in servers.items()]

    def client_entry(self, name: str, entry: dict[str, Any]) -> dict[str, Any]:
        return {"type": "stdio", **entry}

    def export_entry(self, name: str, server: Parts) -> tuple[dict[str, Any], list[str]]:
        """References as `${env:NAME}`; `${VAR:-default}` loses its default (VS Code has none)."""
        p = server
        out: dict[str, Any] = {"type": p.transport, **map_strings(p.fields(), lambda v, _: _editor(v))}
        lost = [OAUTH_LOST] if p.oauth else []
        if _DEFAULTED.search(json.dumps([p.command, p.args, p.env, p.cwd, p.url, p.all_headers()])):
            lost.append("the defaults of `${VAR:-default}` (VS Code has none)")
        return out, lost


def _editor(value: str) -> str:
    """monad references in VS Code's spelling: `$X`/`${X}` → `${env:X}` (`$$` stays literal;
    `${X:-default}` loses its default)."""
    parts = value.split("$$")
    return "$$".join(_BARE.sub(lambda m: "${env:" + (m.group(1) or m.group(2)) + "}", p) for p in parts)


__all__ = ["VSCode", "read_env_file"]
