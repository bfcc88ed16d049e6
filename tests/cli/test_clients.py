"""`monad mcp import`, `connect` and `export` over fixture files of every client format
(tests/fixtures/clients/, written as each client writes them, with other keys around the
servers). Read back with each format's own parser; secrets checked with sentinel values."""

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

# client → (fixture, {server: result})
EXPECTED: dict[str, tuple[str, dict[str, str]]] = {
    "claude-desktop": ("claude_desktop_config.json", {"time": "imported", "github": "imported"}),
    "claude-code": ("claude.json", {"sentry": "imported", "playwright": "imported", "notion": "imported",
                                    "search": "imported", "local-db": "skipped"}),
    "cursor": ("cursor-mcp.json", {"context7": "imported", "filesystem": "imported", "linear tools": "skipped"}),
    "vscode": ("vscode-mcp.json", {"github": "imported", "perplexity": "imported", "memory": "imported"}),
    "codex": ("codex-config.toml", {"docs": "imported", "figma": "imported", "legacy": "imported"}),
    "gemini": ("gemini-settings.json", {"pythonTools": "imported", "httpServer": "imported",
                                        "sseServer": "imported"}),
    "mcp-json": ("mcp.json", {"api": "imported", "local": "imported"}),
    "aura": ("aura/config/mcp", {"context7": "imported", "filesystem": "imported", "experimental": "imported"}),
}


def atom(home: Path, name: str) -> dict[str, Any]:
    return tomllib.loads((home / "atoms" / "mcp" / f"{name}.toml").read_text())


def copy_fixture(tmp_path: Path, rel: str) -> Path:
    src = FIXTURES / rel
    dst = tmp_path / "client" / rel
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.is_dir():
        shutil.copytree(src, dst)
    else:
        shutil.copy(src, dst)
    return dst


@pytest.mark.parametrize("client", list(EXPECTED))
def test_import_each_format(cli: Any, monad_home: Path, client: str) -> None:
    rel, expected = EXPECTED[client]
    r = cli("mcp", "import", client, str(FIXTURES / rel), "--json")
    assert r.code == (1 if "skipped" in expected.values() else 0), r
    summary = r.json()
    assert {s["name"]: s["result"] for s in summary["servers"]} == expected
    assert summary["imported"] == sum(v == "imported" for v in expected.values())
    assert SENTINEL not in r.out + r.err
    for name, result in expected.items():
        path = monad_home / "atoms" / "mcp" / f"{name}.toml"
        assert path.exists() == (result == "imported"), name
        if path.exists():
            assert path.stat().st_mode & 0o777 == 0o600

    # The table is the same data as --json, and says nothing secret either.
    shutil.rmtree(monad_home / "atoms")
    r = cli("mcp", "import", client, str(FIXTURES / rel))
    rows = [line.split()[:2] for line in r.out.splitlines()[1:]]
    assert {tuple(x) for x in rows} >= {(n, res) for n, res in expected.items() if " " not in n}
    assert SENTINEL not in r.out + r.err
    assert "imported" in r.err and "skipped" in r.err

    # Again: everything already there is unchanged.
    r = cli("mcp", "import", client, str(FIXTURES / rel), "--json")
    again = {s["name"]: s["result"] for s in r.json()["servers"]}
    assert again == {n: "unchanged" if res == "imported" else res for n, res in expected.items()}


