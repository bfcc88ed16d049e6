"""Goose's `config.yaml`: the `extensions` map (YAML, written by Goose itself).

    extensions:
      github:
        name: github
        type: stdio                     # stdio | streamable_http | sse | builtin | ...
        cmd: npx
        args: [-y, "@modelcontextprotocol/server-github"]
        envs: {GITHUB_API_URL: https://api.github.com}
        env_keys: [GITHUB_PERSONAL_ACCESS_TOKEN]   # values Goose keeps in its keyring
        enabled: true
        timeout: 300                    # seconds
      docs:
        name: docs
        type: streamable_http
        uri: https://mcp.example.com/mcp
        headers: {Authorization: "Bearer ${DOCS_TOKEN}"}
        enabled: false

`envs` is the env; each of `env_keys` becomes `${KEY}` (set it in the
supervisor's environment: Goose's keyring is not read). Goose's own extensions (`builtin`,
`platform`, `frontend`, `inline_python`) are Goose's, not MCP servers monad can run:
reported, not imported. `connect` rewrites the file through PyYAML, which keeps every key
and value but not comments, so a file with comments is refused rather than stripped.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from monad_cli.cli.clients.entries import (
    Candidate,
    Unimportable,
    check_references,
    left_out,
    map_strings,
    split_definition,
)
from monad_cli.core.errors import ConfigError, Conflict

KEY = "extensions"
_REMOTE = {"streamable_http": "http", "sse": "http"}
_COMMENT = re.compile(r"(^|\s)#")


def load_document(text: str, source: str) -> Any:
    """The YAML document (PyYAML's safe loader); `ConfigError` with `source:line:col`."""
    import yaml  # lazy: only Goose's and Aura's files need it

    try:
        data = yaml.safe_load(text) if text.strip() else {}
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark
        where = f":{mark.line + 1}:{mark.column + 1}" if mark is not None else ""
        raise ConfigError(f"`{source}{where}`: {e.problem}; fix the file", file=source) from None
    return {} if data is None else data


def _candidate(name: str, entry: Any) -> Candidate:
    cand = Candidate(name=name, where=f"{KEY}.{name}")
    if not isinstance(entry, dict):
        cand.problem = "the entry is not a map"
        return cand
    kind = entry.get("type")
    defn: dict[str, Any] = {}
    if kind == "stdio":
        defn.update(transport="stdio", command=entry.get("cmd"))
        if entry.get("args"):
            defn["args"] = entry["args"]
        env = dict(entry.get("envs") or {})
        used = {"name", "type", "cmd", "args", "envs", "env_keys", "enabled", "timeout", "description", "bundled",
                "display_name", "available_tools"}
    elif kind in _REMOTE:
        defn.update(transport="http", url=entry.get("uri"))
        if entry.get("headers"):
            defn["headers"] = entry["headers"]
        env = {}
        used = {"name", "type", "uri", "headers", "envs", "env_keys", "enabled", "timeout", "description",
                "bundled", "display_name", "available_tools"}
    else:
        cand.problem = f"`type: {kind}` is one of Goose's own extensions, not an MCP server monad can run"
        return cand
    keys = entry.get("env_keys") or []
    if keys and defn["transport"] == "stdio":
        env.update({str(k): "${" + str(k) + "}" for k in keys})
        cand.notes.append(f"`env_keys` {', '.join(f'`{k}`' for k in keys)} are read from the environment: set "
                          f"them in the supervisor's environment (Goose's keyring is not read)")
    if env:
        defn["env"] = env
    if entry.get("enabled") is False:
        defn["enabled"] = False
    timeout = entry.get("timeout")
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout > 0:
        defn["requestTimeoutMs"] = int(timeout * 1000)
    if isinstance(entry.get("description"), str) and entry["description"]:
        defn["description"] = entry["description"]
    cand.notes = left_out(entry, used) + cand.notes
    try:
        cand.definition = map_strings(defn, check_references)
    except Unimportable as e:
        cand.problem = str(e)
    return cand


def read(client: str, path: Path, source: str) -> list[Candidate]:
    """The servers of Goose's `config.yaml`. `ConfigError` for a malformed file or a wrong shape."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"cannot read `{source}`: {e}", file=source) from None
    data = load_document(text, source)
    if not isinstance(data, dict):
        raise ConfigError(f"`{source}`: expected a YAML map with `{KEY}`", file=source)
    servers = data.get(KEY) or {}
    if not isinstance(servers, dict):
        raise ConfigError(f"`{source}`: `{KEY}` must be a map of extensions", file=source)
    return [_candidate(str(name), entry) for name, entry in servers.items()]


def client_entry(client: str, entry: dict[str, Any]) -> dict[str, Any]:
    """The `monad` extension as Goose writes one."""
    return {"name": "monad", "type": "stdio", "cmd": entry["command"], "args": list(entry.get("args", [])),
            "envs": dict(entry.get("env") or {}), "env_keys": [], "enabled": True, "timeout": 300,
            "description": "monad: every monad server through the approval gate", "bundled": None}


def connect(client: str, text: str, entry: dict[str, Any] | None, source: str) -> str:
    """`text` with `extensions.monad` set to `entry` (None removes it), every other key kept.

    Raises `Conflict` for a file with comments (PyYAML would drop them)."""
    import yaml

    data = load_document(text, source)
    if not isinstance(data, dict):
        raise ConfigError(f"`{source}`: expected a YAML map", file=source)
    extensions = data.get(KEY) or {}
    if not isinstance(extensions, dict):
        raise ConfigError(f"`{source}`: `{KEY}` must be a map of extensions", file=source)
    if (entry is None and "monad" not in extensions) or \
            (entry is not None and extensions.get("monad") == client_entry(client, entry)):
        return text
    if any(_COMMENT.search(line) for line in text.splitlines()):
        raise Conflict(f"`{source}` has comments, which rewriting it would drop; add the `monad` extension by "
                       f"hand (see `monad mcp export --format goose`) or remove the comments")
    if entry is None:
        del extensions["monad"]
    else:
        extensions["monad"] = client_entry(client, entry)
    data[KEY] = extensions
    return str(yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False))


def read_entry(client: str, text: str, source: str) -> Any:
    data = load_document(text, source)
    extensions = data.get(KEY) if isinstance(data, dict) else None
    return extensions.get("monad") if isinstance(extensions, dict) else None


def export_document(servers: list[tuple[str, dict[str, Any]]],
                    client: str = "") -> tuple[str, dict[str, list[str]]]:
    """`extensions:` YAML and what each server lost."""
    import yaml

    body: dict[str, Any] = {}
    lost: dict[str, list[str]] = {}
    for name, defn in servers:
        p = split_definition(defn)
        rest = dict(p.rest)
        out: dict[str, Any] = {"name": name}
        if p.transport == "stdio":
            out.update(type="stdio", cmd=p.command, args=p.args, envs=p.env, env_keys=[])
        else:
            out.update(type="streamable_http", uri=p.url, headers=p.all_headers(), envs={}, env_keys=[])
        out["enabled"] = rest.pop("enabled", True) is not False
        if "requestTimeoutMs" in rest:  # else Goose's own default (300 s)
            out["timeout"] = max(1, int(rest.pop("requestTimeoutMs")) // 1000)
        out["description"] = rest.pop("description", None)
        out["bundled"] = None
        body[name] = out
        lost[name] = list(rest) + (["cwd"] if p.cwd else []) + \
            (["auth (OAuth: the client authorizes on its own)"] if p.oauth else [])
    return str(yaml.safe_dump({KEY: body}, sort_keys=False, allow_unicode=True, default_flow_style=False)), lost


__all__ = ["client_entry", "connect", "export_document", "load_document", "read", "read_entry"]
