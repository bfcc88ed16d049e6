"""`server.json` → a monad definition, and the variables it needs (docs/registry.md).

Follows the published schema (modelcontextprotocol/registry, docs/reference/server-json/
server.schema.json, 2025-09-29 and later, camelCase):

- `packages[]` run locally over stdio: `npm` as `npx -y IDENTIFIER@VERSION`, `pypi` as
  `uvx IDENTIFIER==VERSION`, `oci` as `docker run -i --rm [-e NAME…] IMAGE:TAG`, `nuget` as
  `dnx IDENTIFIER@VERSION --yes`; `runtimeHint` replaces the runner, `runtimeArguments` go
  before the package and `packageArguments` after it. `mcpb` is `bundles.py`'s.
- `remotes[]` (`streamable-http`, `sse`) become an http server with `url` and `headers`.
- An input (an environment variable, a header, an argument) with a `value` is fixed; `{x}`
  in it is the input variable `x` of its `variables` map. An input without a `value` is
  asked for. Each asked input is a `Variable` keeping `isRequired`, `isSecret`, `default`,
  `choices` and `format`.

Pure: no HTTP, no prompts; `variables.py` gathers the values, `install.py` writes the atom.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from monad_cli.core.errors import InvalidInput

# The runner of each package type, when `runtimeHint` does not name one.
RUNNERS = {"npm": "npx", "pypi": "uvx", "oci": "docker", "nuget": "dnx", "mcpb": None}
REMOTE_TYPES = ("streamable-http", "sse")
_TEMPLATE = re.compile(r"\{([A-Za-z0-9_.-]+)\}")


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
    """One way to run the server: `packages[index]` or `remotes[index]` (`kind`), and why
    this machine cannot run it (`problem`, None when it can)."""

    kind: str  # package | remote
    index: int
    body: Mapping[str, Any]
    problem: str | None = None

    @property
    def where(self) -> str:
        return f"{'packages' if self.kind == 'package' else 'remotes'}[{self.index}]"

    @property
    def label(self) -> str:
        if self.kind == "remote":
            return f"remote {self.body.get('type', '?')} {self.body.get('url', '?')}"
        b = self.body
        return f"{b.get('registryType', '?')} {b.get('identifier', '?')}@{b.get('version', '?')}"

    @property
    def transport(self) -> str:
        if self.kind == "remote":
            return str(self.body.get("type", "?"))
        t = self.body.get("transport")
        return str(t.get("type", "stdio")) if isinstance(t, Mapping) else "stdio"


def options(server: Mapping[str, Any], *, which: Callable[[str], str | None] = shutil.which,
            docker_works: Callable[[], str | None] | None = None) -> list[Option]:
    """Every package, then every remote, each with why it cannot run here (or None).

    `docker_works()` is asked only for an `oci` package: None when docker can run an image,
    else why not (`docker` missing, its daemon unreachable)."""
    out: list[Option] = []
    packages = server.get("packages") or []
    for i, pkg in enumerate(packages if isinstance(packages, list) else []):
        out.append(Option("package", i, pkg if isinstance(pkg, Mapping) else {},
                          _package_problem(pkg, which, docker_works)))
    remotes = server.get("remotes") or []
    for i, rem in enumerate(remotes if isinstance(remotes, list) else []):
        problem = None
        if not isinstance(rem, Mapping) or rem.get("type") not in REMOTE_TYPES or not isinstance(rem.get("url"), str):
            problem = "not a remote monad knows (`type` streamable-http or sse, and a `url`)"
        out.append(Option("remote", i, rem if isinstance(rem, Mapping) else {}, problem))
    return out


def _package_problem(pkg: Any, which: Callable[[str], str | None],
                     docker_works: Callable[[], str | None] | None) -> str | None:
    if not isinstance(pkg, Mapping) or not isinstance(pkg.get("identifier"), str):
        return "not a package entry (no `identifier`)"
    kind = pkg.get("registryType")
    if kind not in RUNNERS:
        return f"registryType `{kind}` is not one monad can run (npm, pypi, oci, nuget, mcpb)"
    transport = pkg.get("transport")
    ttype = transport.get("type", "stdio") if isinstance(transport, Mapping) else "stdio"
    if ttype != "stdio":
        return f"its transport is `{ttype}`: a local package serving HTTP is not supported; choose a remote"
    version = pkg.get("version")
    if kind != "mcpb" and (not isinstance(version, str) or not version or version == "latest"):
        return "it names no exact `version`"
    if kind == "mcpb":
        if not isinstance(pkg.get("fileSha256"), str):
            return "an mcpb package needs `fileSha256`; monad runs no bundle it cannot check"
        return None
    runner = str(pkg.get("runtimeHint") or RUNNERS[kind])
    if which(runner) is None:
        return f"`{runner}` is not on PATH"
    if kind == "oci" and runner == "docker" and docker_works is not None:
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
        if found.problem:
            raise InvalidInput(f"{found.where} ({found.label}) cannot run here: {found.problem}")
        return found
    for o in opts:
        if o.problem is None:
            return o
    if not opts:
        raise InvalidInput("its server.json has no `packages` and no `remotes`: nothing to run")
    why = "; ".join(f"{o.where} ({o.label}): {o.problem}" for o in opts)
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
    used = set(_TEMPLATE.findall(str(body.get("value", ""))))
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
    out: list[tuple[str, str, Mapping[str, Any]]] = []
    if option.kind == "remote":
        for i, h in enumerate(body.get("headers") or []):
            out.append(("header", f"{option.where}.headers[{i}]", h))
        return out
    for list_name in ("runtimeArguments", "packageArguments"):
        for i, a in enumerate(body.get(list_name) or []):
            out.append(("arg", f"{option.where}.{list_name}[{i}]", a))
    for i, e in enumerate(body.get("environmentVariables") or []):
        out.append(("env", f"{option.where}.environmentVariables[{i}]", e))
    return out


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
    seen: set[tuple[str, str]] = set()
    unique = []
    for v in out:  # one question per name: a `{variable}` used twice is asked once
        if (v.kind, v.key) not in seen:
            seen.add((v.kind, v.key))
            unique.append(v)
    return unique


# -- the definition ----------------------------------------------------------------------------
def _fill(template: str, values: Mapping[str, str]) -> str:
    """`{x}` replaced by the value of variable `x`; an unknown `{x}` stays (the schema says so)."""
    return _TEMPLATE.sub(lambda m: values.get(m.group(1), m.group(0)), template)


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


def _env(option: Option, values: Mapping[tuple[str, str], str]) -> dict[str, str]:
    env: dict[str, str] = {}
    for e in option.body.get("environmentVariables") or []:
        if isinstance(e, Mapping) and isinstance(e.get("name"), str):
            value = _resolved("env", e, values)
            if value is not None:
                env[e["name"]] = value
    return env


def image_reference(identifier: str, version: str) -> str:
    """`IMAGE:TAG` for docker: the identifier's own tag or digest wins, else `:VERSION`."""
    last = identifier.rsplit("/", 1)[-1]
    return identifier if (":" in last or "@" in identifier) else f"{identifier}:{version}"


