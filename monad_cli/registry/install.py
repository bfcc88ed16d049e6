"""`monad mcp add io.github.owner/name[@VERSION]` and `monad mcp add ./x.mcpb` (docs/registry.md).

Both end in one atom written by `config.edits.add_server` (validated, locked, atomic,
0600), carrying where it came from (`registry = {name, version, package, registry}`: the
exact version, never "latest") and `trust.pinOnFirstUse = true`: the supervisor writes the
first tool set it sees as `trust.pinnedToolHash`, so a later change is refused until a
person vets it. Nothing is written when a value is missing, a hash does not match or the
name is taken: a bundle unpacked for a refused install is removed again.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from monad_cli.core.errors import InvalidInput, MonadError, Unavailable
from monad_cli.core.messages import transport_error
from monad_cli.core.paths import Paths
from monad_cli.registry import bundles, serverjson
from monad_cli.registry.api import Entry, Registries, http_client
from monad_cli.registry.variables import Ask, gather

# The first run of `npx -y`/`uvx`/`docker run` downloads the package: more than the default 10 s.
FETCH_TIMEOUT_S = 120
BUNDLES_DIR = "bundles"
MAX_DOWNLOAD_BYTES = 256 * 1024 * 1024


def split_ref(ref: str) -> tuple[str, str]:
    """`io.github.owner/name@1.2.3` → (name, version); no `@VERSION` is `latest`."""
    name, sep, version = ref.rpartition("@") if "@" in ref.split("/", 1)[-1] else (ref, "", "latest")
    if sep and not version:
        raise InvalidInput(f"`{ref}`: nothing after `@`; write NAME@VERSION or just NAME")
    return name, version


@functools.cache
def docker_works() -> str | None:
    """None when `docker info` answers (so `docker run` can work), else why not."""
    try:
        proc = subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True,
                              timeout=20, text=True)
    except (OSError, subprocess.TimeoutExpired):
        return "`docker info` did not answer; start Docker, or choose another package (--package N)"
    if proc.returncode != 0:
        return "docker is installed but its daemon does not answer (`docker info` failed); start Docker, " \
               "or choose another package (--package N)"
    return None


def _extras(defn: dict[str, Any], given: Mapping[str, Mapping[str, str]], declared: set[tuple[str, str]]) -> None:
    """`--env`/`--header` values no variable names: passed on as written."""
    for kind, fld, transport in (("env", "env", "stdio"), ("header", "headers", "http")):
        extra = {k: v for k, v in given.get(kind, {}).items() if (kind, k) not in declared}
        if not extra:
            continue
        if defn["transport"] != transport:
            flag = "--env" if kind == "env" else "--header"
            raise InvalidInput(f"{flag} is for {transport} servers; this one runs over {defn['transport']}")
        defn[fld] = {**defn.get(fld, {}), **extra}


def _network_env(defn: dict[str, Any], environ: Mapping[str, str]) -> None:
    """References to the variables `npx`/`uvx` need to reach their package index from behind
    a proxy or a private CA, for those set here (the server's environment is otherwise only
    HOME LOGNAME PATH SHELL TERM USER, docs/atoms.md), as the `computer` preset does."""
    from monad_cli.config.presets import NETWORK_ENV

    names = [*NETWORK_ENV, "NODE_EXTRA_CA_CERTS",
             *sorted(k for k in environ if k.startswith(("UV_", "npm_config_", "NPM_CONFIG_")))]
    env = defn.setdefault("env", {})
    for var in names:
        if var in environ and var not in env:
            env[var] = "${" + var + "}"
    if not env:
        del defn["env"]


def _write(paths: Paths, name: str, defn: dict[str, Any], *, force: bool) -> str:
    from monad_cli.config.edits import add_server

    defn.setdefault("trust", {})["pinOnFirstUse"] = True
    return add_server(paths, name, defn, force=force)


def _shown(defn: Mapping[str, Any], variables: list[serverjson.Variable],
           values: Mapping[tuple[str, str], str], *, deprecated: bool) -> dict[str, Any]:
    """A summary's `runs`, `variables` (whether each got a value; never a secret's value),
    `deprecated` and `warnings`."""
    secrets = [value for v in variables if v.secret and (value := values.get((v.kind, v.key)))]
    shown = [{"key": v.key, "kind": v.kind, "secret": v.secret, "set": value is not None,
             "value": None if value is None or v.secret else value}
             for v in variables for value in [values.get((v.kind, v.key))]]
    return {"runs": serverjson.command_line(defn, secrets), "variables": shown, "deprecated": deprecated,
            "warnings": secrets_in_args(defn, variables, values)}


def install_by_name(paths: Paths, ref: str, *, as_name: str | None, package: int | None, remote: int | None,
                    given: Mapping[str, Mapping[str, str]], ask: Ask | None, force: bool) -> dict[str, Any]:
    """Install `ref` from the first registry that has it. Returns `{"name", "server",
    "version", "option", "package", "transport", "path", "variables", "deprecated"}` (no
    secret values).

    Raises `NotFound` (no registry has it), `Unavailable` (a registry or download failed),
    `InvalidInput` (nothing runnable here, missing values, a bad bundle), `Conflict` (the
    atom exists; `force` replaces it)."""
    name, version = split_ref(ref)
    with Registries(paths) as regs:
        entry = regs.server(name, version)
    atom = as_name or serverjson.atom_name(entry.name)
    defn, summary, made = build(paths, entry, atom, package=package, remote=remote, given=given, ask=ask)
    with _removed_on_failure(made):
        summary["path"] = _write(paths, atom, defn, force=force)
    return summary


@contextlib.contextmanager
def _removed_on_failure(made: Path | None) -> Iterator[None]:
    """Remove the bundle folder an install unpacked (`made`; None: none) if the block fails."""
    try:
        yield
    except BaseException:
        if made is not None:
            shutil.rmtree(made, ignore_errors=True)
        raise


def build(paths: Paths, entry: Entry, atom: str, *, package: int | None, remote: int | None,
          given: Mapping[str, Mapping[str, str]], ask: Ask | None,
          recorded: str | None = None) -> tuple[dict[str, Any], dict[str, Any], Path | None]:
    """(definition, summary, the bundle folder this call unpacked or None) for `entry`.
    `recorded` (`registry.package` of an installed atom) picks the same package again.
    A `server.json` or an option `serverjson` refuses is `InvalidInput` before anything
    is asked, downloaded or written."""
    server = entry.server
    label = f"{entry.name}@{entry.version}"
    refused = serverjson.server_refusal(server)
    if refused:
        raise InvalidInput(f"registry entry `{entry.name}` is refused: {refused}; nothing was installed")
    opts = serverjson.options(server, docker_works=docker_works)
    if recorded is not None and package is None and remote is None:
        same = next((o for o in opts if package_key(o) == recorded), None)
        if same is not None:
            package, remote = (same.index, None) if same.kind == "package" else (None, same.index)
    option = serverjson.choose(opts, package=package, remote=remote)
    origin = {"name": entry.name, "version": entry.version, "package": package_key(option),
              "registry": entry.registry}
    made: Path | None = None
    if option.kind == "package" and option.body.get("registryType") == "mcpb":
        data = download(str(option.body["identifier"]), what=f"{label}'s bundle")
        bundles.check_sha256(data, str(option.body["fileSha256"]), what=f"{label}'s bundle")
        manifest = bundles.read_manifest(data, what=f"{label}'s bundle")
        variables = bundles.user_variables(manifest)
        values = gather(variables, given, ask=ask, server=label)
        folder, made = _unpack(paths, atom, manifest, data, what=f"{label}'s bundle")
        defn = bundles.definition(manifest, folder, {k: v for (_, k), v in values.items()})
        if isinstance(server.get("description"), str):
            defn["description"] = server["description"]
        origin["bundle"] = str(folder)
    else:
        variables = serverjson.variables(option)
        values = gather(variables, given, ask=ask, server=label)
        defn = serverjson.definition(server, option, values)
    with _removed_on_failure(made):
        _extras(defn, given, {(v.kind, v.key) for v in variables})
    if defn["transport"] == "stdio":
        defn["timeout"] = FETCH_TIMEOUT_S
        if option.kind == "package" and option.body.get("registryType") in ("npm", "pypi", "nuget"):
            _network_env(defn, os.environ)
    defn["registry"] = {**origin, **record(variables, values)}
    summary = {"name": atom, "server": entry.name, "version": entry.version, "option": option.where,
               "package": option.label, "transport": defn["transport"], "path": None,
               **_shown(defn, variables, values, deprecated=entry.status == "deprecated")}
    return defn, summary, made


def record(variables: list[serverjson.Variable], values: Mapping[tuple[str, str], str]) -> dict[str, Any]:
    """What the `registry` table keeps of an install, for `upgrade` (`known_values`): `asked`,
    every variable asked for as `KIND:KEY`; `values`, the arguments' values (an environment
    variable's or a header's is in `env`/`headers` under its own name); `secrets`, the
    secret arguments' values, masked wherever the definition is shown (core/redact.py)."""
    out: dict[str, Any] = {"asked": [f"{v.kind}:{v.key}" for v in variables]}
    for v in variables:
        value = values.get((v.kind, v.key))
        if v.kind == "arg" and value is not None:
            out.setdefault("secrets" if v.secret else "values", {})[v.key] = value
    return out


