"""What a registry package may run as: its runner, its name and version, the runner's options.

A `server.json` comes from whoever published it, and a registry may be hostile. What a
person reads (`monad mcp search`, `add`, the Studio) must be what runs: the package it
names, fetched by the runner of its registry, and nothing else. So before anything is
written or started:

- `runtimeHint` must be the runner of its `registryType` (`RUNNERS`): `npx` for npm, `uvx`
  for pypi, `docker` for oci, `dnx` for nuget, none for mcpb. `/bin/sh` is not a runner.
- `identifier` and `version` follow their registry's naming rules (`check_package`), so
  neither can read as an option (`--call=…`), a URL (`--from=git+https://…`) or two words:
  npm names (validate-npm-package-name: at most 214 characters, lowercase and URL-safe, not
  starting with `.` or `_`, `@scope/name`) at a semver version; PyPI names (PEP 508: letters,
  digits, `.`, `_`, `-`, alphanumeric at both ends) at a PEP 440 version; OCI references
  (the distribution spec's grammar, `[host[:port]/]path[:tag][@digest]`) at a tag; NuGet IDs
  at a NuGet version.
- `runtimeArguments` go to the runner itself, before the package, so each must be one of
  the few options of that runner that do not change what runs (`OPTIONS`): `npx -y`, `uvx
  --quiet`, `docker -e/-v/--mount/…`; an option that names another package, an index, a
  shell command, an entrypoint or the host's namespaces is refused, and so is a positional
  one (the runner would take it for the package). `packageArguments` come after the
  package, where every runner hands them to the package (npx and uvx stop reading options
  at the first positional, docker at the image, dnx at `--`).
- `environmentVariables` configure the runner too (`npm_config_call`, `NODE_OPTIONS`,
  `UV_INDEX_URL`, `DOCKER_HOST`, `LD_PRELOAD`, a proxy): those names are refused.

Each check returns why not (one line, naming the field), or None. Pure: the stdlib, and
`packaging` for PEP 440 versions.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

# The runner of each registry type (`runtimeHint` may only repeat it); mcpb runs by its manifest.
RUNNERS: dict[str, str | None] = {"npm": "npx", "pypi": "uvx", "oci": "docker", "nuget": "dnx", "mcpb": None}

# Options of each runner a `runtimeArguments` entry may give: option → whether it takes a
# value. Only options that leave the package (and its isolation) as shown; the runner's
# own `--help` is the reference (npx: npm's bin/npx-cli.js, which also takes an unknown
# option's next word for its value, hence no unknown option at all).
OPTIONS: dict[str, dict[str, bool]] = {
    "npx": {"-y": False, "--yes": False, "-q": False, "--quiet": False, "--prefer-offline": False,
            "--prefer-online": False},
    "uvx": {"-q": False, "--quiet": False, "--isolated": False, "--refresh": False, "--no-cache": False,
            "--no-progress": False},
    "docker": {"-i": False, "--interactive": False, "--rm": False, "--init": False, "--read-only": False,
               "-e": True, "--env": True, "-v": True, "--volume": True, "--mount": True, "-w": True,
               "--workdir": True, "--network": True, "--net": True, "--tmpfs": True},
    "dnx": {"-y": False, "--yes": False, "--prerelease": False, "--allow-roll-forward": False,
            "--no-http-cache": False},
}

# Variables that configure a runner (or the loader under it) rather than the server: a
# registry entry may not set them. The proxy and CA ones are the person's own (monad
# passes theirs on as references, registry/install.py).
_RUNNER_ENV = re.compile(
    r"(?i)(PATH|HOME|SHELL|ENV|BASH_ENV|TMPDIR|LD_\w+|DYLD_\w+|NODE_(?!ENV$)\w+|NPM_CONFIG_\w+|COREPACK_\w+"
    r"|UV_\w+|PIP_\w+|PYTHON(PATH|HOME|STARTUP|USERBASE|INSPECT|EXECUTABLE)|VIRTUAL_ENV|DOTNET_\w+|NUGET_\w+"
    r"|DOCKER_\w+|(HTTPS?|ALL|NO|FTP)_PROXY|SSL_CERT_(FILE|DIR)|REQUESTS_CA_BUNDLE|CURL_CA_BUNDLE|GIT_\w+)")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# Every pattern is ASCII-only: `\d` and `\w` would take other scripts' digits and letters.
# npm (validate-npm-package-name, for new packages): lowercase, URL-safe, no leading `.`/`_`.
_NPM_NAME = re.compile(r"(?:@[a-z0-9~][a-z0-9._~-]*/)?[a-z0-9~][a-z0-9._~-]*")
# semver 2.0.0 (semver.org, the suggested regular expression)
_SEMVER = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
                     r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
                     r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?", re.ASCII)
# PEP 508 names
_PYPI_NAME = re.compile(r"[A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9]")
# OCI distribution spec (distribution/reference regexp.go): name, optional tag and digest.
_OCI_PATH = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_OCI_LABEL = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_OCI_DOMAIN = rf"{_OCI_LABEL}(?:\.{_OCI_LABEL})*(?::[0-9]+)?"
_OCI_TAG = r"\w[\w.-]{0,127}"
_OCI_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
_OCI_REFERENCE = re.compile(rf"(?:{_OCI_DOMAIN}/)?{_OCI_PATH}(?:/{_OCI_PATH})*(?::{_OCI_TAG})?(?:@{_OCI_DIGEST})?",
                            re.ASCII)
_OCI_TAG_ONLY = re.compile(_OCI_TAG, re.ASCII)
# NuGet package IDs (NuGet.Packaging PackageIdValidator) and versions (SemVer 2, or 4 parts).
_NUGET_ID = re.compile(r"\w+(?:[.-]\w+)*", re.ASCII)
_NUGET_VERSION = re.compile(r"\d+(?:\.\d+){1,3}(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?"
                            r"(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?", re.ASCII)
# A version that is only shown and recorded (a server's own, an mcpb package's).
_PLAIN_VERSION = re.compile(r"[0-9A-Za-z][0-9A-Za-z.+_~-]{0,254}")
# A server's registry name (the registry's schema: reverse-DNS namespace, `/`, a name).
SERVER_NAME = re.compile(r"[A-Za-z0-9.-]+/[A-Za-z0-9._-]+")

# Host folders a container must not be given: the host itself, its devices and docker's socket.
_HOST_PATHS = ("/", "/etc", "/proc", "/sys", "/dev", "/boot", "/root", "/run", "/var/run", "/var/lib/docker",
               "/usr", "/bin", "/sbin", "/lib", "/lib64")


def _pypi_version(version: str) -> bool:
    from packaging.version import InvalidVersion, Version

    if version.strip() != version:  # `Version` itself allows spaces around
        return False
    try:
        Version(version)
    except InvalidVersion:
        return False
    return True


def check_identity(kind: str, identifier: str, version: str) -> str | None:
    """Why `identifier` at `version` is not a package name of registry `kind`, or None."""
    if version == "latest":  # a tag that moves: what runs would not be what was read
        return "it names no exact `version` (`latest`)"
    if kind == "npm":
        if len(identifier) > 214 or not _NPM_NAME.fullmatch(identifier):
            return (f"`identifier` `{identifier}` is not an npm package name (lowercase letters, digits, `-._~`, "
                    f"at most 214, `@scope/name`)")
        if not _SEMVER.fullmatch(version):
            return f"`version` `{version}` is not an exact npm version (semver, such as 1.2.3)"
    elif kind == "pypi":
        if not _PYPI_NAME.fullmatch(identifier):
            return f"`identifier` `{identifier}` is not a PyPI project name (PEP 508: letters, digits, `._-`)"
        if not _pypi_version(version):
            return f"`version` `{version}` is not a PyPI version (PEP 440, such as 1.2.3)"
    elif kind == "oci":
        if not _OCI_REFERENCE.fullmatch(identifier) or len(identifier) > 255:
            return f"`identifier` `{identifier}` is not an OCI image reference (`[registry/]name[:tag][@digest]`)"
        if not _OCI_TAG_ONLY.fullmatch(version):
            return f"`version` `{version}` is not an OCI tag (letters, digits, `_.-`, at most 128)"
    elif kind == "nuget":
        if len(identifier) > 100 or not _NUGET_ID.fullmatch(identifier):
            return f"`identifier` `{identifier}` is not a NuGet package ID (letters, digits, `_`, `.` and `-` between)"
        if not _NUGET_VERSION.fullmatch(version):
            return f"`version` `{version}` is not a NuGet version (such as 1.2.3)"
    elif kind == "mcpb":
        if not identifier.startswith("https://") and not identifier.startswith("http://"):
            return f"`identifier` of an mcpb package must be the bundle's http(s) URL, not `{identifier}`"
        if not _PLAIN_VERSION.fullmatch(version):
            return f"`version` `{version}` is not a version (letters, digits, `.+_~-`)"
    return None


def check_version(version: str) -> str | None:
    """Why a server's own `version` is not one monad records and shows, or None."""
    if not _PLAIN_VERSION.fullmatch(version) or version == "latest":
        return f"its `version` `{version}` is not an exact version (letters, digits, `.+_~-`)"
    return None


