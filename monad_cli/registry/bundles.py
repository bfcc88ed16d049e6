"""MCP Bundles (`.mcpb`): a zip with `manifest.json` (modelcontextprotocol/mcpb, MANIFEST.md).

    {"manifest_version": "0.3", "name": "...", "version": "1.0.0",
     "server": {"type": "node" | "python" | "binary" | "uv", "entry_point": "server/index.js",
                "mcp_config": {"command": "node", "args": ["${__dirname}/server/index.js"],
                               "env": {"API_KEY": "${user_config.api_key}"},
                               "platform_overrides": {"linux": {...}}}},
     "user_config": {"api_key": {"type": "string", "sensitive": true, "required": true}},
     "compatibility": {"platforms": ["linux", ...]}}

A bundle is checked (its sha256 against the registry's `fileSha256` when it came from one;
every member inside the archive, no links), unpacked into a fresh folder under
`MONAD_HOME/bundles/NAME/` and only then made the definition's home: a bad bundle leaves
nothing behind. `mcp_config` is run as written, with `${__dirname}` (the unpacked folder),
`${/}` and `${user_config.KEY}` filled in; `${HOME}` stays a monad reference, expanded by the
supervisor. Without `mcp_config`, the server type says how: `node ENTRY`, `python3 ENTRY`,
`ENTRY` for a binary, `uv run --directory DIR ENTRY` for `uv`. A `sensitive` user_config
field is a secret variable (asked without echo, stored 0600, shown as `***`).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import stat
import sys
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from monad_cli.core.errors import InvalidInput
from monad_cli.registry.serverjson import Variable

MANIFEST = "manifest.json"
SERVER_TYPES = ("node", "python", "binary", "uv")
MAX_BUNDLE_BYTES = 512 * 1024 * 1024  # unpacked: a bundle that claims more is refused before writing
_PLACEHOLDER = re.compile(r"\$\{([^}]*)\}")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def check_sha256(data: bytes, expected: str, *, what: str) -> None:
    """`InvalidInput` when `data` does not hash to `expected` (`fileSha256`, hex)."""
    got = sha256_hex(data)
    if got != expected.lower().removeprefix("sha256:"):
        raise InvalidInput(f"{what}: its sha256 is {got}, not the `fileSha256` {expected} the registry gives; "
                           f"nothing was installed")


def read_manifest(data: bytes, *, what: str) -> dict[str, Any]:
    """The bundle's manifest, checked: `server.type` one of node/python/binary/uv, an
    `entry_point` or an `mcp_config.command`, and this platform among `compatibility.platforms`."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            raw = z.read(MANIFEST)
    except zipfile.BadZipFile:
        raise InvalidInput(f"{what} is not a zip archive (an .mcpb file is one)") from None
    except KeyError:
        raise InvalidInput(f"{what} has no `{MANIFEST}` at its top") from None
    try:
        manifest = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InvalidInput(f"{what}: `{MANIFEST}` is not JSON ({e})") from None
    if not isinstance(manifest, dict):
        raise InvalidInput(f"{what}: `{MANIFEST}` must be an object")
    server = manifest.get("server")
    if not isinstance(server, Mapping) or server.get("type") not in SERVER_TYPES:
        raise InvalidInput(f"{what}: `{MANIFEST}` needs `server.type`, one of {', '.join(SERVER_TYPES)}")
    config = server.get("mcp_config")
    if not isinstance(server.get("entry_point"), str) and not (isinstance(config, Mapping)
                                                               and isinstance(config.get("command"), str)):
        raise InvalidInput(f"{what}: `{MANIFEST}` needs `server.entry_point` or `server.mcp_config.command`")
    platforms = (manifest.get("compatibility") or {}).get("platforms")
    if isinstance(platforms, list) and platforms and sys.platform not in platforms:
        raise InvalidInput(f"{what} runs on {', '.join(map(str, platforms))}, not on {sys.platform}")
    for key in ("name", "version"):
        if not isinstance(manifest.get(key), str) or not manifest[key]:
            raise InvalidInput(f"{what}: `{MANIFEST}` needs a `{key}`")
    return manifest


