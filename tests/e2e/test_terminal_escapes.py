"""A server cannot write to the person's terminal (issue 38 item 8): OSC 0 (the window title),
OSC 52 (the clipboard), `ESC[2J` (clear), `ESC[8m` (hidden text) and a C1 CSI in a server's
stderr, tool description and result reach `monad mcp status NAME`, `monad mcp tools` and
`monad mcp call` as visible escapes; `--json` is the exact JSON of the same strings."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LIGHTSERVER, wait_state, write_atom

# ... and U+202E (right-to-left override): what follows it reads backwards.
HOSTILE = "\x1b]0;PWNED\x07\x1b]52;c;SGVsbG8=\x07\x1b[2J\x1b[8mhidden\x9b31m\x7f\rback\u202ecod.exe"
CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _clean(*texts: str) -> None:
    for text in texts:
        found = CONTROLS.findall(text)
        assert not found, (found, text[:500])


@pytest.mark.e2e
def test_server_text_reaches_the_terminal_escaped(supervisor: Any, monad_home: Path, tmp_path: Path) -> None:
    monad = supervisor
    shape = tmp_path / "tools.json"
    shape.write_text(json.dumps({"description": f"Echo. {HOSTILE}"}))
    args = [LIGHTSERVER, "--say", HOSTILE, "--tools-file", str(shape)]
    write_atom(monad_home, "evil", f"command = {json.dumps(sys.executable)}\nargs = {json.dumps(args)}\n")
    wait_state(monad, "evil", "connected", timeout=60)

    shown = monad("mcp", "status", "evil")
    assert shown.code == 0, shown
    _clean(shown.out, shown.err)
    assert "\\u001b]52;c;SGVsbG8=\\u0007" in shown.out and "\\u009b31m" in shown.out, shown

    tools = monad("mcp", "tools", "evil")
    assert tools.code == 0, tools
    _clean(tools.out, tools.err)
    assert "\\u001b[2J\\u001b[8mhidden" in tools.out, tools

    called = monad("mcp", "call", "evil__echo", "--arg", f"text={HOSTILE}", "--yes")
    assert called.code == 0, called
    _clean(called.out, called.err)
    assert "\\u001b]0;PWNED\\u0007" in called.out and "\\u000dback\\u202ecod.exe" in called.out, called

    # --json: the same strings, exactly, and still no raw control on the terminal.
    as_json = monad("mcp", "tools", "evil", "--json")
    _clean(as_json.out)
    assert any(t["description"] == f"Echo. {HOSTILE}" for t in as_json.json()), as_json
    status_json = monad("mcp", "status", "evil", "--json")
    _clean(status_json.out)
    assert HOSTILE in "\n".join(status_json.json()["stderrTail"]), status_json
