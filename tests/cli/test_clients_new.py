"""The five newer clients (Antigravity CLI, Copilot CLI, OpenCode, Zed, Goose) over fixture files
shaped as each writes them (tests/fixtures/clients/): import, connect and remove, export and
import back; and `monad mcp connect --all [--dry-run]` over a home folder holding several."""

from __future__ import annotations

import json
import os
import shutil
import tomllib
from pathlib import Path
from typing import Any

import json5
import pytest
import yaml

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "clients"
SENTINEL = "SENTINEL-7f3a9c"

EXPECTED: dict[str, tuple[str, dict[str, str]]] = {
    "antigravity": ("antigravity-mcp_config.json", {"github": "imported", "linear": "imported", "sqlite": "imported"}),
    "copilot": ("copilot-mcp-config.json", {"playwright": "imported", "context7": "imported"}),
    "opencode": ("opencode.json", {"everything": "imported", "sentry": "imported", "vault": "skipped"}),
    "zed": ("zed-settings.json", {"postgres": "imported", "older": "imported", "docs": "imported",
                                  "mcp-server-github": "skipped"}),
    "goose": ("goose-config.yaml", {"developer": "skipped", "github": "imported", "docs": "imported"}),
}
SERVERS_KEY = {"antigravity": "mcpServers", "copilot": "mcpServers", "opencode": "mcp", "zed": "context_servers",
               "goose": "extensions"}


def atom(home: Path, name: str) -> dict[str, Any]:
    return tomllib.loads((home / "atoms" / "mcp" / f"{name}.toml").read_text())


def parse(client: str, text: str) -> Any:
    return yaml.safe_load(text) if client == "goose" else json5.loads(text)


def copy_fixture(tmp_path: Path, rel: str) -> Path:
    dst = tmp_path / "client" / rel
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(FIXTURES / rel, dst)
    return dst


@pytest.mark.parametrize("client", list(EXPECTED))
def test_import_each_new_format(cli: Any, monad_home: Path, client: str) -> None:
    rel, expected = EXPECTED[client]
    r = cli("mcp", "import", client, str(FIXTURES / rel), "--json")
    assert r.code == (1 if "skipped" in expected.values() else 0), r
    assert {s["name"]: s["result"] for s in r.json()["servers"]} == expected
    assert SENTINEL not in r.out + r.err
    for name, result in expected.items():
        assert (monad_home / "atoms" / "mcp" / f"{name}.toml").exists() == (result == "imported"), name


def test_each_new_format_maps_its_fields(cli: Any, monad_home: Path) -> None:
    reasons = {}
    for client, (rel, _) in EXPECTED.items():
        r = cli("mcp", "import", client, str(FIXTURES / rel), "--json")
        reasons.update({(client, s["name"]): s["detail"] for s in r.json()["servers"]})
    # Antigravity: `serverUrl` is the remote's URL; `disabled` is the off switch.
    assert atom(monad_home, "linear")["url"] == "https://mcp.linear.app/mcp"
    assert atom(monad_home, "linear")["headers"] == {"Authorization": "Bearer ${LINEAR_TOKEN}"}
    assert atom(monad_home, "sqlite")["enabled"] is False
    assert atom(monad_home, "github")["env"]["GITHUB_PERSONAL_ACCESS_TOKEN"] == f"{SENTINEL}-antigravity"
    # Copilot: `local` is stdio; a `tools` list other than ["*"] is an allow list.
    assert atom(monad_home, "playwright")["command"] == "npx" and "tools" not in atom(monad_home, "playwright")
    assert atom(monad_home, "context7")["tools"] == {"enabled": ["resolve-library-id", "get-library-docs"]}
    # OpenCode: one command list, `environment`, `{env:X}`, ms timeouts; `{file:…}` cannot be carried.
    everything = atom(monad_home, "everything")
    assert everything["command"] == "npx" and everything["args"] == ["-y", "@modelcontextprotocol/server-everything"]
    assert everything["env"] == {"API_KEY": f"{SENTINEL}-opencode"}
    sentry = atom(monad_home, "sentry")
    assert sentry["headers"] == {"Authorization": "Bearer ${SENTRY_TOKEN}"}
    assert sentry["enabled"] is False and sentry["timeout"] == 10
    assert "`{file:…}`" in reasons["opencode", "vault"]
    # Zed: flat and nested commands, remotes; an extension's server is Zed's.
    assert atom(monad_home, "postgres")["args"] == ["postgresql://localhost/shop"]
    assert atom(monad_home, "older")["command"] == "/usr/local/bin/mcp-old"
    assert atom(monad_home, "docs")["headers"] == {"Authorization": "Bearer ${ZED_DOCS_TOKEN}"}
    assert "a server from a Zed extension" in reasons["zed", "mcp-server-github"]
    # Goose: `cmd`, `envs`, `env_keys` as references; its own extensions are not servers.
    assert "already defined differently" in reasons["goose", "github"]  # Antigravity's came first
    assert "one of Goose's own extensions" in reasons["goose", "developer"]
    for name in ("github", "everything", "postgres", "context7"):
        r = cli("mcp", "get", name, "--json")
        assert r.code == 0 and SENTINEL not in r.out + r.err, r


