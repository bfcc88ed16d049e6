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
reported, not imported. Read and written with ruamel.yaml (`yaml_doc`); `connect` edits the
file through its round-trip mode, which keeps comments, key order, quoting and Goose's layout
(`- item` flush under its key): only the `monad` entry (or, with `--per-server`, each
server's entry) is added, changed or removed. A comment at the end of the last extension
stays where it was, so a new entry goes after it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from monad_cli.clients import yaml_doc
from monad_cli.clients.entries import Candidate, Parts, leave_out
from monad_cli.clients.format import ClientFormat
from monad_cli.core.errors import ConfigError, MonadError

KEY = "extensions"
_REMOTE = {"streamable_http": "http", "sse": "http"}
# The fields of an extension monad reads (or knows it can leave out) whatever its type.
_USED = {"name", "type", "envs", "env_keys", "enabled", "timeout", "description", "bundled", "display_name",
         "available_tools"}


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
        used = _USED | {"cmd", "args"}
    elif kind in _REMOTE:
        defn.update(transport="http", url=entry.get("uri"))
        if entry.get("headers"):
            defn["headers"] = entry["headers"]
        env = {}
        used = _USED | {"uri", "headers"}
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
    leave_out(cand, entry, used)
    cand.definition = defn
    return cand


def _extensions(data: Any, source: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ConfigError(f"`{source}`: expected a YAML map with `{KEY}`", file=source)
    servers = data.get(KEY) or {}
    if not isinstance(servers, dict):
        raise ConfigError(f"`{source}`: `{KEY}` must be a map of extensions", file=source)
    return servers


class Goose(ClientFormat):
    """Goose's `config.yaml` (`ClientFormat`)."""

    name = "goose"
    title = "Goose"
    export_as = "goose"

    def read(self, path: Path, source: str) -> list[Candidate]:
        """The servers of Goose's `config.yaml`. `ConfigError` for a malformed file or a wrong shape."""
        from monad_cli.clients.jsonc import read_text

        servers = _extensions(self.load(read_text(path, source), source), source)
        return [_candidate(str(name), entry) for name, entry in servers.items()]

    def load(self, text: str, source: str) -> Any:
        """The YAML document (`{}` for an empty one); `ConfigError` with `source:line:col`."""
        data = yaml_doc.load(text, source) if text.strip() else None
        return {} if data is None else data

    def get_entry(self, text: str, source: str, name: str) -> Any:
        extensions = self.load(text, source).get(KEY)
        return extensions.get(name) if isinstance(extensions, dict) else None

    def client_entry(self, name: str, entry: dict[str, Any]) -> dict[str, Any]:
        """The `monad` extension (or, with `--per-server`, server NAME's) as Goose writes one."""
        what = "every monad server" if name == "monad" else f"monad's server `{name}`"
        return {"name": name, "type": "stdio", "cmd": entry["command"], "args": list(entry.get("args", [])),
                "envs": dict(entry.get("env") or {}), "env_keys": [], "enabled": True, "timeout": 300,
                "description": f"monad: {what} through the approval gate", "bundled": None}

    def set_entry(self, text: str, source: str, name: str, entry: dict[str, Any] | None) -> str:
        """Through ruamel.yaml's round trip: comments, key order and every other key kept."""
        import io

        _extensions(self.load(text, source), source)  # refuses a malformed file or shape first
        yaml = yaml_doc.round_trip()
        doc = yaml.load(text) if text.strip() else None
        if doc is None:
            from ruamel.yaml.comments import CommentedMap

            doc = CommentedMap()
        if doc.get(KEY) is None:
            doc[KEY] = {}
        if entry is None:
            doc[KEY].pop(name, None)
            if not doc[KEY] and hasattr(doc[KEY], "fa"):
                doc[KEY].fa.set_flow_style()  # `{}`: an empty block map with a comment would not parse again
        else:
            doc[KEY][name] = entry
        out = io.StringIO()
        yaml.dump(doc, out)
        try:
            self.load(out.getvalue(), source)
        except ConfigError:
            raise MonadError(f"editing `{source}` did not give a YAML file that reads again; nothing was written "
                             f"(please report this with the file's shape)") from None
        return out.getvalue()

    def export_entry(self, name: str, server: Parts) -> tuple[dict[str, Any], list[str]]:
        p, rest = server, server.rest
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
        return out, p.lost()

    def export_text(self, entries: dict[str, dict[str, Any]]) -> str:
        return yaml_doc.dump({KEY: entries})


__all__ = ["Goose"]
