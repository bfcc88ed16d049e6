"""What a client's file format is to monad: `ClientFormat`, which every client implements, and
`JsonFormat`, the base of the clients whose servers are one JSON object under one key.

`import` reads a format's servers (`read`); `connect` reads and writes one entry of its
file by name, as text in and text out (`get_entry`, `set_entry`), so the connector can
re-read, verify and write atomically whatever the format; `export` asks it for one entry
per server (`export_entry`) and the document holding them (`export_text`). Nothing here
imports the MCP SDK; a format imports its parser (json5, tomlkit, ruamel.yaml) when used.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar, Protocol

from monad_cli.clients import jsonc
from monad_cli.clients.entries import OAUTH_LOST, Candidate, Parts
from monad_cli.core.errors import ConfigError


class ClientFormat(Protocol):
    """One client's MCP config file (docs/clients.md "Clients and their files").

    `name`: the CLIENT argument (`claude-code`); `title`: how messages name the client;
    `project`: its usual file is a project's, relative to the current folder (`connect --all`
    and the Studio leave it alone); `per_server`: its file can take one entry per monad server
    (`connect --per-server`); `off_switch`: an entry can be written disabled (else `export`
    leaves disabled servers out); `export_as`: the CLIENT whose format `export` writes for it
    (itself, or `mcp-json` for the clients that read that one). A format that subclasses this
    protocol inherits the defaults: a user's file, per-server entries, an off switch.
    """

    name: str
    title: str
    project: bool = False
    per_server: bool = True
    off_switch: bool = True
    export_as: str

    def read(self, path: Path, source: str) -> list[Candidate]:
        """Every server of the file (or folder) at `path`; `source` is how messages name it.
        Raises `ConfigError` (with `file:line:col` where the parser gives one) for a file
        that does not parse or does not have the format's shape."""
        ...

    def target(self, path: Path) -> Path:
        """The file `connect` changes for the client file (or folder) at `path`: for most,
        that file itself (a format that subclasses this protocol inherits the default)."""
        return path

    def check_target(self, path: Path) -> None:
        """Refuse (`Conflict`) a target monad must not write; nothing to check for most."""
        return None

    def load(self, text: str, source: str) -> Any:
        """The document as the client reads it (`{}` for blank text); `ConfigError` if malformed."""
        ...

    def get_entry(self, text: str, source: str, name: str) -> Any:
        """The entry `name` as the client reads it from `text`, or None."""
        ...

    def set_entry(self, text: str, source: str, name: str, entry: dict[str, Any] | None) -> str:
        """`text` with the entry `name` set to `entry` (already in the client's spelling;
        None removes it) and every other byte kept where the format allows. A malformed
        `text` raises `ConfigError` before anything is edited."""
        ...

    def client_entry(self, name: str, entry: dict[str, Any]) -> dict[str, Any]:
        """monad's entry `name` (`command`, `args`, `env`: `entries.monad_entry`) as this
        client writes a server (the default: as it is)."""
        return dict(entry)

    def export_entry(self, name: str, server: Parts) -> tuple[dict[str, Any], list[str]]:
        """One server in this format, and what it cannot hold beyond `server.rest`, from which
        it takes out every field it holds (the exporter names the rest as left out)."""
        ...

    def export_text(self, entries: dict[str, dict[str, Any]]) -> str:
        """The document holding `entries` (name → `export_entry`), as the client's file."""
        ...


class JsonFormat(ClientFormat):
    """A client whose servers are the object under `key` of a JSON file (JSON with comments
    when `comments`). Subclasses say how an entry reads (`candidate`) and is written."""

    name: str
    title: str
    key: ClassVar[str] = "mcpServers"
    comments: bool = True
    export_as: str = ""

    def __init__(self, name: str, title: str) -> None:
        self.name, self.title = name, title
        self.export_as = self.export_as or name

    # -- reading --------------------------------------------------------------------------
    def load(self, text: str, source: str) -> Any:
        return jsonc.load(text, source=source, comments=self.comments) if text.strip() else {}

    def servers_path(self, data: Any) -> tuple[str, ...]:
        """Where the servers object is in `data` (VS Code's older `settings.json` nests it)."""
        return (self.key,)

    def servers(self, data: Any, source: str) -> dict[str, Any]:
        """The servers object of `data` (absent: empty); `ConfigError` for a wrong shape."""
        keys = self.servers_path(data)
        if not isinstance(data, dict):
            raise ConfigError(f"`{source}`: expected a JSON object with `{keys[0]}`", file=source)
        servers: Any = data
        for key in keys:
            servers = servers.get(key, {}) if isinstance(servers, dict) else None
        if not isinstance(servers, dict):
            raise ConfigError(f"`{source}`: `{'.'.join(keys)}` must be an object of servers", file=source)
        return servers

    def candidate(self, name: str, entry: dict[str, Any], where: str) -> Candidate:
        raise NotImplementedError

    def read(self, path: Path, source: str) -> list[Candidate]:
        data = self.load(jsonc.read_text(path, source), source)
        prefix = ".".join(self.servers_path(data))
        return [self.candidate(name, entry, f"{prefix}.{name}") if isinstance(entry, dict) else
                Candidate(name=name, where=f"{prefix}.{name}", problem="the entry is not an object")
                for name, entry in self.servers(data, source).items()]

    # -- connecting -----------------------------------------------------------------------
    def get_entry(self, text: str, source: str, name: str) -> Any:
        data = self.load(text, source)
        servers: Any = data
        for key in self.servers_path(data):
            servers = servers.get(key) if isinstance(servers, dict) else None
        return servers.get(name) if isinstance(servers, dict) else None

    def set_entry(self, text: str, source: str, name: str, entry: dict[str, Any] | None) -> str:
        data = self.load(text, source)  # a malformed file is refused with its position, never rewritten
        return jsonc.set_member(text, (*self.servers_path(data), name), entry, comments=self.comments)

    # -- exporting ------------------------------------------------------------------------
    def export_entry(self, name: str, server: Parts) -> tuple[dict[str, Any], list[str]]:
        raise NotImplementedError

    def export_text(self, entries: dict[str, dict[str, Any]]) -> str:
        return json.dumps({self.key: entries}, indent=2, ensure_ascii=False) + "\n"


__all__ = ["OAUTH_LOST", "ClientFormat", "JsonFormat"]
