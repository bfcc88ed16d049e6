"""registry/runners.py: the naming rules accept the names real registries hold and nothing
that reads as an option, a URL or two words; runtime arguments only as the runner's own
harmless options."""

from __future__ import annotations

import pytest

from monad_cli.registry.runners import check_env_name, check_identity, check_runtime

GOOD = [
    ("npm", "@modelcontextprotocol/server-memory", "2026.8.31"),
    ("npm", "mcp-remote", "0.1.18-beta.2+build.7"),
    ("pypi", "mcp-server-time", "2026.10.19"),
    ("pypi", "Mcp_Server.Fetch", "1.0.post1"),
    ("pypi", "x", "2.0rc1"),
    ("oci", "ghcr.io/github/github-mcp-server", "0.9.0"),
    ("oci", "localhost:5000/team/tool:1.2", "1.2"),
    ("oci", "docker.io/library/alpine@sha256:" + "a" * 64, "3.20"),
    ("nuget", "Microsoft.Extensions.Mcp", "1.0.0-preview.1"),
    ("mcpb", "https://github.com/acme/rug/releases/download/v1/rug.mcpb", "1.0.0"),
]
BAD = [
    ("npm", "-y", "1.0.0"), ("npm", "Upper", "1.0.0"), ("npm", ".hidden", "1.0.0"), ("npm", "_under", "1.0.0"),
    ("npm", "a b", "1.0.0"), ("npm", "x" * 215, "1.0.0"), ("npm", "ok", "^1.0.0"), ("npm", "ok", "latest"),
    ("npm", "ok", "1.0.0 x"), ("pypi", "-r", "1.0"), ("pypi", "name-", "1.0"), ("pypi", "a b", "1.0"),
    ("pypi", "git+https://example.com/x", "1.0"), ("pypi", "ok", " 1.0"), ("pypi", "ok", "1.0; os_name=='posix'"),
    ("pypi", "ok", ">=1.0"), ("oci", "--privileged", "1"), ("oci", "https://ghcr.io/x", "1"),
    ("oci", "Upper/Case", "1"), ("oci", "ok/img", "-tag"), ("oci", "ok/img", "latest"), ("nuget", "-x", "1.0.0"),
    ("nuget", "ok", "1"),
    ("mcpb", "file:///etc/passwd", "1.0.0"), ("mcpb", "https://example.com/x.mcpb", "1 0"),
]


@pytest.mark.parametrize(("kind", "identifier", "version"), GOOD)
def test_real_names_and_versions_are_accepted(kind: str, identifier: str, version: str) -> None:
    assert check_identity(kind, identifier, version) is None


@pytest.mark.parametrize(("kind", "identifier", "version"), BAD)
def test_options_urls_and_words_are_refused(kind: str, identifier: str, version: str) -> None:
    assert check_identity(kind, identifier, version) is not None


def test_runtime_arguments_are_only_the_runners_harmless_options() -> None:
    assert check_runtime("npx", ["-y", "--quiet"]) is None
    assert check_runtime("docker", ["-e", "A=1", "-v", "/home/me/data:/data", "--mount",
                                    "type=bind,src=/srv/shared,dst=/shared", "--network", "bridge"]) is None
    assert check_runtime("npx", ["--call", "sh"]) is not None
    assert check_runtime("npx", ["-y", "evil"]) is not None  # a switch's "value" would be the package
    assert check_runtime("docker", ["-e"]) is not None  # the image would become its value
    assert check_runtime("docker", ["-v", "/etc:/etc"]) is not None
    assert check_runtime("docker", ["-v", "/home/../etc:/x"]) is not None
    assert check_runtime("docker", ["--network", "container:db"]) is not None
    # `--mount` read as docker reads it (docker/cli opts/mount.go): CSV fields, `type` in any case.
    assert check_runtime("docker", ["--mount", "type=BIND,src=/etc,dst=/e"]) is not None
    assert check_runtime("docker", ["--mount", 'type=bind,"src=/var/run/docker.sock",dst=/s']) is not None
    assert check_runtime("docker", ["--mount", "TYPE=bind,Source=/proc,dst=/p"]) is not None
    assert check_runtime("docker", ["--mount", "type=bind,src=/srv/a,dst=/a\ntype=bind,src=/,dst=/r"]) is not None
    assert check_runtime("docker", ["--mount", "type=volume,src=data,dst=/data"]) is None
    assert check_runtime("docker", ["-v", "/srv/data"]) is None  # an anonymous volume at /srv/data
    assert check_runtime("uvx", ["--with", "evil"]) is not None


def test_runner_configuration_is_not_an_environment_a_registry_sets() -> None:
    for name in ("API_KEY", "NODE_ENV", "PYTHONUNBUFFERED", "GITHUB_TOKEN"):
        assert check_env_name(name) is None, name
    for name in ("npm_config_registry", "NPM_CONFIG_CALL", "NODE_OPTIONS", "LD_PRELOAD", "PATH", "UV_INDEX_URL",
                 "PIP_INDEX_URL", "PYTHONPATH", "DOCKER_HOST", "HTTPS_PROXY", "https_proxy", "SSL_CERT_FILE",
                 "1BAD", "A-B"):
        assert check_env_name(name) is not None, name
