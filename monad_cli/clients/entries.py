"""What the format modules share: a server found in a client's file (`Candidate`), the
reference rules, and monad's own definition taken apart for writing other formats.

A `Candidate` carries a monad definition in the atom's shape (docs/atoms.md) or the reason
it cannot be imported; `notes` name what a client's entry had that monad leaves out.
References stay as written: `${VAR}`, `$VAR` and `${VAR:-default}` (Claude Code's, POSIX's)
mean the same in monad (docs/atoms.md "Variables"); only editors' own variables are rewritten.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The fields by which a client's entry says what runs or where it connects, in every
#: format's spelling. An entry whose import left one of them out (both a `command` and a
#: `url`: monad keeps one) is not the server monad holds, however alike the rest.
TRANSPORT_FIELDS = frozenset({
    "command", "cmd", "args", "env", "envs", "environment", "env_vars", "env_keys", "cwd", "envFile", "sandbox",
    "url", "uri", "httpUrl", "serverUrl", "headers", "http_headers", "env_http_headers", "bearer_token_env_var"})


@dataclass
class Candidate:
    name: str
    where: str  # where in the file, e.g. `mcpServers.github` or `github.yaml`
    definition: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    problem: str | None = None
    dropped: list[str] = field(default_factory=list)  # the entry's fields the definition does not carry

    @property
    def transport_dropped(self) -> list[str]:
        """The `dropped` fields that say what runs or where (`TRANSPORT_FIELDS`), in the entry's order."""
        return [k for k in self.dropped if k in TRANSPORT_FIELDS]


class Unimportable(Exception):
    """A server whose entry monad cannot carry over faithfully; the message says why."""


# VS Code's (and Cursor's) own variables: `${env:NAME}`, `${userHome}`, `${input:ID}`, ...
_EDITOR_VAR = re.compile(r"\$\{([^}]*)\}")