def test_goose_env_keys_and_remote(cli: Any, monad_home: Path) -> None:
    r = cli("mcp", "import", "goose", str(FIXTURES / "goose-config.yaml"), "--json")
    rows = {s["name"]: s for s in r.json()["servers"]}
    assert "`GITHUB_PERSONAL_ACCESS_TOKEN` are read from the environment" in rows["github"]["detail"]
    github = atom(monad_home, "github")
    assert github["env"] == {"GITHUB_API_URL": "https://api.github.com",
                             "GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_PERSONAL_ACCESS_TOKEN}"}
    assert github["requestTimeoutMs"] == 300_000
    docs = atom(monad_home, "docs")
    assert docs["transport"] == "http" and docs["url"] == "https://mcp.example.com/mcp"
    assert docs["headers"] == {"X-Api-Key": f"{SENTINEL}-goose"} and docs["enabled"] is False


@pytest.mark.parametrize("client", list(EXPECTED))
def test_connect_and_remove_keep_the_rest_of_each_file(cli: Any, monad_home: Path, tmp_path: Path,
                                                       client: str) -> None:
    path = copy_fixture(tmp_path, EXPECTED[client][0])
    before = path.read_bytes()
    r = cli("mcp", "connect", client, str(path), "--dry-run", "--json")
    assert r.code == 0 and r.json()["changed"] is True and path.read_bytes() == before, r
    r = cli("mcp", "connect", client, str(path), "--json")
    assert r.code == 0 and r.json()["changed"] is True, r
    text = path.read_text()
    old, new = parse(client, before.decode()), parse(client, text)
    entry = new[SERVERS_KEY[client]].pop("monad")
    assert new == old  # every other key and server, as the client reads the file
    command = entry["command"][0] if client == "opencode" else entry["cmd"] if client == "goose" else entry["command"]
    assert os.path.isabs(command)
    args = entry["command"][1:] if client == "opencode" else entry["args"]
    assert args[-2:] == ["mcp", "serve"]
    env = entry.get("environment") if client == "opencode" else entry.get("envs") if client == "goose" \
        else entry.get("env")
    assert env == {"MONAD_HOME": str(monad_home)}
    # Each client's own spelling of a stdio entry.
    assert {"copilot": entry.get("type") == "local" and entry.get("tools") == ["*"],
            "opencode": entry.get("type") == "local" and entry.get("enabled") is True,
            "zed": entry.get("source") == "custom",
            "goose": entry.get("type") == "stdio" and entry.get("name") == "monad",
            "antigravity": "type" not in entry}[client], entry
    if client != "goose":  # the JSON formats are edited in place: every comment line stays
        for line in before.decode().splitlines():
            if line.strip().startswith("//"):
                assert line in text
    r = cli("mcp", "connect", client, str(path))
    assert r.code == 0 and "nothing changed" in r.err, r
    r = cli("mcp", "connect", client, str(path), "--remove")
    assert r.code == 0, r
    assert parse(client, path.read_text()) == old
    if client != "goose":
        assert path.read_bytes() == before  # byte for byte


def test_goose_with_comments_keeps_them_and_takes_per_server(cli: Any, monad_home: Path, tmp_path: Path) -> None:
    """A hand-edited Goose file: connect adds the entry and keeps every comment, quote and
    key; --per-server writes one extension per server, named as the server; removing gives
    the file back byte for byte."""
    path = copy_fixture(tmp_path, "goose-config-commented.yaml")
    before = path.read_text()
    comments = [line for line in before.splitlines() if "#" in line]
    old = parse("goose", before)
    r = cli("mcp", "connect", "goose", str(path))
    assert r.code == 0, r
    text = path.read_text()
    assert all(line in text for line in comments), text
    assert '"https://api.github.com"' in text  # quoting as written
    new = parse("goose", text)
    entry = new["extensions"].pop("monad")
    assert new == old and entry["name"] == "monad" and entry["args"][-2:] == ["mcp", "serve"]
    assert cli("mcp", "connect", "goose", str(path), "--remove").code == 0
    assert path.read_text() == before

    for name in ("time", "notes"):
        assert cli("mcp", "add", name, "--", "true").code == 0
    r = cli("mcp", "connect", "goose", str(path), "--per-server", "--json")
    assert r.code == 0 and r.json()["changed"] is True, r
    text = path.read_text()
    assert all(line in text for line in comments), text
    new = parse("goose", text)
    for name in ("time", "notes"):
        entry = new["extensions"].pop(name)
        assert entry["name"] == name and entry["type"] == "stdio" and entry["args"][-3:] == ["mcp", "serve", name]
    assert new == old
    r = cli("mcp", "connect", "goose", str(path), "--per-server")
    assert r.code == 0 and "nothing changed" in r.err, r
    r = cli("mcp", "connect", "goose", str(path), "--per-server", "--remove")
    assert r.code == 0, r
    assert path.read_text() == before