def package_command(pkg: Mapping[str, Any], values: Mapping[tuple[str, str], str],
                    env_names: list[str]) -> tuple[str, list[str]]:
    """(command, args) that run a package; `env_names` are passed into a container with `-e`."""
    kind = str(pkg.get("registryType"))
    ident = str(pkg.get("identifier"))
    version = str(pkg.get("version"))
    runner = str(pkg.get("runtimeHint") or RUNNERS[kind])
    runtime = _arguments(pkg.get("runtimeArguments"), values)
    package = _arguments(pkg.get("packageArguments"), values)
    if kind == "npm":
        lead = [] if "-y" in runtime or "--yes" in runtime else ["-y"]
        return runner, [*lead, *runtime, f"{ident}@{version}", *package]
    if kind == "pypi":
        return runner, [*runtime, f"{ident}=={version}", *package]
    if kind == "oci":
        env_flags = [x for n in env_names for x in ("-e", n)]
        head = ["run", "-i", "--rm"] if runner == "docker" else []
        return runner, [*head, *runtime, *env_flags, image_reference(ident, version), *package]
    if kind == "nuget":
        return runner, [*runtime, f"{ident}@{version}", "--yes", *(["--", *package] if package else [])]
    raise InvalidInput(f"registryType `{kind}` has no command form")


def definition(server: Mapping[str, Any], option: Option, values: Mapping[tuple[str, str], str]) -> dict[str, Any]:
    """The monad definition (atom fields) for `option` with the gathered `values` (keyed by
    (kind, key)); `registry` and `trust` are added by the installer. Not for `mcpb`."""
    defn: dict[str, Any] = {}
    if option.kind == "remote":
        defn["transport"] = "http"
        names = {k: v for (_, k), v in values.items()}
        defn["url"] = _fill(str(option.body["url"]), names)
        headers: dict[str, str] = {}
        for h in option.body.get("headers") or []:
            if isinstance(h, Mapping) and isinstance(h.get("name"), str):
                value = _resolved("header", h, values)
                if value is not None:
                    headers[h["name"]] = value
        if headers:
            defn["headers"] = headers
    else:
        env = _env(option, values)
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


_SEP = "\x1f"  # between arguments when matching a command line: no argument holds it