def user_variables(manifest: Mapping[str, Any]) -> list[Variable]:
    """`user_config` as variables (given with `--arg KEY=…` or `--env KEY=…`)."""
    out = []
    fields = manifest.get("user_config")
    for key, body in (fields.items() if isinstance(fields, Mapping) else ()):
        if not isinstance(body, Mapping):
            continue
        default = body.get("default")
        if isinstance(default, list):
            default = os.pathsep.join(str(d) for d in default) if default else None
        elif isinstance(default, bool):
            default = "true" if default else "false"
        kind = body.get("type")
        fmt = {"number": "number", "boolean": "boolean", "directory": "filepath", "file": "filepath"}.get(
            str(kind), "string")
        out.append(Variable(key=str(key), kind="arg", where=f"user_config.{key}",
                            description=str(body.get("description") or body.get("title") or ""),
                            required=body.get("required") is True, secret=body.get("sensitive") is True,
                            default=None if default is None else str(default), format=fmt))
    return out


def unpack(data: bytes, dest: Path, *, what: str) -> None:
    """Extract the archive into `dest` (which must not exist): into a temporary sibling first,
    renamed into place once every member is out, so a refused bundle leaves nothing. Members
    with an absolute path, a `..` part or a link are refused; executable bits are kept."""
    tmp = dest.parent / f".{dest.name}.partial"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            members = z.infolist()
            if sum(m.file_size for m in members) > MAX_BUNDLE_BYTES:
                raise InvalidInput(f"{what} unpacks to more than {MAX_BUNDLE_BYTES // 2**20} MiB; refused")
            for m in members:
                parts = Path(m.filename).parts
                mode = m.external_attr >> 16
                if m.filename.startswith(("/", "\\")) or ".." in parts or stat.S_ISLNK(mode):
                    raise InvalidInput(f"{what}: member `{m.filename}` points outside the bundle; refused")
            tmp.mkdir(parents=True, mode=0o700)
            for m in members:
                target = tmp.joinpath(*Path(m.filename).parts)
                if m.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                with z.open(m) as src, open(target, "wb") as out:
                    shutil.copyfileobj(src, out)
                if (m.external_attr >> 16) & 0o111:
                    target.chmod(0o755)
        os.replace(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _fill(text: str, folder: Path, values: Mapping[str, str]) -> str:
    def sub(m: re.Match[str]) -> str:
        inner = m.group(1)
        if inner == "__dirname":
            return str(folder).replace("$", "$$")
        if inner in ("/", "pathSeparator"):
            return os.sep
        if inner.startswith("user_config."):
            return values.get(inner[len("user_config."):], "")
        if inner in ("DESKTOP", "DOCUMENTS", "DOWNLOADS"):
            return "${HOME}/" + inner.capitalize()
        return m.group(0)  # ${HOME} and the like: a monad reference, expanded by the supervisor

    return _PLACEHOLDER.sub(sub, text)


def definition(manifest: Mapping[str, Any], folder: Path, values: Mapping[str, str]) -> dict[str, Any]:
    """The stdio definition that runs the unpacked bundle in `folder` with the user_config `values`."""
    server = manifest["server"]
    config = dict(server.get("mcp_config") or {})
    overrides = config.pop("platform_overrides", None)
    if isinstance(overrides, Mapping) and isinstance(overrides.get(sys.platform), Mapping):
        config.update(overrides[sys.platform])
    entry = str(server.get("entry_point") or "")
    if not isinstance(config.get("command"), str):
        kind = server["type"]
        entry_path = str(folder / entry)
        config["command"], config["args"] = {
            "node": ("node", [entry_path]), "python": ("python3", [entry_path]), "binary": (entry_path, []),
            "uv": ("uv", ["run", "--directory", str(folder), entry_path])}[kind]
    command = _fill(str(config["command"]), folder, values)
    if command == "python" and shutil.which("python") is None and shutil.which("python3"):
        command = "python3"  # Debian and others ship no `python`
    if not os.path.isabs(command) and ("/" in command or command == entry):
        command = str(folder / command)  # a binary named relative to the bundle
    args: list[str] = []
    for a in config.get("args") or []:
        m = _PLACEHOLDER.fullmatch(str(a))
        if m and m.group(1).startswith("user_config.") and os.pathsep in values.get(m.group(1)[12:], ""):
            args += values[m.group(1)[12:]].split(os.pathsep)  # `multiple`: one argument each
        else:
            args.append(_fill(str(a), folder, values))
    defn: dict[str, Any] = {"transport": "stdio", "command": command, "cwd": str(folder)}
    if args:
        defn["args"] = args
    env = {str(k): filled for k, v in (config.get("env") or {}).items()
           if (filled := _fill(str(v), folder, values)) != ""}  # an optional field left empty is not set
    if env:
        defn["env"] = env
    description = manifest.get("description")
    if isinstance(description, str) and description:
        defn["description"] = description
    return defn


__all__ = ["check_sha256", "definition", "read_manifest", "sha256_hex", "unpack", "user_variables"]
