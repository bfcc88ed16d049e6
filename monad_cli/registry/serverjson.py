"""`server.json` → a monad definition, and the variables it needs (docs/registry.md).

Follows the published schema (modelcontextprotocol/registry, docs/reference/server-json/
server.schema.json, 2025-09-29 and later, camelCase):

- `packages[]` run locally over stdio: `npm` as `npx -y IDENTIFIER@VERSION`, `pypi` as
  `uvx IDENTIFIER==VERSION`, `oci` as `docker run -i --rm [-e NAME…] IMAGE:TAG`, `nuget` as
  `dnx IDENTIFIER@VERSION --yes`; `runtimeArguments` go before the package and
  `packageArguments` after it. `mcpb` is `bundles.py`'s. What a package may be and give its
  runner is `runners.py`'s: an option breaking those rules is refused, never run.
- `remotes[]` (`streamable-http`, `sse`) become an http server with `url` and `headers`.
- An input (an environment variable, a header, an argument) with a `value` is fixed; `{x}`
  in it is the input variable `x` of its `variables` map. Text the registry wrote (a fixed
  `value`, a `default`, a remote's `url`) is literal: its `$` is written `$$`, so an entry
  cannot reference the person's variables (`"value": "$OPENAI_API_KEY"` in a remote's header
  would send the env file's key to that host); only what the person gives may be a `$VAR`. An input without a `value` is
  asked for. Each asked input is a `Variable` keeping `isRequired`, `isSecret`, `default`,
  `choices` and `format`.

Pure: no HTTP, no prompts; `variables.py` gathers the values, `install.py` writes the atom.
"""

from __future__ import annotations

import re
import shlex
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from monad_cli.core.errors import InvalidInput
from monad_cli.registry import runners

REMOTE_TYPES = ("streamable-http", "sse")


@dataclass(frozen=True)
class Variable:
    """One value the person gives. `kind`: `env` (given with `--env KEY=…`), `header`
    (`--header "KEY: …"`) or `arg` (an argument or an input's `{variable}`: `--arg KEY=…`);
    `where` names it in the server.json (`packages[0].environmentVariables[1]`)."""

    key: str
    kind: str
    where: str
    description: str = ""
    required: bool = False
    secret: bool = False
    default: str | None = None
    choices: tuple[str, ...] = ()
    format: str = "string"

    @property
    def flag(self) -> str:
        """How to give it on the command line."""
        return {"env": f"--env {self.key}=…", "header": f"--header \"{self.key}: …\""}.get(
            self.kind, f"--arg {self.key}=…")

    def as_json(self) -> dict[str, Any]:
        return {"key": self.key, "kind": self.kind, "where": self.where, "description": self.description,
                "isRequired": self.required, "isSecret": self.secret, "default": self.default,
                "choices": list(self.choices), "format": self.format}


@dataclass(frozen=True)
class Option:
    """One way to run the server: `packages[index]` or `remotes[index]` (`kind`); `refused`
    says why monad will not run it anywhere (it breaks `runners.py`'s rules), `problem` why
    this machine cannot (None when it can)."""

    kind: str  # package | remote
    index: int
    body: Mapping[str, Any]
    problem: str | None = None
    refused: str | None = None

    @property
    def where(self) -> str:
        return f"{'packages' if self.kind == 'package' else 'remotes'}[{self.index}]"

    @property
    def label(self) -> str:
        if self.kind == "remote":
            from monad_cli.core.redact import redact_url

            return f"remote {self.body.get('type', '?')} {redact_url(str(self.body.get('url', '?')))}"
        b = self.body
        return f"{b.get('registryType', '?')} {b.get('identifier', '?')}@{b.get('version', '?')}"

    @property
    def transport(self) -> str:
        if self.kind == "remote":
            return str(self.body.get("type", "?"))
        t = self.body.get("transport")
        return str(t.get("type", "stdio")) if isinstance(t, Mapping) else "stdio"

    @property
    def why_not(self) -> str | None:
        """`refused: …` or `cannot run here: …`, or None."""
        return f"refused: {self.refused}" if self.refused else (
            f"cannot run here: {self.problem}" if self.problem else None)


def options(server: Mapping[str, Any], *, which: Callable[[str], str | None] = shutil.which,
            docker_works: Callable[[], str | None] | None = None) -> list[Option]:
    """Every package, then every remote, each with why monad refuses it (`refused`) or why
    it cannot run here (`problem`, asked only of one not refused).

    `docker_works()` is asked only for an `oci` package: None when docker can run an image,
    else why not (`docker` missing, its daemon unreachable)."""
    out: list[Option] = []
    packages = server.get("packages") or []
    for i, pkg in enumerate(packages if isinstance(packages, list) else []):
        body = pkg if isinstance(pkg, Mapping) else {}
        refused = package_refusal(body)
        out.append(Option("package", i, body, None if refused else _package_problem(body, which, docker_works),
                          refused))
    remotes = server.get("remotes") or []
    for i, rem in enumerate(remotes if isinstance(remotes, list) else []):
        body = rem if isinstance(rem, Mapping) else {}
        out.append(Option("remote", i, body, refused=_remote_refusal(body)))
    return out


