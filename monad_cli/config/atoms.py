"""Atoms: one TOML file per server under `atoms/mcp/<name>.toml` (docs/atoms.md).

Reads use the standard library's `tomllib` (fast, exact line/column in errors); edits use
tomlkit so a person's comments and layout survive `enable`, `disable` and `pin`. A new atom
is written as plain text, the text tomlkit would write (`render_atom`): `monad mcp add`
loads neither tomlkit nor tomllib.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from monad_cli.core.errors import ConfigError, NotFound
from monad_cli.core.paths import Paths, read_regular

SCHEMA_VERSION = 1
_POS = re.compile(r"\s*\(at line (\d+), column (\d+)\)$")
_EOF = re.compile(r"\s*\(at end of document\)$")
# Field order in files monad writes: what a person reads first comes first.
_HEADER = "# monad MCP server atom; see docs/atoms.md. Edits are applied live."
_ORDER = ["schema", "transport", "command", "args", "url", "enabled", "required", "timeout",
          "requestTimeoutMs", "start", "idleStop", "deferred", "cwd", "condition", "sandbox", "sandboxWritable", "env",
          "headers", "auth", "trust"]


def relative_source(paths: Paths, path: Path) -> str:
    try:
        return str(path.relative_to(paths.home))
    except ValueError:
        return str(path)


#: Bytes: a TOML file monad reads (an atom, a features file, settings.toml) larger than this is
#: refused unread. The largest real atom is a few kB (a long `args` list, a dozen headers);
#: 1 MiB leaves room for any hand-written file and keeps one planted file from costing the
#: supervisor's memory and every reload's time.
MAX_TOML_BYTES = 1024 * 1024


def read_atom(paths: Paths, path: Path) -> dict[str, Any]:
    """Parse one atom. Raises `ConfigError` (one line naming the file) for anything that is not
    a readable TOML file (`read_toml`), a missing file included."""
    source = relative_source(paths, path)
    try:
        return read_toml(path, source, server=path.stem)
    except FileNotFoundError as e:
        raise ConfigError(f"`{source}`: cannot read ({e.strerror})", file=source, server=path.stem) from None


def read_toml(path: Path, source: str, *, server: str | None = None) -> dict[str, Any]:
    """Parse the TOML file at `path`, `source` naming it in messages. Every way it can fail
    is one `ConfigError` line naming the file (for that file alone: the caller goes on with
    the others): unreadable, over `MAX_TOML_BYTES`, not UTF-8, malformed (`file:line:col`), and
    what tomllib raises beside `TOMLDecodeError` for hostile input: `RecursionError` (arrays
    or inline tables nested thousands deep), `ValueError` (an integer of more digits than
    Python converts), `MemoryError`. Raises `FileNotFoundError` when there is no file."""
    import tomllib

    def error(what: str) -> ConfigError:
        return ConfigError(f"`{source}`: {what}", file=source, server=server)

    try:
        data = read_regular(path, MAX_TOML_BYTES)
    except FileNotFoundError:
        raise
    except OSError as e:
        raise error(f"cannot read ({e.strerror})") from None
    if len(data) > MAX_TOML_BYTES:
        raise error(f"larger than {MAX_TOML_BYTES // 1024} KiB; not read (is it the file you meant?)") from None
    try:
        # `utf-8-sig`: some Windows editors save a byte-order mark; TOML 1.0 (§ Spec) has none,
        # but refusing a file for an invisible prefix helps nobody. CRLF is TOML's own newline.
        text = data.decode("utf-8-sig")
        return tomllib.loads(text)
    except UnicodeDecodeError:
        raise error("not UTF-8 text; save it as UTF-8 (monad never rewrites it)") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{malformed_toml(e, text, source)}; fix the file (monad never rewrites it)",
                          file=source, server=server) from None
    except RecursionError:
        raise error("cannot be parsed: values nested too deeply; fix the file (monad never rewrites it)") from None
    except MemoryError:
        raise error("cannot be parsed: out of memory; fix the file (monad never rewrites it)") from None
    except ValueError as e:  # tomllib's own, beside TOMLDecodeError: an integer too long to convert
        raise error(f"cannot be parsed: {str(e).split(';')[0]}; fix the file (monad never rewrites it)") from None


def malformed_toml(error: ValueError, text: str, source: str) -> str:
    """``  `FILE:LINE:COL`: malformed TOML: WHAT`` for tomllib's `TOMLDecodeError` on `text`."""
    msg = str(error)
    m = _POS.search(msg)
    if m:
        where = f"{source}:{m.group(1)}:{m.group(2)}"
    elif _EOF.search(msg):
        where = f"{source}:{max(1, len(text.splitlines()))}"  # the error is at the end of the file
    else:
        where = source
    msg = _EOF.sub(" at the end of the file", _POS.sub("", msg))
    return f"`{where}`: malformed TOML: {msg[:1].lower() + msg[1:]}"