def secrets_in_args(defn: Mapping[str, Any], variables: list[serverjson.Variable],
                    values: Mapping[tuple[str, str], str]) -> list[str]:
    """A warning per secret value that lands in `args` where redaction cannot see it (not
    after a secret-named flag): arguments show in `get` and in the process list."""
    from monad_cli.core.redact import redact_args

    shown = " ".join(redact_args(str(a) for a in defn.get("args") or []))
    out = []
    for v in variables:
        value = values.get((v.kind, v.key))
        if v.secret and value and "$" not in value and value in shown:
            out.append(f"the secret `{v.key}` is passed as a command-line argument, which `monad mcp get` shows; "
                       f"give a reference instead (`--arg {v.key}='${{VAR}}'`). Either way, as an argument it is "
                       f"in the process list, which every account on this machine can read")
    return out


def package_key(option: serverjson.Option) -> str:
    """`registry.package`: `npm:@scope/pkg`, `pypi:name`, `mcpb:URL`, `remote:streamable-http`."""
    if option.kind == "remote":
        return f"remote:{option.body.get('type')}"
    return f"{option.body.get('registryType')}:{option.body.get('identifier')}"


def known_values(raw: Mapping[str, Any], old: Entry | None) -> tuple[dict[str, str], set[tuple[str, str]]]:
    """For `upgrade`: (the argument values the installed atom `raw` was given, every (kind,
    key) its version asked for), from what its `registry` table recorded (`record`). The
    values count only while the atom is still what they made of the installed version
    (its server.json `old`, or its unpacked bundle's manifest): an atom edited by hand since
    gives none, and they are asked again. Without `old` (the registry dropped that version)
    there is nothing to compare with, and the records are taken as they are."""
    origin: Mapping[str, Any] = raw["registry"] if isinstance(raw.get("registry"), Mapping) else {}
    values = {str(k): str(v) for table in ("values", "secrets") if isinstance(origin.get(table), Mapping)
              for k, v in origin[table].items()}
    asked = {(kind, key) for kind, _, key in (str(a).partition(":") for a in origin.get("asked") or []) if key}
    if values and not _still_made(raw, origin, old, values):
        values = {}
    return values, asked


