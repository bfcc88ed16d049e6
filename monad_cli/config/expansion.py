"""`$VAR` / `${VAR}` expansion in definition strings (docs/atoms.md "Variables").

- `$NAME` and `${NAME}` take the value from the environment given (the supervisor passes
  MONAD_HOME/env over its own environment, config/envfile.py); an unset variable is an
  error naming both places and `monad env set` (a set-but-empty one expands to "");
- `${NAME:-default}` takes the default when NAME is unset or empty, as POSIX shells do
  (and Claude Code's `.mcp.json`); the default is literal text (no `}` in it);
- `$$` is a literal `$`; a `$` not followed by a name or `{` stays as it is;
- `${secret:...}` is rejected: monad keeps secrets in 0600 files, not a secret store.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from monad_cli.core.order import name_key

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
            from monad_cli.config.envfile import unset_hint

            raise ExpansionError(unset_hint(name), variable=name)
        return environ[name]

    return _TOKEN.sub(sub, value)


def references(value: str) -> list[str]:
    """The variable names `value` references, in order (malformed references are skipped)."""
    out: list[str] = []
    for m in _TOKEN.finditer(value):
        _, braced, bare, _ = m.groups()
        name = braced if braced is not None else bare
        defaulted = _DEFAULTED.match(name) if braced is not None else None
        if defaulted:
            name = defaulted.group(1)
        if name and _NAME.match(name) and name not in out:
            out.append(name)
    return out


# The fields `$VAR` expands in (docs/atoms.md "Variables"); `auth`'s stored OAuth state is not.
EXPANDED_FIELDS = ("command", "args", "env", "cwd", "sandboxWritable", "url", "headers", "auth")
_STATE_KEYS = {"tokens", "grant", "registration", "serverMetadata", "resourceMetadata"}


def definition_references(raw: Mapping[str, object]) -> list[str]:
    """Every variable name a raw definition (atom/agents.json shape) references, in order."""
    out: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, str):
            out.extend(n for n in references(value) if n not in out)
        elif isinstance(value, Mapping):
            for k, v in value.items():
                if k not in _STATE_KEYS:
                    walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)

    if isinstance(raw, Mapping):
        for key in EXPANDED_FIELDS:
            walk(raw.get(key))
    return out


def variable_users(raw_definitions: Mapping[str, Mapping[str, object]]) -> dict[str, list[str]]:
    """Variable name → the servers whose raw definitions (atom/agents.json shape, as written)
    reference it (`definition_references`), servers in `name_key` order: what `monad env
    list` and `GET /v1/env` show as `servers`."""
    out: dict[str, list[str]] = {}
    for server, raw in sorted(raw_definitions.items(), key=lambda kv: name_key(kv[0])):
        for name in definition_references(raw):
            out.setdefault(name, []).append(server)
    return out


def check_syntax(value: str) -> None:
    """Raise `ExpansionError` for malformed references, whatever the environment holds."""
    expand(value, _AnyEnv())


class _AnyEnv(dict[str, str]):
    def __contains__(self, key: object) -> bool:
        return True

    def __getitem__(self, key: str) -> str:
        return ""