def recover_arguments(option: Option, args: Sequence[str]) -> dict[str, str]:
    """The values `option`'s argument variables (kind `arg`) were given, read back from the
    `args` its definition was written with (`definition`): each asked argument and each
    `{variable}` inside a fixed one. {} when the command line no longer has the shape this
    option gives it (edited by hand, another package). For `upgrade`, so the next version
    does not ask again for what this one was given.

    How: the option's command line becomes a regular expression, an asked argument a group
    (optional: one left out is absent), and it must match all of `args`."""
    kind = option.body.get("registryType")
    if option.kind != "package" or kind not in ("npm", "pypi", "oci", "nuget"):
        return {}
    groups: dict[str, str] = {}  # key → group name

    def group(key: str) -> str:
        if key in groups:  # a `{variable}` used twice has one value
            return f"(?P={groups[key]})"
        groups[key] = f"g{len(groups)}"
        return f"(?P<{groups[key]}>[^{_SEP}]*)"

    def template(text: str) -> str:
        out, pos = "", 0
        for m in _TEMPLATE.finditer(text):
            out += re.escape(text[pos:m.start()]) + group(m.group(1))
            pos = m.end()
        return out + re.escape(text[pos:])

    def arguments(items: Any) -> str:
        out = ""
        for arg in items or []:
            if not isinstance(arg, Mapping):
                continue
            asked = "value" not in arg
            value = group(argument_key(arg)) if asked else template(str(arg["value"]))
            if arg.get("type") == "named":  # `--flag value`, or `--flag` alone for an empty value
                piece = re.escape(str(arg.get("name", ""))) + _SEP + f"(?:{value}{_SEP})?"
            else:
                piece = value + _SEP
            out += f"(?:{piece})?" if asked else piece
        return out

    # The runner's own words around the package come from `package_command` itself, with a
    # marker where each argument list goes.
    runtime, package = "\x00runtime\x00", "\x00package\x00"
    body = {**option.body, "runtimeArguments": [{"type": "positional", "value": runtime}],
            "packageArguments": [{"type": "positional", "value": package}]}
    try:
        _, tokens = package_command(body, {}, [])
    except InvalidInput:
        return {}
    image = image_reference(str(body.get("identifier")), str(body.get("version"))) if kind == "oci" else None
    pattern = ""
    for token in tokens:
        if token == runtime:
            pattern += arguments(option.body.get("runtimeArguments"))
        elif token == package:
            pattern += arguments(option.body.get("packageArguments"))
        elif (kind, token) in (("npm", "-y"), ("nuget", "--")):  # absent when the arguments make it so
            pattern += f"(?:{re.escape(token)}{_SEP})?"
        else:
            if token == image:  # `-e NAME` for each environment variable passed in
                pattern += f"(?:-e{_SEP}[^{_SEP}]*{_SEP})*"
            pattern += re.escape(token) + _SEP
    m = re.fullmatch(pattern, "".join(f"{a}{_SEP}" for a in args))
    if m is None:
        return {}
    return {key: m.group(name) for key, name in groups.items() if m.group(name) is not None}


def recover_values(option: Option, definition: Mapping[str, Any]) -> dict[str, str]:
    """Every argument value (kind `arg`) `option` was installed with, read back from the
    definition it gave (`definition`, as the atom holds it): the command line's
    (`recover_arguments`) and the `{variables}` inside a fixed environment value, header
    value or remote URL. A value that no longer matches its template is left out."""
    values = recover_arguments(option, [str(a) for a in definition.get("args") or []]) \
        if option.kind == "package" and isinstance(definition.get("args"), list) else {}
    pairs: list[tuple[str, Any]] = []
    if option.kind == "remote":
        pairs.append((str(option.body.get("url", "")), definition.get("url")))
        field, inputs = "headers", option.body.get("headers") or []
    else:
        field, inputs = "env", option.body.get("environmentVariables") or []
    given: Mapping[str, Any] = definition[field] if isinstance(definition.get(field), Mapping) else {}
    for body in inputs:
        if isinstance(body, Mapping) and "value" in body and isinstance(body.get("name"), str):
            pairs.append((str(body["value"]), given.get(body["name"])))
    for template, actual in pairs:
        names = _TEMPLATE.findall(template)
        if not names or not isinstance(actual, str):
            continue
        pattern, pos = "", 0
        seen: dict[str, str] = {}  # key → its group
        for m in _TEMPLATE.finditer(template):
            key = m.group(1)
            pattern += re.escape(template[pos:m.start()])
            pattern += f"(?P={seen[key]})" if key in seen else f"(?P<g{len(seen)}>.*?)"
            seen.setdefault(key, f"g{len(seen)}")
            pos = m.end()
        found = re.fullmatch(pattern + re.escape(template[pos:]), actual, flags=re.DOTALL)
        if found:
            for key, group in seen.items():
                values.setdefault(key, found.group(group))
    return values


def atom_name(server_name: str) -> str:
    """The atom name for a registry name: its last part, with what names may not hold as
    `-` (`io.github.acme/weather.api` → `weather-api`)."""
    base = server_name.rsplit("/", 1)[-1]
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", base).strip("-")
    name = re.sub(r"_{2,}", "_", name)[:64].rstrip("-") or "server"
    return name


__all__ = ["Option", "Variable", "argument_key", "atom_name", "choose", "definition", "image_reference",
           "options", "package_command", "recover_arguments", "recover_values", "variables"]