def atom_entries(paths: Paths) -> list[Path]:
    """The `atoms/mcp/*.toml` entries in name order, files or not (a folder, a dangling link);
    dotfiles and temp files are not atoms."""
    try:
        return sorted(p for p in paths.atoms_dir.iterdir() if p.suffix == ".toml" and not p.name.startswith("."))
    except FileNotFoundError:
        return []


def render_atom(defn: Mapping[str, Any]) -> str:
    """The text of a new atom for `defn` (a definition's fields; `name` and `schema` are
    left out, `schema = 1` is written): a header comment, then the fields in `_ORDER`,
    plain values before tables, as tomlkit writes them. Raises what tomlkit raises for a
    value TOML cannot hold (None, an object)."""
    keys = sorted((k for k in defn if k not in ("schema", "name")),
                  key=lambda k: (_ORDER.index(k) if k in _ORDER else len(_ORDER), k))
    text = _plain_atom(defn, keys)
    return text if text is not None else _tomlkit_atom(defn, keys)


def _plain_atom(defn: Mapping[str, Any], keys: Sequence[str]) -> str | None:
    """tomlkit's text for the shapes definitions have: scalars, arrays of them, and tables
    of those one level deep; None for anything else (nested tables, arrays of tables, other
    types), which `_tomlkit_atom` writes. tests/config/test_atoms_render.py holds the two equal.

    What it buys: `import tomlkit` costs 35–60 ms of `python -X importtime` here, against a
    `monad mcp add` of ~100 ms in all (bench/README.md, the `add` target ≤ 1.5× `import typer`)."""
    lines = [f"{_HEADER}\nschema = {SCHEMA_VERSION}\n"]
    tables: list[str] = []
    for key in keys:
        value = defn[key]
        if type(key) is not str:
            return None
        if isinstance(value, Mapping):
            rows = [_pair(k, v) for k, v in value.items()]
            if None in rows:
                return None
            tables.append(f"\n[{_key(key)}]\n" + "".join(f"{row}\n" for row in rows))
            continue
        row = _pair(key, value)
        if row is None:
            return None
        lines.append(f"{row}\n")
    return "".join(lines + tables)


_BARE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
# TOML basic-string escapes, as tomlkit writes them: the short ones, else \u00XX.
_ESCAPES = {c: f"\\u{c:04x}" for c in (*range(0x20), 0x7F)} | {
    ord(c): e for c, e in (("\b", "\\b"), ("\t", "\\t"), ("\n", "\\n"), ("\f", "\\f"), ("\r", "\\r"),
                           ('"', '\\"'), ("\\", "\\\\"))}


def _string(s: str) -> str:
    return f'"{s.translate(_ESCAPES)}"'


def _key(key: str) -> str:
    return key if key and _BARE.issuperset(key) else _string(key)


def _pair(key: object, value: Any) -> str | None:
    text = _inline(value)
    return f"{_key(key)} = {text}" if text is not None and type(key) is str else None


def _inline(value: Any) -> str | None:
    """A scalar or an array of them as tomlkit writes it; None for anything else."""
    kind = type(value)
    if kind is bool:
        return "true" if value else "false"
    if kind is int or kind is float:
        return str(value)
    if kind is str:
        return _string(value)
    if kind is list or kind is tuple:
        items: list[str] = []
        for item in value:
            text = _inline(item)
            if text is None:
                return None
            items.append(text)
        return f"[{', '.join(items)}]"
    return None


def _tomlkit_atom(defn: Mapping[str, Any], keys: Sequence[str]) -> str:
    """The new atom written by tomlkit (as every atom was before `_plain_atom`)."""
    import tomlkit

    doc = tomlkit.document()
    doc.add(tomlkit.comment(_HEADER[2:]))
    doc["schema"] = SCHEMA_VERSION
    for key in keys:
        value = defn[key]
        if isinstance(value, Mapping):
            table = tomlkit.table()
            table.update(value)
            doc[key] = table
        else:
            doc[key] = value
    return tomlkit.dumps(doc)


def edit_atom(path: Path, mutate: Callable[[Any], None]) -> str:
    """Round-trip an atom through tomlkit (comments kept); returns the new text."""
    import tomlkit

    try:
        raw = path.read_bytes().decode("utf-8")  # not read_text: its newline translation loses CRLF
        bom = "\ufeff" if raw.startswith("\ufeff") else ""  # kept: the file stays as its editor wrote it
        doc = tomlkit.parse(raw.removeprefix(bom))
    except FileNotFoundError:
        raise NotFound(f"`{path.name}` is gone; nothing was changed") from None
    except Exception:  # noqa: BLE001 - tomlkit raises its own ParseError family; read_toml words it better
        source = f"atoms/mcp/{path.name}"
        try:
            read_toml(path, source, server=path.stem)
            detail = "tomlkit cannot parse it"
        except (ConfigError, OSError) as e:
            detail = e.message if isinstance(e, ConfigError) else str(e)
        raise ConfigError(f"`{source}` is malformed ({detail}); fix it by hand first, "
                          f"monad does not edit a broken file", file=source, server=path.stem) from None
    mutate(doc)
    return bom + tomlkit.dumps(doc)
