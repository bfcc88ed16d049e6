"""MONAD_HOME/env cannot be injected (issue 38 item 10): a value holding any character
`str.splitlines()` breaks at is refused by `monad env set` and `PUT /v1/env/NAME`, and a line
holding one (written by hand or by an older monad) never defines a second variable."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LIGHTSERVER, wait_state, write_atom

GOOD = "SENTINEL-env-good-41c7"
EVIL = "SENTINEL-env-evil-93a2"
# Every break `str.splitlines()` knows that `\n` and `\r` are not.
BREAKS = ["\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


def _server_environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(item.decode().split("=", 1) for item in raw.split(b"\0") if b"=" in item)


@pytest.mark.e2e
def test_a_value_with_a_unicode_line_break_cannot_set_another_variable(supervisor: Any, monad_home: Path) -> None:
    monad = supervisor
    write_atom(monad_home, "docs", f"command = {json.dumps(sys.executable)}\nargs = {json.dumps([LIGHTSERVER])}\n"
                                   f'env = {{DOCS_KEY = "$DOCS_KEY"}}\n')
    assert monad("env", "set", "DOCS_KEY", input=GOOD).code == 0
    before = wait_state(monad, "docs", "connected", timeout=60)
    assert _server_environ(before["pid"])["DOCS_KEY"] == GOOD

    from monad_cli.cli.control import ControlClient
    from monad_cli.core.errors import InvalidInput
    from monad_cli.core.paths import Paths

    client = ControlClient(Paths(monad_home))
    for brk in BREAKS:
        value = f"x{brk}DOCS_KEY={EVIL}"
        r = monad("env", "set", "OTHER", input=value)
        assert r.code == 2 and r.err.count("\n") == 1, (repr(brk), r)
        assert f"U+{ord(brk):04X}" in r.err and "one line" in r.err and EVIL not in r.err, r
        with pytest.raises(InvalidInput, match="line break"):
            client.request("PUT", "/v1/env/OTHER", {"value": value})
    assert EVIL not in (monad_home / "env").read_text()

    # A file an older monad (or a person) wrote with such a value: read by `\n` lines only,
    # the break is part of OTHER's value and DOCS_KEY keeps its own line's value.
    text = f"DOCS_KEY={GOOD}\n" + "".join(f"OTHER{i}=x{brk}DOCS_KEY={EVIL}\n" for i, brk in enumerate(BREAKS))
    (monad_home / "env").write_text(text)
    assert monad("env", "set", "NUDGE", input="1").code == 0  # written through monad: a reload for sure
    listed = {v["name"]: v["source"] for v in monad("env", "list", "--json").json()}
    assert {f"OTHER{i}" for i in range(len(BREAKS))} <= set(listed), listed
    after = wait_state(monad, "docs", "connected", timeout=60)
    assert after["pid"] == before["pid"]  # DOCS_KEY did not change: no reconnect
    assert _server_environ(after["pid"])["DOCS_KEY"] == GOOD
    from monad_cli.config.envfile import parse

    assert parse((monad_home / "env").read_text()).values["DOCS_KEY"] == GOOD
