"""Server filters: glob patterns over server names that leave servers out (docs/filtering.md).

A filter is a user-side override on top of `enabled` (the author-side toggle):

- include patterns (`--include-mcps`, or `[mcp] enabled` in `features/mcp.toml`): when any
  are given, only servers matching one of them run; none given means every server;
- exclude patterns (`--exclude-mcps`, or `[mcp] disabled`): a matching server never runs;
  exclude wins over include, so `--exclude-mcps "*"` turns all MCP off;
- a flag replaces the file's list of the same kind (flags override the file); the other
  list still comes from the file.

Patterns are shell globs (`fnmatch`, case-sensitive: server names are) over the whole name.
Stdlib only: the CLI imports this for `--help`-time validation.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

# Server-name characters plus the glob ones.
_PATTERN = re.compile(r"[A-Za-z0-9_\-*?\[\]!]{1,128}\Z")
FILE = "features/mcp.toml"


class PatternError(ValueError):
    """A malformed pattern list; the message is one line naming the pattern."""


def split_patterns(values: Iterable[str], *, what: str, pattern: re.Pattern[str] = _PATTERN,
                   kind: str = "server-name", hint: str = "", error: type[ValueError] = PatternError) -> list[str]:
    """`["context7,git*", "x"]` → `["context7", "git*", "x"]`: comma-separated, repeatable,
    blanks dropped, each matching `pattern` (server-name globs by default). Raises `error`
    (`PatternError`) naming `what` (e.g. `--include-mcps`), the part and the `kind` of
    pattern expected."""
    out: list[str] = []
    for value in values:
        for part in value.split(","):
            part = part.strip()
            if not part:
                continue
            if not pattern.match(part):
                raise error(f"{what}: `{part[:60]}` is not a {kind} pattern (letters, digits, "
                            f"`_`, `-` and the globs `*`, `?`, `[...]`{hint})")
            out.append(part)
    return out


@dataclass(frozen=True)
class Rule:
    """Include and exclude globs and where each list came from (for the reason). One rule
    type for the server filter (`ServerFilter`: `Rule()` lets every name through) and each
    layer of tool filters (core/tool_filters.py), whose server layer sets `own_names`: a
    glob may match the server's own tool name as well as the exposed name."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    include_origin: str = ""  # "--include-mcps" or "`[mcp] enabled` in `features/mcp.toml`"
    exclude_origin: str = ""
    own_names: bool = False

    def __bool__(self) -> bool:
        return bool(self.include or self.exclude)

    def _matches(self, glob: str, name: str, own: str) -> bool:
        return fnmatchcase(name, glob) or (self.own_names and fnmatchcase(own, glob))

    def excluded(self, name: str, own: str) -> str | None:
        for glob in self.exclude:
            if self._matches(glob, name, own):
                return f"excluded by `{glob}` ({self.exclude_origin})"
        return None

    def not_included(self, name: str, own: str) -> str | None:
        if not self.include or any(self._matches(g, name, own) for g in self.include):
            return None
        return f"not included: matches none of `{','.join(self.include)}` ({self.include_origin})"

    def reason(self, name: str) -> str | None:
        """None if `name` runs, else the one-line rule that filtered it out (exclude wins)."""
        return self.excluded(name, name) or self.not_included(name, name)

    def allows(self, name: str) -> bool:
        return self.reason(name) is None

    def describe(self) -> str:
        parts = []
        if self.include:
            parts.append(f"include `{','.join(self.include)}` ({self.include_origin})")
        if self.exclude:
            parts.append(f"exclude `{','.join(self.exclude)}` ({self.exclude_origin})")
        return "; ".join(parts) or "no filter"


ServerFilter = Rule


def combine(*, flag_include: Sequence[str] | None, flag_exclude: Sequence[str] | None,
            file_enabled: Sequence[str], file_disabled: Sequence[str]) -> ServerFilter:
    """The effective filter: a flag given (not None, even empty) replaces the file's list of
    the same kind. Patterns must already be validated (`split_patterns`)."""
    if flag_include is not None:
        include, include_origin = tuple(flag_include), "--include-mcps"
    else:
        include, include_origin = tuple(file_enabled), f"`[mcp] enabled` in `{FILE}`"
    if flag_exclude is not None:
        exclude, exclude_origin = tuple(flag_exclude), "--exclude-mcps"
    else:
        exclude, exclude_origin = tuple(file_disabled), f"`[mcp] disabled` in `{FILE}`"
    return ServerFilter(include=include, exclude=exclude, include_origin=include_origin,
                        exclude_origin=exclude_origin)


__all__ = ["FILE", "PatternError", "Rule", "ServerFilter", "combine", "split_patterns"]
