"""`monad mcp search` and `add NAME` against a real HTTP registry on loopback (tests/servers/
registry.py, paginated), without the supervisor: what gets written, what is refused and why."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from tests.registry_helpers import (
    MEMORY_VERSION,
    REGISTRY_SCRIPT,
    TIME_VERSION,
    build_bundle,
    bundle_server,
    memory_server,
    oci_and_npm_server,
    publish,
    remote_server,
    time_server,
)

SENTINEL = "sk-sentinel-8d1f0c"


@pytest.fixture
def registry(servers: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path]:
    folder = tmp_path / "registry"
    for doc in (time_server(), memory_server(), remote_server(), oci_and_npm_server()):
        publish(folder, doc)
    base = servers.start(REGISTRY_SCRIPT, str(folder), "--page", "2")
    monkeypatch.setenv("MONAD_REGISTRY_URL", base)
    return base, folder


def _atom(home: Path, name: str) -> dict[str, Any]:
    return tomllib.loads((home / "atoms" / "mcp" / f"{name}.toml").read_text())


def test_search_follows_cursors_and_prints_json(cli: Any, registry: tuple[str, Path]) -> None:
    r = cli("mcp", "search", "", "--json")
    assert r.code == 0, r
    names = [row["name"] for row in r.json()]
    # Four servers on pages of two: every page was read.
    assert sorted(names) == sorted(["io.github.modelcontextprotocol/time", "io.github.modelcontextprotocol/memory",
                                    "com.example/weather", "io.github.example/database"])
    time_row = next(row for row in r.json() if row["name"].endswith("/time"))
    # The exact command line `add` writes, the default filled in.
    assert time_row["version"] == TIME_VERSION
    assert time_row["runs"] == f"uvx mcp-server-time=={TIME_VERSION} --local-timezone UTC"
    assert time_row["packages"][0]["transport"] == "stdio"
    r = cli("mcp", "search", "weather")
    assert r.code == 0 and "com.example/weather" in r.out and "streamable-http https://mcp.example.com/mcp" in r.out, r
    assert "time" not in r.out
    r = cli("mcp", "search", "nothing-like-this")
    assert r.code == 0 and "no server matches" in r.err, r


def test_registries_come_from_settings_and_the_env_overrides(cli: Any, registry: tuple[str, Path], servers: Any,
                                                             tmp_path: Path, monad_home: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    base, _ = registry
    private = tmp_path / "private"
    publish(private, {**remote_server("https://internal.example.com/mcp"), "name": "com.example.internal/tickets",
                      "description": "Tickets, internal"})
    second = servers.start(REGISTRY_SCRIPT, str(private))
    monkeypatch.delenv("MONAD_REGISTRY_URL")
    monad_home.mkdir(parents=True, exist_ok=True)
    (monad_home / "settings.toml").write_text(f'[registry]\nurls = ["{base}", "{second}/"]\n')
    names = {row["name"] for row in cli("mcp", "search", "", "--json").json()}
    assert "com.example.internal/tickets" in names and "com.example/weather" in names
    monkeypatch.setenv("MONAD_REGISTRY_URL", second)
    names = {row["name"] for row in cli("mcp", "search", "", "--json").json()}
    assert names == {"com.example.internal/tickets"}
    (monad_home / "settings.toml").write_text('[registry]\nurls = "not a list"\n')
    monkeypatch.delenv("MONAD_REGISTRY_URL")
    r = cli("mcp", "search", "x")
    assert r.code == 2 and "`registry.urls` must be a list of strings" in r.err and "Traceback" not in r.err, r


def test_add_by_name_writes_the_exact_version_and_a_first_use_pin(cli: Any, registry: tuple[str, Path],
                                                                   monad_home: Path) -> None:
    base, _ = registry
    r = cli("mcp", "add", "io.github.modelcontextprotocol/time", "--json")
    assert r.code == 0, r
    assert r.json()["name"] == "time" and r.json()["version"] == TIME_VERSION
    atom = _atom(monad_home, "time")
    assert atom["command"] == "uvx"
    assert atom["args"] == [f"mcp-server-time=={TIME_VERSION}", "--local-timezone", "UTC"]  # the default
    # Where it came from, and what it was given (read back by `upgrade`).
    assert atom["registry"] == {"name": "io.github.modelcontextprotocol/time", "version": TIME_VERSION,
                                "package": "pypi:mcp-server-time", "registry": base,
                                "asked": ["arg:local-timezone"], "values": {"local-timezone": "UTC"}}
    assert atom["trust"] == {"pinOnFirstUse": True}
    # An explicit version, another name, an argument given.
    r = cli("mcp", "add", f"io.github.modelcontextprotocol/time@{TIME_VERSION}", "--name", "clock",
            "--arg", "local-timezone=Europe/Paris")
    assert r.code == 0 and "added server `clock`" in r.err, r
    assert _atom(monad_home, "clock")["args"][-1] == "Europe/Paris"
    r = cli("mcp", "add", "io.github.modelcontextprotocol/time@1999.1.1")
    assert r.code == 1 and "version `1999.1.1` is in no registry asked" in r.err, r
    r = cli("mcp", "add", "io.github.modelcontextprotocol/memory")
    assert r.code == 0, r
    atom = _atom(monad_home, "memory")
    assert atom["command"] == "npx" and atom["args"] == ["-y", f"@modelcontextprotocol/server-memory@{MEMORY_VERSION}"]
    assert "MEMORY_FILE_PATH" not in atom.get("env", {})  # an optional variable with no default is left out


def test_npx_and_uvx_get_the_network_settings_as_references(cli: Any, registry: tuple[str, Path], monad_home: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Behind a proxy or a private CA `uvx` and `npx` need these; the value stays in the
    supervisor's environment, the atom names it."""
    import ssl

    monkeypatch.setenv("SSL_CERT_FILE", ssl.get_default_verify_paths().openssl_cafile)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    monkeypatch.setenv("UV_INDEX_URL", "https://mirror.invalid/simple")
    assert cli("mcp", "add", "io.github.modelcontextprotocol/time").code == 0
    env = _atom(monad_home, "time")["env"]
    assert env["SSL_CERT_FILE"] == "${SSL_CERT_FILE}" and env["HTTPS_PROXY"] == "${HTTPS_PROXY}"
    assert env["UV_INDEX_URL"] == "${UV_INDEX_URL}"