def input_variable(input_id: str) -> str:
    """The environment variable a VS Code input `${input:ID}` becomes: ID upper-cased, every
    other character `_` (`perplexity-key` → `PERPLEXITY_KEY`)."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", input_id).upper()
    return name if re.match(r"[A-Za-z_]", name) else "_" + name


def editor_references(value: str, fld: str) -> str:
    """VS Code/Cursor variables as monad references: `${env:X}` → `${X}`, `${userHome}` →
    `${HOME}`, `${input:ID}` → `${ID}` (`input_variable`: monad cannot prompt while a server
    starts, so the value comes from `monad env set` or the supervisor's environment).

    Raises `Unimportable` for the editor's workspace variables (`${workspaceFolder}`, ...),
    which mean nothing outside the editor.
    """

    def sub(m: re.Match[str]) -> str:
        inner = m.group(1)
        if inner.startswith("env:"):
            return "${" + inner[4:] + "}"
        if inner == "userHome":
            return "${HOME}"
        if inner.startswith("input:"):
            return "${" + input_variable(inner[6:]) + "}"
        if ":" in inner or inner in _EDITOR_ONLY:
            raise Unimportable(f"field `{fld}` uses `${{{inner}}}`, which only the editor can fill in")
        return m.group(0)

    return _EDITOR_VAR.sub(sub, value)


_EDITOR_ONLY = {"workspaceFolder", "workspaceFolderBasename", "workspaceRoot", "file", "fileBasename",
                "fileBasenameNoExtension", "fileDirname", "fileExtname", "fileWorkspaceFolder", "relativeFile",
                "relativeFileDirname", "cwd", "execPath", "pathSeparator", "/", "lineNumber", "selectedText",
                "defaultBuildTask"}


def map_strings(defn: dict[str, Any], fn: Callable[[str, str], str]) -> dict[str, Any]:
    """Apply `fn(value, field)` to every string of a definition that references may sit in."""
    out = dict(defn)
    for key in ("command", "cwd", "url"):
        if isinstance(out.get(key), str):
            out[key] = fn(out[key], key)
    if isinstance(out.get("args"), list):
        out["args"] = [fn(a, f"args[{i}]") if isinstance(a, str) else a for i, a in enumerate(out["args"])]
    for key in ("env", "headers"):
        if isinstance(out.get(key), Mapping):
            out[key] = {k: fn(v, f"{key}.{k}") if isinstance(v, str) else v for k, v in out[key].items()}
    return out


def leave_out(cand: Candidate, entry: Mapping[str, Any], used: set[str]) -> None:
    """The entry's fields not in `used`, which the definition does not carry: kept in
    `cand.dropped` (`connect --replace` takes out only an entry monad holds whole) and named
    in the first of `cand.notes`."""
    cand.dropped = [k for k in entry if k not in used]
    if cand.dropped:
        cand.notes.insert(0, f"left out {', '.join(f'`{k}`' for k in cand.dropped)} (no monad equivalent)")


def allow_deny_tools(allow: Any, deny: Any, *, allow_field: str, deny_field: str, notes: list[str],
                     call_form: bool = False) -> dict[str, list[str]]:
    """A client's per-server allow list (`enabled_tools`, `includeTools`: "only these") and deny
    list (deny wins) as monad's `tools` field (docs/filtering.md "Tool filters"); None is
    absent; what the summary should say is appended to `notes`.

    The clients match the server's own tool names exactly. A name without a glob character
    (MCP tool names are `[A-Za-z0-9_.-]`) is a glob matching only itself; one with a glob
    character (`fetch_*`) is written escaped (`fetch_[*]`), and `notes` says so. An empty
    allow list lets no tool through, which monad spells `disabled = ["*"]` (its empty
    `enabled` means all). `call_form`: Gemini also accepts `name(...)` in `includeTools`.
    Raises `Unimportable` naming the field when a list is not a list of names."""
    from monad_cli.core.tool_filters import literal_glob

    out: dict[str, list[str]] = {}
    for key, value, fld in (("enabled", allow, allow_field), ("disabled", deny, deny_field)):
        if value is None:
            continue
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            raise Unimportable(f"field `{fld}` must be a list of tool names")
        names = [v.strip().split("(", 1)[0] if call_form and key == "enabled" else v.strip() for v in value]
        for n in names:
            if literal_glob(n) != n:
                notes.append(f"`{fld}` lists `{n}`, which the client matches as an exact name: imported as "
                             f"`{literal_glob(n)}` (write `{n}` in `tools.{key}` for a glob)")
        out[key] = list(dict.fromkeys(literal_glob(n) for n in names))
    if out.get("enabled") == []:
        del out["enabled"]
        out["disabled"] = ["*"]  # nothing else matters: no tool is let through
        notes.append(f"`{allow_field}` is empty (no tool is let through): imported as `tools.disabled = [\"*\"]`")
    return out


def tool_names(globs: list[str]) -> tuple[list[str], list[str]]:
    """Globs of a `tools` list as the exact names a client lists (`fetch_[*]` → `fetch_*`), and
    the globs no exact name can say (`fetch_*`), which an export leaves out."""
    names: list[str] = []
    lost: list[str] = []
    for g in globs:
        plain = re.sub(r"\[([*?\[])\]", "", g)
        (lost if any(c in plain for c in "*?[") else names).append(re.sub(r"\[([*?\[])\]", r"\1", g))
    return names, lost


# -- monad's definition, taken apart for other formats ------------------------------------------
def shown_definition(defn: Mapping[str, Any], *, reveal: bool, secrets: Iterable[str] = ()) -> dict[str, Any]:
    """`defn` with every secret value as `***` (references stay), or as written when `reveal`:
    an env value or a header is a secret by `secret_env`/`secret_header` (its name or shape,
    docs/atoms.md "Secrets") or when it equals one of `secrets` (`redact.held_secrets`: a
    secret monad holds elsewhere), the same rule `monad mcp get` shows by; an auth token unless it
    only names where its secret is (`is_reference`)."""
    if reveal:
        return dict(defn)
    from monad_cli.core.redact import MASK, is_reference, redact_args, redact_url, secret_values, shown_field

    known = secret_values(defn) | set(secrets)
    out = dict(defn)

    def mask(value: Any) -> Any:
        return value if isinstance(value, str) and is_reference(value) else MASK

    for key in ("env", "headers"):  # a `DEBUG=1` or an `Accept` is no secret: exported as written (as `get` shows)
        if isinstance(out.get(key), Mapping):
            out[key] = {k: shown_field(key, k, v, known) for k, v in out[key].items()}
    if isinstance(out.get("url"), str):
        out["url"] = redact_url(out["url"])
    if isinstance(out.get("args"), list):
        out["args"] = redact_args((str(a) for a in out["args"]), known)
    auth = out.get("auth")
    if isinstance(auth, Mapping):
        shown = {k: v for k, v in auth.items() if k in ("mode", "flow", "scopes", "clientId")}
        if "token" in auth:
            shown["token"] = mask(auth["token"])
        if isinstance(auth.get("headers"), Mapping):
            shown["headers"] = {k: mask(v) for k, v in auth["headers"].items()}
        out["auth"] = shown
    return out


OAUTH_LOST = "auth (OAuth: the client authorizes on its own)"


@dataclass
class Parts:
    """A monad definition as the fields every client format has, plus what is left over."""

    transport: str
    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    bearer: str | None = None  # the token of `auth.mode = "bearer"`
    oauth: bool = False
    rest: dict[str, Any] = field(default_factory=dict)  # enabled, timeout, tools, trust, ...

    def all_headers(self) -> dict[str, str]:
        """`headers` with the bearer token as an `Authorization` header, for formats without one."""
        return {**self.headers, **({"Authorization": f"Bearer {self.bearer}"} if self.bearer else {})}

    def fields(self, *, cwd: bool = True) -> dict[str, Any]:
        """The fields most formats spell as monad does, each only when set: `command`, `args`,
        `env` and (with `cwd`) `cwd` of a stdio server; `url` and `headers` (`all_headers`)
        of an http one."""
        if self.transport == "stdio":
            out = {"command": self.command, "args": self.args, "env": self.env, "cwd": self.cwd if cwd else None}
        else:
            out = {"url": self.url, "headers": self.all_headers()}
        return {k: v for k, v in out.items() if v or k in ("command", "url")}

    def lost(self) -> list[str]:
        """What a format without `cwd` and OAuth cannot hold of this server."""
        return (["cwd"] if self.cwd else []) + ([OAUTH_LOST] if self.oauth else [])


def split_definition(defn: Mapping[str, Any]) -> Parts:
    """Take a (validated) monad definition apart; `auth.mode = "headers"` joins `headers`."""
    transport = str(defn.get("transport") or defn.get("type") or ("http" if "url" in defn else "stdio"))
    transport = "http" if transport != "stdio" else "stdio"
    parts = Parts(transport=transport)
    for key, value in defn.items():
        if key in ("schema", "name", "transport", "type"):
            continue
        if key in ("command", "cwd", "url"):
            setattr(parts, key, str(value))
        elif key == "args":
            parts.args = [str(a) for a in value]
        elif key == "env":
            parts.env = {str(k): str(v) for k, v in value.items()}
        elif key == "headers":
            parts.headers.update({str(k): str(v) for k, v in value.items()})
        elif key == "auth":
            mode = value.get("mode", "none") if isinstance(value, Mapping) else "none"
            if mode == "bearer":
                parts.bearer = str(value.get("token", ""))
            elif mode == "headers" and isinstance(value.get("headers"), Mapping):
                parts.headers.update({str(k): str(v) for k, v in value["headers"].items()})
            elif mode == "oauth":
                parts.oauth = True
        else:
            parts.rest[key] = value
    return parts


def monad_command() -> list[str]:
    """The absolute command that runs this `monad`: its console script when there is one,
    else this Python with `-m monad_cli` (a checkout run without installing)."""
    import os
    import shutil

    argv0 = sys.argv[0] if sys.argv else ""
    if os.path.basename(argv0) == "monad" and os.access(argv0, os.X_OK):
        return [os.path.abspath(argv0)]
    beside = Path(sys.executable).parent / "monad"  # the venv (or pipx) this Python belongs to
    if os.access(beside, os.X_OK):
        return [str(beside)]
    if found := shutil.which("monad"):
        return [os.path.abspath(found)]
    return [sys.executable, "-P", "-m", "monad_cli"]  # -P: the installed code, whatever the cwd


def monad_entry(server: str | None = None, serve_args: Sequence[str] = ()) -> dict[str, Any]:
    """`command`, `args` and `env` of the server entry `connect` writes: the gateway over
    stdio (`monad mcp serve`, or with `server` that server's own entry, `monad mcp serve
    SERVER`; `serve_args` after it, such as `--tool-search`), pointed at this MONAD_HOME
    when it is not the default."""
    import os

    cmd = monad_command()
    entry: dict[str, Any] = {"command": cmd[0], "args": [*cmd[1:], "mcp", "serve", *([server] if server else []),
                                                         *serve_args]}
    if os.environ.get("MONAD_HOME"):
        from monad_cli.core.paths import paths

        entry["env"] = {"MONAD_HOME": str(paths().home)}
    return entry


def is_monad_gateway(definition: Mapping[str, Any] | None) -> bool:
    """Whether a client's server entry runs monad's own gateway (`monad mcp serve [NAME]`,
    as `connect` writes it, or by hand through `python -m monad_cli`). Importing it would
    serve every monad tool a second time under `monad__…` and ask two approvals per call."""
    import os

    if not definition or not isinstance(definition.get("command"), str):
        return False
    argv = [definition["command"], *[a for a in definition.get("args") or [] if isinstance(a, str)]]
    if os.path.basename(argv[0]) == "monad":
        rest = argv[1:]
    elif "-m" in argv and argv[argv.index("-m") + 1:argv.index("-m") + 2] in (["monad_cli"], ["monad"]):
        rest = argv[argv.index("-m") + 2:]
    else:
        return False
    rest = [a for a in rest if not a.startswith("-")]  # global flags such as `-v`
    return rest[:2] == ["mcp", "serve"]


__all__ = ["Candidate", "Parts", "Unimportable", "editor_references", "is_monad_gateway",
           "leave_out", "map_strings", "monad_entry", "shown_definition", "split_definition"]
