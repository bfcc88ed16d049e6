"""The CLI's fast path stays light: `--help`, `add`, `status`, `remove` never load the MCP
SDK, SQLAlchemy, uvicorn or httpx2 (DESIGN "Control API"; the SDK import alone costs ~0.8 s)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

HEAVY = ("mcp", "mcp_types", "sqlalchemy", "sqlmodel", "uvicorn", "httpx2", "starlette", "pydantic")


def imported_modules(*argv: str) -> set[str]:
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "monad_cli", *argv],
                          capture_output=True, text=True, timeout=60)
    mods = set()
    for line in proc.stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            mods.add(line.rsplit("|", 1)[1].strip().split(".")[0])
    return mods


@pytest.mark.parametrize("argv", [
    ("--help",), ("mcp", "--help"), ("mcp", "add", "light", "--", "echo", "hi"), ("mcp", "list", "--json"),
    ("mcp", "get", "light"), ("mcp", "remove", "light"),
])
def test_fast_path_does_not_import_heavy_packages(argv: tuple[str, ...]) -> None:
    if argv[:2] in (("mcp", "get"), ("mcp", "remove")):
        subprocess.run([sys.executable, "-m", "monad_cli", "mcp", "add", "light", "--force", "--", "echo"],
                       check=True, capture_output=True)
    mods = imported_modules(*argv)
    assert "typer" in mods  # the measurement works
    assert not (mods & set(HEAVY)), sorted(mods & set(HEAVY))


@pytest.mark.e2e
def test_status_with_live_supervisor_is_light(supervisor: Any) -> None:
    mods = imported_modules("mcp", "status", "--json")
    assert "http" in mods and not (mods & set(HEAVY)), sorted(mods & set(HEAVY))
