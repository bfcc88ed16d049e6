"""Checks of single fields of a server definition: each returns the field's value, typed,
or raises the `ConfigError` that names the file, the server and the field (schema.py's
`validate` runs them)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from monad_cli.config.expansion import ExpansionError, check_syntax, expand
from monad_cli.core.errors import ConfigError
from monad_cli.core.messages import did_you_mean

# `tools = {enabled = [...], disabled = [...]}`: globs over the server's own or the exposed tool names.
# Parsed and validated here; the gateway does not enforce them yet (docs/atoms.md).
TOOL_FILTER_FIELDS = ("enabled", "disabled")


class FieldContext:
    """Where a field is: the file (relative to MONAD_HOME) and the server; `error` builds
    the one-line ConfigError naming both and the field."""

    def __init__(self, source: str, server: str) -> None:
        self.source = source  # "": a definition not in any file yet (`monad mcp add`)
        self.server = server

    def error(self, fld: str | None, message: str) -> ConfigError:
        where = (f"`{self.source}`: " if self.source else "") + f"server `{self.server}`"
        if fld:
            where += f", field `{fld}`"
        return ConfigError(f"{where}: {message}", file=self.source or None, server=self.server, field=fld)


def boolean(ctx: FieldContext, raw: Mapping[str, Any], key: str, default: bool) -> bool:
    """`raw[key]`, which must be true or false (absent: `default`)."""
    v = raw.get(key, default)
    if not isinstance(v, bool):
        raise ctx.error(key, f"must be true or false, got {v!r}")
    return v


def str_list(ctx: FieldContext, raw: Mapping[str, Any], key: str) -> list[str]:
    """`raw[key]`, which must be a list of strings (absent: empty)."""
    v = raw.get(key, [])
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise ctx.error(key, "must be a list of strings")
    return list(v)


def str_map(ctx: FieldContext, raw: Mapping[str, Any], key: str) -> dict[str, str]:
    """`raw[key]`, a table whose values are strings (numbers are taken as their text)."""
    v = raw.get(key, {})
    if not isinstance(v, Mapping):
        raise ctx.error(key, "must be a table of string values")
    out: dict[str, str] = {}
    for k, val in v.items():
        if isinstance(val, bool) or not isinstance(val, (str, int, float)):
            raise ctx.error(f"{key}.{k}", "must be a string")
        out[str(k)] = str(val)
    return out


def expand_field(ctx: FieldContext, fld: str, value: str, environ: Mapping[str, str] | None) -> str:
    """`value` with `$VAR`/`${VAR}` expanded from `environ` (None: only the syntax is checked)."""
    try:
        if environ is None:
            check_syntax(value)
            return value
        return expand(value, environ)
    except ExpansionError as e:
        raise ctx.error(fld, str(e)) from None


def tool_filters(ctx: FieldContext, value: Any) -> dict[str, list[str]]:
    """`tools = {enabled = [GLOB, ...], disabled = [GLOB, ...]}` → the two lists (absent: none)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ctx.error("tools", 'must be a table such as `tools = {disabled = ["delete_*"]}`')
    out: dict[str, list[str]] = {}
    for key, globs in value.items():
        if key not in TOOL_FILTER_FIELDS:
            raise ctx.error(f"tools.{key}", f"unknown field{did_you_mean(key, TOOL_FILTER_FIELDS)}; "
                                            f"known: enabled, disabled")
        if not isinstance(globs, list) or not all(isinstance(g, str) for g in globs):
            raise ctx.error(f"tools.{key}", "must be a list of glob patterns over tool names")
        for i, g in enumerate(globs):
            if not g.strip() or g != g.strip():
                raise ctx.error(f"tools.{key}[{i}]", "must be a non-empty glob without surrounding spaces")
        out[key] = list(globs)
    return out


HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # an RFC 9110 §5.6.2 token


def check_headers(ctx: FieldContext, fld: str, headers: Mapping[str, str]) -> None:
    """Header names are tokens, values hold no line breaks (header injection), and no name
    appears twice in different case (RFC 9110 §5.1: names are case-insensitive)."""
    seen: dict[str, str] = {}
    for k, v in headers.items():
        if not HEADER_NAME.fullmatch(k):
            raise ctx.error(f"{fld}.{k}", "not a valid HTTP header name (letters, digits, `-`; no spaces)")
        if any(c in v for c in "\r\n\x00"):
            raise ctx.error(f"{fld}.{k}", "a header value must not contain line breaks")
        if k.lower() in seen:
            raise ctx.error(f"{fld}.{k}", f"the same header as `{seen[k.lower()]}` (names ignore case)")
        seen[k.lower()] = k