def test_import_maps_each_clients_fields(cli: Any, monad_home: Path) -> None:
    for client, (rel, _) in EXPECTED.items():
        if client not in ("claude-desktop", "aura"):  # these two share names with cursor's
            cli("mcp", "import", client, str(FIXTURES / rel))
    # Cursor/VS Code references become monad references; literal secrets stay in the 0600 atom.
    assert atom(monad_home, "context7")["headers"] == {"CONTEXT7_API_KEY": "${CONTEXT7_API_KEY}"}
    assert atom(monad_home, "filesystem")["args"][-1] == "${HOME}/projects"
    assert atom(monad_home, "memory")["env"] == {"MEMORY_FILE_PATH": "${HOME}/memory.json",
                                                 "MEMORY_KEY": "SENTINEL-7f3a9c-vscode"}
    docs = atom(monad_home, "docs")  # Codex
    assert docs["env"] == {"DOCS_REGION": "eu", "DOCS_API_KEY": "SENTINEL-7f3a9c-codex", "DOCS_TOKEN": "${DOCS_TOKEN}"}
    assert (docs["timeout"], docs["requestTimeoutMs"], docs["tools"]) == (20, 90000,
                                                                         {"enabled": ["search", "fetch_[*]"]})
    figma = atom(monad_home, "figma")
    assert figma["auth"] == {"mode": "bearer", "token": "${FIGMA_OAUTH_TOKEN}"}
    assert figma["headers"] == {"X-Figma-Region": "us-east-1", "X-Org-Id": "${FIGMA_ORG_ID}"}
    assert figma["required"] is True and figma["tools"] == {"disabled": ["delete_[*]"]}
    assert atom(monad_home, "legacy")["enabled"] is False
    py = atom(monad_home, "pythonTools")  # Gemini
    assert (py["requestTimeoutMs"], py["cwd"], py["env"]["DATABASE_URL"]) == (15000, "/opt/tools",
                                                                              "$DB_CONNECTION_STRING")
    assert py["tools"] == {"enabled": ["query", "list_[*]"], "disabled": ["drop_table"]}
    # legacy HTTP+SSE entries import as http servers: the supervisor falls back to SSE itself
    assert (atom(monad_home, "sseServer")["transport"], atom(monad_home, "sseServer")["url"]) == (
        "http", "http://localhost:8080/sse")
    assert atom(monad_home, "notion")["url"] == "https://mcp.notion.com/sse"
    assert atom(monad_home, "httpServer")["url"] == "https://api.example.com/mcp"
    assert atom(monad_home, "sentry")["transport"] == "http"  # Claude Code
    assert atom(monad_home, "search")["env"] == {"SEARCH_KEY": "${SEARCH_KEY:-dev}"}  # the default kept
    assert atom(monad_home, "perplexity")["env"] == {"PERPLEXITY_API_KEY": "${PERPLEXITY_KEY}"}  # VS Code input
    assert atom(monad_home, "api")["url"].endswith("?key=SENTINEL-7f3a9c-mcpjson")
    for name in ("docs", "memory", "pythonTools", "sentry", "api", "local"):  # `get` masks them all
        r = cli("mcp", "get", name, "--json")
        assert r.code == 0 and SENTINEL not in r.out + r.err and "***" in r.out, r


def test_import_reasons_name_the_server_and_field(cli: Any) -> None:
    reasons = {}
    for client, (rel, _) in EXPECTED.items():
        r = cli("mcp", "import", client, str(FIXTURES / rel), "--json", "--dry-run")
        reasons.update({(client, s["name"]): s["detail"] for s in r.json()["servers"]})
    assert "`${input:perplexity-key}` (Perplexity API Key), a secret, is read from `${PERPLEXITY_KEY}`" \
        in reasons["vscode", "perplexity"]
    # Codex and Gemini match the names in their tool lists exactly: a `*` there is a literal
    assert "`includeTools` lists `list_*`, which the client matches as an exact name: imported as `list_[*]`" \
        in reasons["gemini", "pythonTools"]
    assert "`enabled_tools` lists `fetch_*`" in reasons["codex", "docs"]
    assert "project `/home/user/app`" in reasons["claude-code", "local-db"]
    assert "may only contain letters" in reasons["cursor", "linear tools"]
    assert "`scopes`" in reasons["codex", "legacy"]
    assert "`trust`" in reasons["gemini", "httpServer"]


def test_aura_lowercases_names_reads_subfolders_and_skips_examples(cli: Any, monad_home: Path) -> None:
    r = cli("mcp", "import", "aura", str(FIXTURES / "aura/config/mcp"), "--json")
    assert r.code == 0, r
    fs = atom(monad_home, "filesystem")
    assert fs["sandbox"] is True and fs["required"] is True and fs["condition"] == "model_params_gt:7"
    assert fs["tools"] == {"disabled": ["write_*", "move_file"]}
    ctx = atom(monad_home, "context7")
    assert ctx["timeout"] == 30 and ctx["deferred"] is True
    exp = atom(monad_home, "experimental")
    assert exp["enabled"] is False and exp["timeout"] == 90
    assert not (monad_home / "atoms/mcp/example.toml").exists()


def test_default_path_is_the_clients_usual_file(cli: Any, monad_home: Path) -> None:
    home = Path(os.environ["HOME"])
    (home / ".cursor").mkdir()
    shutil.copy(FIXTURES / "cursor-mcp.json", home / ".cursor" / "mcp.json")
    r = cli("mcp", "import", "cursor", "--json")
    assert r.json()["file"] == "~/.cursor/mcp.json"
    assert (monad_home / "atoms/mcp/context7.toml").exists()
    r = cli("mcp", "import", "codex")
    assert r.code == 1 and "`~/.codex/config.toml` does not exist" in r.err
    help_text = cli("mcp", "import", "--help").out
    assert "~/.claude.json" in help_text and "~/.codex/config.toml" in help_text