def check_runner(kind: str, hint: Any) -> str | None:
    """Why `runtimeHint` `hint` is not the runner of registry type `kind`, or None."""
    runner = RUNNERS[kind]
    if hint is None or hint == "" or hint == runner:
        return None
    if runner is None:
        return f"`runtimeHint` `{hint}`: an mcpb package runs by its manifest, with no runner"
    return f"`runtimeHint` `{hint}` is not the runner of a {kind} package (`{runner}`)"


def check_env_name(name: str) -> str | None:
    """Why a server.json may not set the environment variable `name`, or None."""
    if not _ENV_NAME.fullmatch(name):
        return f"`{name}` is not an environment variable name"
    if _RUNNER_ENV.fullmatch(name):
        return f"`{name}` configures the runner or the loader, not the server"
    return None


def check_runtime_shape(runner: str, args: Sequence[Any]) -> str | None:
    """Why `runtimeArguments` (as the server.json writes them) cannot go to `runner`, or None:
    each must be a named option of `OPTIONS[runner]`, a switch without a value and an
    option with a value not left empty."""
    allowed = OPTIONS.get(runner, {})
    for i, arg in enumerate(args):
        where = f"runtimeArguments[{i}]"
        if not isinstance(arg, Mapping):
            return f"{where} is not an argument object"
        if arg.get("type") != "named":
            return f"{where} is positional: `{runner}` would take it for the package to run"
        name = arg.get("name")
        if not isinstance(name, str) or name not in allowed:
            known = ", ".join(f"`{o}`" for o in allowed) or "none"
            return f"{where} `{name}` is not an option monad lets a registry give `{runner}` (allowed: {known})"
        if not allowed[name] and arg.get("value") not in (None, ""):
            return f"{where} `{name}` takes no value"
        try:
            sources = _bind_sources(name, _registry_value(arg)) if runner == "docker" else []
        except ValueError as e:
            return f"{where}: {e}"
        for source in (s for s in sources if not TEMPLATE.fullmatch(s)):
            # `_HOST_PATHS` cannot list every folder that matters (`/home`, `$HOME`): the
            # host folder a container gets is the person's choice, never the entry's.
            return f"{where} `{name}` gives the container the host folder `{source}` by itself; only " \
                   f"a value the person gives may name one"
    return None


