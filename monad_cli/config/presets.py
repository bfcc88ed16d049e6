"""Preset servers: `features/presets.toml` entries that synthesize a server definition.

    # features/presets.toml
    browser = {enabled = true}                       # headless Playwright MCP, system Chromium
    browser = {enabled = true, executablePath = "/opt/chrome/chrome", version = "latest"}
    computer = {enabled = true}                      # computer-control-mcp on this X display
    computer = {enabled = true, display = ":1", version = "0.3.14"}

A server the person defined under the same name (atom or agents.json) takes precedence:
the preset steps aside. Preset servers are `trust.hostEscape = true` (a browser or a
mouse reaches past any local confinement). Each runs a pinned published server fetched
on first use, as `npx -y` (browser) or uv's `uvx` (computer) do (docs/filtering.md
"Presets"). `preset_definition` and `turn_off_preset` serve `monad mcp get`/`remove`.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from monad_cli.config.edits import not_defined
from monad_cli.config.features import PRESETS_FILE, load_presets
from monad_cli.core.errors import ConfigError
from monad_cli.core.messages import did_you_mean
from monad_cli.core.paths import Paths

# Pinned so a preset does not change under a running setup; `version = "latest"` opts out.
PLAYWRIGHT_MCP = "@playwright/mcp"
PLAYWRIGHT_MCP_VERSION = "0.0.83"
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome-stable", "google-chrome")
# The first `npx -y` downloads the package: allow more than the default 10 s to connect.
BROWSER_TIMEOUT_S = 120
# Fields a preset table takes besides its own options; passed through to the definition.
PASSTHROUGH = {"deferred", "condition", "timeout", "required"}
BROWSER_FIELDS = {"enabled", "executablePath", "version"} | PASSTHROUGH
# computer-control-mcp (PyPI): mouse, keyboard and screenshots on X11 (PyAutoGUI, mss). It
# pins mcp 1.x, so it runs in uv's isolated environment rather than beside monad.
COMPUTER_MCP = "computer-control-mcp"
COMPUTER_MCP_VERSION = "0.3.14"
# The first `uvx` run downloads about 190 MB of wheels (onnxruntime, opencv): allow for it.
COMPUTER_TIMEOUT_S = 300
COMPUTER_FIELDS = {"enabled", "version", "display"} | PASSTHROUGH
# What `uvx` needs to reach the package index from behind a proxy or a private CA; the
# server's environment is otherwise only HOME LOGNAME PATH SHELL TERM USER (docs/atoms.md).
NETWORK_ENV = ("HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "no_proxy",
               "all_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR")
PRESETS = ("browser", "computer")
_DISPLAY = re.compile(r"[A-Za-z0-9._-]*:\d+(\.\d+)?")
_PY_VERSION = re.compile(r"[0-9][A-Za-z0-9.+!_-]*|latest")


def _error(name: str, fld: str | None, message: str) -> ConfigError:
    where = f"`{PRESETS_FILE}`: preset `{name}`" + (f", field `{fld}`" if fld else "")
    return ConfigError(f"{where}: {message}", file=PRESETS_FILE, server=name, field=fld)


def _check_fields(name: str, options: Mapping[str, Any], known: set[str]) -> None:
    for key in options:
        if key not in known:
            raise _error(name, key, f"unknown field{did_you_mean(key, known, known=True)}")


def find_chromium(path: str | None) -> str | None:
    """The system Chromium on `path` (a PATH string), or None."""
    return next((found for name in CHROMIUM_NAMES if (found := shutil.which(name, path=path))), None)


def browser_definition(options: Mapping[str, Any], *, environ: Mapping[str, str]) -> dict[str, Any]:
    """The raw stdio definition of the `browser` preset: `npx -y @playwright/mcp@VERSION
    --headless --browser chromium --executable-path CHROMIUM --isolated`.

    Raises `ConfigError` for a bad option or when no Chromium is found (no browser is ever
    downloaded: Playwright MCP is pointed at the system one).
    """
    _check_fields("browser", options, BROWSER_FIELDS)
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
    return _definition(options, command="npx",
                       args=["-y", f"{PLAYWRIGHT_MCP}@{version}", "--headless", "--browser", "chromium",
                             "--executable-path", exe, "--isolated"], timeout=BROWSER_TIMEOUT_S,
                       description="preset `browser`: Playwright MCP, headless, system Chromium")


def _definition(options: Mapping[str, Any], **fields: Any) -> dict[str, Any]:
    """A preset's stdio definition: its `fields`, `trust.hostEscape` (a browser or a mouse
    reaches past any local confinement), and the `PASSTHROUGH` fields of its table."""
    return {"transport": "stdio", **fields, "trust": {"hostEscape": True},
            **{key: options[key] for key in PASSTHROUGH & set(options)}}


def computer_definition(options: Mapping[str, Any], *, environ: Mapping[str, str]) -> dict[str, Any]:
    """The raw stdio definition of the `computer` preset: `uvx computer-control-mcp@VERSION`
    on the session's X display (`DISPLAY` of the supervisor, or the `display` option).

    Raises `ConfigError` for a bad option, when there is no display, or when `uvx` is not on
    PATH (monad never installs uv itself).
    """
    _check_fields("computer", options, COMPUTER_FIELDS)
    version = options.get("version", COMPUTER_MCP_VERSION)
    if not isinstance(version, str) or not _PY_VERSION.fullmatch(version):
        raise _error("computer", "version", f"must be a PyPI version such as {COMPUTER_MCP_VERSION!r} or "
                                            f"\"latest\"")
    display = options.get("display")
    if display is not None:
        if not isinstance(display, str) or not _DISPLAY.fullmatch(display):
            raise _error("computer", "display", 'must be an X display such as ":0" or ":1.0"')
    elif "DISPLAY" in environ:
        display = "${DISPLAY}"  # expanded by the supervisor, like any reference
    else:
        wayland = " (a Wayland session needs XWayland, which sets `DISPLAY`)" if "WAYLAND_DISPLAY" in environ else ""
        raise _error("computer", None, f"no X display: the supervisor's environment has no `DISPLAY`{wayland}; "
                                       f"start the supervisor from your desktop session or set "
                                       f'`display = ":0"`')
    uvx = shutil.which("uvx", path=environ.get("PATH"))
    if uvx is None:
        raise _error("computer", None, f"no `uvx` found on PATH: the preset runs {COMPUTER_MCP} with uv; install "
                                       f"uv (`pip install uv` or `pipx install uv`)")
    env = {"DISPLAY": display}
    if "XAUTHORITY" in environ:
        env["XAUTHORITY"] = "${XAUTHORITY}"
    elif not (Path(environ.get("HOME") or "/nonexistent") / ".Xauthority").exists():
        # One of the server's two X libraries (python3-xlib 0.15) fails without an authority
        # file; an empty one means "no cookie", which a display without access control accepts.
        env["XAUTHORITY"] = "/dev/null"
    env |= {var: "${" + var + "}" for var in (*NETWORK_ENV, *sorted(k for k in environ if k.startswith("UV_")))
            if var in environ}
    return _definition(options, command=uvx, args=[f"{COMPUTER_MCP}@{version}"], env=env, timeout=COMPUTER_TIMEOUT_S,
                       description=f"preset `computer`: {COMPUTER_MCP} (mouse, keyboard, screenshots on X11)")


_DEFINITIONS = {"browser": browser_definition, "computer": computer_definition}


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
            errors.append(ConfigError(f"`{PRESETS_FILE}`: unknown preset `{name}`{did_you_mean(name, PRESETS)}; "
                                      f"known presets: {', '.join(PRESETS)}", file=PRESETS_FILE, field=name))
            continue
        enabled = options.get("enabled", False)
        if not isinstance(enabled, bool):
            errors.append(_error(name, "enabled", f"must be true or false, got {enabled!r}"))
            continue
        if not enabled or name in taken:  # a user-defined server of that name wins
            continue
        try:
            out[name] = _DEFINITIONS[name](options, environ=environ)
        except ConfigError as e:
            errors.append(e)
    return out, errors


def preset_definition(paths: Paths, name: str, environ: Mapping[str, str]) -> dict[str, Any]:
    """The definition the enabled preset `name` synthesizes (for `monad mcp get`).

    Raises `NotFound` when `name` is not an enabled preset, `ConfigError` with the preset's
    problem when it cannot be built (no Chromium, no display, ...).
    """
    presets = load_presets(paths)
    options = presets.get(name)
    if name not in PRESETS or options is None or options.get("enabled") is not True:
        raise not_defined(paths, name)
    definitions, errors = preset_definitions({name: options}, taken=set(), environ=environ)
    if errors:
        raise errors[0]
    return definitions[name]


def turn_off_preset(paths: Paths, name: str) -> None:
    """Set `enabled = false` on the preset's table (its options stay), locked and atomic,
    comments kept (tomlkit). Raises `NotFound` when `name` is not an enabled preset."""
    import tomlkit

    from monad_cli.config.features import feature_path
    from monad_cli.config.store import config_lock, write_atomic

    path = feature_path(paths, "presets.toml")
    with config_lock(paths):
        options = load_presets(paths).get(name)
        if name not in PRESETS or options is None or options.get("enabled") is not True:
            raise not_defined(paths, name)
        doc = tomlkit.parse(path.read_text("utf-8"))
        doc[name]["enabled"] = False
        mode = path.stat().st_mode & 0o777
        write_atomic(path, tomlkit.dumps(doc).encode(), mode=mode)


__all__ = [
    "COMPUTER_MCP",
    "COMPUTER_MCP_VERSION",
    "PLAYWRIGHT_MCP",
    "PLAYWRIGHT_MCP_VERSION",
    "PRESETS",
    "browser_definition",
    "computer_definition",
    "find_chromium",
    "preset_definition",
    "preset_definitions",
    "turn_off_preset",
]