def test_dry_run_writes_nothing_and_force_replaces(cli: Any, monad_home: Path) -> None:
    src = str(FIXTURES / "claude_desktop_config.json")
    r = cli("mcp", "import", "claude-desktop", src, "--dry-run", "--json")
    assert r.json()["dryRun"] is True and r.json()["imported"] == 2
    assert not (monad_home / "atoms").exists()
    assert cli("mcp", "add", "time", "--", "mcp-server-time").code == 0
    r = cli("mcp", "import", "claude-desktop", src, "--json")
    rows = {s["name"]: s for s in r.json()["servers"]}
    assert rows["time"]["result"] == "skipped" and "--force replaces it" in rows["time"]["detail"]
    assert atom(monad_home, "time").get("args") is None
    r = cli("mcp", "import", "claude-desktop", src, "--force", "--json")
    rows = {s["name"]: s for s in r.json()["servers"]}
    assert rows["time"]["result"] == "imported" and "replaces" in rows["time"]["detail"]
    assert atom(monad_home, "time")["args"] == ["--local-timezone", "UTC"]


def test_same_remote_and_agents_json_are_skipped(cli: Any, monad_home: Path) -> None:
    assert cli("mcp", "add", "ctx", "--url", "https://MCP.context7.com/mcp/").code == 0
    (monad_home / "agents.json").write_text(json.dumps({"mcpServers": [{"name": "filesystem", "command": "x"}]}))
    r = cli("mcp", "import", "cursor", str(FIXTURES / "cursor-mcp.json"), "--json")
    rows = {s["name"]: s["detail"] for s in r.json()["servers"]}
    assert "the same remote as server `ctx`" in rows["context7"]
    assert "`agents.json`" in rows["filesystem"]


@pytest.mark.parametrize(("client", "name", "text", "where"), [
    ("claude-desktop", "c.json", '{"mcpServers": {"a": {"command": "x",}}}', "c.json:1:38"),
    ("vscode", "mcp.json", '{\n  // ok\n  "servers": {\n    "a": \n  }\n}', "mcp.json:5:3"),
    ("codex", "config.toml", '[mcp_servers.a\ncommand = "x"\n', "config.toml:1:15"),
    ("aura", "mcp", "ok:\n  command: x\n", None),  # a good file beside a bad one: see below
])
def test_a_malformed_file_exits_2_with_its_position_and_writes_nothing(
        cli: Any, monad_home: Path, tmp_path: Path, client: str, name: str, text: str, where: str | None) -> None:
    path = tmp_path / name
    if client == "aura":
        path.mkdir()
        (path / "a.yaml").write_text(text)
        (path / "b.yaml").write_text("bad:\n  args: [x\n")
        where = "b.yaml:3:1"
    else:
        path.write_text(text)
    r = cli("mcp", "import", client, str(path))
    assert r.code == 2, r
    assert r.err.count("\n") == 1 and f"{where}`: malformed" in r.err, r.err
    assert not (monad_home / "atoms").exists()


@pytest.mark.parametrize(("client", "text", "expected"), [
    ("cursor", '{"mcpServers": []}', "`mcpServers` must be an object of servers"),
    ("aura", "a:\n  command: x\na:\n  command: y\n", "key `a` appears twice in one map"),
    ("gemini", "[1, 2]", "expected a JSON object with `mcpServers`"),
])
def test_a_file_of_the_wrong_shape_exits_2(cli: Any, tmp_path: Path, client: str, text: str, expected: str) -> None:
    path = tmp_path / ("x.yaml" if client == "aura" else "x.json")
    path.write_text(text)
    r = cli("mcp", "import", client, str(path))
    assert r.code == 2 and expected in r.err, r


# -- connect -------------------------------------------------------------------------------------
def _parse(client: str, text: str) -> Any:
    if client == "codex":
        return tomllib.loads(text)
    if client == "aura":
        return yaml.safe_load(text)
    return json5.loads(text) if client in ("vscode", "gemini") else json.loads(text)


def _entry(client: str, data: Any) -> Any:
    key = {"codex": "mcp_servers", "vscode": "servers", "aura": None}.get(client, "mcpServers")
    return data["monad"] if key is None else data[key]["monad"]