def _registry_value(arg: Mapping[str, Any]) -> str:
    """What an argument is when the person gives nothing: its fixed `value` with each
    `{variable}` that has a `default` filled by it, else its own `default`."""
    found = arg.get("variables")
    variables: Mapping[str, Any] = found if isinstance(found, Mapping) else {}

    def default(m: re.Match[str]) -> str:
        body = variables.get(m.group(1))
        found = body.get("default") if isinstance(body, Mapping) else None
        return str(found) if isinstance(found, (str, int, float)) else m.group(0)

    if "value" in arg:
        return TEMPLATE.sub(default, str(arg["value"]))
    return str(arg.get("default") or "")


TEMPLATE = re.compile(r"\{([A-Za-z0-9_.-]+)\}")  # a `{variable}` of server.json's values


def _bind_sources(option: str, value: str) -> list[str]:
    """The host paths a docker `-v`/`--volume` or `--mount` value binds into the container,
    read as docker reads them; empty when it binds none (a named or anonymous volume, a tmpfs).

    `-v SOURCE:TARGET[:MODE]` binds SOURCE when it reads as a path (`/`, `.`, `~`, `$…`, or
    `{…}` still to fill); a value without `:` is an anonymous volume. `--mount` is one CSV
    record of `key=value` fields (docker/cli `opts/mount.go`: Go's `encoding/csv`, so a field
    may be quoted); `type` defaults to `volume` and its value is case-insensitive; keys are
    compared case-insensitively, as docker before 24 read them; a `type` still to fill counts
    as a bind. Raises `ValueError` (one line) for a value docker could read another way: a
    line break, a record CSV refuses.
    """
    if "\n" in value or "\r" in value:
        raise ValueError(f"`{option}` value has a line break")
    if option in ("-v", "--volume"):
        source, colon, _ = value.partition(":")
        return [source] if colon and source.startswith(("/", "~", "$", ".", "{")) else []
    if option != "--mount":
        return []
    import csv

    try:
        fields = next(csv.reader([value], strict=True), [])
    except csv.Error as e:
        raise ValueError(f"`{option} {value}` is not one CSV record ({e})") from None
    pairs = [(k.lower(), v) for k, eq, v in (f.partition("=") for f in fields) if eq]
    kinds = [v.lower() for k, v in pairs if k == "type"]
    kind = kinds[-1] if kinds else "volume"
    if kind != "bind" and not TEMPLATE.search(kind):  # `type={t}` may be filled with `bind`
        return []
    return [v for k, v in pairs if k in ("source", "src")]


