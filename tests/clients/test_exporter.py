"""`monad mcp export CLIENT` (clients/exporter.py): every server in the format each client's
file takes, secrets masked, and exported then imported back to the same servers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.clients import EXPECTED, FIXTURES, NEW, SENTINEL, parse


# -- export --------------------------------------------------------------------------------------
def _import_all(cli: Any) -> None:
    for client in ("claude-code", "codex", "gemini", "mcp-json", "aura"):
        cli("mcp", "import", client, str(FIXTURES / EXPECTED[client][0]))


@pytest.mark.parametrize("fmt", ["mcp-json", "codex", "vscode", "aura"])
def test_export_masks_secrets_and_keeps_references(cli: Any, fmt: str) -> None:
    _import_all(cli)
    r = cli("mcp", "export", fmt)
    assert r.code == 0, r
    assert SENTINEL not in r.out + r.err and "***" in r.out
    data = parse({"mcp-json": "claude-code"}.get(fmt, fmt), r.out)
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
    revealed = cli("mcp", "export", fmt, "--reveal-secrets").out
    assert "SENTINEL-7f3a9c-codex" in revealed and "SENTINEL-7f3a9c-arg" in revealed


@pytest.mark.parametrize(("fmt", "client", "filename"), [
    ("mcp-json", "mcp-json", "out.json"), ("codex", "codex", "config.toml"), ("vscode", "vscode", "mcp.json"),
    ("aura", "aura", "out.yaml"),
])
def test_export_then_import_gives_the_same_servers(cli: Any, monad_home: Path, tmp_path: Path, monkeypatch: Any,
                                                   fmt: str, client: str, filename: str) -> None:
    from monad_cli.clients.importer import same_definition
    from monad_cli.config.loader import load_definitions
    from monad_cli.core.paths import paths

    _import_all(cli)
    original = load_definitions(paths(), expand=False).raw
    r = cli("mcp", "export", fmt, "--reveal-secrets")
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
    r = cli("mcp", "export", "mcp-json")
    assert "legacy" not in json.loads(r.out)["mcpServers"]
    assert "server `legacy` is disabled" in r.err
    assert parse("codex", cli("mcp", "export", "codex").out)["mcp_servers"]["legacy"]["enabled"] is False


def test_export_does_not_warn_about_the_enabled_that_enable_wrote(cli: Any) -> None:
    """Found by a new-user trial: after `monad mcp disable` and `enable` the atom says
    `enabled = true`, and every export to a format without an off switch warned that
    `enabled` was left out — though only enabled servers are exported there."""
    assert cli("mcp", "add", "time", "--", "mcp-server-time").code == 0
    assert cli("mcp", "disable", "time").code == 0 and cli("mcp", "enable", "time").code == 0
    r = cli("mcp", "export", "mcp-json")
    assert r.code == 0 and "time" in json.loads(r.out)["mcpServers"] and "left out" not in r.err, r
    assert parse("codex", cli("mcp", "export", "codex").out)["mcp_servers"]["time"]["enabled"] is True


@pytest.mark.parametrize("client", NEW)
def test_export_then_import_of_each_newer_format(cli: Any, monad_home: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch, client: str) -> None:
    from monad_cli.clients.importer import same_definition
    from monad_cli.config.loader import load_definitions
    from monad_cli.core.paths import paths

    cli("mcp", "add", "local", "--env", f"TOKEN={SENTINEL}-x", "--env", "REGION=${REGION}", "--", "local-mcp", "-v")
    cli("mcp", "add", "remote", "--url", "https://mcp.example.com/mcp", "--header", "X-Key: ${REMOTE_KEY}")
    original = load_definitions(paths(), expand=False).raw
    r = cli("mcp", "export", client)
    assert r.code == 0 and SENTINEL not in r.out, r  # masked unless --reveal-secrets
    r = cli("mcp", "export", client, "--reveal-secrets")
    out = tmp_path / "out"
    out.write_text(r.out)
    monkeypatch.setenv("MONAD_HOME", str(tmp_path / "second-home"))
    r = cli("mcp", "import", client, str(out), "--json")
    assert r.code == 0, r
    again = load_definitions(paths(), expand=False).raw
    for name in ("local", "remote"):
        assert same_definition(original[name], again[name], name), (name, original[name], again[name])


@pytest.mark.parametrize("client", ["cursor", "claude-code", "claude-desktop", "gemini"])
def test_export_takes_the_client_as_import_and_connect_do(cli: Any, client: str) -> None:
    """Issue 39: `export` took `--format`, `import` and `connect` a CLIENT argument. Now all
    three take CLIENT first; a client that reads the `.mcp.json` format gets that format."""
    cli("mcp", "add", "time", "--", "mcp-server-time")
    r = cli("mcp", "export", client)
    assert r.code == 0 and r.out == cli("mcp", "export", "mcp-json").out, r
    assert list(parse(client, r.out)["mcpServers"]) == ["time"]
    for command in ("import", "connect", "export"):
        usage = cli("mcp", command, "--help").out
        assert "CLIENT" in usage.split("Usage:", 1)[1].splitlines()[0], usage
    r = cli("mcp", "export", "cursr")
    assert r.code == 2 and r.err.startswith("error: unknown client `cursr` (did you mean `cursor`?)"), r


def test_export_masks_only_what_is_secret(cli: Any, monad_home: Path) -> None:
    """`***` marks secrets only: an ordinary env value (`DEBUG=1`, a path) is exported as
    written, as `monad mcp get` shows it; a secret by name or shape is masked."""
    (monad_home / "atoms" / "mcp").mkdir(parents=True, exist_ok=True)
    (monad_home / "atoms" / "mcp" / "plain.toml").write_text(
        'command = "srv"\n[env]\nDEBUG = "1"\nDATA_DIR = "/srv/data"\nAPI_TOKEN = "sk-sentinel-55e0c1"\n'
        'OTHER = "a1b2c3d4e5f6a7b8c9d0e1f2"\nDB_URL = "postgres://app:pw-sentinel-9d1@db/app"\n')
    r = cli("mcp", "export", "mcp-json")
    assert r.code == 0, r
    env = json.loads(r.out)["mcpServers"]["plain"]["env"]
    assert env == {"DEBUG": "1", "DATA_DIR": "/srv/data", "API_TOKEN": "***", "OTHER": "***",
                   "DB_URL": "postgres://app:***@db/app"}, env
    got = cli("mcp", "get", "plain", "--json")
    assert "pw-sentinel-9d1" not in got.out + got.err and "postgres://app:***@db/app" in got.out, got


def test_a_value_equal_to_a_held_secret_is_masked_under_any_name(cli: Any, monad_home: Path) -> None:
    """Found by a new-user trial: the token of `Authorization` also sent as `X-Custom` (a name
    that says nothing), or set as a plain-named env var, was shown in clear by `get` and
    `export`, though it is a secret monad holds. `DEBUG=1` stays shown; --reveal-secrets shows all."""
    token = "SENTINEL-c0ffee-42"
    assert cli("mcp", "add", "web", "--url", "https://example.com/mcp", "--header", f"Authorization: Bearer {token}",
               "--header", f"X-Custom: {token}").code == 0
    assert cli("mcp", "add", "loc", "-e", f"PLAIN={token}", "-e", "DEBUG=1", "--", "srv").code == 0
    got = cli("mcp", "get", "web")
    assert got.code == 0 and token not in got.out + got.err and '"X-Custom": "***"' in got.out, got
    got = cli("mcp", "get", "loc", "--json")
    assert got.json()["definition"]["env"] == {"PLAIN": "***", "DEBUG": "1"}, got
    r = cli("mcp", "export", "cursor")
    assert r.code == 0 and token not in r.out, r
    servers = json.loads(r.out)["mcpServers"]
    assert servers["web"]["headers"]["X-Custom"] == "***" and servers["loc"]["env"] == {"PLAIN": "***", "DEBUG": "1"}
    assert token in cli("mcp", "export", "cursor", "--reveal-secrets").out