@pytest.mark.parametrize("client", list(EXPECTED))
def test_connect_writes_the_entry_keeps_everything_else_and_is_idempotent(
        cli: Any, monad_home: Path, tmp_path: Path, client: str) -> None:
    path = copy_fixture(tmp_path, EXPECTED[client][0])
    target = path / "monad.yaml" if client == "aura" else path
    before = None if client == "aura" else target.read_bytes()
    r = cli("mcp", "connect", client, str(path), "--json")
    assert r.code == 0 and r.json()["changed"] is True, r
    text = target.read_text()
    entry = _entry(client, _parse(client, text))
    assert entry["command"] == r.json()["entry"]["command"] and os.path.isabs(entry["command"])
    assert entry["args"][-2:] == ["mcp", "serve"]
    assert entry["env"] == {"MONAD_HOME": str(monad_home)}
    if before is not None:
        # Every other key and server as the client reads it; every comment line still there.
        old, new = _parse(client, before.decode()), _parse(client, text)
        key = {"codex": "mcp_servers", "vscode": "servers"}.get(client, "mcpServers")
        new[key].pop("monad")
        assert new == old
        for line in before.decode().splitlines():
            if line.strip().startswith(("//", "#", "/*")):
                assert line in text
    mtime = target.stat().st_mtime_ns
    r = cli("mcp", "connect", client, str(path))
    assert r.code == 0 and "nothing changed" in r.err
    assert target.stat().st_mtime_ns == mtime and target.read_text() == text

    r = cli("mcp", "connect", client, str(path), "--remove")
    assert r.code == 0, r
    if before is None:
        assert not target.exists()
    else:
        assert target.read_bytes() == before  # the removal gives back the file byte for byte
    assert "nothing changed" in cli("mcp", "connect", client, str(path), "--remove").err


@pytest.mark.parametrize("client", ["claude-code", "vscode", "codex"])
def test_connect_per_server_replaces_the_clients_own_entries(cli: Any, monad_home: Path, tmp_path: Path,
                                                            client: str) -> None:
    """`import` then `connect --per-server`: each imported server's entry now runs `monad mcp
    serve NAME` under its own name (the client's names and rules stay), the servers monad
    could not import and every other key are as they were; `--remove` takes out only monad's."""
    rel, expected = EXPECTED[client]
    path = copy_fixture(tmp_path, rel)
    assert cli("mcp", "import", client, str(path)).code in (0, 1)
    # Every enabled server monad imported (Codex's `legacy` comes disabled, and stays the client's).
    imported = sorted(n for n, result in expected.items()
                      if result == "imported" and atom(monad_home, n).get("enabled", True))
    before = _parse(client, path.read_text())
    key = {"codex": "mcp_servers", "vscode": "servers"}.get(client, "mcpServers")
    r = cli("mcp", "connect", client, str(path), "--per-server", "--json")
    assert r.code == 0 and r.json()["changed"] is True, r
    assert sorted(r.json()["entries"]) == imported
    after = _parse(client, path.read_text())
    for name in imported:
        entry = after[key][name]
        assert entry["args"][-3:] == ["mcp", "serve", name] and os.path.isabs(entry["command"]), entry
        assert entry["env"] == {"MONAD_HOME": str(monad_home)}
    assert "monad" not in after[key]
    for name in set(before[key]) - set(imported):  # what monad does not serve stays the client's
        assert after[key][name] == before[key][name]
    assert {k: v for k, v in after.items() if k != key} == {k: v for k, v in before.items() if k != key}
    text = path.read_text()
    assert "nothing changed" in cli("mcp", "connect", client, str(path), "--per-server").err
    assert path.read_text() == text
    r = cli("mcp", "connect", client, str(path), "--per-server", "--remove")
    assert r.code == 0 and "removed monad's entries" in r.err, r
    removed = _parse(client, path.read_text())
    assert not set(imported) & set(removed[key]) and set(removed[key]) == set(before[key]) - set(imported)
    r = cli("mcp", "connect", "aura", str(tmp_path / "aura"), "--per-server")
    assert r.code == 2 and "--per-server is not supported" in r.err, r


@pytest.mark.parametrize("client", ["cursor", "claude-code", "claude-desktop", "gemini"])
def test_export_for_a_client_of_the_mcp_json_format_names_that_format(cli: Any, client: str) -> None:
    """Found by a new-user trial: `monad mcp export --format cursor` listed the formats, not
    which one Cursor reads."""
    r = cli("mcp", "export", "--format", client)
    assert r.code == 2 and "reads the mcp-json format; use --format mcp-json" in r.err, r
    assert cli("mcp", "export", "--format", "nosuch").err.startswith("error: --format must be one of "), r


