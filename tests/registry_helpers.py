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
    slug = doc["name"].replace("/", "_") + "-" + doc["version"]
    (folder / f"{slug}.json").write_text(json.dumps(doc, indent=2))


def build_bundle(path: Path, *, version: str = "1.0.0", shape: dict[str, Any] | None = None) -> str:
    """A python `.mcpb` running tests/servers/testserver.py; `shape` is written into the
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
        z.write(SERVERS / "testserver.py", "server/main.py")
        if shape is not None:
            z.writestr("shape.json", json.dumps(shape))
    return hashlib.sha256(path.read_bytes()).hexdigest()
