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
    """Patterns and where they came from (shown in status: "the rule that filtered it")."""

    patterns: tuple[str, ...]
    origin: str  # "--include-mcps" or "`[mcp] enabled` in `features/mcp.toml`"

    def first_match(self, name: str) -> str | None:
        return next((p for p in self.patterns if fnmatchcase(name, p)), None)

    def describe(self) -> str:
        return ",".join(self.patterns)


@dataclass(frozen=True)
class ServerFilter:
    """The effective filter. `include=None` (or empty) lets every name through."""

    include: Rule | None = None
    exclude: Rule | None = None

    def reason(self, name: str) -> str | None:
        """None if `name` runs, else the one-line rule that filtered it out."""
        if self.exclude is not None:
            hit = self.exclude.first_match(name)
            if hit is not None:
                return f"excluded by `{hit}` ({self.exclude.origin})"
        if self.include is not None and self.include.patterns and self.include.first_match(name) is None:
            return f"not included: matches none of `{self.include.describe()}` ({self.include.origin})"
        return None

    def allows(self, name: str) -> bool:
        return self.reason(name) is None

    def describe(self) -> str:
        parts = []
        if self.include is not None and self.include.patterns:
            parts.append(f"include `{self.include.describe()}` ({self.include.origin})")
        if self.exclude is not None and self.exclude.patterns:
            parts.append(f"exclude `{self.exclude.describe()}` ({self.exclude.origin})")
        return "; ".join(parts) or "no filter"


def combine(*, flag_include: Sequence[str] | None, flag_exclude: Sequence[str] | None,
            file_enabled: Sequence[str], file_disabled: Sequence[str]) -> ServerFilter:
    """The effective filter: a flag given (not None, even empty) replaces the file's list of
    the same kind. Patterns must already be validated (`split_patterns`)."""
    if flag_include is not None:
        include = Rule(tuple(flag_include), "--include-mcps")
    else:
        include = Rule(tuple(file_enabled), f"`[mcp] enabled` in `{FILE}`")
    if flag_exclude is not None:
        exclude = Rule(tuple(flag_exclude), "--exclude-mcps")
    else:
        exclude = Rule(tuple(file_disabled), f"`[mcp] disabled` in `{FILE}`")
    return ServerFilter(include=include, exclude=exclude)


__all__ = ["FILE", "PatternError", "Rule", "ServerFilter", "combine", "split_patterns"]
