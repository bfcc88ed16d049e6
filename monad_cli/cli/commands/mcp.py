"""`monad mcp ...`: define servers (atoms) and read their live state.

Unlike the other modules, no `from __future__ import annotations`: typer evaluates a
command's string annotations on every run, four times over (`inspect.signature` and
`get_type_hints`, for building the command and its callback), ~5 ms for `add`'s twenty
parameters; evaluated once, as the functions are defined, they cost nothing measurable.
"""

import math
import os
import time
from typing import Annotated, Any

import typer

from monad_cli.cli import render
from monad_cli.cli.commands._common import JsonOpt, parse_pairs, quoted, running, supervisor
from monad_cli.cli.commands._status import local_rows, not_ready, show_status
from monad_cli.core.errors import ConfigError, ExitCode, InvalidInput, MonadError, NotFound
from monad_cli.core.messages import cut, server_not_defined
from monad_cli.core.paths import paths

app = typer.Typer(help="Add, inspect and control MCP servers.\n\nServer names are case-sensitive; a name no "
                       "server has is answered with the closest defined one.", no_args_is_help=True)

def _headers(items: list[str] | None) -> dict[str, str]:
    """`--header` values; an empty one is warned about: `--header "X-Api-Key: $KEY"` in double
    quotes is expanded by the shell, to nothing when the shell has no such variable."""
    headers = parse_pairs(items, ":", "--header")
    for name, value in headers.items():
        if value == "":
            render.warn(f"header `{name}` is empty (a `$VAR` in double quotes is expanded by your shell, to "
                        f"nothing when it is unset there); to have the supervisor expand it from MONAD_HOME/env, "
                        f"single-quote it: --header '{name}: $VAR'")
    return headers


def _secrets_on_command_line(defn: dict[str, Any]) -> list[str]:
    """Which of `add`'s options carried a secret value itself rather than a `$VAR` reference
    (core/redact.py decides what is secret): `--header X-Key`, `--env API_KEY`, `--url`,
    `--bearer-token`, `args[2]` after `--`. Names and places only, never values."""
    from monad_cli.core.redact import is_reference, redact_args, redact_url, secret_env, secret_header

    found = [f"--header {k}" for k, v in (defn.get("headers") or {}).items() if secret_header(k, v)]
    found += [f"--env {k}" for k, v in (defn.get("env") or {}).items() if secret_env(k, v)]
    if isinstance(defn.get("url"), str) and redact_url(defn["url"]) != defn["url"].split("#")[0]:
        found.append("--url")
    args = [str(a) for a in defn.get("args") or []]
    found += [f"args[{i}]" for i, (a, shown) in enumerate(zip(args, redact_args(args), strict=True))
              if a != shown and not is_reference(a.split("=", 1)[-1])]
    flags = {"token": "--bearer-token", "clientSecret": "--client-secret", "privateKey": "--private-key"}
    auth = defn.get("auth") or {}
    found += [flag for key, flag in flags.items() if auth.get(key) and not is_reference(auth[key])]
    return found