def test_connect_per_server_dry_run_writes_nothing(cli: Any, monad_home: Path, tmp_path: Path) -> None:
    """`connect CLIENT --per-server --dry-run` says what it would write and leaves the file (and a
    missing file) as it was; `--remove --dry-run` the same."""
    assert cli("mcp", "add", "time", "--", "true").code == 0
    path = tmp_path / "claude.json"
    path.write_text('{"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}}\n')
    before = path.read_bytes()
    r = cli("mcp", "connect", "claude-code", str(path), "--per-server", "--dry-run")
    assert r.code == 0 and path.read_bytes() == before, r
    assert "would write monad's entries for `time`" in r.err and "dry run: nothing written" in r.err, r
    r = cli("mcp", "connect", "claude-code", str(path), "--per-server", "--dry-run", "--json")
    assert r.code == 0 and r.json()["changed"] is True and r.json()["dryRun"] is True, r
    assert path.read_bytes() == before
    missing = tmp_path / "new" / "claude.json"
    assert cli("mcp", "connect", "claude-code", str(missing), "--per-server", "--dry-run").code == 0
    assert not missing.exists()
    assert cli("mcp", "connect", "claude-code", str(path), "--per-server").code == 0
    written = path.read_bytes()
    r = cli("mcp", "connect", "claude-code", str(path), "--per-server", "--remove", "--dry-run")
    assert r.code == 0 and "would remove monad's entries for `time`" in r.err and path.read_bytes() == written, r
    r = cli("mcp", "connect", "claude-code", str(path), "--per-server", "--replace")  # was silently ignored
    assert r.code == 2 and "--replace goes without --per-server" in r.err and path.read_bytes() == written, r


def test_connect_creates_a_missing_file_keeps_modes_and_follows_symlinks(cli: Any, tmp_path: Path) -> None:
    new = tmp_path / "fresh" / ".cursor" / "mcp.json"
    assert cli("mcp", "connect", "cursor", str(new)).code == 0
    assert new.stat().st_mode & 0o777 == 0o600 and list(json.loads(new.read_text())["mcpServers"]) == ["monad"]

    real = copy_fixture(tmp_path, "gemini-settings.json")
    real.chmod(0o644)
    link = tmp_path / "link.json"
    link.symlink_to(real)
    assert cli("mcp", "connect", "gemini", str(link)).code == 0
    assert link.is_symlink() and "monad" in json5.loads(real.read_text())["mcpServers"]
    assert real.stat().st_mode & 0o777 == 0o644


def test_connect_refuses_what_it_would_have_to_rewrite(cli: Any, tmp_path: Path) -> None:
    folder = copy_fixture(tmp_path, "aura/config/mcp")
    (folder / "mine.yaml").write_text("# my gateway\nmonad:\n  command: old-monad\n")
    r = cli("mcp", "connect", "aura", str(folder))
    assert r.code == 2 and "mine.yaml` already defines `monad`" in r.err, r
    assert not (folder / "monad.yaml").exists()

    bad = tmp_path / "settings.json"
    bad.write_text('{"mcpServers": {\n')
    r = cli("mcp", "connect", "gemini", str(bad))
    assert r.code == 2 and "settings.json:2:1`: malformed JSON" in r.err, r
    assert bad.read_text() == '{"mcpServers": {\n'
    assert cli("mcp", "connect", "notaclient").code == 2


# -- export --------------------------------------------------------------------------------------
def _import_all(cli: Any) -> None:
    for client in ("claude-code", "codex", "gemini", "mcp-json", "aura"):
        cli("mcp", "import", client, str(FIXTURES / EXPECTED[client][0]))


@pytest.mark.parametrize("fmt", ["mcp-json", "codex", "vscode", "aura"])
def test_export_masks_secrets_and_keeps_references(cli: Any, fmt: str) -> None:
    _import_all(cli)
    r = cli("mcp", "export", "--format", fmt)
    assert r.code == 0, r
    assert SENTINEL not in r.out + r.err and "***" in r.out
    data = _parse({"mcp-json": "claude-code"}.get(fmt, fmt), r.out)
    servers = data.get("mcpServers") or data.get("servers") or data.get("mcp_servers") or data
    assert {"context7", "filesystem", "docs", "figma", "pythonTools", "api", "local"} <= set(servers)
    ctx = servers["context7"]
    if fmt == "codex":
        assert ctx["env_http_headers"] == {"CONTEXT7_API_KEY": "CONTEXT7_API_KEY"}
        assert servers["figma"]["bearer_token_env_var"] == "FIGMA_OAUTH_TOKEN"
        assert servers["docs"]["env_vars"] == ["DOCS_TOKEN"]
    else:
        ref = "${env:CONTEXT7_API_KEY}" if fmt == "vscode" else "${CONTEXT7_API_KEY}"
        assert ctx["headers"] == {"CONTEXT7_API_KEY": ref}
    revealed = cli("mcp", "export", "--format", fmt, "--reveal-secrets").out
    assert "SENTINEL-7f3a9c-codex" in revealed and "SENTINEL-7f3a9c-arg" in revealed


