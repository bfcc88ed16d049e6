"""The server definition: one object, the same field names in an atom and in agents.json.

`validate(raw, name=..., source=..., environ=...)` turns the raw mapping read from a file
into a `ServerSpec` (variables expanded) or raises `ConfigError` naming the file, the
server and the field. docs/atoms.md is the reference for every field.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from monad_cli.config.fields import (
    FieldContext,
    boolean,
    check_headers,
    expand_field,
    str_list,
    str_map,
    tool_filters,
)
from monad_cli.config.oauth import check_oauth
from monad_cli.config.settings import ServersSection
from monad_cli.config.start import START_MODES, parse_duration
from monad_cli.config.urls import check_url
from monad_cli.core.errors import ConfigError
from monad_cli.core.messages import did_you_mean

NAME_RE = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")
_ENV_NAME = re.compile(r"[^=\s\x00]+")
AUTH_MODES = ("none", "bearer", "headers", "oauth")
# Tables under `auth` that monad writes (monad_cli/auth/storage.py): state, not configuration,
# so they are left out of the connection fingerprint (a refresh must not reconnect).
OAUTH_STATE_KEYS = ("tokens", "grant", "registration", "serverMetadata", "resourceMetadata")
DEFAULT_TIMEOUT_S = 10.0
# The largest single message accepted from a server (a stdio line, an SSE event): over the
# TypeScript SDK's 10 MB, so what other clients take, monad takes (docs/atoms.md).
DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024
MIN_MAX_MESSAGE_BYTES = 64 * 1024
MAX_MAX_MESSAGE_BYTES = 1024 * 1024 * 1024

COMMON_FIELDS = {"schema", "name", "transport", "enabled", "required", "timeout", "requestTimeoutMs",
                 "maxMessageBytes", "deferred", "trust", "condition", "description", "tools", "registry",
                 "start", "idleStop"}
STDIO_FIELDS = {"command", "args", "env", "cwd", "sandbox", "sandboxWritable"}
HTTP_FIELDS = {"url", "headers", "auth"}
ALL_FIELDS = COMMON_FIELDS | STDIO_FIELDS | HTTP_FIELDS
TRUST_FIELDS = {"autoApproveTools", "pinnedToolHash", "hostEscape", "pinOnFirstUse"}
# Where a server installed by name came from (docs/registry.md): read by `outdated` and
# `upgrade`, never by the session (so it is not part of the connection fingerprint).
REGISTRY_FIELDS = {"name", "version", "package", "registry", "bundle", "asked", "values", "secrets"}
# `type` is what claude/cursor-style configs call the transport; accepted on read only.
_TRANSPORT_ALIASES = {"stdio": "stdio", "http": "http", "streamable-http": "http",
                      "streamableHttp": "http", "streamable_http": "http"}


@dataclass(frozen=True)
class TrustSpec:
    """The `trust` table, validated (docs/atoms.md "trust", docs/tools.md).

    `auto_approve_tools`: exposed names (`server__tool`) the approval gate lets through;
    `pinned_tool_hash`: `[sha256:]<64 hex>` the whole tool set must hash to, or None;
    `host_escape`: the server can act outside the host, so its tools are approved once or
    for a session, never always; `pin_on_first_use`: with no pin yet, the supervisor writes
    the first tool set it sees as the pin (servers installed by name, docs/registry.md).
    `table` is the table as written (hashed for the session).
    """

    auto_approve_tools: tuple[str, ...] = ()
    pinned_tool_hash: str | None = None
    host_escape: bool = False
    pin_on_first_use: bool = False
    table: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AuthSpec:
    """The `auth` table of an http server, validated and expanded (docs/auth.md).

    `mode`: none | bearer | headers | oauth. `token`: the bearer token (RFC 6750 §2.1) in
    bearer mode; `headers`: the extra headers in headers mode. For oauth: `client_id` /
    `client_secret` of a pre-registered client (RFC 6749 §2.2, §2.3.1), `scopes`, `flow`
    (loopback, RFC 8252; device, RFC 8628; client_credentials, RFC 6749 §4.4) and
    `client_metadata_url` (a client ID metadata document). For client_credentials also
    `private_key` (PEM, private_key_jwt, RFC 7523 §2.2), its `signing_algorithm` (None: the
    key's own) and `issuer` (the one authorization server the credentials may go to; None:
    the first discovered). Secrets are expanded (`${VAR}`). Fields another mode would use
    are read as unset. `table` is the whole table (expanded, stored OAuth state included):
    what redaction walks.
    """

    mode: str = "none"
    token: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    client_id: str | None = None
    client_secret: str | None = None
    scopes: tuple[str, ...] = ()
    flow: str = "loopback"
    client_metadata_url: str | None = None
    private_key: str | None = None
    signing_algorithm: str | None = None
    issuer: str | None = None
    table: Mapping[str, Any] = field(default_factory=dict)

    @property
    def holds_tokens(self) -> bool:
        """Stored OAuth tokens sit in the definition file (so it must stay 0600)."""
        return isinstance(self.table.get("tokens"), Mapping)

    def connection_fields(self) -> dict[str, Any]:
        """The table without the stored OAuth state (tokens, expiry, metadata), which
        changes on every refresh but is not part of how to connect."""
        return {k: v for k, v in self.table.items() if k not in OAUTH_STATE_KEYS}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _auth_spec(table: Mapping[str, Any]) -> AuthSpec:
    mode = table.get("mode", "none")
    scopes = table.get("scopes", [])
    headers = table.get("headers") if mode == "headers" else None
    return AuthSpec(mode=mode, token=_text(table.get("token")) if mode == "bearer" else None,
                    headers=dict(headers) if isinstance(headers, Mapping) else {},
                    client_id=_text(table.get("clientId")), client_secret=_text(table.get("clientSecret")),
                    scopes=tuple(x for x in scopes if isinstance(x, str)) if isinstance(scopes, list) else (),
                    flow=_text(table.get("flow")) or "loopback",
                    client_metadata_url=_text(table.get("clientMetadataUrl")),
                    private_key=_text(table.get("privateKey")), signing_algorithm=_text(table.get("signingAlgorithm")),
                    issuer=_text(table.get("issuer")), table=table)


@dataclass
class ServerSpec:
    """A validated, expanded server definition. `raw` is the definition as written."""

    name: str
    transport: str
    source: str
    raw: dict[str, Any]
    enabled: bool = True
    required: bool = False
    timeout: float = DEFAULT_TIMEOUT_S
    request_timeout_ms: int | None = None
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    deferred: bool = False
    trust: TrustSpec = field(default_factory=TrustSpec)
    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    sandbox: bool = False
    sandbox_writable: list[str] = field(default_factory=list)
    condition: str | None = None
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    auth: AuthSpec = field(default_factory=AuthSpec)
    tools: dict[str, list[str]] = field(default_factory=dict)
    # Every variable a `$VAR` reference expanded, and where its value came from
    # (`env-file` or `environment`, config/envfile.py): names and sources, never values.
    variables: dict[str, str] = field(default_factory=dict)
    # `start` / `idleStop` as written (None: the default of settings.toml, `ServersSection`).
    start: str | None = None
    idle_stop: float | None = None

    def start_mode(self, defaults: ServersSection) -> str:
        """`always` or `on-demand`: its own `start`, else the settings' default."""
        return self.start or defaults.start

    def idle_stop_s(self, defaults: ServersSection) -> float:
        """Seconds an on-demand server stays up without use: `idleStop`, else the default."""
        return self.idle_stop if self.idle_stop is not None else defaults.idle_stop_s

    def connection_fingerprint(self) -> str:
        """Stable digest of everything that affects the live session (not `source`, `enabled`,
        `trust`, `deferred`, `condition`, `tools`, `variables` — the sources of the values,
        whose expanded values are in the fields themselves). Kept in memory only (reconcile, `Learned`),
        never stored: approvals are keyed to `definition_hash`.

        Computed once per spec: nothing changes a spec after `validate`, and the supervisor's
        reloads reuse the specs of unchanged atoms (loader.AtomCache)."""
        known: str | None = self.__dict__.get("_fingerprint")
        if known is not None:
            return known
        # `deferred`, `condition` and `tools` only shape the gateway's view, and `trust` only
        # what the approval gate and the pin decide, read at each call and re-checked when the
        # supervisor swaps the spec in (supervisor.reconcile): changing them keeps the session,
        # so `monad mcp trust` never costs a server its state (a browser's open page).
        body = {k: v for k, v in self.__dict__.items()
                if k not in ("source", "raw", "enabled", "deferred", "condition", "tools", "trust", "variables",
                             "_fingerprint")}
        # The table as written (the same digest as when it was a plain dict); writing
        # refreshed OAuth state must not reconnect the server.
        body["auth"] = self.auth.connection_fields()
        if self.max_message_bytes == DEFAULT_MAX_MESSAGE_BYTES:
            del body["max_message_bytes"]  # unset: the digest stays what it was before the field
        for key in ("start", "idle_stop"):
            if body[key] is None:
                del body[key]
        import hashlib  # lazy: the CLI's fast path validates but never hashes
        import json

        known = hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()
        self.__dict__["_fingerprint"] = known
        return known

    def definition_hash(self) -> str:
        """sha256 over command, args, env names, cwd and url: approvals are keyed to it, so
        an edited command asks again (docs/tools.md "Approvals")."""
        body = {"command": self.command, "args": self.args, "env": sorted(self.env), "cwd": self.cwd,
                "url": self.url}
        import hashlib
        import json

        return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def check_name(name: str) -> str | None:
    """None when `name` is a valid server name, else why not."""
    if not NAME_RE.match(name):
        if len(name) > 64:
            return f"is {len(name)} characters long; at most 64 are allowed"
        if not name:
            return "is empty"
        return "may only contain letters A-Z a-z, digits, `_` and `-`"
    if name.startswith("-"):
        return "must not start with `-` (it would read as an option)"
    if "__" in name:
        return "must not contain `__` (it separates server and tool in tool names)"
    return None


