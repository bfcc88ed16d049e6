"""The clients monad reads and writes, their format and their usual file on each OS.

    client          format    where the servers are            usual file (Linux)
    claude-desktop  mcp-json  `mcpServers` object              ~/.config/Claude/claude_desktop_config.json
    claude-code     mcp-json  `mcpServers` (user scope)        ~/.claude.json
    cursor          mcp-json  `mcpServers`                     ~/.cursor/mcp.json
    gemini          mcp-json  `mcpServers` (JSONC)             ~/.gemini/settings.json
    antigravity     mcp-json  `mcpServers`, `serverUrl`        ~/.gemini/config/mcp_config.json
    copilot         mcp-json  `mcpServers`, `type: "local"`    $COPILOT_HOME/mcp-config.json (~/.copilot/)
    mcp-json        mcp-json  `mcpServers`                     ./.mcp.json
    vscode          vscode    `servers` (JSONC)                ~/.config/Code/User/mcp.json
    codex           codex     `[mcp_servers.NAME]` (TOML)      ~/.codex/config.toml
    opencode        opencode  `mcp` (JSONC)                    ~/.config/opencode/opencode.json
    zed             zed       `context_servers` (JSONC)        ~/.config/zed/settings.json
    goose           goose     `extensions` (YAML)              ~/.config/goose/config.yaml
    aura            aura      one YAML map per file            ./.aura/config/mcp/*.yaml

Paths are shown with `~` (the home folder) so help texts and docs name no machine.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Mapping
from pathlib import Path

from monad_cli.clients.aura import Aura
from monad_cli.clients.codex import Codex
from monad_cli.clients.format import ClientFormat
from monad_cli.clients.goose import Goose
from monad_cli.clients.mcp_json import McpJson
from monad_cli.clients.opencode import OpenCode
from monad_cli.clients.vscode import VSCode
from monad_cli.clients.zed import Zed
from monad_cli.core.errors import InvalidInput
from monad_cli.core.messages import did_you_mean

# Every client monad knows, in the order help texts list them. A `ClientFormat` each: mypy
# holds every format to the protocol.
CLIENTS: dict[str, ClientFormat] = {c.name: c for c in (
    McpJson("claude-desktop", "Claude Desktop"),
    McpJson("claude-code", "Claude Code"),
    McpJson("cursor", "Cursor"),
    VSCode("vscode", "VS Code"),
    Codex(),
    McpJson("gemini", "Gemini CLI", comments=True),
    McpJson("antigravity", "Antigravity CLI", exports=True),
    McpJson("copilot", "Copilot CLI", exports=True),
    OpenCode("opencode", "OpenCode"),
    Zed("zed", "Zed"),
    Goose(),
    Aura(),
    McpJson("mcp-json", "a generic `.mcp.json`", project=True, exports=True),
)}


def get_client(name: str) -> ClientFormat:
    """The client called `name`; `InvalidInput` naming the known ones otherwise."""
    if name not in CLIENTS:
        raise InvalidInput(f"unknown client `{name}`{did_you_mean(name, CLIENTS)}; one of: {', '.join(CLIENTS)}")
    return CLIENTS[name]


def default_path(name: str, *, system: str | None = None, environ: Mapping[str, str] | None = None) -> str:
    """The client's usual config file (a folder for `aura`) on `system`, unexpanded (`~`)."""
    system = system or platform.system()
    env = os.environ if environ is None else environ
    sep = "\\" if system == "Windows" else "/"
    # opencode, zed and goose use `~/.config` on macOS too (XDG layout), `%APPDATA%` on Windows;
    # `app`, the per-user application config folder, differs from it on macOS only.
    xdg = "%APPDATA%" if system == "Windows" else env.get("XDG_CONFIG_HOME") or "~/.config"
    app = "~/Library/Application Support" if system == "Darwin" else xdg
    windows = system == "Windows"
    parts = {
        "claude-desktop": (app, "Claude", "claude_desktop_config.json"),
        "claude-code": (env.get("CLAUDE_CONFIG_DIR") or "~", ".claude.json"),
        "cursor": ("~", ".cursor", "mcp.json"),
        "vscode": (app, "Code", "User", "mcp.json"),
        "codex": (env.get("CODEX_HOME") or sep.join(("~", ".codex")), "config.toml"),
        "gemini": ("~", ".gemini", "settings.json"),
        "antigravity": ("~", ".gemini", "config", "mcp_config.json"),
        "copilot": (env.get("COPILOT_HOME") or sep.join(("~", ".copilot")), "mcp-config.json"),
        "opencode": (xdg, "opencode", "opencode.json"),
        "zed": (xdg, "Zed" if windows else "zed", "settings.json"),
        "goose": (xdg, "Block", "goose", "config", "config.yaml") if windows else (xdg, "goose", "config.yaml"),
        "aura": (".aura", "config", "mcp"),
    }
    return sep.join(parts.get(name, (".mcp.json",)))


def resolve(name: str, path: str | None) -> Path:
    """PATH as given, or the client's default, expanded (`~`, `%APPDATA%`) and absolute."""
    raw = path if path is not None else default_path(name)
    return Path(os.path.abspath(os.path.expanduser(os.path.expandvars(raw))))


def shown(path: Path) -> str:
    """`path` for messages: `~/...` under the home folder (it may be a person's name)."""
    home = str(Path.home())
    text = str(path)
    return "~" + text[len(home):] if home not in ("", "/") and text.startswith(home + os.sep) else text


def defaults_help() -> str:
    """One paragraph per client naming its default PATH on this OS (for `--help`)."""
    system = platform.system()
    lines = [f"{n}: {default_path(n, system=system, environ={})}" for n in CLIENTS]
    return (f"Default PATH per client on this OS ({system or 'unknown'}; `$XDG_CONFIG_HOME`, "
            f"`$CLAUDE_CONFIG_DIR`, `$CODEX_HOME` and `$COPILOT_HOME` are honoured):\n\n" + "\n\n".join(lines))


def installed(name: str) -> bool:
    """Whether this machine has client `name`, by its usual config file: the file exists, or
    its own folder does (the client is installed, with no MCP file yet)."""
    file = resolve(name, None)
    return file.exists() or (file.parent != Path.home() and file.parent.is_dir())


def installed_clients() -> list[str]:
    """The clients this machine has (`installed`). Project files (`.mcp.json`, Aura's) are not
    looked for."""
    return [name for name, client in CLIENTS.items() if not client.project and installed(name)]


__all__ = ["CLIENTS", "default_path", "defaults_help", "get_client", "installed", "installed_clients", "resolve",
           "shown"]