@pytest.mark.parametrize(("fmt", "client", "filename"), [
    ("mcp-json", "mcp-json", "out.json"), ("codex", "codex", "config.toml"), ("vscode", "vscode", "mcp.json"),
    ("aura", "aura", "out.yaml"),
])
def test_export_then_import_gives_the_same_servers(cli: Any, monad_home: Path, tmp_path: Path, monkeypatch: Any,
                                                   fmt: str, client: str, filename: str) -> None:
    from monad_cli.cli.clients.importer import same_definition
    from monad_cli.config.loader import load_definitions
    from monad_cli.core.paths import paths

    _import_all(cli)
    original = load_definitions(paths(), expand=False).raw
    r = cli("mcp", "export", "--format", fmt, "--reveal-secrets")
    lossy = {w.split("`")[1] for w in r.err.splitlines() if "left out" in w or "not exported" in w}
    out = tmp_path / filename
    out.write_text(r.out)
    monkeypatch.setenv("MONAD_HOME", str(tmp_path / "second-home"))
    r = cli("mcp", "import", client, str(out), "--json")
    assert r.code == 0, r
    again = load_definitions(paths(), expand=False).raw
    exact = set(original) - lossy
    assert exact and exact <= set(again)
    for name in exact:
        a, b = _bearer_as_header(original[name]), _bearer_as_header(again[name])
        assert same_definition(a, b, name), (name, a, b)


def _bearer_as_header(defn: dict[str, Any]) -> dict[str, Any]:
    """A bearer token and an `Authorization: Bearer` header send the same request; formats
    without a bearer field carry the one as the other."""
    auth = defn.get("auth") or {}
    if auth.get("mode") != "bearer":
        return defn
    out = {k: v for k, v in defn.items() if k != "auth"}
    out["headers"] = {**defn.get("headers", {}), "Authorization": f"Bearer {auth['token']}"}
    return out


def test_export_leaves_out_disabled_servers_where_the_format_has_no_off_switch(cli: Any) -> None:
    cli("mcp", "import", "codex", str(FIXTURES / "codex-config.toml"))
    r = cli("mcp", "export")
    assert "legacy" not in json.loads(r.out)["mcpServers"]
    assert "server `legacy` is disabled" in r.err
    assert tomllib.loads(cli("mcp", "export", "--format", "codex").out)["mcp_servers"]["legacy"]["enabled"] is False


# -- the per-server tool filters field ------------------------------------------------------------
def test_tool_filters_field_is_validated_and_does_not_reconnect(monad_home: Path) -> None:
    from monad_cli.config.schema import validate
    from monad_cli.core.errors import ConfigError

    base = {"command": "x"}
    spec = validate({**base, "tools": {"enabled": ["get_*"], "disabled": ["get_secret"]}}, name="s",
                    source="atoms/mcp/s.toml", environ={})
    assert spec.tools == {"enabled": ["get_*"], "disabled": ["get_secret"]}
    plain = validate(base, name="s", source="atoms/mcp/s.toml", environ={})
    assert plain.tools == {} and plain.connection_fingerprint() == spec.connection_fingerprint()
    for tools, message in [("x", "field `tools`: must be a table"),
                           ({"enable": []}, "field `tools.enable`: unknown field (did you mean `enabled`?)"),
                           ({"disabled": "x"}, "field `tools.disabled`: must be a list of glob patterns"),
                           ({"disabled": ["ok", " "]}, "field `tools.disabled[1]`: must be a non-empty glob")]:
        with pytest.raises(ConfigError) as info:
            validate({**base, "tools": tools}, name="s", source="atoms/mcp/s.toml", environ={})
        assert message in info.value.message