def _check_registry(ctx: FieldContext, table: Any) -> None:
    """The `registry` table: `name` and `version` (strings, required), `package`, `registry`
    (the registry's base URL) and `bundle` (an unpacked bundle's folder), all strings; what
    the install was given (registry/install.py `record`): `asked` (a list of strings),
    `values` and `secrets` (tables of strings)."""
    if table is None:
        return
    if not isinstance(table, Mapping):
        raise ctx.error("registry", "must be a table such as {name = \"io.github.owner/server\", version = \"1.2.3\"}")
    for key, value in table.items():
        if key not in REGISTRY_FIELDS:
            raise ctx.error(f"registry.{key}", f"unknown field{did_you_mean(key, REGISTRY_FIELDS)}")
        if key == "asked":
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ctx.error(f"registry.{key}", "must be a list of strings")
        elif key in ("values", "secrets"):
            if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
                raise ctx.error(f"registry.{key}", "must be a table of strings")
        elif not isinstance(value, str) or not value:
            raise ctx.error(f"registry.{key}", "must be a non-empty string")
    for key in ("name", "version"):
        if key not in table:
            raise ctx.error(f"registry.{key}", f"the `registry` table needs `{key}`")


def validate(raw: Mapping[str, Any], *, name: str, source: str,
             environ: Mapping[str, str] | None) -> ServerSpec:
    """Validate one definition. `environ=None` checks `$VAR` syntax without expanding.

    Raises `ConfigError` (one line: file, server, field, what to do).
    """
    ctx = FieldContext(source, name)
    recorder = None if environ is None else _Recorder(environ)
    spec = _validate(raw, ctx, name=name, source=source, environ=recorder)
    if recorder is not None:
        from monad_cli.config.envfile import source_of

        assert environ is not None
        spec.variables = {n: found for n in recorder.seen if (found := source_of(environ, n))}
    return spec


