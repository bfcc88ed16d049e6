"""Names a person reads are sorted regardless of case, tie-broken by the exact name (found by
a new-user trial: servers `alpha`, `Beta`, `gamma` were listed Beta, alpha, gamma): `monad
mcp list` from the files alone and from the supervisor, `monad mcp status`, `monad mcp
tools` and `monad env list`. The Studio's lists: tests/browser/test_studio_page.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import wait_state, write_atom

NAMES = ["gamma", "Beta", "alpha"]
IN_ORDER = ["alpha", "Beta", "gamma"]
# Variables may differ by case alone (servers may not): `BKey` before `bKey`, the exact name
# breaking the tie, so the order is total.
VARIABLES = ["aKey", "BKey", "bKey", "zKey"]


def _atoms(home: Path) -> None:
    for name in NAMES:
        # Each references a variable, of names whose code-point order differs from a person's.
        env = {"gamma": 'K = "$zKey"', "Beta": 'K = "$bKey", L = "$BKey"', "alpha": 'K = "$aKey"'}[name]
        write_atom(home, name, f'command = "true"\nenabled = false\nenv = {{ {env} }}\n')


def test_the_cli_lists_names_regardless_of_case_without_a_supervisor(monad: Any, monad_home: Path) -> None:
    _atoms(monad_home)
    r = monad("mcp", "list", "--json")
    assert r.code == 0, r
    assert [row["name"] for row in r.json()] == IN_ORDER
    table = monad("mcp", "list").out.splitlines()[1:]
    assert [line.split()[0] for line in table] == IN_ORDER, table
    r = monad("env", "list", "--json")
    assert r.code == 0, r
    assert [v["name"] for v in r.json()] == VARIABLES, r.json()


def test_the_supervisors_lists_are_in_the_same_order(supervisor: Any, monad_home: Path) -> None:
    _atoms(monad_home)
    for name in ("Time", "clock"):  # two servers with tools: `Time__…` would come before `clock__…`
        write_atom(monad_home, name, 'command = "mcp-server-time"\n')
    wait_state(supervisor, "Time", "connected")
    wait_state(supervisor, "clock", "connected")
    names = [row["name"] for row in supervisor("mcp", "status", "--json").json()]
    assert names == ["alpha", "Beta", "clock", "gamma", "Time"], names
    r = supervisor("mcp", "list", "--json")
    assert r.code == 0, r
    assert [row["name"] for row in r.json()] == names, r
    tools = [t["name"] for t in supervisor("mcp", "tools", "--json").json()]
    assert [t.split("__")[0] for t in tools] == ["clock", "clock", "Time", "Time"], tools
    r = supervisor("env", "list", "--json")
    assert [v["name"] for v in r.json()] == VARIABLES, r.json()
