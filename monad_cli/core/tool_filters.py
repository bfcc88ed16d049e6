"""Tool filters: glob rules that hide tools (docs/filtering.md "Tool filters"). Pure (stdlib, filters.py).

Three layers of rules, each an include list (`enabled`) and an exclude list (`disabled`):

| layer | where | globs match |
|---|---|---|
| server | `tools = {enabled, disabled}` of the atom / agents.json entry | either: own (`delete_repo`) or exposed name |
| file | `enabled`, `disabled` in `features/tools.toml` | the exposed name (`github__delete_repo`) |
| session | `monad mcp serve --include-tools`, `--exclude-tools` | the exposed name |

A tool is hidden when an exclude glob of any layer matches it (exclude wins, whatever the
includes say), or when a layer whose include list is not empty has no glob that matches it
(an `enabled` list means "only these"). `hidden_by` returns the first rule that hid it, in
that order (excludes of server, file, session, then includes), as the one-line reason a
refused call and `monad mcp tools` show. Globs are shell globs (`fnmatchcase`, so
case-sensitive) over the whole name.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from fnmatch import fnmatchcase

from monad_cli.core.filters import Rule, split_patterns

# Exposed-name characters plus the glob ones (exposed names are `[A-Za-z0-9_-]`).
_PATTERN = re.compile(r"[A-Za-z0-9_\-*?\[\]!]{1,160}\Z")


class ToolPatternError(ValueError):
    """A malformed pattern list; the message is one line naming the pattern and where."""


NO_RULE = Rule()  # no globs: nothing hidden (built once: a rule is made on every call's path)


def server_rule(server: str, tools: Mapping[str, Sequence[str]], source: str | None) -> Rule:
    """The `tools` field of server `server` (from `source`, e.g. `atoms/mcp/github.toml`)."""
    if not tools.get("enabled") and not tools.get("disabled"):
        return NO_RULE
    where = f" in {source}" if source else ""
    return Rule(include=tuple(tools.get("enabled", ())), exclude=tuple(tools.get("disabled", ())),
                include_origin=f"`tools.enabled` of server `{server}`{where}",
                exclude_origin=f"`tools.disabled` of server `{server}`{where}", own_names=True)


def file_rule(enabled: Sequence[str], disabled: Sequence[str]) -> Rule:
    """`enabled` / `disabled` of `features/tools.toml`."""
    if not enabled and not disabled:
        return NO_RULE
    return Rule(include=tuple(enabled), exclude=tuple(disabled),
                include_origin="`enabled` in features/tools.toml",
                exclude_origin="`disabled` in features/tools.toml")


def session_rule(include: Sequence[str] = (), exclude: Sequence[str] = ()) -> Rule:
    """A gateway session's `--include-tools` / `--exclude-tools`."""
    if not include and not exclude:
        return NO_RULE
    return Rule(include=tuple(include), exclude=tuple(exclude),
                include_origin="--include-tools of this gateway",
                exclude_origin="--exclude-tools of this gateway")


def hidden_by(exposed: str, own: str, rules: Iterable[Rule]) -> str | None:
    """None if tool `exposed` (the server's own name `own`) is shown, else the rule that
    hid it: `excluded by `GLOB` (ORIGIN)` or `not included: matches none of `GLOBS` (ORIGIN)`."""
    layers = [r for r in rules if r]
    for rule in layers:
        reason = rule.excluded(exposed, own)
        if reason:
            return reason
    for rule in layers:
        reason = rule.not_included(exposed, own)
        if reason:
            return reason
    return None


def inert_globs(tools: Mapping[str, Sequence[str]], own_names: Sequence[str],
                exposed_names: Sequence[str] = ()) -> list[str]:
    """Warnings for the globs of a server's `tools` field that match none of its advertised
    tools, by their own names (`own_names`) or exposed names (`exposed_names`): most often a
    typo, or another server's prefix (for `monad mcp status NAME`)."""
    return [f"`tools.{key}` entry `{g}` matches no advertised tool; advertised: "
            f"{', '.join(sorted(own_names)) or 'none'}"
            for key in ("enabled", "disabled") for g in tools.get(key, ())
            if not any(fnmatchcase(n, g) for n in (*own_names, *exposed_names))]


def split_tool_patterns(values: Iterable[str], *, what: str) -> list[str]:
    """`["github__*,time__*", "x__y"]` → three globs over exposed names: comma-separated,
    repeatable, blanks dropped. Raises `ToolPatternError` naming `what` (`--include-tools`)."""
    return split_patterns(values, what=what, pattern=_PATTERN, kind="tool-name", error=ToolPatternError,
                       hint="; exposed names look like `server__tool`")


def literal_glob(name: str) -> str:
    """A glob that matches exactly `name` (for a client's plain tool-name lists on import):
    `*`, `?` and `[` become one-character classes."""
    return re.sub(r"([*?\[])", r"[\1]", name)


__all__ = [
    "ToolPatternError",
    "file_rule",
    "hidden_by",
    "inert_globs",
    "literal_glob",
    "server_rule",
    "session_rule",
    "split_tool_patterns",
]

def is_deferred(tool: str, server: str, *, deferred_servers: Collection[str], deferred_globs: Sequence[str]) -> bool:
    """Whether exposed tool `tool` of `server` starts out of the list (also for `monad mcp tools`)."""
    return server in deferred_servers or any(fnmatchcase(tool, g) for g in deferred_globs)