def server_refusal(server: Mapping[str, Any]) -> str | None:
    """Why a whole `server.json` is refused (its own `name` or `version` malformed), or None."""
    name = server.get("name")
    if not isinstance(name, str) or not runners.SERVER_NAME.fullmatch(name) or len(name) > 200:
        return f"its `name` `{name}` is not a registry name (`io.github.owner/server`)"
    return runners.check_version(str(server.get("version", "")))


def package_refusal(pkg: Mapping[str, Any]) -> str | None:
    """Why monad will not run this package on any machine (`runners.py`'s rules), or None."""
    kind = pkg.get("registryType")
    if kind not in runners.RUNNERS:
        return f"registryType `{kind}` is not one monad can run (npm, pypi, oci, nuget, mcpb)"
    identifier, version = pkg.get("identifier"), pkg.get("version")
    if not isinstance(identifier, str) or not isinstance(version, str):
        return "a package needs a string `identifier` and `version`"
    problem = runners.check_identity(kind, identifier, version) or runners.check_runner(kind, pkg.get("runtimeHint"))
    if problem:
        return problem
    if kind == "mcpb":
        return None if isinstance(pkg.get("fileSha256"), str) else \
            "an mcpb package needs `fileSha256`; monad runs no bundle it cannot check"
    for i, e in enumerate(pkg.get("environmentVariables") or []):
        name = e.get("name") if isinstance(e, Mapping) else None
        why = runners.check_env_name(name) if isinstance(name, str) else "has no `name`"
        if why:
            return f"environmentVariables[{i}]: {why}"
    return runners.check_runtime_shape(str(runners.RUNNERS[kind]), pkg.get("runtimeArguments") or [])


def _remote_refusal(rem: Mapping[str, Any]) -> str | None:
    url = rem.get("url")
    if rem.get("type") not in REMOTE_TYPES or not isinstance(url, str):
        return "not a remote monad knows (`type` streamable-http or sse, and a `url`)"
    if urlsplit(url).scheme not in ("http", "https"):
        return f"its `url` is not an http(s) URL (`{urlsplit(url).scheme}:`)"
    return None


def _package_problem(pkg: Mapping[str, Any], which: Callable[[str], str | None],
                     docker_works: Callable[[], str | None] | None) -> str | None:
    """Why this machine cannot run a package monad accepts, or None."""
    transport = pkg.get("transport")
    ttype = transport.get("type", "stdio") if isinstance(transport, Mapping) else "stdio"
    if ttype != "stdio":
        return f"its transport is `{ttype}`: a local package serving HTTP is not supported; choose a remote"
    kind = str(pkg.get("registryType"))
    runner = runners.RUNNERS[kind]
    if runner is None:
        return None
    if which(runner) is None:
        return f"`{runner}` is not on PATH"
    if kind == "oci" and docker_works is not None:
        return docker_works()
    return None


def choose(opts: list[Option], *, package: int | None = None, remote: int | None = None) -> Option:
    """`packages[package]` or `remotes[remote]` when asked for, else the first option this
    machine can run. Raises `InvalidInput` naming each option and why it cannot run."""
    if package is not None or remote is not None:
        kind, index = ("package", package) if package is not None else ("remote", remote)
        found = next((o for o in opts if o.kind == kind and o.index == index), None)
        if found is None:
            count = sum(1 for o in opts if o.kind == kind)
            raise InvalidInput(f"there is no {kind}s[{index}] (it has {count}); see `monad mcp search --json`")
        if found.why_not:
            raise InvalidInput(f"{found.where} ({found.label}) {found.why_not}")
        return found
    for o in opts:
        if o.why_not is None:
            return o
    if not opts:
        raise InvalidInput("its server.json has no `packages` and no `remotes`: nothing to run")
    why = "; ".join(f"{o.where} ({o.label}): {o.why_not}" for o in opts)
    raise InvalidInput(f"nothing in its server.json can run here: {why}")


# -- variables --------------------------------------------------------------------------------
def _variable(key: str, kind: str, where: str, body: Mapping[str, Any]) -> Variable:
    choices = body.get("choices")
    default = body.get("default")
    return Variable(key=key, kind=kind, where=where, description=str(body.get("description") or ""),
                    required=body.get("isRequired") is True, secret=body.get("isSecret") is True,
                    default=str(default) if isinstance(default, (str, int, float)) else None,
                    choices=tuple(str(c) for c in choices) if isinstance(choices, list) else (),
                    format=str(body.get("format") or "string"))


