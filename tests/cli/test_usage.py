"""A group run without a command prints its help and nothing else: no empty `error:` line
(found by a new-user trial: `monad mcp` ended with "error:  (see `monad mcp --help`)")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize("group", ["mcp", "daemon", "env"])
def test_a_group_without_a_command_shows_its_help_and_no_empty_error(group: str, monad_home: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "monad_cli", group], capture_output=True, text=True, timeout=60)
    out = r.stdout + r.stderr
    assert "Usage:" in out and "Commands" in out, out
    assert "error:" not in out, out


def test_a_bad_option_is_still_one_line_naming_the_help(monad_home: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "monad_cli", "mcp", "--bogus"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1] == "error: No such option: --bogus (see `monad mcp --help`)"


def test_help_paragraphs_wrap_once_at_the_terminal_width(monad_home: Path) -> None:
    """typer keeps a docstring's line breaks after its first paragraph, so an 80-column
    terminal broke `monad mcp add --help` mid-sentence ("asked for on" / "a terminal");
    paragraphs are joined before rich wraps them, examples and lists keep their lines."""
    from monad_cli.cli.app import reflow

    assert reflow("First.\n\nasked for on\na terminal, and\nmore.\n\nExamples:\n\n  monad a\n  monad b\n\n"
                  "- one\n- two\ncontinued") == \
        "First.\n\nasked for on a terminal, and more.\n\nExamples:\n\n  monad a\n  monad b\n\n- one\n- two continued"
    r = subprocess.run([sys.executable, "-m", "monad_cli", "mcp", "add", "--help"], capture_output=True, text=True,
                       timeout=60, env={**os.environ, "COLUMNS": "80", "TERM": "dumb"})
    lines = [line.strip() for line in r.stdout.splitlines()]
    sentence = next(i for i, line in enumerate(lines) if line.startswith("NAME installs it"))
    assert lines[sentence + 1].startswith("asked for on a terminal"), lines[sentence:sentence + 3]
