"""Atoms: one TOML file per server under `atoms/mcp/<name>.toml` (docs/atoms.md).

Reads use the standard library's `tomllib` (fast, exact line/column in errors); edits use
tomlkit so a person's comments and layout survive `enable`, `disable` and `pin`.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from monad_cli.errors import ConfigError, NotFound
from monad_cli.paths import Paths

SCHEMA_VERSION = 1
_POS = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")
_EOF = re.compile(r"\s*\(at end of document\)$")
# Field order in files monad writes: what a person reads first comes first.
_ORDER = ["schema", "transport", "command", "args", "url", "enabled", "required", "timeout",
          "requestTimeoutMs", "deferred", "cwd", "condition", "sandbox", "sandboxWritable", "env",
          "headers", "auth", "trust"]


def relative_source(paths: Paths, path: Path) -> str:
    try:
        return str(path.relative_to(paths.home))
    except ValueError:
        return str(path)


def read_atom(paths: Paths, path: Path) -> dict[str, Any]:
    """Parse one atom. Raises `ConfigError` with `file:line:col` for malformed TOML."""
    source = relative_source(paths, path)
    try:
        data = path.read_bytes()
    except OSError as e:
        raise ConfigError(f"`{source}`: cannot read ({e.strerror})", file=source, server=path.stem) from None
    try:
        text = data.decode("utf-8")
        return tomllib.loads(text)
    except UnicodeDecodeError:
        raise ConfigError(f"`{source}`: is not UTF-8 text", file=source, server=path.stem) from None
    except tomllib.TOMLDecodeError as e:
        msg = str(e)
        m = _POS.search(msg)
        if m:
            where = f"{source}:{m.group(1)}:{m.group(2)}"
        elif _EOF.search(msg):
            where = f"{source}:{max(1, len(text.splitlines()))}"  # the error is at the end of the file
        else:
            where = source
        msg = _EOF.sub(" at the end of the file", _POS.sub("", msg))
        raise ConfigError(f"`{where}`: malformed TOML: {msg[:1].lower() + msg[1:]}; fix the file "
                          f"(monad never rewrites it)", file=source, server=path.stem) from None


def list_atom_files(paths: Paths) -> list[Path]:
    """Atom files in name order; dotfiles and temp files are not atoms."""
    try:
        names = sorted(p for p in paths.atoms_dir.iterdir()
                       if p.suffix == ".toml" and not p.name.startswith(".") and p.is_file())
    except FileNotFoundError:
        return []
    return names


def render_atom(defn: Mapping[str, Any]) -> str:
    import tomlkit

    doc = tomlkit.document()
    doc.add(tomlkit.comment("monad MCP server atom; see docs/atoms.md. Edits are applied live."))
    doc["schema"] = SCHEMA_VERSION
    for key in sorted(defn, key=lambda k: (_ORDER.index(k) if k in _ORDER else len(_ORDER), k)):
        if key in ("schema", "name"):
            continue
        value = defn[key]
        if isinstance(value, Mapping):
            table = tomlkit.table()
            for k, v in value.items():
                table[k] = v
            doc[key] = table
        else:
            doc[key] = value
    return tomlkit.dumps(doc)


def edit_atom(path: Path, mutate: Callable[[Any], None]) -> str:
    """Round-trip an atom through tomlkit (comments kept); returns the new text."""
    import tomlkit

    try:
        doc = tomlkit.parse(path.read_text("utf-8"))
    except FileNotFoundError:
        raise NotFound(f"`{path.name}` is gone; nothing was changed") from None
    except Exception:  # noqa: BLE001 - tomlkit raises its own ParseError family; tomllib words it better
        try:
            tomllib.loads(path.read_text("utf-8"))
            detail = "tomlkit cannot parse it"
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            detail = str(e)
        raise ConfigError(f"`atoms/mcp/{path.name}` is malformed ({detail}); fix it by hand first, "
                          f"monad does not edit a broken file", file=f"atoms/mcp/{path.name}",
                          server=path.stem) from None
    mutate(doc)
    return tomlkit.dumps(doc)
