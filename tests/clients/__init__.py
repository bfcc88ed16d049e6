"""What the client-format tests share: the fixture files (tests/fixtures/clients/, written as
each client writes them, with other keys around the servers), what importing each gives,
and each client's own parser to read a file back with."""

from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "clients"
SENTINEL = "SENTINEL-7f3a9c"

# client → (fixture, {server: result of importing it})
EXPECTED: dict[str, tuple[str, dict[str, str]]] = {
    "claude-desktop": ("claude_desktop_config.json", {"time": "imported", "github": "imported"}),
    "claude-code": ("claude.json", {"sentry": "imported", "playwright": "imported", "notion": "imported",
                                    "search": "imported", "local-db": "skipped"}),
    "cursor": ("cursor-mcp.json", {"context7": "imported", "filesystem": "imported", "linear tools": "skipped"}),
    "vscode": ("vscode-mcp.json", {"github": "imported", "perplexity": "imported", "memory": "imported"}),
    "codex": ("codex-config.toml", {"docs": "imported", "figma": "imported", "legacy": "imported"}),
    "gemini": ("gemini-settings.json", {"pythonTools": "imported", "httpServer": "imported",
                                        "sseServer": "imported"}),
    "mcp-json": ("mcp.json", {"api": "imported", "local": "imported"}),
    "aura": ("aura/config/mcp", {"context7": "imported", "filesystem": "imported", "experimental": "imported"}),
    "antigravity": ("antigravity-mcp_config.json", {"github": "imported", "linear": "imported", "sqlite": "imported"}),
    "copilot": ("copilot-mcp-config.json", {"playwright": "imported", "context7": "imported"}),
    "opencode": ("opencode.json", {"everything": "imported", "sentry": "imported", "vault": "skipped"}),
    "zed": ("zed-settings.json", {"postgres": "imported", "older": "imported", "docs": "imported",
                                  "mcp-server-github": "skipped"}),
    "goose": ("goose-config.yaml", {"developer": "skipped", "github": "imported", "docs": "imported"}),
}
# The clients of the first formats, and the five newer ones (Antigravity CLI, Copilot CLI,
# OpenCode, Zed, Goose), whose tests check each one's own spelling.
OLD = ("claude-desktop", "claude-code", "cursor", "vscode", "codex", "gemini", "mcp-json", "aura")
NEW = ("antigravity", "copilot", "opencode", "zed", "goose")
# Where each client keeps its servers (None: a file is one map of servers).
SERVERS_KEY = {"codex": "mcp_servers", "vscode": "servers", "opencode": "mcp", "zed": "context_servers",
               "goose": "extensions", "aura": None}


def import_exit(client: str) -> int:
    """The exit code of `monad mcp import CLIENT` on its fixture: 1 when it skips a server."""
    return 1 if "skipped" in EXPECTED[client][1].values() else 0


def servers_key(client: str) -> str | None:
    return SERVERS_KEY.get(client, "mcpServers")


def atom(home: Path, name: str) -> dict[str, Any]:
    return tomllib.loads((home / "atoms" / "mcp" / f"{name}.toml").read_text())


def copy_fixture(tmp_path: Path, rel: str) -> Path:
    src = FIXTURES / rel
    dst = tmp_path / "client" / rel
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.is_dir():
        shutil.copytree(src, dst)
    else:
        shutil.copy(src, dst)
    return dst


def parse(client: str, text: str) -> Any:
    """The file as the client itself reads it: TOML, YAML (1.2), JSON with comments where the
    client allows them, else strict JSON."""
    if client == "codex":
        return tomllib.loads(text)
    if client in ("aura", "goose"):
        from ruamel.yaml import YAML

        return YAML(typ="safe", pure=True).load(text)
    if client in ("vscode", "gemini", "opencode", "zed"):
        import json5

        return json5.loads(text)
    return json.loads(text)