MAX_FIELD_ERRORS = 32


def field_errors(raw: Mapping[str, Any], *, name: str, source: str) -> list[ConfigError]:
    """Every field problem of the definition `raw` (as `validate` with `environ=None` finds
    them, first the one it raises): [] when it validates. Each problem's field is set aside
    (`_set_aside`) and the rest validated again, so a form can show each next to its field at
    once; inside a table (`trust`, `tools`, `auth`, `env`) only the one entry, so each of its
    entries' problems is found too; "needs either `command` or `url`" (no field) is followed by
    a stand-in `command`. A problem of a field set aside already (a consequence of setting one
    aside: a bearer `auth` without its `token`) ends the search.
    A bad `name` is not one of them (`check_name`): the rest is checked as if it were good, its
    messages naming it as given."""
    ctx = FieldContext(source, name)
    stand_in = name if check_name(name) is None else "server"
    current: dict[str, Any] = dict(raw) if isinstance(raw, Mapping) else {}
    found: list[ConfigError] = []
    while len(found) < MAX_FIELD_ERRORS:
        try:
            _validate(current if found else raw, ctx, name=stand_in, source=source, environ=None)
            break
        except ConfigError as e:
            again = bool(found) and e.field in {f.field for f in found}
            if again and e.field in _STAND_INS and current.get(e.field) == _STAND_INS[e.field]:
                del current[e.field]  # its stand-in is refused too: this transport takes no such field
                continue
            if again:
                break
            found.append(e)
            if not _set_aside(current, e.field or "command"):
                break
    return found


