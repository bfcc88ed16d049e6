"""Presets (features/presets.toml) and deferred-tool configuration (deferred, tools.toml).

No network and no browser download: the browser preset is checked as the definition it
synthesizes, with a stand-in Chromium executable.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from monad_cli.config.features import load_tool_globs
from monad_cli.config.loader import load_definitions
from monad_cli.config.presets import PLAYWRIGHT_MCP_VERSION
from monad_cli.core.errors import ConfigError
from monad_cli.core.paths import paths
from tests.conftest import light_cmd, status_of, wait_for, wait_state


def _write(home: Path, rel: str, text: str) -> Path:
    p = home / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def _fake_chromium(tmp_path: Path, name: str = "chromium") -> Path:
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    exe = bindir / name
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(0o755)
    return exe


def test_browser_preset_synthesizes_a_headless_playwright_server(monad_home: Path, tmp_path: Path) -> None:
    exe = _fake_chromium(tmp_path)
    _write(monad_home, "features/presets.toml", "browser = {enabled = true}\n")
    defs = load_definitions(paths(), {"PATH": str(exe.parent)})
    spec = defs.specs["browser"]
    assert spec.source == "features/presets.toml"
    assert spec.transport == "stdio" and spec.command == "npx"
    assert spec.args == ["-y", f"@playwright/mcp@{PLAYWRIGHT_MCP_VERSION}", "--headless", "--browser", "chromium",
                         "--executable-path", str(exe), "--isolated"]
    assert spec.trust.host_escape and spec.trust.table == {"hostEscape": True}
    assert spec.timeout == 120 and not spec.sandbox
    assert defs.problems == []


def test_a_hand_written_case_twin_of_a_preset_is_refused_and_the_preset_kept(monad_home: Path, tmp_path: Path) -> None:
    """Found by a new-user trial: `atoms/mcp/BROWSER.toml` beside the enabled preset `browser`
    (`monad mcp add BROWSER` refuses it) took the name, and a supervisor kept running both (the
    preset on its last good definition). The twin is refused as `add` refuses it; an atom under
    the preset's own name still replaces the preset."""
    exe = _fake_chromium(tmp_path)
    _write(monad_home, "features/presets.toml", "browser = {enabled = true}\n")
    _write(monad_home, "atoms/mcp/BROWSER.toml", 'command = "echo"\n')
    _write(monad_home, "agents.json", json.dumps({"mcpServers": {"Browser": {"command": "echo"}}}))
    defs = load_definitions(paths(), {"PATH": str(exe.parent)})
    assert sorted(defs.specs) == ["browser"] and defs.specs["browser"].source == "features/presets.toml"
    assert [p.message for p in defs.problems] == [
        f"`{source}`: server `{name}` differs from the enabled preset `browser` (`features/presets.toml`) only in "
        f"case; not run: rename it, or name it `browser` to replace the preset"
        for source, name in (("atoms/mcp/BROWSER.toml", "BROWSER"), ("agents.json", "Browser"))]
    # A twin that runs already (the preset enabled after it) keeps running: the preset steps aside.
    defs = load_definitions(paths(), {"PATH": str(exe.parent)}, prefer=frozenset({"BROWSER"}))
    assert sorted(defs.specs) == ["BROWSER"] and sorted(p.server for p in defs.problems) == ["Browser", "browser"]
    assert defs.problem_for("browser").message.startswith(  # type: ignore[union-attr]
        "`features/presets.toml`: server `browser` is already defined in `atoms/mcp/BROWSER.toml` as `BROWSER`")
    _write(monad_home, "atoms/mcp/browser.toml", 'command = "cat"\n')
    (monad_home / "atoms/mcp/BROWSER.toml").unlink()
    defs = load_definitions(paths(), {"PATH": str(exe.parent)})
    assert defs.specs["browser"].command == "cat" and defs.problem_for("browser") is None


def test_browser_preset_options(monad_home: Path, tmp_path: Path) -> None:
    exe = _fake_chromium(tmp_path, "my-chrome")
    _write(monad_home, "features/presets.toml",
           f'[browser]\nenabled = true\nexecutablePath = {json.dumps(str(exe))}\nversion = "latest"\n'
           f'deferred = true\ncondition = "fact_eq:env=dev"\n')
    spec = load_definitions(paths(), {"PATH": ""}).specs["browser"]
    assert "@playwright/mcp@latest" in spec.args and str(exe) in spec.args
    assert spec.deferred and spec.condition == "fact_eq:env=dev"


