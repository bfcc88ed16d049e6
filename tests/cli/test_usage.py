"""A group run without a command prints its help and nothing else: no empty `error:` line
(found by a new-user trial: `monad mcp` ended with "error:  (see `monad mcp --help`)")."""

from __future__ import annotations

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