def _set_aside(raw: dict[str, Any], fld: str) -> bool:
    """Take field `fld` (`env.K`, `headers.K`, `args[2]`, `timeout`, `trust.x`, `auth.headers.K`)
    out of `raw`: the one entry of a table (the table's other entries are still checked), an
    argument emptied (the others keep their places), a good stand-in for the `command` or
    `url` a server needs, else its top-level field. False when there was nothing to take."""
    top = re.split(r"[.\[]", fld, maxsplit=1)[0]
    if fld in _STAND_INS:
        raw[fld] = _STAND_INS[fld]
        return True
    if fld.startswith(f"{top}.") and isinstance(raw.get(top), Mapping):
        table = dict(raw[top])
        if _drop_entry(table, fld[len(top) + 1:]):
            raw[top] = table
            return True
    index = re.fullmatch(r"args\[(\d+)\]", fld)
    if index and isinstance(raw.get("args"), list) and int(index[1]) < len(raw["args"]):
        raw["args"] = [("" if i == int(index[1]) else a) for i, a in enumerate(raw["args"])]
        return True
    key = "type" if top == "transport" and top not in raw else top  # `type`: another name of `transport`
    return raw.pop(key, _ABSENT) is not _ABSENT


def _drop_entry(table: dict[str, Any], path: str) -> bool:
    """Take the entry `path` names out of `table`: a key as it is (`A.B` in `env`), one inside
    a nested table (`headers.K` in `auth`), or the whole entry a list index is in
    (`enabled[0]` in `tools`). False when `path` names none."""
    if path in table:
        del table[path]
        return True
    for key, value in table.items():
        if path.startswith(f"{key}.") and isinstance(value, Mapping):
            inner = dict(value)
            if _drop_entry(inner, path[len(key) + 1:]):
                table[key] = inner
                return True
        if path.startswith(f"{key}["):
            del table[key]
            return True
    return False


_ABSENT = object()
_STAND_INS = {"command": "command", "url": "https://server.invalid/mcp"}  # RFC 2606: never a real host


def fields_under_env(raw: Mapping[str, Any], source: str) -> list[str]:
    """One warning per `env` entry that looks like a top-level field written after the
    `[env]` table (`timeout = 60` appended to an atom that ends with one): a number named
    like a field (`timeout`, `requestTimeoutMs`, …), which TOML puts in the table above it,
    so it silently becomes an environment variable of the server. [] when there is none."""
    env = raw.get("env")
    if not isinstance(env, Mapping):
        return []
    return [f"`env.{key} = {value!r}` is an environment variable of the server, not its `{key}`: "
            f"a line after the `[env]` table of `{source}` belongs to it; move it above the first `[table]`"
            for key, value in env.items()
            if key in ALL_FIELDS and isinstance(value, int | float) and not isinstance(value, bool)]