def test_chromium_names_are_searched_in_order(monad_home: Path, tmp_path: Path) -> None:
    _fake_chromium(tmp_path, "google-chrome")
    chromium = _fake_chromium(tmp_path, "chromium-browser")
    _write(monad_home, "features/presets.toml", "browser = {enabled = true}\n")
    spec = load_definitions(paths(), {"PATH": str(chromium.parent)}).specs["browser"]
    assert spec.args[spec.args.index("--executable-path") + 1] == str(chromium)


def test_no_chromium_is_a_clear_problem_for_the_browser_server(monad_home: Path, tmp_path: Path) -> None:
    _write(monad_home, "features/presets.toml", "browser = {enabled = true}\n")
    empty = tmp_path / "empty"
    empty.mkdir()
    defs = load_definitions(paths(), {"PATH": str(empty)})
    assert "browser" not in defs.specs
    problem = defs.problem_for("browser")
    assert problem is not None and problem.file == "features/presets.toml"
    assert problem.message.startswith("`features/presets.toml`: preset `browser`: no system Chromium found on PATH")
    assert "executablePath" in problem.message


def test_a_user_defined_browser_takes_precedence(monad_home: Path, tmp_path: Path) -> None:
    exe = _fake_chromium(tmp_path)
    _write(monad_home, "features/presets.toml", "browser = {enabled = true}\n")
    _write(monad_home, "atoms/mcp/browser.toml", 'command = "my-browser-server"\n')
    defs = load_definitions(paths(), {"PATH": str(exe.parent)})
    assert defs.specs["browser"].command == "my-browser-server"
    assert defs.specs["browser"].source == "atoms/mcp/browser.toml"
    assert defs.problems == []  # stepping aside is not a conflict

    (monad_home / "atoms/mcp/browser.toml").unlink()
    _write(monad_home, "agents.json", json.dumps({"mcpServers": [{"name": "browser", "command": "theirs"}]}))
    defs = load_definitions(paths(), {"PATH": str(exe.parent)})
    assert defs.specs["browser"].command == "theirs" and defs.problems == []

    # Even a broken user definition wins: its error shows, the preset does not replace it.
    _write(monad_home, "agents.json", json.dumps({"mcpServers": [{"name": "browser", "command": ""}]}))
    defs = load_definitions(paths(), {"PATH": str(exe.parent)})
    assert "browser" not in defs.specs
    problem = defs.problem_for("browser")
    assert problem is not None and problem.file == "agents.json"


def test_add_refuses_a_case_twin_of_an_enabled_preset(cli, monad_home: Path) -> None:
    """`BROWSER` beside the preset `browser` would run and be served twice (`BROWSER__*` and
    `browser__*`) while the loader reports the pair as one name: `add` refuses it up front."""
    _write(monad_home, "features/presets.toml", "browser = {enabled = true}\ncomputer = {enabled = false}\n")
    r = cli("mcp", "add", "BROWSER", "--", "my-browser-server")
    assert r.code == 2, r
    assert r.err.strip().splitlines() == [
        "error: server `BROWSER` differs from the enabled preset `browser` (`features/presets.toml`) only in "
        "case; choose another name, or add it as `browser` to replace the preset"], r
    assert not (monad_home / "atoms/mcp/BROWSER.toml").exists()
    # The preset's own name replaces it (documented above), and a disabled preset holds no name.
    assert cli("mcp", "add", "browser", "--", "my-browser-server").code == 0
    assert cli("mcp", "add", "Computer", "--", "my-computer-server").code == 0


def test_disabled_or_absent_preset_adds_nothing(monad_home: Path, tmp_path: Path) -> None:
    exe = _fake_chromium(tmp_path)
    assert "browser" not in load_definitions(paths(), {"PATH": str(exe.parent)}).specs
    _write(monad_home, "features/presets.toml", "browser = {enabled = false}\n")
    defs = load_definitions(paths(), {"PATH": str(exe.parent)})
    assert "browser" not in defs.specs and defs.problems == []


@pytest.mark.parametrize(("text", "server", "expected"), [
    ("desktop = {enabled = true}\n", None,
     "`features/presets.toml`: unknown preset `desktop`; known presets: browser, computer"),
    ("browsr = {enabled = true}\n", None, "unknown preset `browsr` (did you mean `browser`?)"),
    ("browser = true\n", None, "preset `browser` must be a table such as `browser = {enabled = true}`"),
    ("browser = {enabled = \"yes\"}\n", "browser", "field `enabled`: must be true or false"),
    ("browser = {enabled = true, executablepath = \"/x\"}\n", "browser",
     "field `executablepath`: unknown field (did you mean `executablePath`?)"),
    ("browser = {enabled = true, executablePath = \"chromium\"}\n", "browser", "must be an absolute path"),
    ("browser = {enabled = true, executablePath = \"/nonexistent/chromium\"}\n", "browser",
     "`/nonexistent/chromium` is not an executable file"),
    ("browser = {enabled = true, condition = \"env_set:\"}\n", "browser",
     "field `condition`: position 9: `env_set:` needs an argument"),
    ("browser = {enabled = true\n", None, "`features/presets.toml:1:"),
])
def test_preset_errors(monad_home: Path, tmp_path: Path, text: str, server: str | None, expected: str) -> None:
    exe = _fake_chromium(tmp_path)
    _write(monad_home, "features/presets.toml", text)
    _write(monad_home, "atoms/mcp/other.toml", 'command = "true"\n')
    defs = load_definitions(paths(), {"PATH": str(exe.parent)})
    assert "other" in defs.specs  # a bad presets file disables nothing else
    matching = [p for p in defs.problems if expected in p.message]
    assert matching, defs.problems
    assert matching[0].server == server
    assert "\n" not in matching[0].message


