"""`monad mcp import CLIENT [PATH]` (clients/importer.py) over the fixture file of every
client format: results per server, each client's fields, reasons, malformed files, secrets
checked with sentinel values."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.clients import EXPECTED, FIXTURES, NEW, OLD, SENTINEL, atom, import_exit


@pytest.mark.parametrize("client", list(EXPECTED))
def test_import_each_format(cli: Any, monad_home: Path, client: str) -> None:
    rel, expected = EXPECTED[client]
    r = cli("mcp", "import", client, str(FIXTURES / rel), "--json")
    assert r.code == import_exit(client), r
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
    for client in OLD:
        rel = EXPECTED[client][0]
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


def test_each_new_format_maps_its_fields(cli: Any, monad_home: Path) -> None:
    reasons = {}
    for client in NEW:
        rel = EXPECTED[client][0]
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
    ("aura", "a:\n  command: x\na:\n  command: y\n", "found duplicate key \"a\""),
    ("gemini", "[1, 2]", "expected a JSON object with `mcpServers`"),
])
def test_a_file_of_the_wrong_shape_exits_2(cli: Any, tmp_path: Path, client: str, text: str, expected: str) -> None:
    path = tmp_path / ("x.yaml" if client == "aura" else "x.json")
    path.write_text(text)
    r = cli("mcp", "import", client, str(path))
    assert r.code == 2 and expected in r.err, r


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
