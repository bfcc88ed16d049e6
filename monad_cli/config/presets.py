"""Preset servers: `features/presets.toml` entries that synthesize a server definition.

    # features/presets.toml
    browser = {enabled = true}                       # headless Playwright MCP, system Chromium
    browser = {enabled = true, executablePath = "/opt/chrome/chrome", version = "latest"}

A server the person defined under the same name (atom or agents.json) takes precedence:
the preset steps aside. Preset servers are `trust.hostEscape = true` (a browser reaches
past any local confinement). Only `browser` exists: no `computer` preset ships, since no
suitable published server was settled on (docs/filtering.md "Presets").
"""

from __future__ import annotations

import difflib
import os
import shutil
from collections.abc import Callable, Mapping
from typing import Any

from monad_cli.config.features import PRESETS_FILE
from monad_cli.errors import ConfigError

# Pinned so a preset does not change under a running setup; `version = "latest"` opts out.
PLAYWRIGHT_MCP = "@playwright/mcp"
PLAYWRIGHT_MCP_VERSION = "0.0.83"
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome-stable", "google-chrome")
# The first `npx -y` downloads the package: allow more than the default 10 s to connect.
BROWSER_TIMEOUT_S = 120
# Fields a preset table takes besides its own options; passed through to the definition.
PASSTHROUGH = {"deferred", "condition", "timeout", "required"}
BROWSER_FIELDS = {"enabled", "executablePath", "version"} | PASSTHROUGH
PRESETS = ("browser",)


def _error(name: str, fld: str | None, message: str) -> ConfigError:
    where = f"`{PRESETS_FILE}`: preset `{name}`" + (f", field `{fld}`" if fld else "")
    return ConfigError(f"{where}: {message}", file=PRESETS_FILE, server=name, field=fld)


def find_chromium(path: str | None, which: Callable[..., str | None] = shutil.which) -> str | None:
    """The system Chromium on `path` (a PATH string), or None."""
    for name in CHROMIUM_NAMES:
        found = which(name, path=path)
        if found:
            return found
    return None


def browser_definition(options: Mapping[str, Any], *, environ: Mapping[str, str]) -> dict[str, Any]:
    """The raw stdio definition of the `browser` preset: `npx -y @playwright/mcp@VERSION
    --headless --browser chromium --executable-path CHROMIUM --isolated`.

    Raises `ConfigError` for a bad option or when no Chromium is found (no browser is ever
    downloaded: Playwright MCP is pointed at the system one).
    """
    for key in options:
        if key not in BROWSER_FIELDS:
            close = difflib.get_close_matches(key, sorted(BROWSER_FIELDS), n=1)
            hint = f" (did you mean `{close[0]}`?)" if close else f"; known: {', '.join(sorted(BROWSER_FIELDS))}"
            raise _error("browser", key, f"unknown field{hint}")
    version = options.get("version", PLAYWRIGHT_MCP_VERSION)
    if not isinstance(version, str) or not version.strip() or " " in version:
        raise _error("browser", "version", f"must be an npm version or tag such as {PLAYWRIGHT_MCP_VERSION!r}")
    exe = options.get("executablePath")
    if exe is not None:
        if not isinstance(exe, str) or not os.path.isabs(exe):
            raise _error("browser", "executablePath", "must be an absolute path to a Chromium executable")
        if not os.access(exe, os.X_OK):
            raise _error("browser", "executablePath", f"`{exe}` is not an executable file")
    else:
        exe = find_chromium(environ.get("PATH"))
        if exe is None:
            raise _error("browser", None, f"no system Chromium found on PATH (looked for "
                                          f"{', '.join(CHROMIUM_NAMES)}); install one (Debian: `apt-get install "
                                          f"chromium`) or set `executablePath`")
    definition: dict[str, Any] = {
        "transport": "stdio",
        "command": "npx",
        "args": ["-y", f"{PLAYWRIGHT_MCP}@{version}", "--headless", "--browser", "chromium",
                 "--executable-path", exe, "--isolated"],
        "timeout": BROWSER_TIMEOUT_S,
        "description": "preset `browser`: Playwright MCP, headless, system Chromium",
        "trust": {"hostEscape": True},
    }
    for key in PASSTHROUGH & set(options):
        definition[key] = options[key]
    return definition


def preset_definitions(presets: Mapping[str, Mapping[str, Any]], *, taken: set[str],
                       environ: Mapping[str, str]) -> tuple[dict[str, dict[str, Any]], list[ConfigError]]:
    """Definitions of the enabled presets whose name no user-defined server takes.

    `presets` comes from `features.load_presets`. Returns (name → raw definition, errors);
    an error with `server` set concerns that preset's server, one without concerns the file.
    """
    out: dict[str, dict[str, Any]] = {}
    errors: list[ConfigError] = []
    for name, options in presets.items():
        if name not in PRESETS:
            close = difflib.get_close_matches(name, PRESETS, n=1)
            hint = f" (did you mean `{close[0]}`?)" if close else ""
            errors.append(ConfigError(f"`{PRESETS_FILE}`: unknown preset `{name}`{hint}; known presets: "
                                      f"{', '.join(PRESETS)}", file=PRESETS_FILE, field=name))
            continue
        enabled = options.get("enabled", False)
        if not isinstance(enabled, bool):
            errors.append(_error(name, "enabled", f"must be true or false, got {enabled!r}"))
            continue
        if not enabled or name in taken:  # a user-defined server of that name wins
            continue
        try:
            out[name] = browser_definition(options, environ=environ)
        except ConfigError as e:
            errors.append(e)
    return out, errors


__all__ = [
    "PLAYWRIGHT_MCP",
    "PLAYWRIGHT_MCP_VERSION",
    "PRESETS",
    "browser_definition",
    "find_chromium",
    "preset_definitions",
]