def _still_made(raw: Mapping[str, Any], origin: Mapping[str, Any], old: Entry | None,
                values: Mapping[str, str]) -> bool:
    """Whether `raw`'s command, arguments, URL, and the environment variables and headers
    the installed version sets, are what `values` made of it."""
    made: Mapping[str, Any]
    if origin.get("bundle"):
        folder = Path(str(origin["bundle"]))
        try:
            manifest = json.loads((folder / bundles.MANIFEST).read_text())
            made = bundles.definition(manifest, folder, values)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return False
    elif old is None:
        return True
    else:
        option = next((o for o in serverjson.options(old.server, which=lambda _: "found")
                       if package_key(o) == origin.get("package")), None)
        given = {("arg", k): v for k, v in values.items()}
        for kind, fld in (("env", "env"), ("header", "headers")):
            if isinstance(raw.get(fld), Mapping):
                given |= {(kind, str(k)): str(v) for k, v in raw[fld].items()}
        if option is None:
            return False
        try:
            made = serverjson.definition(old.server, option, given)
        except InvalidInput:
            return False
    own = all(made.get(k) == raw.get(k) for k in ("command", "args", "url"))
    return own and all(isinstance(raw.get(f), Mapping) and raw[f].get(n) == v
                       for f in ("env", "headers") for n, v in (made.get(f) or {}).items())