def test_a_required_secret_header_is_refused_until_given_and_never_shown(cli: Any, registry: tuple[str, Path],
                                                                         monad_home: Path) -> None:
    r = cli("mcp", "add", "com.example/weather")
    assert r.code == 2, r
    assert "`X-API-Key` (secret): --header \"X-API-Key: …\"" in r.err and "Traceback" not in r.err, r
    assert not (monad_home / "atoms" / "mcp" / "weather.toml").exists()
    r = cli("mcp", "add", "com.example/weather", "--header", "X-Region: mars")
    assert r.code == 2 and "`X-Region` must be one of us-east-1, eu-west-1" in r.err, r
    r = cli("mcp", "add", "com.example/weather", "--header", f"X-API-Key: {SENTINEL}", "--json")
    assert r.code == 0 and SENTINEL not in r.out + r.err, r
    atom = _atom(monad_home, "weather")
    assert atom["transport"] == "http" and atom["url"] == "https://mcp.example.com/mcp"
    assert atom["headers"] == {"X-API-Key": SENTINEL, "X-Region": "eu-west-1"}
    assert (monad_home / "atoms" / "mcp" / "weather.toml").stat().st_mode & 0o077 == 0
    shown = cli("mcp", "get", "weather")
    assert SENTINEL not in shown.out + shown.err and "***" in shown.out, shown