def _input_variables(body: Mapping[str, Any], where: str) -> list[Variable]:
    """The `{x}` variables of a fixed `value`, each asked under its own name."""
    variables = body.get("variables")
    if not isinstance(variables, Mapping):
        return []
    used = set(runners.TEMPLATE.findall(str(body.get("value", ""))))
    return [_variable(k, "arg", f"{where}.variables.{k}", v) for k, v in variables.items()
            if k in used and isinstance(v, Mapping)]


def argument_key(arg: Mapping[str, Any]) -> str:
    """How an asked argument is named on the command line: a named one by its flag without
    the dashes (`--port` → `port`), a positional one by its `valueHint`."""
    if arg.get("type") == "named":
        return str(arg.get("name", "")).lstrip("-")
    return str(arg.get("valueHint") or "")


def _inputs(option: Option) -> list[tuple[str, str, Mapping[str, Any]]]:
    """(kind, where, input) of every input of an option, in command-line order."""
    body = option.body
    if option.kind == "remote":
        return [("header", f"{option.where}.headers[{i}]", h) for i, h in enumerate(body.get("headers") or [])]
    return [*(("arg", f"{option.where}.{list_name}[{i}]", a) for list_name in ("runtimeArguments", "packageArguments")
              for i, a in enumerate(body.get(list_name) or [])),
            *(("env", f"{option.where}.environmentVariables[{i}]", e)
              for i, e in enumerate(body.get("environmentVariables") or []))]


def variables(option: Option) -> list[Variable]:
    """What the person gives for this option, in order; a fixed value's `{variables}` too,
    and a remote URL's (`remotes[].variables`, e.g. `https://{tenant}.example.com/mcp`)."""
    out: list[Variable] = []
    if option.kind == "remote" and isinstance(option.body.get("url"), str):
        out += _input_variables({"value": option.body["url"], "variables": option.body.get("variables")},
                                option.where)
    for kind, where, body in _inputs(option):
        if not isinstance(body, Mapping):
            continue
        if "value" in body:
            out += _input_variables(body, where)
            continue
        key = str(body.get("name", "")) if kind != "arg" else argument_key(body)
        if not key:
            raise InvalidInput(f"{where} has neither a `value` nor a name to ask it by")
        out.append(_variable(key, kind, where, body))
    first: dict[tuple[str, str], Variable] = {}
    for v in out:  # one question per name: a `{variable}` used twice is asked once
        first.setdefault((v.kind, v.key), v)
    return list(first.values())


# -- the definition ----------------------------------------------------------------------------
def literal(text: str) -> str:
    """Registry text as a definition holds it literally: `$` → `$$` (config/expansion.py),
    so no `$VAR` in it expands from MONAD_HOME/env or the supervisor's environment."""
    return text.replace("$", "$$")


def _fill(template: str, values: Mapping[str, str]) -> str:
    """`{x}` replaced by the value of variable `x` (as given: the person's `$VAR` stays a
    reference); the rest of `template` is registry text, made `literal`. An unknown `{x}`
    stays (the schema says so)."""
    out, at = [], 0
    for m in runners.TEMPLATE.finditer(template):
        out += [literal(template[at:m.start()]), values.get(m.group(1), literal(m.group(0)))]
        at = m.end()
    return "".join([*out, literal(template[at:])])


def _resolved(kind: str, body: Mapping[str, Any], values: Mapping[tuple[str, str], str]) -> str | None:
    """An input's value: its fixed `value` with `{variables}` filled, else what was given."""
    if "value" in body:
        names = {k: v for (kk, k), v in values.items() if kk == "arg"}
        return _fill(str(body["value"]), names)
    key = str(body.get("name", "")) if kind != "arg" else argument_key(body)
    return values.get((kind, key))


def _arguments(args: Any, values: Mapping[tuple[str, str], str]) -> list[str]:
    out: list[str] = []
    for arg in args or []:
        if not isinstance(arg, Mapping):
            continue
        value = _resolved("arg", arg, values)
        if arg.get("type") == "named":
            if value is None:
                continue  # an optional flag left out
            name = str(arg.get("name", ""))
            out += [name, value] if value != "" else [name]
        elif value is not None:
            out.append(value)
    return out


def _named(kind: str, inputs: Any, values: Mapping[tuple[str, str], str]) -> dict[str, str]:
    """name → value of the named inputs (environment variables, headers) that have one."""
    out: dict[str, str] = {}
    for e in inputs or []:
        if isinstance(e, Mapping) and isinstance(e.get("name"), str):
            value = _resolved(kind, e, values)
            if value is not None:
                out[e["name"]] = value
    return out