# -- deferred ------------------------------------------------------------------------------------
def test_deferred_server_flag(monad_home: Path) -> None:
    _write(monad_home, "atoms/mcp/gh.toml", 'command = "true"\ndeferred = true\n')
    _write(monad_home, "atoms/mcp/now.toml", 'command = "true"\n')
    _write(monad_home, "atoms/mcp/bad.toml", 'command = "true"\ndeferred = "yes"\n')
    defs = load_definitions(paths(), {})
    assert defs.specs["gh"].deferred is True and defs.specs["now"].deferred is False
    problem = defs.problem_for("bad")
    assert problem is not None and "field `deferred`: must be true or false" in problem.message


def test_tools_toml_deferred_globs(monad_home: Path) -> None:
    assert load_tool_globs(paths())["deferred"] == []
    _write(monad_home, "features/tools.toml", 'deferred = ["github__*", " slack__post_* "]\n')
    assert load_tool_globs(paths())["deferred"] == ["github__*", "slack__post_*"]


@pytest.mark.parametrize(("text", "expected"), [
    ('deferred = "github__*"\n', "field `deferred` must be a list of glob patterns"),
    ('deferred = ["ok", ""]\n', "field `deferred` has an empty pattern"),
    ('deffered = []\n', "`deffered` is not a known field (did you mean `deferred`?)"),
])
def test_tools_toml_errors(monad_home: Path, text: str, expected: str) -> None:
    _write(monad_home, "features/tools.toml", text)
    with pytest.raises(ConfigError) as info:
        load_tool_globs(paths())
    assert expected in info.value.message
    assert info.value.message.startswith("`features/tools.toml`")


# -- the real supervisor: a preset appears, then steps aside live ----------------------------
@pytest.mark.e2e
def test_supervisor_preset_then_user_definition_takes_over(monad: Any, monad_home: Path) -> None:
    # A non-executable browser path keeps this deterministic on machines with or without
    # Chromium, and never starts npx.
    _write(monad_home, "features/presets.toml", 'browser = {enabled = true, executablePath = "/nonexistent/c"}\n')
    r = monad("daemon", "start", timeout=120)
    assert r.code == 0, r
    try:
        row = wait_for(lambda: (s := status_of(monad, "browser"))["state"] == "failed" and s, timeout=60)
        assert row["source"] == "features/presets.toml"
        assert "`/nonexistent/c` is not an executable file" in row["reason"]
        cmd = light_cmd()
        _write(monad_home, "atoms/mcp/browser.toml",
               f"command = {json.dumps(cmd[0])}\nargs = {json.dumps(cmd[1:])}\ntimeout = 60\n")
        row = wait_state(monad, "browser", "connected", timeout=90)
        assert row["source"] == "atoms/mcp/browser.toml"
        assert os.path.basename(cmd[1]) == "lightserver.py"
    finally:
        monad("daemon", "stop")


def test_a_presets_file_others_can_write_is_not_read(monad_home: Path, tmp_path: Path) -> None:
    """`executablePath` runs a program as this user: a features/presets.toml that group or
    others may write is held to the home's rule (core/paths.py `exposure`), as an atom is."""
    exe = _fake_chromium(tmp_path, "my-chrome")
    presets = _write(monad_home, "features/presets.toml",
                     f"[browser]\nenabled = true\nexecutablePath = {json.dumps(str(exe))}\n")
    presets.chmod(0o664)
    defs = load_definitions(paths(), {"PATH": ""})
    assert "browser" not in defs.specs
    assert [(p.file, p.message) for p in defs.problems] == [
        ("features/presets.toml", f"`features/presets.toml` is writable by group (mode 664): not read, as another "
                                  f"account could have changed what it defines; check what is in it, then "
                                  f"`chmod 600 {presets}`")]
    presets.chmod(0o644)  # readable by others is not this rule's business (only writing defines a server)
    assert "browser" in load_definitions(paths(), {"PATH": ""}).specs
