"""`$VAR` / `${VAR}` expansion in definition strings (docs/atoms.md "Variables").

- `$NAME` and `${NAME}` take the value from the environment; an unset variable is an
  error (a set-but-empty one expands to "");
- `${NAME:-default}` takes the default when NAME is unset or empty, as POSIX shells do
  (and Claude Code's `.mcp.json`); the default is literal text (no `}` in it);
- `$$` is a literal `$`; a `$` not followed by a name or `{` stays as it is;
- `${secret:...}` is rejected: monad keeps secrets in 0600 files, not a secret store.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_TOKEN = re.compile(r"\$(?:(\$)|\{([^}]*)\}|([A-Za-z_][A-Za-z0-9_]*)|(\{))")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_DEFAULTED = re.compile(r"([A-Za-z_][A-Za-z0-9_]*):-(.*)\Z", re.S)


class ExpansionError(ValueError):
    def __init__(self, message: str, variable: str | None = None) -> None:
        super().__init__(message)
        self.variable = variable


def expand(value: str, environ: Mapping[str, str]) -> str:
    """Expand one string. Raises `ExpansionError` naming the variable (never a value)."""

    def sub(m: re.Match[str]) -> str:
        dollar, braced, bare, unclosed = m.groups()
        if dollar:
            return "$"
        if unclosed:
            raise ExpansionError("`${` is not closed; write `$$` for a literal `$`")
        name = braced if braced is not None else bare
        assert name is not None
        if braced is not None:
            if name.startswith("secret:"):
                raise ExpansionError("`${secret:...}` references are not supported; put the value in "
                                     "the file (it is kept 0600) or in an environment variable")
            defaulted = _DEFAULTED.match(name)
            if defaulted:
                got = environ.get(defaulted.group(1)) if not isinstance(environ, _AnyEnv) else ""
                return got if got else defaulted.group(2)
            if not _NAME.match(name):
                raise ExpansionError(f"`${{{name}}}` is not a valid variable name")
        if name not in environ:
            raise ExpansionError(f"environment variable `{name}` is not set", variable=name)
        return environ[name]

    return _TOKEN.sub(sub, value)


def check_syntax(value: str) -> None:
    """Raise `ExpansionError` for malformed references, whatever the environment holds."""
    expand(value, _AnyEnv())


class _AnyEnv(dict[str, str]):
    def __contains__(self, key: object) -> bool:
        return True

    def __getitem__(self, key: str) -> str:
        return ""