@app.command("add")
def add(
    name: Annotated[str, typer.Argument(help="Server name: letters, digits, `_`, `-`; at most 64. Or a registry "
                                        "name `io.github.owner/server\\[@VERSION]`, or a bundle file `./x.mcpb`.")],
    command: Annotated[list[str] | None, typer.Argument(
        help="For a stdio server, after `--`: the command and its arguments.", show_default=False)] = None,
    url: Annotated[str | None, typer.Option("--url", help="URL of a remote (streamable HTTP) server.")] = None,
    transport: Annotated[str | None, typer.Option("--transport", "-t",
                                                  help="stdio or http (default: http with --url, else stdio).")] = None,
    env: Annotated[list[str] | None, typer.Option("--env", "-e", help="K=V for the server's environment "
                                                  "(repeatable; `$VAR` expands in the supervisor).")] = None,
    header: Annotated[list[str] | None, typer.Option("--header", "-H",
                                                     help="'Name: value' HTTP header (repeatable; single quotes "
                                                          "keep a `$VAR` for the supervisor to expand).")] = None,
    bearer_token: Annotated[str | None, typer.Option("--bearer-token", help="Send `Authorization: Bearer "
                                                     "TOKEN` (stored 0600; prefer `$VAR`).")] = None,
    oauth: Annotated[bool, typer.Option("--oauth", help="Use MCP OAuth; then run `monad mcp authorize NAME`.")] = False,
    client_credentials: Annotated[bool, typer.Option("--client-credentials", help="OAuth client credentials "
                                                     "(CI, no person): --client-id and a secret or key.")] = False,
    client_id: Annotated[str | None, typer.Option("--client-id", help="OAuth client ID (pre-registered).")] = None,
    client_secret: Annotated[str | None, typer.Option(
        "--client-secret", help="OAuth client secret (client_secret_basic); prefer '${VAR}'.")] = None,
    private_key: Annotated[str | None, typer.Option(
        "--private-key", help="PEM private key for private_key_jwt (RFC 7523); prefer '${VAR}'.")] = None,
    scope: Annotated[list[str] | None, typer.Option("--scope", help="OAuth scope to ask for (repeatable).")] = None,
    cwd: Annotated[str | None, typer.Option("--cwd", help="Working directory of a stdio server (default: this "
                                            "directory when the command or an argument is a relative path "
                                            "here, else its own directory under MONAD_HOME).")] = None,
    timeout: Annotated[float | None, typer.Option("--timeout", help="Seconds to connect (default 10).")] = None,
    start: Annotated[str | None, typer.Option("--start", help="always (keep it running) or on-demand (start it "
                                              "on the first call, stop it when idle); default: settings.toml, "
                                              "else always.")] = None,
    idle_stop: Annotated[str | None, typer.Option("--idle-stop", help="How long an on-demand server stays up "
                                                  "without use, e.g. 10m, 30s (default 10m).")] = None,
    required: Annotated[bool, typer.Option("--required", help="`monad daemon start` fails if it fails.")] = False,
    disabled: Annotated[bool, typer.Option("--disabled", help="Write it disabled.")] = False,
    force: Annotated[bool, typer.Option("--force", "-f", help="Replace an existing atom of that name.")] = False,
    arg: Annotated[list[str] | None, typer.Option("--arg", help="NAME=VALUE for an argument or user_config "
                                                  "field of a registry server or bundle (repeatable).")] = None,
    package: Annotated[int | None, typer.Option("--package", min=0, help="Install the registry server's "
                                                "`packages[N]` (default: the first this machine can run).")] = None,
    remote: Annotated[int | None, typer.Option("--remote", min=0, help="Install the registry server's "
                                               "`remotes[N]` instead of a package.")] = None,
    as_name: Annotated[str | None, typer.Option("--name", help="The server's name for a registry server or "
                                                "bundle (default: the last part of its name).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Define a server: writes the atom `atoms/mcp/NAME.toml`; the supervisor connects it live.

    A registry name (`io.github.owner/server\\[@VERSION]`) or a bundle (`./x.mcpb`) instead of
    NAME installs it: the exact version is written, the variables it needs are asked for on
    a terminal (else given with --env, --header, --arg), and its tools are pinned when it
    first connects (docs/registry.md).

    Examples:

      monad mcp add time -- mcp-server-time --local-timezone UTC

      monad mcp add io.github.modelcontextprotocol/time

      monad mcp add memory --start on-demand -- npx -y @modelcontextprotocol/server-memory

      monad mcp add docs --url https://example.com/mcp -H 'X-Api-Key: $DOCS_KEY'

      monad mcp add ci --url https://example.com/mcp --client-credentials --client-id ci --client-secret '${CI_SECRET}'
    """
    if not command and url is None and transport is None:
        from monad_cli.cli.commands.registry import install, is_install_ref

        if is_install_ref(name):
            if bearer_token or oauth or client_credentials or client_id or client_secret or private_key or scope \
                    or cwd or timeout is not None or required or disabled:
                raise InvalidInput("installing by name or bundle takes --env, --header, --arg, --package, --remote, "
                                   "--name and --force; set the rest afterwards")
            install(name, as_name=as_name, env=parse_pairs(env, "=", "--env"),
                    header=_headers(header), arg=parse_pairs(arg, "=", "--arg"),
                    package=package, remote=remote, force=force, as_json=as_json)
            return
    if arg or package is not None or remote is not None or as_name:
        raise InvalidInput("--arg/--package/--remote/--name are for installing a registry server or a bundle "
                           "(`monad mcp add io.github.owner/server`)")
    from monad_cli.config.edits import add_server

    defn: dict[str, Any] = {}
    why: str | None = None
    kind = transport or ("http" if url is not None else "stdio")
    if kind == "sse":  # other tools' spelling for a legacy HTTP+SSE server
        raise InvalidInput("--transport sse: leave it out and give the SSE endpoint with --url; monad finds a "
                           "legacy HTTP+SSE server by itself (docs/supervisor.md)")
    if kind not in ("stdio", "http"):
        raise InvalidInput(f"--transport must be stdio or http, got {kind!r}")
    if url is None and command and command[0].lower().startswith(("http://", "https://")):
        # `claude mcp add [--transport http] NAME URL`: the URL in the command's place.
        from monad_cli.core.redact import redact_url

        raise InvalidInput(f"`{cut(redact_url(command[0]))}` is a URL: a remote server takes it with --url: "
                           f"`monad mcp add {name} --url URL`")
    defn["transport"] = kind
    if kind == "stdio":
        if url:
            raise InvalidInput("--url is for http servers; a stdio server takes `-- COMMAND [ARGS]`")
        # `add -- CMD [ARGS]`: the name was left out and CMD taken for it. No server name has a
        # slash and no command starts with `-` (a bare `add -- sh` cannot be told from `add sh`).
        if ("/" in name and not command) or (command and command[0].startswith("-")):
            raise InvalidInput(f"the server's name is missing: `monad mcp add NAME -- {name} ...`")
        if not command:
            raise InvalidInput(f"server `{name}` needs a command: `monad mcp add {name} -- COMMAND [ARGS]`")
        defn["command"] = command[0]
        if command[1:]:
            defn["args"] = list(command[1:])
        if cwd and "$" in cwd:
            defn["cwd"] = cwd  # expanded by the supervisor, which also checks it
        elif cwd:
            # Relative to where the person is, not to wherever the supervisor runs.
            defn["cwd"] = os.path.abspath(os.path.expanduser(cwd))
            if not os.path.isdir(defn["cwd"]):
                raise InvalidInput(f"--cwd `{cut(cwd)}` is not a directory"
                                   + (f" (`{cut(defn['cwd'])}`)" if defn["cwd"] != cwd else "")
                                   + "; create it first or pass an existing one")
            if defn["cwd"] != cwd:
                why = f"--cwd `{cut(cwd)}` made absolute" + (
                    "" if cwd.startswith("~") else ", relative to this directory")
        else:
            from monad_cli.config.workdir import cwd_to_record

            recorded = cwd_to_record(command[0], list(command[1:]), os.getcwd())
            if recorded:
                defn["cwd"], why = recorded
        if env:
            defn["env"] = parse_pairs(env, "=", "--env")
        if scope:  # claude's `--scope user`, or an OAuth scope where there is no OAuth: both lost
            raise InvalidInput("--scope is an OAuth scope, for http servers; for claude's `--scope user|project`, "
                               "monad has one scope, the atoms under MONAD_HOME, shared by every agent: drop it")
        if header or bearer_token or oauth or client_credentials or client_id or client_secret or private_key:
            raise InvalidInput("--header/--bearer-token/--oauth/--client-* are for http servers (use --url)")
    else:
        if command:
            raise InvalidInput(f"an http server takes its URL with --url (`monad mcp add {name} --url URL`), "
                               f"not a command")
        if not url:
            raise InvalidInput(f"server `{name}` needs --url for an http server")
        if env or cwd:
            raise InvalidInput("--env/--cwd are for stdio servers")
        defn["url"] = url
        if header:
            defn["headers"] = _headers(header)
        if sum((bearer_token is not None, oauth, client_credentials)) > 1:
            raise InvalidInput("choose one of --bearer-token, --oauth and --client-credentials")
        if bearer_token is not None:
            defn["auth"] = {"mode": "bearer", "token": bearer_token}
        elif oauth or client_credentials or client_id or client_secret or private_key or scope:
            defn["auth"] = _oauth_table(client_credentials=client_credentials, client_id=client_id,
                                        client_secret=client_secret, private_key=private_key, scopes=scope)
    if timeout is not None:
        defn["timeout"] = timeout
    if start is not None:
        from monad_cli.config.start import START_MODES

        if start not in START_MODES:
            raise InvalidInput(f"--start must be one of {', '.join(START_MODES)}, got {start!r}")
        defn["start"] = start
    if idle_stop is not None:
        from monad_cli.config.start import parse_duration

        if parse_duration(idle_stop) is None:
            raise InvalidInput(f"--idle-stop must be a duration such as 10m or 30s (at most a week), got {idle_stop!r}")
        if _start_of(defn)[0] != "on-demand":  # its own --start, else settings.toml's default
            raise InvalidInput("--idle-stop applies to `--start on-demand` servers (an always-on server never "
                               "stops when idle): add `--start on-demand`, or leave --idle-stop out")
        defn["idleStop"] = idle_stop
    if required:
        defn["required"] = True
    if disabled:
        defn["enabled"] = False
    path = add_server(paths(), name, defn, force=force)
    rel = f"atoms/mcp/{name}.toml"
    missing = _missing_command(defn)
    if missing:
        render.warn(f"server `{name}`: {missing}; it is added, and will fail to start until that is fixed")
    for variable in (v["name"] for v in _variable_sources(defn) if v["source"] is None):
        from monad_cli.config.envfile import unset_hint

        render.warn(f"server `{name}`: {unset_hint(variable)}; until then it fails to start"
                    f"{_literal_hint(defn, variable)}")
    given = _secrets_on_command_line(defn)
    if given:
        render.warn(f"server `{name}`: a secret was given on this command line ({', '.join(given)}), which every "
                    f"account on this machine could read in the process list while it ran, and your shell's "
                    f"history keeps; next time keep it in the env file (`monad env set NAME`) and give `$NAME`")
    if as_json:
        render.data_json({"name": name, "path": path, "source": rel, "cwd": defn.get("cwd")})
        return
    if why:
        render.info(f"it runs in `{defn['cwd']}` (recorded as `cwd`: {why})")
    if disabled:
        render.info(f"added server `{name}` ({rel}), disabled: nothing starts it until `monad mcp enable {name}`")
        return
    if _listening():
        how = ("starts it once now to learn its tools, then stops it until its first call"
               if defn.get("start") == "on-demand" else "connects it live")
        render.info(f"added server `{name}` ({rel}); the supervisor {how} — "
                    f"`monad mcp wait {name}` or `monad mcp status {name}`")
        return
    render.info(f"added server `{name}` ({rel}); the supervisor is not running — `monad daemon start` "
                f"connects it (`monad mcp wait {name}` also starts it and waits)")


def _oauth_table(*, client_credentials: bool, client_id: str | None, client_secret: str | None,
                  private_key: str | None, scopes: list[str] | None) -> dict[str, Any]:
    """The `auth` table `add` writes for `--oauth` / `--client-credentials` (docs/auth.md)."""
    auth: dict[str, Any] = {"mode": "oauth"}
    if client_credentials:
        if not client_id:
            raise InvalidInput("--client-credentials needs --client-id")
        if (client_secret is None) == (private_key is None):
            raise InvalidInput("--client-credentials needs one of --client-secret (client_secret_basic) and "
                               "--private-key (private_key_jwt)")
        auth["flow"] = "client_credentials"
    elif private_key is not None:
        raise InvalidInput("--private-key is for --client-credentials")
    for key, value in (("clientId", client_id), ("clientSecret", client_secret), ("privateKey", private_key)):
        if value is not None:
            auth[key] = value
    if scopes:
        auth["scopes"] = list(scopes)
    return auth


def _listening() -> bool:
    """Whether a supervisor accepts on the control socket: a bare connect, without the
    control client and its JSON (`add` stays light: tests/cli/test_cli_weight.py)."""
    import socket

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(1)
        try:
            probe.connect(str(paths().socket))
        except OSError:
            return False
    return True


def _missing_command(defn: dict[str, Any]) -> str | None:
    """Why a stdio definition's command will not be found, as far as this shell can tell
    (the supervisor resolves it the same way: PATH, or a path relative to `cwd`)."""
    import shutil

    command = defn.get("command")
    if not isinstance(command, str) or "$" in command:
        return None  # a ${VAR} is expanded by the supervisor, in its environment
    if os.sep in command:
        where = os.path.join(str(defn.get("cwd") or os.getcwd()), os.path.expanduser(command))
        return None if os.access(where, os.X_OK) else f"`{command}` is not an executable file"
    return None if shutil.which(command) else f"command `{command}` is not on PATH"


@app.command("list")
def list_(as_json: JsonOpt = False) -> None:
    """One row per server from the atoms and agents.json, by name regardless of case, with live
    state if the supervisor runs (this command never starts it)."""
    client = running()
    show_status(client.get("/v1/settings/mcp-servers/status") if client else {"servers": local_rows()}, as_json)


@app.command("status")
def status(
    name: Annotated[str | None, typer.Argument(help="One server: adds its tool names and stderr tail.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Live state of every server (or one): state, reason, tools, protocol version, source.

    Starts the supervisor in the background if it is not running (unless MONAD_NO_AUTOSTART=1).
    """
    client = supervisor()
    if name is None:
        show_status(client.get("/v1/settings/mcp-servers/status"), as_json)
        return
    row = client.get(f"/v1/settings/mcp-servers/{quoted(name)}/status")
    if as_json:
        render.data_json(row)
        return
    transport = row["transport"]
    if row.get("httpTransport"):  # streamable-http, or a legacy HTTP+SSE endpoint
        transport = f"{transport} ({row['httpTransport']})"
    # `config error` is the edit that failed while the last good definition runs: a row only
    # then (a definition that never loaded says so in `reason`, and `-` there read as "none").
    config_error = [("config error", row["configError"])] if row.get("configError") else []
    render.key_values([
        ("name", row["name"]), ("transport", transport), ("state", row["state"]),
        ("reason", row["reason"]), ("since", render.when(row.get("since"))), ("start", row.get("start")),
        *([("lists from", f"{render.when(row['listedAt'])} ({render.age(row['listedAt'])} ago)")]
          if row.get("listedAt") else []), ("source", row["source"]),
        ("protocol", row["protocolVersion"]), ("pid", row.get("pid")), ("attempt", row.get("attempt")),
        ("last attempt", row.get("lastAttemptReason")),
        *([("next attempt", render.when(row["nextAttemptAt"]))] if row.get("nextAttemptAt") else []),
        *config_error,
        ("variables", _variables_text(row.get("variables") or [])),
        *([("collisions", row["collisions"])] if row.get("collisions") else []),
        ("tools", "refused (its tool set does not match its pin; see the reason" + (
            ")" if f"`monad mcp tools {name} --refused`" in (row["reason"] or "") else
            f"; `monad mcp tools {name} --refused` shows the refused tools and what changed)")
         if row.get("toolsRefused") else row["toolNames"]), ("stderr tail", row["stderrTail"]),
    ])
    if row.get("probeNoiseLines"):
        render.info(f"({row['probeNoiseLines']} lines the server wrote about monad's `server/discover` probe, "
                    f"validation warnings of an older SDK, are left out of the tail; "
                    f"`{paths().server_stderr_log(name)}` has them)")
    for warning in row.get("warnings") or []:
        render.warn(f"server `{name}`: {warning}")
    for reason in row.get("leftOut") or []:  # a tool's is in `reason` already; a prompt's, a resource's is not
        if reason not in (row.get("reason") or ""):
            render.warn(f"server `{name}`: {reason}")


def _variables_text(variables: list[dict[str, Any]]) -> str | None:
    """`A (MONAD_HOME/env), B (the supervisor's environment)`: names and sources, never values."""
    from monad_cli.config.envfile import SOURCE_WORDS

    return ", ".join(f"{v['name']} ({SOURCE_WORDS.get(v.get('source') or '', 'not set')})"
                     for v in variables) or None


@app.command("get")
def get(name: Annotated[str, typer.Argument(help="Server name.")], as_json: JsonOpt = False) -> None:
    """The server's definition as written, with every secret value shown as `***`.

    A definition that does not validate (an atom edited by hand) is shown as written, and each
    of its problems is said on stderr (`--json`: `errors`, [{field, message}]).

    For a preset server (features/presets.toml), the definition the preset synthesizes."""
    from monad_cli.config.edits import read_definition
    from monad_cli.config.schema import field_errors, fields_under_env
    from monad_cli.core.redact import redact_definition

    try:
        source, raw = read_definition(paths(), name)
        # As written by hand it may not validate: said beside it, as the Studio's Edit does.
        problems = [(e.field, e.message) for e in field_errors(raw, name=name, source=source)]
    except NotFound:
        from monad_cli.config.presets import PRESETS_FILE, preset_definition

        source, raw = PRESETS_FILE, preset_definition(paths(), name, os.environ)  # NotFound again if not one
        problems = []
    from monad_cli.config.loader import held_secrets_of

    # A value equal to a secret monad holds anywhere (another field, server, the env file) is one.
    shown = redact_definition(raw, held_secrets_of(paths()))
    runs_in = _runs_in(name, raw)
    variables = _variable_sources(raw)
    start = _start_of(raw)
    if as_json:
        render.data_json({"name": name, "source": source, "definition": shown,
                          "cwd": runs_in[0] if runs_in else None, "cwdDefault": bool(runs_in and runs_in[1]),
                          "variables": variables, "start": start[0],
                          "idleStop": start[2] if start[0] == "on-demand" else None,
                          "errors": [{"field": f, "message": m} for f, m in problems]})
        return
    render.line(f"# {source}")
    for key, value in shown.items():
        render.line(f"{key} = {_toml_value(value)}")
    if "start" not in raw:
        render.line(f"# start = {_toml_value(start[0])} (the default, {start[1]})")
    if start[0] == "on-demand" and "idleStop" not in raw:
        render.line(f"# idleStop = {_toml_value(start[2])} (the default)")
    if variables:
        render.line(f"# variables: {_variables_text(variables)}")
    if runs_in and runs_in[1]:
        render.line(f"# runs in {runs_in[0]} (no `cwd` set: the server's own directory under MONAD_HOME)")
    for warning in fields_under_env(raw, source):  # `timeout = 60` appended after `[env]`
        render.warn(f"server `{name}`: {warning}")
    for _field, message in problems:
        render.warn(f"{message} (the supervisor does not run this definition: see `monad mcp status {name}`)")


def _literal_hint(defn: dict[str, Any], variable: str) -> str:
    """`; … write `$$NAME`` when the command or its arguments reference `variable`: monad
    expands it there (docs/atoms.md "Variables"), which `sh -c 'echo $NAME'` did not mean."""
    from monad_cli.config.expansion import references

    words = [defn.get("command") or "", *(defn.get("args") or [])]
    if not any(variable in references(str(w)) for w in words):
        return ""
    whose = f"the server's `-e {variable}`" if variable in (defn.get("env") or {}) else "its own environment"
    return (f"; monad expands `${variable}` in the command itself: for the command to read {whose} "
            f"(`sh -c`), write `$${variable}`, which monad passes on as a literal `${variable}`")


def _variable_sources(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """`[{name, source}]` for each `$VAR` the definition references (source None: set neither
    in MONAD_HOME/env nor in the supervisor's environment; docs/atoms.md "Variables")."""
    from monad_cli.config.expansion import definition_references

    names = definition_references(raw)
    if not names:
        return []
    from monad_cli.cli.commands._variables import sources

    return [{"name": n, "source": src} for n, src in sources(names).items()]


def _start_of(raw: dict[str, Any]) -> tuple[str, str, str]:
    """(start, where it comes from, idleStop) of a definition: its own fields, else the
    `[servers]` defaults of settings.toml (config/start.py)."""
    from monad_cli.config.settings import load_settings
    from monad_cli.config.start import describe_duration, parse_duration

    defaults = load_settings(paths()).servers
    start = raw.get("start") if raw.get("start") in ("always", "on-demand") else None
    idle = parse_duration(raw.get("idleStop")) if raw.get("idleStop") is not None else None
    where = "its definition" if start else "settings.toml" if defaults.start != "always" else "built in"
    return start or defaults.start, where, describe_duration(idle if idle is not None else defaults.idle_stop_s)


def _runs_in(name: str, raw: dict[str, Any]) -> tuple[str, bool] | None:
    """(directory, is_default) a stdio server runs in; None for an http server."""
    if raw.get("url") is not None or raw.get("transport", raw.get("type", "stdio")) != "stdio":
        return None
    if isinstance(raw.get("cwd"), str):
        return raw["cwd"], False
    from monad_cli.config.workdir import default_workdir

    return str(default_workdir(paths(), name, sandbox=raw.get("sandbox") is True)), True


def _toml_value(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False)


@app.command("remove")
def remove(names: Annotated[list[str], typer.Argument(help="Server names.")], as_json: JsonOpt = False) -> None:
    """Delete each server's definition; the supervisor disconnects it live. One line per name;
    exits non-zero when any could not be removed (the others are removed all the same).

    A preset server is turned off instead: `enabled = false` in features/presets.toml.
    --json: `{name, source, removed}` for one name; a list of them for several (`removed`
    false and `error` for one that failed)."""
    rows: list[dict[str, Any]] = []
    failed: MonadError | None = None
    for name in dict.fromkeys(names):  # `remove a a` removes `a` once and says it once
        try:
            rows.append(_remove_one(name, as_json))
        except MonadError as e:
            if len(names) == 1:
                raise
            render.error(e.message)
            rows.append({"name": name, "source": None, "removed": False, "error": e.message})
            failed = failed or e
    if as_json:
        render.data_json(rows[0] if len(names) == 1 else rows)
    if failed is not None:
        raise typer.Exit(int(failed.exit_code))


def _remove_one(name: str, as_json: bool) -> dict[str, Any]:
    """Remove one server (or turn off its preset), saying so unless `as_json`; its JSON row."""
    from monad_cli.config.edits import remove_server

    try:
        source = remove_server(paths(), name)
    except NotFound:
        from monad_cli.config.presets import PRESETS_FILE, turn_off_preset

        turn_off_preset(paths(), name)  # NotFound again when it is not an enabled preset
        source = PRESETS_FILE
        if not as_json:
            render.info(f"turned off preset `{name}` ({source}: `enabled = false`, its options kept)")
    else:
        if not as_json:
            render.info(f"removed server `{name}` (from {source})")
    return {"name": name, "source": source, "removed": True}


def _set_enabled(name: str, enabled: bool, as_json: bool) -> None:
    from monad_cli.config.edits import read_definition, update_server
    from monad_cli.config.schema import field_errors

    word = "enabled" if enabled else "disabled"
    try:
        source, raw = read_definition(paths(), name)
    except ConfigError as e:  # a file that does not parse: nothing can be written into it
        if enabled or not (e.file or "").startswith("atoms/"):
            raise
        raise ConfigError(f"server `{name}` cannot be disabled: {e.message}; or remove the server "
                          f"(`monad mcp remove {name}`)", file=e.file, server=name) from None
    changed = raw.get("enabled", True) is not enabled  # as `unpin` without a pin: say so, write nothing
    if changed:  # a broken server can be stopped: `enabled = false` is written whatever else is wrong
        source = update_server(paths(), name, {"enabled": enabled}, check=enabled)
    elif enabled and (problems := field_errors(raw, name=name, source=source)):
        raise problems[0]  # enabled, but it does not run as written: not "nothing was changed"
    render.outcome({"name": name, "source": source, "enabled": enabled, "changed": changed},
                   f"{word} server `{name}` ({source})" if changed else
                   f"server `{name}` is already {word} ({source}); nothing was changed", as_json=as_json)


@app.command("enable")
def enable(name: Annotated[str, typer.Argument(help="Server name.")], as_json: JsonOpt = False) -> None:
    """Set `enabled = true`; the supervisor connects it."""
    _set_enabled(name, True, as_json)


@app.command("disable")
def disable(name: Annotated[str, typer.Argument(help="Server name.")], as_json: JsonOpt = False) -> None:
    """Set `enabled = false`; the supervisor disconnects it and keeps the definition."""
    _set_enabled(name, False, as_json)


@app.command("reconnect")
def reconnect(
    name: Annotated[str | None, typer.Argument(help="Server name (or --all).")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Reconnect every server that can connect, from scratch "
                                       "(filtered, disabled and invalid ones are named apart).")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Drop the session and connect again now (also clears a `failed` give-up).

    A server a reconnect cannot change (disabled, an invalid definition, filtered out) is
    refused, saying why (exit 2)."""
    if (name is None) == (not all_):
        raise InvalidInput("name one server, or pass --all")
    client = supervisor()
    answer = client.post("/v1/mcp-servers/reconnect") if all_ else \
        client.post(f"/v1/mcp-servers/{quoted(name or '')}/reconnect")
    if as_json:
        render.data_json(answer)
        return
    names = answer.get("reconnecting") if all_ else [name]
    render.info(f"reconnecting {', '.join(f'`{n}`' for n in names or []) or 'nothing'}")
    if answer.get("configError"):
        render.warn(f"server `{name}` reconnects with its last good definition; the edit is not applied: "
                    f"{answer['configError']}")
    for skipped in answer.get("skipped") or []:
        render.info(f"not reconnecting `{skipped['name']}`: {skipped['reason']}")


@app.command("wait")
def wait(
    names: Annotated[list[str], typer.Argument(help="Servers that must be connected.")],
    timeout: Annotated[float, typer.Option("--timeout", min=0, help="Seconds to wait.")] = 30.0,
    as_json: JsonOpt = False,
) -> None:
    """Exit 0 once every named server is connected (or idle: on demand, its first call starts it;
    or degraded: its session serves calls, and stderr says what failed); else non-zero with each
    one's reason.

    Gives up early when a server is failed, needs-auth or disabled. For CI scripts.
    """
    if not math.isfinite(timeout):
        raise InvalidInput("--timeout must be a finite number of seconds")
    client = supervisor()
    deadline = time.monotonic() + timeout
    final = {"failed", "needs-auth", "disabled", "filtered", "undefined"}
    # idle: an on-demand server with its lists, started by a call; degraded: a live session
    # with a problem (a tool left out, a pin refusing a changed list) that waiting does not mend
    ready = {"connected", "idle", "degraded"}
    rows: dict[str, dict[str, Any]] = {}
    while True:
        answer = client.get("/v1/settings/mcp-servers/status")
        by_name = {r["name"]: r for r in answer["servers"]}
        rows = {n: _settled(by_name.get(n, {"name": n, "state": "undefined",
                                            "reason": server_not_defined(n, by_name)}))
                for n in names}
        states = {r["state"] for r in rows.values()}
        if states <= ready or states & final or time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    bad = [r for r in rows.values() if r["state"] not in ready]
    if as_json:
        render.data_json(list(rows.values()))
    timed_out = all(r["state"] not in final for r in bad)
    for r in bad:
        if r["state"] == "undefined":
            render.error(r["reason"])
        else:  # say that the wait ended, not the server: `--timeout` may just be too short
            render.error((f"gave up after --timeout {timeout:g} s: " if timed_out else "") + not_ready(r))
    if bad:
        raise typer.Exit(int(ExitCode.TIMEOUT if timed_out else ExitCode.ERROR))
    for r in rows.values():
        if r["state"] == "degraded":
            render.warn(not_ready(r))
    if not as_json:
        words = {"connected": "connected", "degraded": "degraded (it serves calls)",
                 "idle": "idle (on demand; the first call starts it)"}
        render.info("; ".join(f"{word}: {', '.join(those)}" for state, word in words.items()
                              if (those := [n for n in names if rows[n]["state"] == state])))


def _settled(row: dict[str, Any]) -> dict[str, Any]:
    """`row` in the state its server is in or about to be in: the supervisor takes a new
    definition at once, the server's session moves a moment later. Right after `monad mcp
    enable NAME` the row still says `disabled` (with `enabled` true), which must not end a
    wait; right after `disable` it may still say `connected`."""
    if row.get("enabled") is False and row["state"] != "disabled":
        return {**row, "state": "disabled", "reason": "enabled = false in its definition"}
    if row["state"] == "disabled" and row.get("enabled"):
        return {**row, "state": "connecting", "reason": "enabled in its definition; starting"}
    return row


@app.command("path")
def path(as_json: JsonOpt = False) -> None:
    """Where monad keeps its state (MONAD_HOME and the folders inside)."""
    p = paths()
    data = {"home": str(p.home), "atoms": str(p.atoms_dir), "agentsJson": str(p.agents_json),
            "journal": str(p.journal_db), "socket": str(p.socket), "logs": str(p.logs_dir),
            "serverLogs": str(p.server_logs_dir), "work": str(p.home / "work")}
    if as_json:
        render.data_json(data)
    else:
        render.key_values(list(data.items()))


__all__ = ["MonadError", "NotFound", "app"]
