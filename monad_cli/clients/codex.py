"""Codex's `config.toml`: one `[mcp_servers.NAME]` table per server.

    [mcp_servers.docs]
    command = "npx"
    args = ["-y", "docs-server"]
    env = { API_REGION = "eu" }
    env_vars = ["DOCS_TOKEN"]          # forwarded from Codex's environment
    startup_timeout_sec = 20
    enabled_tools = ["search", "fetch_*"]

    [mcp_servers.figma]
    url = "https://mcp.figma.com/mcp"
    bearer_token_env_var = "FIGMA_TOKEN"
    http_headers = { "X-Region" = "us" }
    env_http_headers = { "X-Org" = "FIGMA_ORG" }   # header → the variable holding its value

Mapping to monad: `env_vars` → `env.NAME = "${NAME}"`; `bearer_token_env_var` → a bearer
token of `${VAR}`; `env_http_headers` → `headers.H = "${VAR}"`; `startup_timeout_sec`
(or `_ms`) → `timeout`; `tool_timeout_sec` → `requestTimeoutMs`; `enabled`, `required`;
`enabled_tools`/`disabled_tools` → `tools.enabled`/`tools.disabled`. Anything else is named
in the summary as left out. Read with `tomllib`; `connect` edits with tomlkit so every
comment and table of the file stays.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from monad_cli.clients.entries import (
    Candidate,
    Parts,
    Unimportable,
    allow_deny_tools,
    leave_out,
    tool_names,
)
from monad_cli.clients.format import ClientFormat
from monad_cli.core.errors import ConfigError

KEY = "mcp_servers"
_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")
_USED = {"command", "args", "env", "env_vars", "cwd", "url", "bearer_token_env_var", "http_headers",
         "env_http_headers", "enabled", "required", "startup_timeout_sec", "startup_timeout_ms",
         "tool_timeout_sec", "enabled_tools", "disabled_tools"}


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _candidate(name: str, entry: Any) -> Candidate:
    cand = Candidate(name=name, where=f"{KEY}.{name}")
    if not isinstance(entry, dict):
        cand.problem = "the entry is not a table"
        return cand
    http = "url" in entry
    defn: dict[str, Any] = {"transport": "http" if http else "stdio"}
    keep = ("url",) if http else ("command", "args", "cwd")
    defn.update({k: entry[k] for k in keep if k in entry})
    if not http:
        env = dict(entry.get("env") or {}) if isinstance(entry.get("env", {}), dict) else entry.get("env")
        names = entry.get("env_vars", [])
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            cand.problem = "field `env_vars` must be a list of variable names"
            return cand
        if isinstance(env, dict):
            env.update({n: "${" + n + "}" for n in names if n not in env})
        if env:
            defn["env"] = env
    else:
        headers = dict(entry.get("http_headers") or {}) if isinstance(entry.get("http_headers", {}), dict) \
            else entry.get("http_headers")
        from_env = entry.get("env_http_headers", {})
        if not isinstance(from_env, dict) or not all(isinstance(v, str) for v in from_env.values()):
            cand.problem = "field `env_http_headers` must map header names to variable names"
            return cand
        if isinstance(headers, dict):
            headers.update({h: "${" + var + "}" for h, var in from_env.items()})
        if headers:
            defn["headers"] = headers
        var = entry.get("bearer_token_env_var")
        if var is not None:
            if not isinstance(var, str) or not var:
                cand.problem = "field `bearer_token_env_var` must name an environment variable"
                return cand
            defn["auth"] = {"mode": "bearer", "token": "${" + var + "}"}
    defn.update({k: entry[k] for k in ("enabled", "required") if k in entry})
    if _number(entry.get("startup_timeout_sec")):
        defn["timeout"] = entry["startup_timeout_sec"]
    elif _number(entry.get("startup_timeout_ms")):
        defn["timeout"] = entry["startup_timeout_ms"] / 1000
    if _number(entry.get("tool_timeout_sec")):
        defn["requestTimeoutMs"] = round(entry["tool_timeout_sec"] * 1000)
    try:
        tools = allow_deny_tools(entry.get("enabled_tools"), entry.get("disabled_tools"),
                                 allow_field="enabled_tools", deny_field="disabled_tools", notes=cand.notes)
    except Unimportable as e:
        cand.problem = str(e)
        return cand
    if tools:
        defn["tools"] = tools
    used = _USED - ({"command", "args", "env", "env_vars", "cwd"} if http else
                    {"url", "bearer_token_env_var", "http_headers", "env_http_headers"})
    leave_out(cand, entry, used)
    cand.definition = defn
    return cand


def _var(value: str) -> str | None:
    """NAME when `value` is exactly one reference `${NAME}`/`$NAME`."""
    m = _REF.fullmatch(value)
    return (m.group(1) or m.group(2)) if m else None


class Codex(ClientFormat):
    """Codex's `config.toml` (`ClientFormat`)."""

    name = "codex"
    title = "Codex"
    export_as = "codex"

    def read(self, path: Path, source: str) -> list[Candidate]:
        """The `[mcp_servers.*]` tables. `ConfigError` for a bad file."""
        from monad_cli.clients.jsonc import read_text

        servers = self.load(read_text(path, source), source).get(KEY, {})
        if not isinstance(servers, dict):
            raise ConfigError(f"`{source}`: `{KEY}` must be a table of servers", file=source)
        return [_candidate(name, entry) for name, entry in servers.items()]

    def load(self, text: str, source: str) -> dict[str, Any]:
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            from monad_cli.config.atoms import malformed_toml

            raise ConfigError(f"{malformed_toml(e, text, source)}; fix the file (nothing was written)",
                              file=source) from None

    def get_entry(self, text: str, source: str, name: str) -> Any:
        servers = self.load(text, source).get(KEY)
        return servers.get(name) if isinstance(servers, dict) else None

    def set_entry(self, text: str, source: str, name: str, entry: dict[str, Any] | None) -> str:
        """Through tomlkit, so comments, order and every other table stay."""
        import tomlkit

        self.load(text, source)  # a malformed file is refused with its position, never rewritten
        doc = tomlkit.parse(text)
        servers = doc.get(KEY)
        old = servers.get(name) if servers is not None else None
        if entry is None:
            if old is None or servers is None:
                return text
            del servers[name]
            out = tomlkit.dumps(doc)
            # The blank line that parted it from what came before goes with it.
            return out.rstrip("\n") + "\n" if out.endswith("\n\n") and not text.endswith("\n\n") else out
        if servers is None:
            servers = tomlkit.table(is_super_table=True)
            doc[KEY] = servers
        table = tomlkit.table()
        table.update(entry)
        # Replaced in place, with the blank line after it as it was: deleting and adding it
        # again left a blank line behind on every change (the file grew at each new flag).
        if old is not None:
            if old.as_string().endswith("\n\n"):
                table.add(tomlkit.nl())
        elif list(doc)[-1] != KEY:  # a table follows: keep the blank line that parts them
            table.add(tomlkit.nl())
        servers[name] = table
        return tomlkit.dumps(doc)

    def export_entry(self, name: str, server: Parts) -> tuple[dict[str, Any], list[str]]:
        """A reference to a variable of the same name becomes `env_vars`, a bearer `${VAR}`
        `bearer_token_env_var`, a header `${VAR}` `env_http_headers`."""
        p = server
        t: dict[str, Any] = {}
        lost: list[str] = []
        if p.transport == "stdio":
            t["command"] = p.command or ""
            if p.args:
                t["args"] = p.args
            env = {k: v for k, v in p.env.items() if _var(v) != k}
            forwarded = [k for k, v in p.env.items() if _var(v) == k]
            if env:
                t["env"] = env
            if forwarded:
                t["env_vars"] = forwarded
            if p.cwd:
                t["cwd"] = p.cwd
        else:
            t["url"] = p.url or ""
            headers = p.all_headers()
            auth = next((k for k in headers if k.lower() == "authorization"), None)
            scheme, _, credential = headers[auth].partition(" ") if auth else ("", "", "")
            token_var = _var(credential) if scheme.lower() == "bearer" else None
            if token_var and auth:  # Codex sends `Authorization: Bearer $VAR` itself
                del headers[auth]
            if token_var:
                t["bearer_token_env_var"] = token_var
            plain = {k: v for k, v in headers.items() if not _var(v)}
            from_env = {k: _var(v) for k, v in headers.items() if _var(v)}
            if plain:
                t["http_headers"] = plain
            if from_env:
                t["env_http_headers"] = from_env
            if p.oauth:
                lost.append("auth (OAuth: run `codex mcp login NAME`)")
        rest = p.rest
        t.update({k: rest.pop(k) for k in ("enabled", "required") if k in rest})
        if "timeout" in rest:
            t["startup_timeout_sec"] = rest.pop("timeout")
        if "requestTimeoutMs" in rest:
            t["tool_timeout_sec"] = rest.pop("requestTimeoutMs") / 1000
        tools = rest.pop("tools", None) or {}
        for key in ("enabled", "disabled"):
            names, globs = tool_names(tools.get(key) or [])
            if names or (key == "enabled" and globs):  # an allow list of globs alone must not vanish
                t[f"{key}_tools"] = names
            if globs:  # Codex matches exact names; a glob there would match nothing
                lost.append(f"tools.{key} globs {', '.join(f'`{g}`' for g in globs)} (Codex lists exact names)")
        return t, lost

    def export_text(self, entries: dict[str, dict[str, Any]]) -> str:
        import tomlkit

        doc = tomlkit.document()
        root = tomlkit.table(is_super_table=True)
        for name, entry in entries.items():
            table = tomlkit.table()
            table.update(entry)
            root[name] = table
        doc[KEY] = root
        return tomlkit.dumps(doc)


__all__ = ["Codex"]