def test_vscode_env_file_of_a_workspace_is_read_into_env(cli: Any, monad_home: Path, tmp_path: Path) -> None:
    workspace = tmp_path / "project"
    (workspace / ".vscode").mkdir(parents=True)
    (workspace / ".env").write_text(f"# keys\nexport API_TOKEN='{SENTINEL}-env'\nREGION=eu # the region\n"
                                    "PRICE=5$\n")
    (workspace / ".vscode" / "mcp.json").write_text(json.dumps({"servers": {
        "api": {"type": "stdio", "command": "api-mcp", "envFile": "${workspaceFolder}/.env",
                "env": {"REGION": "us"}},
        "user": {"type": "stdio", "command": "x", "envFile": "${workspaceFolder}/missing.env"}}}))
    r = cli("mcp", "import", "vscode", str(workspace / ".vscode" / "mcp.json"), "--json")
    rows = {s["name"]: s for s in r.json()["servers"]}
    assert rows["api"]["result"] == "imported" and "read 3 variable(s) from `envFile`" in rows["api"]["detail"], r
    assert rows["user"]["result"] == "skipped" and "cannot read" in rows["user"]["detail"], r
    assert SENTINEL not in r.out + r.err
    # The entry's own `env` wins; a `$` from the file stays literal.
    assert atom(monad_home, "api")["env"] == {"API_TOKEN": f"{SENTINEL}-env", "REGION": "us", "PRICE": "5$$"}
    # A user-level file has no workspace to fill `${workspaceFolder}` in.
    user = tmp_path / "user-mcp.json"
    user.write_text(json.dumps({"servers": {"w": {"command": "x", "envFile": "${workspaceFolder}/.env"}}}))
    r = cli("mcp", "import", "vscode", str(user), "--json")
    assert "only a workspace's `.vscode/mcp.json` can fill in" in r.json()["servers"][0]["detail"], r


# -- what a newcomer hit (issue 30) --------------------------------------------------------------
def test_dry_run_rows_say_would_import(cli: Any, monad_home: Path) -> None:
    src = str(FIXTURES / "claude_desktop_config.json")
    r = cli("mcp", "import", "claude-desktop", src, "--dry-run")
    assert r.code == 0, r
    rows = [line.split()[:3] for line in r.out.splitlines()[1:]]
    assert rows and all(row[1:3] == ["would", "import"] for row in rows), r.out
    assert "imported" not in r.out and "would import 2" in r.err
    assert [s["result"] for s in cli("mcp", "import", "claude-desktop", src, "--dry-run", "--json").json()[
        "servers"]] == ["would import", "would import"]
    assert not (monad_home / "atoms").exists()


def test_import_without_a_supervisor_says_it_is_not_running(cli: Any, monad_home: Path) -> None:
    """As `monad mcp add` does: "connects them live" only when a supervisor listens."""
    r = cli("mcp", "import", "claude-desktop", str(FIXTURES / "claude_desktop_config.json"))
    assert r.code == 0, r
    assert r.err.strip().endswith("; the supervisor is not running — `monad daemon start` connects them"), r
    assert "connects them live" not in r.err, r


def test_import_never_takes_monads_own_gateway_entry(cli: Any, monad_home: Path, tmp_path: Path) -> None:
    """`connect claude-code` then `import claude-code`: monad's entry is skipped, said so, and
    alone does not fail the import; the client's other servers are imported."""
    path = tmp_path / ".claude.json"
    path.write_text(json.dumps({"mcpServers": {"time": {"type": "stdio", "command": "mcp-server-time"}},
                                "numStartups": 3}))
    assert cli("mcp", "connect", "claude-code", str(path)).code == 0
    # also by hand, through `python -m monad_cli`, under another name
    data = json.loads(path.read_text())
    data["mcpServers"]["gw"] = {"command": "/usr/bin/python3", "args": ["-m", "monad_cli", "mcp", "serve", "time"]}
    path.write_text(json.dumps(data))
    r = cli("mcp", "import", "claude-code", str(path), "--json")
    assert r.code == 0, r
    rows = {s["name"]: s for s in r.json()["servers"]}
    assert rows["time"]["result"] == "imported"
    for name in ("monad", "gw"):
        assert rows[name]["result"] == "skipped" and "monad's own gateway" in rows[name]["detail"]
    assert not (monad_home / "atoms" / "mcp" / "monad.toml").exists()
    assert not (monad_home / "atoms" / "mcp" / "gw.toml").exists()
    r = cli("mcp", "import", "claude-code", str(path))
    assert r.code == 0 and "monad's own gateway" in r.out, r


