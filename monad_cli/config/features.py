"""Feature files under `MONAD_HOME/features/` (docs/filtering.md):

    features/mcp.toml      [mcp] enabled = ["git*"]  disabled = ["portainer"]   server filters
    features/tools.toml    deferred = ["github__*"]  disabled = ["*__delete_*"]  deferred / hidden tools
    features/presets.toml  browser = {enabled = true}                            preset servers
    features/gateway.toml  toolSearch = "auto"  maxResultTokens = 25000          `monad mcp serve`'s defaults

A missing file is the same as an empty one. A malformed file raises `ConfigError` naming
`file:line:col` or the field and what to do; the supervisor then keeps the last good value.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from monad_cli.config.atoms import read_atom
from monad_cli.core.errors import ConfigError
from monad_cli.core.filters import PatternError, split_patterns
from monad_cli.core.messages import did_you_mean
from monad_cli.core.paths import Paths

MCP_FILE = "features/mcp.toml"
TOOLS_FILE = "features/tools.toml"
PRESETS_FILE = "features/presets.toml"
GATEWAY_FILE = "features/gateway.toml"
# features/gateway.toml: the defaults of `monad mcp serve`'s context budget (docs/gateway.md).
GATEWAY_DEFAULTS: dict[str, Any] = {"toolSearch": "off", "toolSearchAbove": 20_000, "maxResultTokens": 0}


def feature_path(paths: Paths, filename: str) -> Path:
    return paths.features_dir / filename


def read_feature(paths: Paths, filename: str) -> dict[str, Any]:
    """The parsed file (`{}` when it does not exist). Raises `ConfigError` for bad TOML."""
    path = feature_path(paths, filename)
    if not path.exists():
        return {}
    try:
        return read_atom(paths, path)  # the one TOML reader with file:line:col errors
    except ConfigError as e:
        raise ConfigError(e.message, file=f"features/{filename}") from None


def _unknown(source: str, where: str, key: str, known: set[str]) -> ConfigError:
    return ConfigError(f"`{source}`: {where}`{key}` is not a known field{did_you_mean(key, known, known=True)}",
                       file=source, field=key)


def _globs(source: str, fld: str, value: Any, *, server_patterns: bool) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"`{source}`: field `{fld}` must be a list of glob patterns (strings)",
                          file=source, field=fld)
    if not server_patterns:
        bad = next((v for v in value if not v.strip()), None)
        if bad is not None:
            raise ConfigError(f"`{source}`: field `{fld}` has an empty pattern; remove it", file=source, field=fld)
        return [v.strip() for v in value]
    try:
        return split_patterns(value, what=f"`{source}`: field `{fld}`")
    except PatternError as e:
        raise ConfigError(str(e), file=source, field=fld) from None


def load_mcp_filter(paths: Paths) -> tuple[list[str], list[str]]:
    """`(enabled, disabled)` server-name patterns from `features/mcp.toml` (`[mcp]` table)."""
    doc = read_feature(paths, "mcp.toml")
    for key in doc:
        if key != "mcp":
            raise _unknown(MCP_FILE, "", key, {"mcp"})
    table = doc.get("mcp", {})
    if not isinstance(table, Mapping):
        raise ConfigError(f"`{MCP_FILE}`: `mcp` must be a table: `[mcp]`", file=MCP_FILE, field="mcp")
    for key in table:
        if key not in ("enabled", "disabled"):
            raise _unknown(MCP_FILE, "`[mcp]` ", key, {"enabled", "disabled"})
    return (_globs(MCP_FILE, "mcp.enabled", table.get("enabled", []), server_patterns=True),
            _globs(MCP_FILE, "mcp.disabled", table.get("disabled", []), server_patterns=True))


TOOLS_FIELDS = ("deferred", "enabled", "disabled")


def load_tool_globs(paths: Paths) -> dict[str, list[str]]:
    """`{"deferred": [...], "enabled": [...], "disabled": [...]}` from `features/tools.toml`:
    glob patterns over exposed tool names (`server__tool`); absent lists are empty.
    `enabled` (only these) and `disabled` are tool filters (docs/filtering.md "Tool filters")."""
    doc = read_feature(paths, "tools.toml")
    for key in doc:
        if key not in TOOLS_FIELDS:
            raise _unknown(TOOLS_FILE, "", key, set(TOOLS_FIELDS))
    return {k: _globs(TOOLS_FILE, k, doc.get(k, []), server_patterns=False) for k in TOOLS_FIELDS}


def load_gateway_settings(paths: Paths) -> dict[str, Any]:
    """`features/gateway.toml`: `toolSearch` (`off`, `on` or `auto`), `toolSearchAbove` (the
    token count above which `auto` searches) and `maxResultTokens` (0: no budget), with the
    defaults of `GATEWAY_DEFAULTS` for what it leaves out."""
    doc = read_feature(paths, "gateway.toml")
    out = dict(GATEWAY_DEFAULTS)
    for key, value in doc.items():
        if key not in GATEWAY_DEFAULTS:
            raise _unknown(GATEWAY_FILE, "", key, set(GATEWAY_DEFAULTS))
        if key == "toolSearch":
            if value not in ("off", "on", "auto"):
                raise ConfigError(f"`{GATEWAY_FILE}`: `toolSearch` must be \"off\", \"on\" or \"auto\"",
                                  file=GATEWAY_FILE, field=key)
        elif isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(f"`{GATEWAY_FILE}`: `{key}` must be a whole number of tokens >= 0",
                              file=GATEWAY_FILE, field=key)
        out[key] = value
    return out


def load_presets(paths: Paths) -> dict[str, dict[str, Any]]:
    """The raw preset tables of `features/presets.toml` (`name = {enabled = true, ...}`);
    `config/presets.py` validates each one."""
    doc = read_feature(paths, "presets.toml")
    out: dict[str, dict[str, Any]] = {}
    for name, value in doc.items():
        if not isinstance(value, Mapping):
            raise ConfigError(f"`{PRESETS_FILE}`: preset `{name}` must be a table such as "
                              f"`{name} = {{enabled = true}}`", file=PRESETS_FILE, field=name)
        out[name] = dict(value)
    return out


__all__ = [
    "GATEWAY_DEFAULTS",
    "GATEWAY_FILE",
    "MCP_FILE",
    "PRESETS_FILE",
    "TOOLS_FILE",
    "load_gateway_settings",
    "load_mcp_filter",
    "load_presets",
    "load_tool_globs",
    "read_feature",
]