def check_runtime(runner: str, tokens: Sequence[str]) -> str | None:
    """Why the filled runtime arguments `tokens` (what goes between the runner and the
    package, values given) would change what runs, or None. Every option is one of
    `OPTIONS[runner]`; a value is present, does not start with `-`, and for docker does not
    hand the container the host (`--network host`, a bind of `/`, `/etc`, docker's socket)."""
    allowed = OPTIONS.get(runner, {})
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token not in allowed:
            return f"`{token}` would reach `{runner}` as an option or the package; it is not one monad allows"
        if allowed[token]:
            value = tokens[i + 1] if i + 1 < len(tokens) else ""
            if not value or value.startswith("-"):
                return f"`{token}` needs a value that is not an option (got `{value}`)"
            problem = _docker_value(token, value) if runner == "docker" else None
            if problem:
                return problem
            i += 1
        i += 1
    return None


def _docker_value(option: str, value: str) -> str | None:
    if option in ("--network", "--net") and (value == "host" or value.startswith("container:")):
        return f"`{option} {value}` shares the host's (or another container's) network"
    try:
        sources = _bind_sources(option, value)
    except ValueError as e:
        return str(e)
    for source in (s for s in sources if s.startswith(("/", "~"))):
        path = "/" + "/".join(p for p in source.split("/") if p not in ("", "."))
        if ".." in path.split("/"):
            return f"`{option} {value}`: a host folder with `..` in it"
        if any(path == h or (h != "/" and path.startswith(h + "/")) for h in _HOST_PATHS) or "docker.sock" in path:
            return f"`{option} {value}` gives the container the host's `{path}`"
    return None


__all__ = ["OPTIONS", "RUNNERS", "SERVER_NAME", "check_env_name", "check_identity", "check_runner", "check_runtime",
           "check_runtime_shape", "check_version"]