def test_package_choice_variables_and_docker(cli: Any, registry: tuple[str, Path], monad_home: Path,
                                             tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # No docker on PATH: the oci package cannot run, the npm one is the default.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    import os
    import shutil

    for tool in ("npx", "uvx"):
        found = shutil.which(tool)
        if found:
            (bin_dir / tool).symlink_to(found)
    monkeypatch.setenv("PATH", str(bin_dir) + os.pathsep + "/usr/bin/nonexistent")
    r = cli("mcp", "add", "io.github.example/database")
    assert r.code == 2, r
    # Every missing one is named at once, each with its flag.
    assert "`database_name`: --arg database_name=…" in r.err and "`DB_PASSWORD` (secret): --env" in r.err, r
    r = cli("mcp", "add", "io.github.example/database", "--package", "0", "--env", f"DB_PASSWORD={SENTINEL}")
    assert r.code == 2 and "packages[0] (oci docker.io/example/database-mcp@3.1.0) cannot run here: " \
                           "`docker` is not on PATH" in r.err, r
    r = cli("mcp", "add", "io.github.example/database", "--arg", "database_name=shop",
            "--env", f"DB_PASSWORD={SENTINEL}", "--env", "EXTRA=1")
    assert r.code == 0 and SENTINEL not in r.out + r.err, r
    atom = _atom(monad_home, "database")
    assert atom["args"] == ["-y", "@example/database-mcp@3.1.0", "shop"]
    assert {k: v for k, v in atom["env"].items() if not v.startswith("${")} == {"DB_PASSWORD": SENTINEL, "EXTRA": "1"}
    r = cli("mcp", "add", "io.github.example/database", "--name", "db2", "--arg", "nope=1",
            "--arg", "database_name=x", "--env", "DB_PASSWORD=x")
    assert r.code == 2 and "has no argument `nope`" in r.err, r


def test_oci_runs_with_docker_run_when_docker_answers(registry: tuple[str, Path], tmp_path: Path,
                                                      monad_home: Path, cli: Any,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The command form for an oci package (docker's own answer is what decides whether it
    can run; here a `docker` whose `info` answers stands in for a working daemon)."""
    import os

    from monad_cli.registry import install

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "docker"
    fake.write_text("#!/bin/sh\n[ \"$1\" = info ] && echo 28.0.0 && exit 0\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir) + os.pathsep + os.environ["PATH"])
    install.docker_works.cache_clear()
    try:
        r = cli("mcp", "add", "io.github.example/database", "--env", f"DB_PASSWORD={SENTINEL}",
                "--arg", "db_type=postgres")
        assert r.code == 0, r
        atom = _atom(monad_home, "database")
        assert atom["command"] == "docker"
        assert atom["args"] == ["run", "-i", "--rm", "-e", "DB_TYPE=postgres", "-e", "DB_PASSWORD",
                                "docker.io/example/database-mcp:3.1.0"]
        fake.write_text("#!/bin/sh\nexit 1\n")
        install.docker_works.cache_clear()
        r = cli("mcp", "add", "io.github.example/database", "--name", "db3", "--package", "0",
                "--env", "DB_PASSWORD=x", "--arg", "db_type=mysql")
        assert r.code == 2 and "its daemon does not answer" in r.err, r
    finally:
        install.docker_works.cache_clear()


def test_a_registry_that_cannot_be_reached_is_one_line(cli: Any, monkeypatch: pytest.MonkeyPatch,
                                                       tmp_path: Path) -> None:
    from tests.conftest import free_port

    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "missing-ca.pem"))
    r = cli("mcp", "search", "time")
    assert r.code == 2 and "cannot set up HTTPS" in r.err and "SSL_CERT_FILE" in r.err, r
    monkeypatch.delenv("SSL_CERT_FILE")

    monkeypatch.setenv("MONAD_REGISTRY_URL", f"http://127.0.0.1:{free_port()}")
    r = cli("mcp", "add", "io.github.modelcontextprotocol/time")
    assert r.code == 1 and "cannot be reached" in r.err and "Traceback" not in r.err, r
    assert "Connection refused" in r.err and len(r.err.strip().splitlines()) == 1, r


def test_a_name_with_an_empty_version_says_so(cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """`NAME@` (the version left out): the installer's own refusal, not the stdio path's
    "the server's name is missing: `monad mcp add NAME -- NAME@ ...`". Before any request."""
    from tests.conftest import free_port

    monkeypatch.setenv("MONAD_REGISTRY_URL", f"http://127.0.0.1:{free_port()}")
    r = cli("mcp", "add", "io.github.modelcontextprotocol/memory@")
    assert r.code == 2 and r.err.strip() == (
        "error: `io.github.modelcontextprotocol/memory@`: nothing after `@`; write NAME@VERSION or just NAME"), r


def test_a_bundle_with_a_wrong_sha256_installs_nothing(cli: Any, registry: tuple[str, Path], monad_home: Path,
                                                       tmp_path: Path) -> None:
    base, folder = registry
    (folder / "files").mkdir()
    sha = build_bundle(folder / "files" / "rug.mcpb")
    publish(folder, bundle_server("io.github.example/rug", "1.0.0", f"{base}/files/rug.mcpb", "0" * 64))
    r = cli("mcp", "add", "io.github.example/rug", "--arg", "api_key=x", "--arg", "tools_file=/tmp/x")
    assert r.code == 2 and f"its sha256 is {sha}, not the `fileSha256`" in r.err and "nothing was installed" in r.err, r
    assert not (monad_home / "atoms" / "mcp" / "rug.toml").exists()
    assert not (monad_home / "bundles").exists() or not any((monad_home / "bundles").rglob("*"))


def test_a_bundle_file_installs_with_its_user_config(cli: Any, monad_home: Path, tmp_path: Path) -> None:
    bundle = tmp_path / "rug.mcpb"
    build_bundle(bundle)
    r = cli("mcp", "add", str(bundle))
    assert r.code == 2 and "`api_key` (secret): --arg api_key=…" in r.err and "`tools_file`" in r.err, r
    assert not (monad_home / "atoms" / "mcp" / "rug.toml").exists()
    shape = tmp_path / "shape.json"
    shape.write_text(json.dumps({"description": "Echo the text back."}))
    r = cli("mcp", "add", str(bundle), "--arg", f"api_key={SENTINEL}", "--arg", f"tools_file={shape}", "--json")
    assert r.code == 0 and SENTINEL not in r.out + r.err, r
    atom = _atom(monad_home, "rug")
    folder = Path(atom["cwd"])
    assert folder.is_relative_to(monad_home / "bundles" / "rug") and (folder / "server" / "main.py").is_file()
    assert atom["command"] == "python3"
    assert atom["args"] == [str(folder / "server" / "main.py"), "--name", "rug", "--tools-file", str(shape)]
    assert atom["env"] == {"RUG_API_KEY": SENTINEL}
    assert atom["registry"]["name"] == "rug" and atom["registry"]["package"].startswith("mcpb:sha256:")
    shown = cli("mcp", "get", "rug")
    assert SENTINEL not in shown.out + shown.err, shown
    # Not a zip, no manifest: one line each, nothing written.
    bad = tmp_path / "bad.mcpb"
    bad.write_text("hello")
    r = cli("mcp", "add", str(bad))
    assert r.code == 2 and "is not a zip archive" in r.err, r


def test_unsafe_bundle_members_are_refused(tmp_path: Path) -> None:
    import zipfile

    from monad_cli.core.errors import InvalidInput
    from monad_cli.registry.bundles import unpack

    evil = tmp_path / "evil.mcpb"
    with zipfile.ZipFile(evil, "w") as z:
        z.writestr("manifest.json", "{}")
        z.writestr("../outside.txt", "x")
    with pytest.raises(InvalidInput, match="points outside the bundle"):
        unpack(evil.read_bytes(), tmp_path / "dest", what="evil")
    assert not (tmp_path / "dest").exists() and not (tmp_path / "outside.txt").exists()


def test_a_terminal_is_asked_for_each_variable_and_a_secret_is_not_echoed(registry: tuple[str, Path],
                                                                          monad_home: Path) -> None:
    import os
    import pty
    import select
    import sys
    import time

    pid, fd = pty.fork()
    if pid == 0:  # the child: `monad` with the pseudo-terminal as its controlling terminal
        os.execv(sys.executable, [sys.executable, "-m", "monad_cli", "mcp", "add", "com.example/weather"])
    seen = b""

    def read_until(marker: bytes, timeout: float = 30) -> None:
        nonlocal seen
        deadline = time.monotonic() + timeout
        while marker not in seen:
            assert time.monotonic() < deadline, seen
            if select.select([fd], [], [], 0.5)[0]:
                try:
                    seen += os.read(fd, 4096)
                except OSError:
                    break

    try:
        read_until(b"X-API-Key (Your API key): ")
        os.write(fd, f"{SENTINEL}\n".encode())
        read_until(b"X-Region (Service region; one of us-east-1, eu-west-1; default eu-west-1; optional): ")
        os.write(fd, b"\n")  # Enter takes the default
        read_until(b"added server `weather`")
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 0, seen
    assert SENTINEL.encode() not in seen  # typed without echo, and never printed
    assert _atom(monad_home, "weather")["headers"] == {"X-API-Key": SENTINEL, "X-Region": "eu-west-1"}


def test_a_registry_url_with_a_token_is_shown_masked(cli: Any, registry: tuple[str, Path], monad_home: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    base, _ = registry
    with_token = base.replace("http://", f"http://ci:{SENTINEL}@")
    monkeypatch.setenv("MONAD_REGISTRY_URL", with_token)
    r = cli("mcp", "add", "io.github.example/nothing-here")
    assert r.code == 1 and "is in no registry asked" in r.err and SENTINEL not in r.err, r
    monkeypatch.setenv("MONAD_REGISTRY_URL", f"{with_token}/?token={SENTINEL}")
    r = cli("mcp", "search", "x")
    assert r.code == 2 and "takes no `?query`" in r.err and SENTINEL not in r.err, r
    monkeypatch.setenv("MONAD_REGISTRY_URL", with_token)
    r = cli("mcp", "search", "time", "--json")
    assert r.code == 0 and r.json() and SENTINEL not in r.out, r
    r = cli("mcp", "add", "io.github.modelcontextprotocol/time", "--json")
    assert r.code == 0 and SENTINEL not in r.out + r.err, r
    shown = cli("mcp", "get", "time", "--json")
    assert SENTINEL not in shown.out and "***" in shown.json()["definition"]["registry"]["registry"], shown


def test_a_secret_argument_redaction_cannot_see_is_warned_about(cli: Any, registry: tuple[str, Path],
                                                                monad_home: Path) -> None:
    _, folder = registry
    publish(folder, {"name": "io.github.example/keyed", "description": "Secrets as arguments", "version": "1.0.0",
                     "packages": [{"registryType": "npm", "identifier": "@example/keyed", "version": "1.0.0",
                                   "transport": {"type": "stdio"}, "packageArguments": [
                                       {"type": "positional", "valueHint": "api_key", "isSecret": True,
                                        "isRequired": True},
                                       {"type": "named", "name": "--token", "isSecret": True, "isRequired": True}]}]})
    r = cli("mcp", "add", "io.github.example/keyed", "--arg", f"api_key={SENTINEL}-1", "--arg",
            f"token={SENTINEL}-2")
    assert r.code == 0 and SENTINEL not in r.out + r.err, r
    assert "the secret `api_key` is passed as a command-line argument" in r.err and "`token`" not in r.err, r
    assert _atom(monad_home, "keyed")["args"][-3:] == [f"{SENTINEL}-1", "--token", f"{SENTINEL}-2"]
    r = cli("mcp", "add", "io.github.example/keyed", "--name", "keyed2", "--arg", "api_key=${KEYED_KEY}",
            "--arg", "token=${KEYED_TOKEN}")
    assert r.code == 0 and "warning" not in r.err, r  # references name where the secret lives


def test_an_unreachable_registry_stops_add_but_not_search(cli: Any, registry: tuple[str, Path], monad_home: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """`add` never falls through to a later registry when an earlier one cannot answer."""
    from tests.conftest import free_port

    base, _ = registry
    monkeypatch.delenv("MONAD_REGISTRY_URL")
    monad_home.mkdir(parents=True, exist_ok=True)
    down = f"http://127.0.0.1:{free_port()}"
    (monad_home / "settings.toml").write_text(f'[registry]\nurls = ["{down}", "{base}"]\n')
    r = cli("mcp", "search", "time", "--json")
    assert r.code == 0 and [row["name"] for row in r.json()] == ["io.github.modelcontextprotocol/time"], r
    assert f"registry `{down}` cannot be reached" in r.err, r
    r = cli("mcp", "add", "io.github.modelcontextprotocol/time")
    assert r.code == 1 and f"registry `{down}` cannot be reached" in r.err, r
    assert not (monad_home / "atoms" / "mcp" / "time.toml").exists()


def _notes(version: str, *, region: bool) -> dict[str, Any]:
    """An npm server whose arguments are a required positional, an optional flag with
    choices, and (when `region`) a required flag that a later version adds."""
    from tests.registry_helpers import SCHEMA

    args: list[dict[str, Any]] = [
        {"type": "positional", "valueHint": "notes_dir", "isRequired": True, "format": "filepath"},
        {"type": "named", "name": "--mode", "choices": ["fast", "safe"]},
        {"type": "named", "name": "--label", "value": "team-{team}", "variables": {"team": {"isRequired": True}}}]
    if region:
        args.append({"type": "named", "name": "--region", "isRequired": True, "description": "Where"})
    return {"$schema": SCHEMA, "name": "io.github.example/notes", "description": "Notes", "version": version,
            "packages": [{"registryType": "npm", "identifier": "@example/notes", "version": version,
                          "transport": {"type": "stdio"}, "packageArguments": args}]}


def test_upgrade_keeps_the_argument_values_and_asks_only_for_new_required_ones(
        cli: Any, registry: tuple[str, Path], monad_home: Path, tmp_path: Path) -> None:
    import os
    import pty
    import select
    import sys
    import time

    _, folder = registry
    publish(folder, _notes("1.0.0", region=False))
    notes = str(tmp_path / "notes")
    r = cli("mcp", "add", "io.github.example/notes", "--arg", f"notes_dir={notes}", "--arg", "mode=safe",
            "--arg", "team=blue")
    assert r.code == 0, r
    assert _atom(monad_home, "notes")["args"] == ["-y", "@example/notes@1.0.0", notes, "--mode", "safe",
                                                  "--label", "team-blue"]
    publish(folder, _notes("2.0.0", region=True))
    # Not on a terminal: the one error names only what is new.
    r = cli("mcp", "upgrade", "notes", "--wait", "0")
    assert r.code == 2 and "`region`: --arg region=…" in r.err, r
    assert "notes_dir" not in r.err and "team" not in r.err, r
    assert _atom(monad_home, "notes")["registry"]["version"] == "1.0.0"  # nothing changed

    # On a terminal: asked for `region` alone, the rest kept.
    pid, fd = pty.fork()
    if pid == 0:
        os.execv(sys.executable, [sys.executable, "-m", "monad_cli", "mcp", "upgrade", "notes", "--wait", "0"])
    seen = b""
    deadline = time.monotonic() + 30
    try:
        while b"region (Where): " not in seen:
            assert time.monotonic() < deadline, seen
            if select.select([fd], [], [], 0.5)[0]:
                seen += os.read(fd, 4096)
        os.write(fd, b"eu\n")
        while b"1.0.0 \xe2\x86\x92 2.0.0" not in seen:
            assert time.monotonic() < deadline, seen
            if select.select([fd], [], [], 0.5)[0]:
                try:
                    seen += os.read(fd, 4096)
                except OSError:
                    break
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 0, seen
    assert b"notes_dir" not in seen and b"mode" not in seen and b"team" not in seen, seen
    atom = _atom(monad_home, "notes")
    assert atom["args"] == ["-y", "@example/notes@2.0.0", notes, "--mode", "safe", "--label", "team-blue",
                            "--region", "eu"], atom
    assert atom["registry"]["version"] == "2.0.0"


def test_upgrade_keeps_the_variables_inside_a_remotes_url_and_headers(cli: Any, registry: tuple[str, Path],
                                                                       monad_home: Path) -> None:
    from tests.registry_helpers import SCHEMA

    _, folder = registry

    def hosted(version: str) -> dict[str, Any]:
        return {"$schema": SCHEMA, "name": "com.example/hosted", "description": "Hosted", "version": version,
                "remotes": [{"type": "streamable-http", "url": "https://{tenant}.mcp.example.com/mcp",
                             "variables": {"tenant": {"isRequired": True}},
                             "headers": [{"name": "Authorization", "value": "Bearer {api_key}",
                                          "variables": {"api_key": {"isRequired": True, "isSecret": True}}}]}]}

    publish(folder, hosted("1.0.0"))
    r = cli("mcp", "add", "com.example/hosted", "--arg", "tenant=acme", "--arg", f"api_key={SENTINEL}")
    assert r.code == 0, r
    atom = _atom(monad_home, "hosted")
    assert atom["url"] == "https://acme.mcp.example.com/mcp"
    assert atom["headers"] == {"Authorization": f"Bearer {SENTINEL}"}
    publish(folder, hosted("1.1.0"))
    r = cli("mcp", "upgrade", "hosted", "--wait", "0")
    assert r.code == 0 and SENTINEL not in r.out + r.err, r
    atom = _atom(monad_home, "hosted")
    assert atom["registry"]["version"] == "1.1.0" and atom["url"] == "https://acme.mcp.example.com/mcp"
    assert atom["headers"] == {"Authorization": f"Bearer {SENTINEL}"}


def test_upgrade_reads_the_recorded_values_only_while_the_atom_is_what_they_made(
        cli: Any, registry: tuple[str, Path], monad_home: Path, tmp_path: Path) -> None:
    """The values `add` recorded in `registry` are what `upgrade` carries over, not a reading
    of `args`; an atom edited by hand since is not read back (its values are asked again),
    and a version the registry dropped leaves the records as they are."""
    _, folder = registry
    publish(folder, _notes("1.0.0", region=False))
    notes = str(tmp_path / "notes")
    assert cli("mcp", "add", "io.github.example/notes", "--arg", f"notes_dir={notes}", "--arg", "team=blue").code == 0
    path = monad_home / "atoms" / "mcp" / "notes.toml"
    assert _atom(monad_home, "notes")["registry"]["values"] == {"notes_dir": notes, "team": "blue"}
    edited = path.read_text().replace('"team-blue"', '"team-red"')
    path.write_text(edited)
    publish(folder, _notes("2.0.0", region=True))
    r = cli("mcp", "upgrade", "notes", "--wait", "0", "--arg", "region=eu")
    assert r.code == 2 and "`notes_dir`: --arg notes_dir=…" in r.err and "`team`: --arg team=…" in r.err, r
    assert path.read_text() == edited  # nothing changed

    # The installed version gone from the registry: nothing to compare with, the records count.
    path.write_text(edited.replace('"team-red"', '"team-blue"'))
    (folder / "io.github.example_notes-1.0.0.json").unlink()
    r = cli("mcp", "upgrade", "notes", "--wait", "0", "--arg", "region=eu")
    assert r.code == 0, r
    assert _atom(monad_home, "notes")["args"] == ["-y", "@example/notes@2.0.0", notes, "--label", "team-blue",
                                                  "--region", "eu"]