def image_reference(identifier: str, version: str) -> str:
    """`IMAGE:TAG` for docker: the identifier's own tag or digest wins, else `:VERSION`."""
    last = identifier.rsplit("/", 1)[-1]
    return identifier if (":" in last or "@" in identifier) else f"{identifier}:{version}"


def package_command(pkg: Mapping[str, Any], values: Mapping[tuple[str, str], str],
                    env_names: list[str]) -> tuple[str, list[str]]:
    """(command, args) that run a package (one `package_refusal` accepts); `env_names` are
    passed into a container with `-e`. Raises `InvalidInput` when the filled runtime
    arguments would reach the runner as something other than the options it allows
    (`runners.check_runtime`: a value such as `-c` or `--network host`)."""
    kind = str(pkg.get("registryType"))
    ident = str(pkg.get("identifier"))
    version = str(pkg.get("version"))
    runner = runners.RUNNERS.get(kind)
    if runner is None:
        raise InvalidInput(f"registryType `{kind}` has no command form")
    runtime = _arguments(pkg.get("runtimeArguments"), values)
    problem = runners.check_runtime(runner, runtime)
    if problem:
        raise InvalidInput(f"its runtimeArguments are refused: {problem}")
    package = _arguments(pkg.get("packageArguments"), values)
    if kind == "npm":
        lead = [] if "-y" in runtime or "--yes" in runtime else ["-y"]
        return runner, [*lead, *runtime, f"{ident}@{version}", *package]
    if kind == "pypi":
        return runner, [*runtime, f"{ident}=={version}", *package]
    if kind == "oci":
        env_flags = [x for n in env_names for x in ("-e", n)]
        return runner, ["run", "-i", "--rm", *runtime, *env_flags, image_reference(ident, version), *package]
    return runner, [*runtime, f"{ident}@{version}", "--yes", *(["--", *package] if package else [])]


def command_line(defn: Mapping[str, Any], secrets: Sequence[str] = ()) -> str:
    """How a definition runs, as a person reads it: `uvx mcp-server-time==1.0 --local-timezone
    UTC` (shell-quoted, exactly the command and arguments the supervisor starts; `$VAR`
    references as written), or `streamable-http https://…` for a remote. Secret values (the
    definition's own and `secrets`) and a URL's password and query are `***`."""
    from monad_cli.core.redact import redact_args, redact_url, secret_values

    if defn.get("transport") == "http":
        return redact_url(str(defn.get("url", "")))
    known = secret_values(defn) | set(secrets)
    return shlex.join([str(defn.get("command", "")), *redact_args((str(a) for a in defn.get("args") or []), known)])


def preview(option: Option) -> str | None:
    """The command line `option` runs with the registry's defaults, `<key>` where a value is
    asked for, for `search` and the Studio before anything is given; None for a bundle (its
    manifest says how it runs, read at install) and for an option monad refuses."""
    if option.refused or (option.kind == "package" and option.body.get("registryType") == "mcpb"):
        return None
    try:
        values: dict[tuple[str, str], str] = {}
        for v in variables(option):
            if v.default is not None and not v.secret:
                values[(v.kind, v.key)] = literal(v.default)
            elif v.required or v.secret:
                values[(v.kind, v.key)] = f"<{v.key}>"
        return command_line(definition({}, option, values))
    except InvalidInput:
        return None


def definition(server: Mapping[str, Any], option: Option, values: Mapping[tuple[str, str], str]) -> dict[str, Any]:
    """The monad definition (atom fields) for `option` with the gathered `values` (keyed by
    (kind, key)); `registry` and `trust` are added by the installer. Not for `mcpb`."""
    defn: dict[str, Any] = {}
    if option.kind == "remote":
        defn["transport"] = "http"
        names = {k: v for (_, k), v in values.items()}
        defn["url"] = _fill(str(option.body["url"]), names)
        headers = _named("header", option.body.get("headers"), values)
        if headers:
            defn["headers"] = headers
    else:
        env = _named("env", option.body.get("environmentVariables"), values)
        command, args = package_command(option.body, values, list(env))
        defn.update(transport="stdio", command=command)
        if args:
            defn["args"] = args
        if env:
            defn["env"] = env
    description = server.get("description")
    if isinstance(description, str) and description:
        defn["description"] = description
    return defn


def atom_name(server_name: str) -> str:
    """The atom name for a registry name: its last part, with what names may not hold as
    `-` (`io.github.acme/weather.api` → `weather-api`)."""
    base = server_name.rsplit("/", 1)[-1]
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", base).strip("-")
    return re.sub(r"_{2,}", "_", name)[:64].rstrip("-") or "server"


__all__ = ["Option", "Variable", "argument_key", "atom_name", "choose", "definition", "image_reference", "literal",
           "options", "package_command", "variables"]