def install_bundle_file(paths: Paths, file: str, *, as_name: str | None, given: Mapping[str, Mapping[str, str]],
                        ask: Ask | None, force: bool) -> dict[str, Any]:
    """Install a local `.mcpb` file. Returns what `install_by_name` returns."""
    path = Path(file).expanduser()
    try:
        data = path.read_bytes()
    except OSError as e:
        raise InvalidInput(f"cannot read the bundle `{file}`: {e.strerror or e}") from None
    what = f"bundle `{file}`"
    manifest = bundles.read_manifest(data, what=what)
    atom = as_name or serverjson.atom_name(str(manifest["name"]))
    variables = bundles.user_variables(manifest)
    label = f"{manifest['name']}@{manifest['version']}"
    values = gather(variables, given, ask=ask, server=label)
    folder, made = _unpack(paths, atom, manifest, data, what=what)
    with _removed_on_failure(made):
        defn = bundles.definition(manifest, folder, {k: v for (_, k), v in values.items()})
        _extras(defn, given, {(v.kind, v.key) for v in variables})
        defn["registry"] = {"name": str(manifest["name"]), "version": str(manifest["version"]),
                            "package": f"mcpb:sha256:{bundles.sha256_hex(data)}", "bundle": str(folder),
                            **record(variables, values)}
        written = _write(paths, atom, defn, force=force)
    return {"name": atom, "server": manifest["name"], "version": manifest["version"], "option": "bundle",
            "package": f"mcpb {path.name}", "transport": "stdio", "path": written,
            **_shown(defn, variables, values, deprecated=False)}


def _unpack(paths: Paths, atom: str, manifest: Mapping[str, Any], data: bytes, *,
            what: str) -> tuple[Path, Path | None]:
    """The bundle's folder `bundles/ATOM/VERSION-SHA12` and, if this call made it, the same
    path again (to remove on a refused install); an identical bundle unpacked before is reused."""
    version = serverjson.atom_name(str(manifest["version"]))
    folder = paths.home / BUNDLES_DIR / atom / f"{version}-{bundles.sha256_hex(data)[:12]}"
    if folder.is_dir():
        return folder, None
    folder.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    bundles.unpack(data, folder, what=what)
    return folder, folder


def download(url: str, *, what: str) -> bytes:
    """The bytes at `url` (https, or http on loopback for tests and mirrors), at most 256 MiB."""
    import httpx2

    from monad_cli.config.urls import check_url

    problem = check_url(url)
    if problem:
        raise InvalidInput(f"{what}: `{url}`: {problem}")
    try:
        with http_client(60.0) as http, http.stream("GET", url) as response:
            if response.status_code != 200:
                raise Unavailable(f"{what}: HTTP {response.status_code} from its URL; nothing was installed")
            data = bytearray()
            for chunk in response.iter_bytes():
                data += chunk
                if len(data) > MAX_DOWNLOAD_BYTES:
                    raise InvalidInput(f"{what} is larger than {MAX_DOWNLOAD_BYTES // 2**20} MiB; refused")
            return bytes(data)
    except httpx2.HTTPError as e:
        raise Unavailable(f"{what}: download failed ({transport_error(e)}); nothing was installed") from None


__all__ = ["MonadError", "docker_works", "download", "install_bundle_file", "install_by_name", "split_ref"]