def test_connect_names_the_clients_own_entries_and_replace_takes_them_out(
        cli: Any, monad_home: Path, tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {
        "time": {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"]},  # same name
        "clock": {"command": "mcp-server-git"},  # the same definition as monad's `git`
        "mine": {"command": "my-own-server"}}, "theme": "dark"}))
    assert cli("mcp", "add", "time", "--", "mcp-server-time").code == 0
    assert cli("mcp", "add", "git", "--", "mcp-server-git").code == 0
    r = cli("mcp", "connect", "cursor", str(path))
    assert r.code == 0, r
    assert "Cursor's own entries `time`, `clock` stay in" in r.err and "runs twice" in r.err
    assert "--replace" in r.err
    assert set(json.loads(path.read_text())["mcpServers"]) == {"monad", "time", "clock", "mine"}
    r = cli("mcp", "connect", "cursor", str(path), "--replace", "--json")
    assert r.code == 0 and r.json()["replaced"] == ["time", "clock"] and r.json()["duplicates"] == [], r
    data = json.loads(path.read_text())
    assert set(data["mcpServers"]) == {"monad", "mine"} and data["theme"] == "dark"
    assert "runs twice" not in cli("mcp", "connect", "cursor", str(path)).err
    r = cli("mcp", "connect", "aura", str(tmp_path), "--replace")
    assert r.code == 2 and "--replace is not for aura" in r.err, r


def test_connect_remove_deletes_the_file_connect_created(cli: Any, tmp_path: Path) -> None:
    new = tmp_path / "fresh" / ".cursor" / "mcp.json"
    assert cli("mcp", "connect", "cursor", str(new)).code == 0 and new.exists()
    r = cli("mcp", "connect", "cursor", str(new), "--remove")
    assert r.code == 0 and "monad had created it" in r.err, r
    assert not new.exists()
    # a file that held something else of the person's is kept
    kept = tmp_path / "kept.json"
    kept.write_text('{"mcpServers": {}, "theme": "dark"}\n')
    assert cli("mcp", "connect", "cursor", str(kept)).code == 0
    assert cli("mcp", "connect", "cursor", str(kept), "--remove").code == 0
    assert json.loads(kept.read_text()) == {"mcpServers": {}, "theme": "dark"}


@pytest.mark.parametrize("client,key", [("zed", "context_servers"), ("opencode", "mcp")])
def test_connect_per_server_in_zed_and_opencode(cli: Any, monad_home: Path, tmp_path: Path, client: str,
                                                 key: str) -> None:
    """The JSON formats whose servers sit under one key take named entries too: one entry per
    enabled monad server, the client's other entries kept, `--remove` taking out only monad's."""
    assert cli("mcp", "add", "alpha", "--", "true").code == 0
    assert cli("mcp", "add", "beta", "--", "true").code == 0
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"theme": "dark", key: {"theirs": {"command": "x"}}}))
    r = cli("mcp", "connect", client, str(path), "--per-server", "--json")
    assert r.code == 0 and sorted(r.json()["entries"]) == ["alpha", "beta"], r
    data = json.loads(path.read_text())
    assert set(data[key]) == {"alpha", "beta", "theirs"} and data["theme"] == "dark"
    assert cli("mcp", "connect", client, str(path), "--per-server", "--remove").code == 0
    assert json.loads(path.read_text())[key] == {"theirs": {"command": "x"}}


def test_connect_writes_the_context_budget_into_the_entry(cli: Any, tmp_path: Path) -> None:
    """`connect --tool-search-above`/`--max-result-tokens`: the entry runs `monad mcp serve` with
    them; the entry is still monad's own (not imported back); they refuse --per-server."""
    file = tmp_path / ".cursor" / "mcp.json"
    r = cli("mcp", "connect", "cursor", str(file), "--tool-search-above", "20000", "--max-result-tokens", "25000",
            "--json")
    assert r.code == 0, r
    entry = json.loads(file.read_text())["mcpServers"]["monad"]
    assert entry["args"][-6:] == ["mcp", "serve", "--tool-search-above", "20000", "--max-result-tokens", "25000"]
    from monad_cli.cli.clients.entries import is_monad_gateway

    assert is_monad_gateway(entry)
    r = cli("mcp", "connect", "cursor", str(file), "--tool-search")
    assert r.code == 0 and json.loads(file.read_text())["mcpServers"]["monad"]["args"][-3:] == [
        "mcp", "serve", "--tool-search"]
    r = cli("mcp", "connect", "cursor", str(file), "--tool-search", "--per-server")
    assert r.code != 0 and "go without --per-server" in r.err, r