class _Recorder(Mapping[str, str]):
    """The environment as `expand` reads it, noting every name looked up (in order)."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self.environ = environ
        self.seen: dict[str, None] = {}

    def __contains__(self, name: object) -> bool:
        if isinstance(name, str):
            self.seen[name] = None
        return name in self.environ

    def __getitem__(self, name: str) -> str:
        self.seen[name] = None
        return self.environ[name]

    def __iter__(self) -> Any:
        return iter(self.environ)

    def __len__(self) -> int:
        return len(self.environ)



def _validate(raw: Mapping[str, Any], ctx: FieldContext, *, name: str, source: str,
              environ: Mapping[str, str] | None) -> ServerSpec:
    problem = check_name(name)
    if problem:
        # An atom has no `name` field: its file name is the name, so that is what to change.
        rename = "; rename the file" if source.startswith("atoms/") else ""
        raise ctx.error("name", f"the name {problem}{rename}")
    if not isinstance(raw, Mapping):
        raise ctx.error(None, "a server definition must be a table/object")
    for key in raw:
        if key not in ALL_FIELDS and key != "type":
            raise ctx.error(key, f"unknown field{did_you_mean(key, ALL_FIELDS)}")
    if "schema" in raw and raw["schema"] != 1:
        raise ctx.error("schema", f"schema {raw['schema']!r} is not supported by this monad (expected 1)")

    transport = raw.get("transport", raw.get("type"))
    if transport is None:
        transport = "http" if "url" in raw else "stdio" if "command" in raw else None
        if transport is None:
            raise ctx.error(None, "needs either `command` (stdio server) or `url` (http server)")
    if transport not in _TRANSPORT_ALIASES:
        raise ctx.error("transport", f"must be one of stdio, http; got {transport!r}")
    transport = _TRANSPORT_ALIASES[transport]

    timeout = raw.get("timeout", DEFAULT_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= 600:
        raise ctx.error("timeout", f"must be a number of seconds more than 0 and at most 600, got {timeout!r}")
    rto = raw.get("requestTimeoutMs")
    if rto is not None and (isinstance(rto, bool) or not isinstance(rto, int) or rto <= 0):
        raise ctx.error("requestTimeoutMs", f"must be a positive whole number of milliseconds, got {rto!r}")
    limit = raw.get("maxMessageBytes", DEFAULT_MAX_MESSAGE_BYTES)
    if isinstance(limit, bool) or not isinstance(limit, int) \
            or not MIN_MAX_MESSAGE_BYTES <= limit <= MAX_MAX_MESSAGE_BYTES:
        raise ctx.error("maxMessageBytes", f"must be a whole number of bytes from {MIN_MAX_MESSAGE_BYTES} to "
                                           f"{MAX_MAX_MESSAGE_BYTES} (16 MiB is 16777216), got {limit!r}")

    trust = raw.get("trust", {})
    if not isinstance(trust, Mapping):
        raise ctx.error("trust", "must be a table")
    for key in trust:
        if key not in TRUST_FIELDS:
            raise ctx.error(f"trust.{key}", f"unknown field{did_you_mean(key, TRUST_FIELDS)}")
    auto = trust.get("autoApproveTools", [])
    if not isinstance(auto, list) or not all(isinstance(x, str) for x in auto):
        raise ctx.error("trust.autoApproveTools", "must be a list of tool names")
    pin = trust.get("pinnedToolHash")
    if pin is not None and not (isinstance(pin, str) and re.fullmatch(r"(sha256:)?[0-9a-f]{64}", pin)):
        raise ctx.error("trust.pinnedToolHash", "must be a sha256 hex digest (see `monad mcp pin`)")
    for key in ("hostEscape", "pinOnFirstUse"):
        if not isinstance(trust.get(key, False), bool):
            raise ctx.error(f"trust.{key}", "must be true or false")
    _check_registry(ctx, raw.get("registry"))
    start = raw.get("start")
    if start is not None and start not in START_MODES:
        raise ctx.error("start", f"must be one of {', '.join(START_MODES)}, got {start!r}")
    idle_raw = raw.get("idleStop")
    idle_stop = parse_duration(idle_raw) if idle_raw is not None else None
    if idle_raw is not None and idle_stop is None:
        raise ctx.error("idleStop", f"must be a duration such as \"10m\" or \"30s\" (at most a week), "
                                    f"got {idle_raw!r}")
    condition = raw.get("condition")
    if condition is not None:
        if not isinstance(condition, str):
            raise ctx.error("condition", "must be a string such as \"env_set:CI\"")
        from monad_cli.config.conditions import ConditionError
        from monad_cli.config.conditions import parse as parse_condition

        try:
            parse_condition(condition)
        except ConditionError as e:
            raise ctx.error("condition", f"{e}; see docs/filtering.md \"Conditions\"") from None

    spec = ServerSpec(
        name=name, transport=transport, source=source, raw=dict(raw),
        enabled=boolean(ctx, raw, "enabled", True), required=boolean(ctx, raw, "required", False),
        timeout=float(timeout), request_timeout_ms=rto, max_message_bytes=limit,
        deferred=boolean(ctx, raw, "deferred", False),
        trust=TrustSpec(auto_approve_tools=tuple(auto), pinned_tool_hash=pin,
                        host_escape=trust.get("hostEscape", False),
                        pin_on_first_use=trust.get("pinOnFirstUse", False), table=dict(trust)),
        condition=condition, tools=tool_filters(ctx, raw.get("tools")), start=start, idle_stop=idle_stop,
    )

    if transport == "stdio":
        for key in HTTP_FIELDS & set(raw):
            raise ctx.error(key, "only http servers take this field (this server's transport is stdio)")
        command = raw.get("command")
        if command is not None and not isinstance(command, str):
            raise ctx.error("command", f"must be a string (the executable), got {type(command).__name__}")
        if not isinstance(command, str) or not command.strip():
            raise ctx.error("command", "a stdio server needs a non-empty `command`")
        spec.command = expand_field(ctx, "command", command, environ)
        spec.args = [expand_field(ctx, f"args[{i}]", a, environ) for i, a in enumerate(str_list(ctx, raw, "args"))]
        env_map = str_map(ctx, raw, "env")
        for k in env_map:
            if not _ENV_NAME.fullmatch(k):
                raise ctx.error(f"env.{k}", "not a valid environment variable name (no `=` or spaces)")
        spec.env = {k: expand_field(ctx, f"env.{k}", v, environ) for k, v in env_map.items()}
        cwd = raw.get("cwd")
        if cwd is not None:
            if not isinstance(cwd, str) or not cwd:
                raise ctx.error("cwd", "must be a directory path")
            spec.cwd = expand_field(ctx, "cwd", cwd, environ)
            if not spec.cwd.startswith(("/", "$")):
                raise ctx.error("cwd", "must be an absolute path (the supervisor runs elsewhere)")
        spec.sandbox = boolean(ctx, raw, "sandbox", False)
        for i, p in enumerate(str_list(ctx, raw, "sandboxWritable")):
            fld = f"sandboxWritable[{i}]"
            path = expand_field(ctx, fld, p, environ)
            # Checked once expanded: `$HOME/work` is fine, a relative path is not.
            if (environ is not None or "$" not in p) and not path.startswith("/"):
                raise ctx.error(fld, f"must be an absolute path (`$HOME/...` works), got {p!r}")
            spec.sandbox_writable.append(path)
    else:
        for key in ("sandbox", "sandboxWritable"):
            if raw.get(key):
                raise ctx.error(key, "http servers cannot be confined locally; remove `sandbox`")
        for key in ("command", "args", "env", "cwd"):
            if key in raw:
                raise ctx.error(key, "only stdio servers take this field (this server's transport is http)")
        url = raw.get("url")
        if not isinstance(url, str) or not url:
            raise ctx.error("url", "an http server needs a `url`")
        spec.url = expand_field(ctx, "url", url, environ)
        problem = check_url(spec.url) if environ is not None or "$" not in url else None
        if problem:
            raise ctx.error("url", problem)
        spec.headers = {k: expand_field(ctx, f"headers.{k}", v, environ)
                        for k, v in str_map(ctx, raw, "headers").items()}
        check_headers(ctx, "headers", spec.headers)
        auth = raw.get("auth", {})
        if not isinstance(auth, Mapping):
            raise ctx.error("auth", "must be a table")
        mode = auth.get("mode", "none")
        if mode not in AUTH_MODES:
            raise ctx.error("auth.mode", f"must be one of {', '.join(AUTH_MODES)}; got {mode!r}")
        if mode == "bearer" and (not isinstance(auth.get("token"), str) or not auth["token"].strip()):
            raise ctx.error("auth.token", "bearer mode needs a non-empty `token`")
        if mode == "bearer" and any(c in auth["token"] for c in "\r\n\x00 "):
            raise ctx.error("auth.token", "a token must not contain spaces or line breaks")
        table = dict(auth)
        if mode == "oauth":
            table.update(check_oauth(ctx, auth, environ))
        if mode == "bearer":
            table["token"] = expand_field(ctx, "auth.token", auth["token"], environ)
        if mode == "headers":
            hdrs = str_map(ctx, auth, "headers")
            table["headers"] = {k: expand_field(ctx, f"auth.headers.{k}", v, environ) for k, v in hdrs.items()}
        spec.auth = _auth_spec(table)
    return spec
