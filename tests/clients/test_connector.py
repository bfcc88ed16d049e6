"""`monad mcp connect CLIENT [PATH]` and `--all` (clients/connector.py) over the fixture file of
every client format: monad's entry in each client's spelling, everything else kept byte for
byte, per-server entries, files created, refused and removed."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.clients import EXPECTED, FIXTURES, NEW, OLD, atom, copy_fixture, import_exit, parse, servers_key


@pytest.mark.parametrize("client", OLD)
def test_connect_writes_the_entry_keeps_everything_else_and_is_idempotent(
        cli: Any, monad_home: Path, tmp_path: Path, client: str) -> None:
    path = copy_fixture(tmp_path, EXPECTED[client][0])
    target = path / "monad.yaml" if client == "aura" else path
    before = None if client == "aura" else target.read_bytes()
    r = cli("mcp", "connect", client, str(path), "--json")
    assert r.code == 0 and r.json()["changed"] is True, r
    text = target.read_text()
    key = servers_key(client)
    data = parse(client, text)
    entry = data["monad"] if key is None else data[key]["monad"]
    assert entry["command"] == r.json()["entry"]["command"] and os.path.isabs(entry["command"])
    assert entry["args"][-2:] == ["mcp", "serve"]
    assert entry["env"] == {"MONAD_HOME": str(monad_home)}
    if before is not None:
        # Every other key and server as the client reads it; every comment line still there.
        old, new = parse(client, before.decode()), parse(client, text)
        assert key is not None
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


@pytest.mark.parametrize("client", NEW)
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
    entry = new[servers_key(client)].pop("monad")
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


@pytest.mark.parametrize("client", ["claude-code", "vscode", "codex"])
def test_connect_per_server_replaces_the_clients_own_entries(cli: Any, monad_home: Path, tmp_path: Path,
                                                            client: str) -> None:
    """`import` then `connect --per-server`: each imported server's entry now runs `monad mcp
    serve NAME` under its own name (the client's names and rules stay), the servers monad
    could not import and every other key are as they were; `--remove` takes out only monad's."""
    rel, expected = EXPECTED[client]
    path = copy_fixture(tmp_path, rel)
    assert cli("mcp", "import", client, str(path)).code == import_exit(client)
    # Every enabled server monad imported (Codex's `legacy` comes disabled, and stays the client's).
    imported = sorted(n for n, result in expected.items()
                      if result == "imported" and atom(monad_home, n).get("enabled", True))
    before = parse(client, path.read_text())
    key = servers_key(client)
    r = cli("mcp", "connect", client, str(path), "--per-server", "--json")
    assert r.code == 0 and r.json()["changed"] is True, r
    assert sorted(r.json()["entries"]) == imported
    after = parse(client, path.read_text())
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
    removed = parse(client, path.read_text())
    assert not set(imported) & set(removed[key]) and set(removed[key]) == set(before[key]) - set(imported)
    r = cli("mcp", "connect", "aura", str(tmp_path / "aura"), "--per-server")
    assert r.code == 2 and "--per-server is not supported" in r.err, r


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
    assert link.is_symlink() and "monad" in parse("gemini", real.read_text())["mcpServers"]
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


def test_a_path_that_is_no_regular_file_is_refused_and_left_as_it_is(monad: Any, tmp_path: Path) -> None:
    """A FIFO (a read would wait for a writer for ever), a socket, and a link to either: never
    read, replaced by a file or deleted. (The trial's `connect cursor /dev/null` replaced the
    device with a file; a device is not made here: mknod needs root, and a broken build would
    replace a real one. `read_text` refuses `/dev/null` itself, below.)"""
    import socket
    import stat

    from monad_cli.clients.jsonc import read_text
    from monad_cli.core.errors import ConfigError

    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tmp_path / "sock.json"))
    link = tmp_path / "link.json"
    link.symlink_to(fifo)
    try:
        for path in (fifo, tmp_path / "sock.json", link):
            for argv in (["mcp", "connect", "cursor", str(path)], ["mcp", "connect", "cursor", str(path), "--remove"],
                         ["mcp", "import", "cursor", str(path)]):
                r = monad(*argv, timeout=30)
                assert r.code == 2 and "not a regular file" in r.err and "Traceback" not in r.err, (argv, r)
                assert len(r.err.strip().splitlines()) == 1, r
        assert stat.S_ISFIFO(fifo.stat().st_mode) and stat.S_ISSOCK((tmp_path / "sock.json").stat().st_mode)
        assert link.is_symlink()
    finally:
        sock.close()
    with pytest.raises(ConfigError, match="not a regular file"):
        read_text(Path(os.devnull), os.devnull)


def test_connect_names_the_clients_own_entries_and_replace_takes_them_out(
        cli: Any, monad_home: Path, tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {
        "time": {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"]},  # same name and definition
        "clock": {"command": "mcp-server-git"},  # the same definition as monad's `git`
        "mine": {"command": "my-own-server"}}, "theme": "dark"}))
    assert cli("mcp", "add", "time", "--", "mcp-server-time", "--local-timezone", "UTC").code == 0
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
    # --remove puts back what --replace took out, as the file held it (a trial's Cursor was
    # left with none of its own servers after `connect --replace`, then `connect --remove`).
    r = cli("mcp", "connect", "cursor", str(path), "--remove", "--dry-run", "--json")
    assert r.code == 0 and r.json()["restored"] == ["time", "clock"] and "monad" in path.read_text(), r
    r = cli("mcp", "connect", "cursor", str(path), "--remove")
    assert r.code == 0 and "put back Cursor's own entries `time`, `clock`, which --replace had taken out" in r.err, r
    assert json.loads(path.read_text()) == {"mcpServers": {
        "mine": {"command": "my-own-server"}, "clock": {"command": "mcp-server-git"},
        "time": {"command": "mcp-server-time", "args": ["--local-timezone", "UTC"]}}, "theme": "dark"}
    assert oct((monad_home / "clients" / "replaced.json").stat().st_mode & 0o777) == "0o600"
    r = cli("mcp", "connect", "cursor", str(path), "--remove", "--json")  # once: the record is gone
    assert r.code == 0 and r.json()["changed"] is False and r.json()["restored"] == [], r
    r = cli("mcp", "connect", "aura", str(tmp_path), "--replace")
    assert r.code == 2 and "--replace is not for aura" in r.err, r
    # An entry added again after --replace is the person's now: left, and said so.
    assert cli("mcp", "connect", "cursor", str(path), "--replace").code == 0
    data = json.loads(path.read_text())
    data["mcpServers"]["time"] = {"command": "my-time"}
    path.write_text(json.dumps(data))
    r = cli("mcp", "connect", "cursor", str(path), "--remove", "--dry-run", "--json")
    assert r.code == 0 and r.json()["restored"] == ["clock"] and r.json()["notRestored"] == ["time"], r
    r = cli("mcp", "connect", "cursor", str(path), "--remove")
    assert "left Cursor's entries `time` as" in r.err and "the copies --replace kept are dropped" in r.err, r
    assert json.loads(path.read_text())["mcpServers"]["time"] == {"command": "my-time"}


def test_replace_leaves_an_entry_whose_name_monad_uses_for_another_server(
        cli: Any, monad_home: Path, tmp_path: Path) -> None:
    """Found by a new-user trial: `--replace` took Cursor's `github` out because monad has a
    `github` too, though monad's ran another command: Cursor's definition was then nowhere.
    Only an entry monad runs as Cursor defines it is taken out; the other stays, byte for
    byte, and connect says what to do; doing that, the next --replace takes it out."""
    path = tmp_path / "mcp.json"
    mine = '"github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"]}'
    path.write_text('{\n  "mcpServers": {\n    ' + mine + ',\n    "clock": {"command": "mcp-server-git"}\n  }\n}\n')
    assert cli("mcp", "add", "github", "--", "github-mcp-server", "stdio").code == 0
    assert cli("mcp", "add", "git", "--", "mcp-server-git").code == 0
    before = path.read_bytes()
    r = cli("mcp", "connect", "cursor", str(path), "--replace", "--dry-run")
    assert r.code == 0 and path.read_bytes() == before, r
    assert "would take Cursor's own entries `clock` out" in r.err, r
    assert (f"Cursor's own entries `github` stay in `{path}`: monad's servers of those names are defined "
            f"differently, so --replace leaves them; `monad mcp import cursor {path} --force`") in r.err, r
    r = cli("mcp", "connect", "cursor", str(path), "--replace", "--json")
    assert r.code == 0 and r.json()["replaced"] == ["clock"] and r.json()["differing"] == ["github"], r
    assert r.json()["duplicates"] == [] and "`github` stay in" in r.err, r
    text = path.read_text()
    assert mine in text and set(json.loads(text)["mcpServers"]) == {"github", "monad"}, text
    assert cli("mcp", "connect", "cursor", str(path), "--json").json()["duplicates"] == []  # not run twice either
    assert cli("mcp", "import", "cursor", str(path), "--force").code == 0  # what the warning says to do
    r = cli("mcp", "connect", "cursor", str(path), "--replace", "--json")
    assert r.code == 0 and r.json()["replaced"] == ["github"] and r.json()["differing"] == [], r
    assert set(json.loads(path.read_text())["mcpServers"]) == {"monad"}
    assert "server-github" in (monad_home / "atoms" / "mcp" / "github.toml").read_text()


def test_replace_leaves_an_entry_whose_name_monad_uses_though_another_server_matches_it(
        cli: Any, tmp_path: Path) -> None:
    """Found by a new-user trial: Cursor's `time` runs `mcp-server-time`, monad's `time` runs it
    with `--local-timezone UTC`, and monad's `clock` runs Cursor's definition exactly.
    `--replace` took Cursor's `time` out, matched by definition to `clock`, though the docs
    say an entry whose name monad uses for another definition is never taken out."""
    path = tmp_path / "mcp.json"
    path.write_text('{\n  "mcpServers": {\n    "time": {"command": "mcp-server-time"}\n  }\n}\n')
    assert cli("mcp", "add", "time", "--", "mcp-server-time", "--local-timezone", "UTC").code == 0
    assert cli("mcp", "add", "clock", "--", "mcp-server-time").code == 0
    r = cli("mcp", "connect", "cursor", str(path), "--replace", "--json")
    assert r.code == 0 and r.json()["replaced"] == [] and r.json()["differing"] == ["time"], r
    assert json.loads(path.read_text())["mcpServers"]["time"] == {"command": "mcp-server-time"}


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
    assert "monad" in parse("zed", zed.read_text())["context_servers"]
    copilot = json.loads((home / ".copilot" / "mcp-config.json").read_text())
    assert copilot["mcpServers"]["monad"]["tools"] == ["*"]
    assert goose.read_text().startswith("# hand-edited\n") and "# none yet" in goose.read_text()
    assert parse("goose", goose.read_text())["extensions"]["monad"]["name"] == "monad"
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
    cursor.write_text('{"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}, '
                      '"fetch": {"command": "my-fetch"}}}\n')
    assert cli("mcp", "add", "time", "--", "uvx", "mcp-server-time").code == 0
    assert cli("mcp", "add", "fetch", "--", "uvx", "mcp-server-fetch").code == 0  # not Cursor's `fetch`
    r = cli("mcp", "connect", "--all", "--dry-run")
    row = next(line for line in r.out.splitlines() if line.startswith("cursor"))
    assert "would connect" in row and "its own `time` would run twice" in row and "--replace" in row, r.out
    assert "fetch" not in row, r.out
    r = cli("mcp", "connect", "--all", "--replace")
    row = next(line for line in r.out.splitlines() if line.startswith("cursor"))
    assert ("took its own `time` out; its own `fetch` stays: monad's is defined differently "
            "(`monad mcp import cursor --force` first)") in row, r.out
    assert json.loads(cursor.read_text())["mcpServers"]["fetch"] == {"command": "my-fetch"}


# What the client may write after monad's entry (Codex keeps `[projects."…"]` trust tables
# below its servers): a second connect must not move or re-render monad's entry around it.
_WRITTEN_AFTER = {"codex": '\n[projects."/home/user/app"]\ntrust_level = "trusted"\n'}


@pytest.mark.parametrize("client", [*EXPECTED, "codex-bare"])
def test_connecting_twice_leaves_every_clients_file_byte_identical(cli: Any, monad_home: Path, tmp_path: Path,
                                                                   client: str) -> None:
    """Issue 39: `monad mcp connect codex` changed the file on every run (a blank line came or
    went around monad's table), so `connect --all --dry-run` always said "would connect".
    An entry already as wanted is left alone: the file stays byte for byte, with and without
    `--per-server`, and a dry run says nothing would change."""
    if client == "codex-bare":  # monad's table the file's last, until Codex writes its own after it
        client, path = "codex", tmp_path / "config.toml"
        path.write_text('[mcp_servers.time]\ncommand = "uvx"\n')
    else:
        path = copy_fixture(tmp_path, EXPECTED[client][0])
    target = path / "monad.yaml" if client == "aura" else path
    assert cli("mcp", "add", "time", "--", "mcp-server-time").code == 0
    flags = [[]] if client == "aura" else [[], ["--per-server"]]
    for extra in flags:
        assert cli("mcp", "connect", client, str(path), *extra).code == 0
        if not extra:
            with target.open("a") as f:
                f.write(_WRITTEN_AFTER.get(client, ""))
        written = target.read_bytes()
        for _ in range(2):
            r = cli("mcp", "connect", client, str(path), *extra)
            assert r.code == 0 and "nothing changed" in r.err, r
            assert target.read_bytes() == written
        r = cli("mcp", "connect", client, str(path), "--dry-run", "--json", *extra)
        assert r.code == 0 and r.json()["changed"] is False, r


def test_a_dry_run_after_connecting_every_client_says_there_is_nothing_to_do(cli: Any, monad_home: Path) -> None:
    home = Path(os.environ["HOME"])
    codex = home / ".codex" / "config.toml"
    codex.parent.mkdir()
    codex.write_text('model = "o3"\n\n[mcp_servers.time]\ncommand = "uvx"\nargs = ["mcp-server-time"]\n')
    (home / ".cursor").mkdir()
    r = cli("mcp", "connect", "--all")
    assert r.code == 0 and "connected" in r.out, r
    with codex.open("a") as f:
        f.write(_WRITTEN_AFTER["codex"])
    before = codex.read_bytes()
    r = cli("mcp", "connect", "--all", "--dry-run", "--json")
    assert {row["client"]: row["result"] for row in r.json()} == {"codex": "unchanged", "cursor": "unchanged"}, r
    r = cli("mcp", "connect", "--all", "--dry-run")
    assert r.code == 0 and "would connect" not in r.out and "nothing to do" in r.err, r
    assert codex.read_bytes() == before


def test_connect_writes_the_context_budget_into_the_entry(cli: Any, tmp_path: Path) -> None:
    """`connect --tool-search-above`/`--max-result-tokens`: the entry runs `monad mcp serve` with
    them; the entry is still monad's own (not imported back); they refuse --per-server."""
    file = tmp_path / ".cursor" / "mcp.json"
    r = cli("mcp", "connect", "cursor", str(file), "--tool-search-above", "20000", "--max-result-tokens", "25000",
            "--json")
    assert r.code == 0, r
    entry = json.loads(file.read_text())["mcpServers"]["monad"]
    assert entry["args"][-6:] == ["mcp", "serve", "--tool-search-above", "20000", "--max-result-tokens", "25000"]
    from monad_cli.clients.entries import is_monad_gateway

    assert is_monad_gateway(entry)
    r = cli("mcp", "connect", "cursor", str(file), "--tool-search")
    assert r.code == 0 and json.loads(file.read_text())["mcpServers"]["monad"]["args"][-3:] == [
        "mcp", "serve", "--tool-search"]
    r = cli("mcp", "connect", "cursor", str(file), "--tool-search", "--per-server")
    assert r.code != 0 and "go without --per-server" in r.err, r


@pytest.mark.parametrize("start", ['model = "o3"\n', "", '[mcp_servers.monad]\ncommand = "old"\n\n[mcp_servers.x]\n'
                                   'command = "y"\n'])
def test_changing_codexs_entry_again_and_again_keeps_its_file_the_same_size(cli: Any, tmp_path: Path,
                                                                           start: str) -> None:
    """Found by a new-user trial: each `monad mcp connect codex` with other flags than the last
    (`--tool-search`, then without) put one more blank line above monad's table when it was
    the first table of the file (the common `model = …` then `[mcp_servers.monad]`). Now the
    entry is replaced in place: the same flags give the same bytes, and `--remove` gives back
    the file as it was before monad's entry came."""
    path = tmp_path / "config.toml"
    if start:
        path.write_text(start)
    assert cli("mcp", "connect", "codex", str(path)).code == 0
    first = path.read_bytes()
    for _ in range(3):
        assert cli("mcp", "connect", "codex", str(path), "--tool-search").code == 0
        assert b'"--tool-search"' in path.read_bytes()
        assert cli("mcp", "connect", "codex", str(path)).code == 0
        assert path.read_bytes() == first
    r = cli("mcp", "connect", "codex", str(path), "--remove")
    assert r.code == 0, r
    if start.startswith("model"):
        assert path.read_text() == start
    elif not start:
        assert not path.exists()
    else:  # the person's own `monad` table was replaced; the rest is as it was
        assert path.read_text() == '[mcp_servers.x]\ncommand = "y"\n'


def test_connect_says_when_it_replaces_a_monad_entry_that_ran_something_else(cli: Any, tmp_path: Path) -> None:
    """A `monad` entry already there that runs another command (another install, another
    MONAD_HOME, a person's own entry of that name) is replaced, never silently: a dry run
    says it would, the write says it did; a second connect is quiet."""
    file = tmp_path / ".cursor" / "mcp.json"
    file.parent.mkdir()
    file.write_text('{"mcpServers": {"monad": {"command": "/opt/old/monad", "args": ["mcp", "serve"]}}}\n')
    r = cli("mcp", "connect", "cursor", str(file), "--dry-run", "--json")
    assert r.code == 0 and r.json()["overwrote"] is True and r.json()["changed"] is True, r
    r = cli("mcp", "connect", "cursor", str(file), "--dry-run")
    assert "ran something else" in r.err and "would now run this one" in r.err, r
    # The plan shows the entry as the file will spell it, on stdout.
    assert json.loads(r.out)["mcpServers"]["monad"]["args"][-2:] == ["mcp", "serve"], r
    assert "/opt/old/monad" in file.read_text()
    r = cli("mcp", "connect", "cursor", str(file))
    assert r.code == 0 and "ran something else" in r.err and "now runs this one" in r.err, r
    assert json.loads(file.read_text())["mcpServers"]["monad"]["command"] != "/opt/old/monad"
    r = cli("mcp", "connect", "cursor", str(file), "--json")
    assert r.code == 0 and r.json()["overwrote"] is False and r.json()["changed"] is False, r


def test_connect_all_says_which_monad_entries_it_replaces(cli: Any, monad_home: Path) -> None:
    """`--all` too: a client whose `monad` entry ran something else is `replaced`, not `connected`."""
    cursor = Path(os.environ["HOME"]) / ".cursor" / "mcp.json"
    cursor.parent.mkdir(parents=True)
    cursor.write_text('{"mcpServers": {"monad": {"command": "/opt/old/monad", "args": ["mcp", "serve"]}}}\n')
    r = cli("mcp", "connect", "--all", "--dry-run", "--json")
    assert {row["client"]: row["result"] for row in r.json()}["cursor"] == "would replace", r
    r = cli("mcp", "connect", "--all", "--json")
    assert {row["client"]: row["result"] for row in r.json()}["cursor"] == "replaced", r
    r = cli("mcp", "connect", "--all", "--json")
    assert {row["client"]: row["result"] for row in r.json()}["cursor"] == "unchanged", r


def test_replace_leaves_an_entry_that_holds_what_import_did_not_keep(cli: Any, monad_home: Path) -> None:
    """Found by a new-user trial: Cursor's `docs` held both a `command` and a `url`; `monad mcp
    import cursor` kept the url (saying it left the command out), and `connect --replace`
    then took the entry out as "the same definition": the command was nowhere any more. An
    entry is the same only when import kept every field of it that says what runs or where
    it connects; the other stays byte for byte, and connect says which fields and why."""
    path = Path(os.environ["HOME"]) / ".cursor" / "mcp.json"  # Cursor's own file, in the test's home
    path.parent.mkdir()
    both = {"command": "npx", "args": ["-y", "sentinel-docs-server"], "url": "https://docs.example.com/mcp"}
    local = {"type": "stdio", "command": "sentinel-notes-server", "url": "https://notes.example.com/mcp"}
    path.write_text(json.dumps({"mcpServers": {"docs": both, "notes": local,
                                               "clock": {"url": "https://clock.example.com/mcp"}}}, indent=2))
    r = cli("mcp", "import", "cursor", "--json")
    assert r.code == 0 and r.json()["imported"] == 3, r
    notes = {row["name"]: row["detail"] for row in r.json()["servers"]}
    assert notes["docs"] == "left out `command`, `args` (no monad equivalent)", notes
    assert notes["notes"] == "left out `url` (no monad equivalent)", notes  # was dropped without a word
    r = cli("mcp", "connect", "cursor")
    assert r.code == 0, r
    assert "`docs`, `notes`" not in r.err and "Cursor's own entries `clock` stay in" in r.err, r  # runs twice: clock
    r = cli("mcp", "connect", "cursor", "--replace", "--json")
    assert r.code == 0 and r.json()["replaced"] == ["clock"] and r.json()["duplicates"] == [], r
    assert r.json()["partial"] == [{"name": "docs", "leftOut": ["command", "args"]},
                                   {"name": "notes", "leftOut": ["url"]}], r
    assert ("Cursor's own entries `docs`, `notes` stay in `~/.cursor/mcp.json`: monad's servers hold them without "
            "some of their fields (`docs`: `command`, `args`; `notes`: `url`), so they are not the same definitions "
            "and --replace leaves them; take those fields out of `~/.cursor/mcp.json` if Cursor does not need "
            "them, and --replace takes them out") in r.err, r
    servers = json.loads(path.read_text())["mcpServers"]
    assert servers == {"docs": both, "notes": local, "monad": servers["monad"]}, servers
    # What the warning says to do: without the fields monad did not keep, it is the same.
    servers["docs"] = {"url": both["url"]}
    path.write_text(json.dumps({"mcpServers": servers}, indent=2))
    r = cli("mcp", "connect", "cursor", "--replace", "--json")
    assert r.code == 0 and r.json()["replaced"] == ["docs"], r
    assert r.json()["partial"] == [{"name": "notes", "leftOut": ["url"]}], r
