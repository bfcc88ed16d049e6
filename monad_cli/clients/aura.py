"""Aura's MCP servers: `.aura/config/mcp/**/*.yaml`, each file a YAML map of name → server.

    github:
      type: http                      # http | stdio (the default)
      url: https://mcp.example.com/github
      headers: {Authorization: "Bearer ${GITHUB_MCP_TOKEN}"}
      timeout: 30s                    # a Go duration
      deferred: true
    filesystem:
      command: npx
      args: [-y, "@modelcontextprotocol/server-filesystem", /home/user/projects]
      env: {NODE_ENV: production}
      condition: "model_params_gt:7"
      disabled: true                  # → enabled = false

Field for field with monad (Aura is the product monad is modelled on): `type`, `url`,
`headers`, `command`, `args`, `env`, `timeout`, `sandbox`, `disabled`, `required`,
`deferred`, `condition` and `tools: {enabled, disabled}`. As Aura does, names are
lower-cased and files with `.example.` in their name are skipped. Read with ruamel.yaml
(`yaml_doc`); a key twice in one map is an error, as in Aura's strict decoder.
`connect` writes a file of its own, `monad.yaml`, and never rewrites a person's file.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from monad_cli.clients import yaml_doc
from monad_cli.clients.entries import Candidate, Parts, leave_out
from monad_cli.clients.format import ClientFormat
from monad_cli.core.errors import ConfigError, Conflict

OWN_FILE = "monad.yaml"
HEADER = "# Written by `monad mcp connect aura`: monad's gateway. Remove with `--remove`.\n"
_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNIT_S = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str) -> float | None:
    """Seconds in a Go duration (`"30s"`, `"1m30s"`, `"500ms"`), or None when it is not one."""
    text = text.strip()
    if not text or not re.fullmatch(f"(?:{_DURATION.pattern})+", text):
        return None
    return sum(float(n) * _UNIT_S[u] for n, u in _DURATION.findall(text))


def yaml_files(path: Path) -> list[Path]:
    """The files Aura reads: PATH itself, or every `*.yaml` beneath it but `*.example.*`."""
    if path.is_file():
        return [path]
    return sorted(p for p in path.rglob("*.yaml") if p.is_file() and ".example." not in p.name)


def _candidate(name: str, entry: Any, where: str) -> Candidate:
    cand = Candidate(name=name, where=where)
    if not isinstance(entry, dict):
        cand.problem = "the entry is not a map"
        return cand
    kind = entry.get("type") or "stdio"
    if kind not in ("stdio", "http"):
        cand.problem = f"`type` {kind!r} is not a transport monad knows (stdio, http)"
        return cand
    keep = ("command", "args", "env", "sandbox") if kind == "stdio" else ("url", "headers")
    defn: dict[str, Any] = {"transport": kind, **{k: entry[k] for k in keep if k in entry}}
    defn.update({k: entry[k] for k in ("required", "deferred", "condition", "tools") if k in entry})
    if "disabled" in entry:
        defn["enabled"] = not entry["disabled"] if isinstance(entry["disabled"], bool) else entry["disabled"]
    used = {"type", "disabled", "required", "deferred", "condition", "tools", "timeout", *keep}
    leave_out(cand, entry, used)
    if "timeout" in entry:
        seconds = parse_duration(entry["timeout"]) if isinstance(entry["timeout"], str) else None
        if seconds is None:
            cand.notes.append(f"left out `timeout` {entry['timeout']!r}: not a duration such as `30s`")
        else:
            defn["timeout"] = seconds
    cand.definition = defn
    return cand


class Aura(ClientFormat):
    """Aura's MCP folder (`ClientFormat`): monad's entry is a file of its own, `monad.yaml`."""

    name = "aura"
    title = "Aura"
    project = True
    per_server = False  # its per-server files are the person's own
    export_as = "aura"

    def read(self, path: Path, source: str) -> list[Candidate]:
        """Every server of the YAML files at `path` (a folder or one file). Keys are lower-cased
        as Aura does; a name in two files is reported at its second place."""
        from monad_cli.clients.jsonc import read_text
        from monad_cli.clients.registry import shown

        out: list[Candidate] = []
        seen: dict[str, str] = {}
        for file in yaml_files(path):
            rel = str(file.relative_to(path)) if file != path else file.name
            fsource = shown(file)
            data = yaml_doc.load(read_text(file, fsource), fsource)
            if data is None:
                continue
            if not isinstance(data, dict):
                raise ConfigError(f"`{fsource}`: expected a map of server names to servers", file=fsource)
            for key, entry in data.items():
                name = str(key).lower()
                if name in seen:
                    out.append(Candidate(name=name, where=rel, problem=f"also defined in `{seen[name]}`; "
                                                                       f"names must be unique"))
                    continue
                seen[name] = rel
                out.append(_candidate(name, entry, rel))
        return out

    def target(self, path: Path) -> Path:
        """`monad.yaml` in the folder, or PATH when it names a `.yaml`."""
        return path if path.suffix == ".yaml" else path / OWN_FILE

    def check_target(self, path: Path) -> None:
        """Refuse when `monad` is defined in a person's file (rewriting YAML would lose comments)."""
        from monad_cli.clients.jsonc import read_text
        from monad_cli.clients.registry import shown

        for file in yaml_files(path.parent) if path.parent.is_dir() else []:
            if file == path:
                continue
            data = yaml_doc.load(read_text(file, shown(file)), shown(file))
            if isinstance(data, dict) and any(str(k).lower() == "monad" for k in data):
                raise Conflict(f"`{shown(file)}` already defines `monad`; monad does not rewrite that file "
                               f"(its comments would be lost): remove the entry there first")

    def load(self, text: str, source: str) -> Any:
        return {}  # monad's own file: nothing of the person's to keep

    def get_entry(self, text: str, source: str, name: str) -> Any:
        data = yaml_doc.load(text, source) if text.strip() else None
        return data.get(name) if isinstance(data, dict) else None

    def set_entry(self, text: str, source: str, name: str, entry: dict[str, Any] | None) -> str:
        """The text of `monad.yaml` holding only the `monad` server ("" to remove the file)."""
        if text.strip():
            data = yaml_doc.load(text, source)
            if isinstance(data, dict) and set(map(str, data)) - {name}:
                raise Conflict(f"`{source}` holds other servers besides `{name}`; monad does not rewrite it "
                               f"(its comments would be lost): edit it by hand")
        return "" if entry is None else HEADER + yaml_doc.dump({name: entry})

    def client_entry(self, name: str, entry: dict[str, Any]) -> dict[str, Any]:
        return {"type": "stdio", **entry}

    def export_entry(self, name: str, server: Parts) -> tuple[dict[str, Any], list[str]]:
        """Aura's fields; what it lacks (`cwd`, `trust`, ...) and a name's case are lost."""
        p, rest = server, server.rest
        out: dict[str, Any] = {"type": p.transport, **p.fields(cwd=False)}
        if "enabled" in rest:
            out["disabled"] = not rest.pop("enabled")
        if "timeout" in rest:
            out["timeout"] = f"{float(rest.pop('timeout')):g}s"  # a Go duration
        out.update({k: rest.pop(k) for k in ("required", "deferred", "condition", "sandbox", "tools") if k in rest})
        return out, p.lost() + (
            [f"the name's case (Aura lower-cases names: it will be `{name.lower()}`)"] if name != name.lower() else [])

    def export_text(self, entries: dict[str, dict[str, Any]]) -> str:
        return yaml_doc.dump(entries)


__all__ = ["Aura", "parse_duration"]
