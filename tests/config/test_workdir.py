"""Relative commands (config/workdir.py): `monad mcp add` records the caller's directory when the
server needs it, `get` shows where every stdio server runs, and the server works wherever
the supervisor was started."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from monad_cli.config.workdir import cwd_to_record

SERVER = '''import os
from mcp.server import MCPServer
mcp = MCPServer("project")

@mcp.tool()
def where() -> str:
    """The server's working directory and a file it reads relative to it."""
    return os.getcwd() + "|" + open("data.txt").read().strip()

mcp.run()
'''


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "srv.py").write_text(SERVER)
    (root / "data.txt").write_text("project data\n")
    (root / "run.sh").write_text(f"#!/bin/sh\nexec {sys.executable} srv.py\n")
    (root / "run.sh").chmod(0o755)
    monkeypatch.chdir(root)
    return root


def test_the_rule(project: Path) -> None:
    here = str(project)
    assert cwd_to_record("./run.sh", [], here) == (here, "the command `./run.sh` is a relative path")
    assert cwd_to_record("python", ["srv.py"], here) == (
        here, "the argument `srv.py` is a relative path that exists here")
    assert cwd_to_record("server", ["--data=data.txt"], here) is not None
    assert cwd_to_record("mcp-server-time", ["--local-timezone", "UTC"], here) is None
    assert cwd_to_record("python", ["/abs/srv.py", "$HOME/x", "https://example.com/x"], here) is None
    assert cwd_to_record("$TOOLS/srv", [], here) is None  # expands in the supervisor


def test_add_records_cwd_for_relative_paths_and_get_shows_where_it_runs(cli: Any, project: Path,
                                                                        monad_home: Path) -> None:
    r = cli("mcp", "add", "rel", "--", sys.executable, "srv.py")
    assert r.code == 0, r
    assert f"it runs in `{project}` (recorded as `cwd`: the argument `srv.py` is a relative path" in r.err
    shown = cli("mcp", "get", "rel", "--json").json()
    assert shown["definition"]["cwd"] == str(project) and shown["cwd"] == str(project)
    assert shown["cwdDefault"] is False
    assert cli("mcp", "add", "dot", "--", "./run.sh").code == 0
    assert cli("mcp", "get", "dot", "--json").json()["definition"]["cwd"] == str(project)
    # No relative path: no cwd written; it runs in its own directory under MONAD_HOME.
    assert cli("mcp", "add", "time", "--", "mcp-server-time", "--local-timezone", "UTC").code == 0
    shown = cli("mcp", "get", "time", "--json").json()
    assert "cwd" not in shown["definition"] and shown["cwdDefault"] is True
    assert shown["cwd"] == str(monad_home / "work" / "time")
    text = cli("mcp", "get", "time").out
    assert f"# runs in {monad_home / 'work' / 'time'} (no `cwd` set" in text
    # An explicit --cwd wins over the rule.
    other = project.parent / "other"
    other.mkdir()
    assert cli("mcp", "add", "explicit", "--cwd", str(other), "--", sys.executable, "srv.py").code == 0
    assert cli("mcp", "get", "explicit", "--json").json()["cwd"] == str(other)
    remote = cli("mcp", "add", "web", "--url", "http://127.0.0.1:9/mcp")
    assert remote.code == 0 and cli("mcp", "get", "web", "--json").json()["cwd"] is None