@pytest.mark.parametrize("client", list(EXPECTED))
def test_export_then_import_gives_the_same_servers(cli: Any, monad_home: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch, client: str) -> None:
    from monad_cli.cli.clients.importer import same_definition
    from monad_cli.config.loader import load_definitions
    from monad_cli.core.paths import paths

    cli("mcp", "add", "local", "--env", f"TOKEN={SENTINEL}-x", "--env", "REGION=${REGION}", "--", "local-mcp", "-v")
    cli("mcp", "add", "remote", "--url", "https://mcp.example.com/mcp", "--header", "X-Key: ${REMOTE_KEY}")
    original = load_definitions(paths(), expand=False).raw
    r = cli("mcp", "export", "--format", client)
    assert r.code == 0 and SENTINEL not in r.out, r  # masked unless --reveal-secrets
    r = cli("mcp", "export", "--format", client, "--reveal-secrets")
    out = tmp_path / "out"
    out.write_text(r.out)
    monkeypatch.setenv("MONAD_HOME", str(tmp_path / "second-home"))
    r = cli("mcp", "import", client, str(out), "--json")
    assert r.code == 0, r
    again = load_definitions(paths(), expand=False).raw
    for name in ("local", "remote"):
        assert same_definition(original[name], again[name], name), (name, original[name], again[name])


def test_connect_all_finds_the_clients_by_their_files(cli: Any, monad_home: Path, tmp_path: Path) -> None:
    home = Path(os.environ["HOME"])
    (home / ".copilot").mkdir()  # installed, no MCP file yet
    zed = home / ".config" / "zed" / "settings.json"
    zed.parent.mkdir(parents=True)
    shutil.copy(FIXTURES / "zed-settings.json", zed)
    goose = home / ".config" / "goose" / "config.yaml"
    goose.parent.mkdir(parents=True)
    goose.write_text("# hand-edited\nextensions: {}  # none yet\n")
    before = zed.read_bytes()
    r = cli("mcp", "connect", "--all", "--dry-run", "--json")
    rows = {row["client"]: row for row in r.json()}
    assert set(rows) == {"copilot", "zed", "goose"}, rows
    assert rows["zed"]["result"] == "would connect" and rows["copilot"]["result"] == "would connect"
    assert rows["goose"]["result"] == "would connect", rows["goose"].get("error")  # its comments are kept
    assert r.code == 0 and zed.read_bytes() == before and not (home / ".copilot" / "mcp-config.json").exists()
    r = cli("mcp", "connect", "--all")
    assert r.code == 0 and "connected" in r.out and "failed" not in r.out, r
    assert "monad" in json5.loads(zed.read_text())["context_servers"]
    copilot = json.loads((home / ".copilot" / "mcp-config.json").read_text())
    assert copilot["mcpServers"]["monad"]["tools"] == ["*"]
    assert goose.read_text().startswith("# hand-edited\n") and "# none yet" in goose.read_text()
    assert yaml.safe_load(goose.read_text())["extensions"]["monad"]["name"] == "monad"
    r = cli("mcp", "connect", "--all", "--remove", "--json")
    assert {row["client"]: row["result"] for row in r.json()}["zed"] == "removed"
    assert zed.read_bytes() == before
    r = cli("mcp", "connect", "--all", "zed")
    assert r.code == 2 and "name no CLIENT or PATH" in r.err, r


def test_connect_all_names_the_clients_own_entries_that_would_run_twice(cli: Any, monad_home: Path) -> None:
    """Found by a new-user trial: `connect --all --dry-run` said "would connect" for Cursor,
    whose own `time` entry would then run beside monad's; `connect cursor` warned of it, the
    `--all` table did not."""
    home = Path(os.environ["HOME"])
    cursor = home / ".cursor" / "mcp.json"
    cursor.parent.mkdir(parents=True)
    cursor.write_text('{"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}}\n')
    assert cli("mcp", "add", "time", "--", "uvx", "mcp-server-time").code == 0
    r = cli("mcp", "connect", "--all", "--dry-run")
    row = next(line for line in r.out.splitlines() if line.startswith("cursor"))
    assert "would connect" in row and "its own `time` would run twice" in row and "--replace" in row, r.out
    r = cli("mcp", "connect", "--all", "--replace", "--dry-run")
    row = next(line for line in r.out.splitlines() if line.startswith("cursor"))
    assert "would take its own `time` out" in row, r.out
