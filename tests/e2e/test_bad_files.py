"""A file that cannot be parsed, for any reason, is that file's config error in one line, and
every other file still applies (issue 38 item 9): arrays nested 100,000 deep, a file over the
size cap, an integer longer than Python converts, bytes that are not UTF-8 — in an atom, in
agents.json, in settings.toml."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import light_cmd, status_of, wait_for, wait_state, write_atom

DEEP_TOML = "x = " + "[" * 100_000 + "]" * 100_000 + "\n"
DEEP_JSON = '{"mcpServers": ' + "[" * 100_000 + "]" * 100_000 + "}"


def _good_atom(home: Path, name: str) -> None:
    cmd = light_cmd()
    write_atom(home, name, f"command = {json.dumps(cmd[0])}\nargs = {json.dumps(cmd[1:])}\n")


@pytest.mark.e2e
def test_hostile_atoms_cost_only_themselves(supervisor: Any, monad_home: Path) -> None:
    monad = supervisor
    _good_atom(monad_home, "before")
    wait_state(monad, "before", "connected", timeout=60)
    write_atom(monad_home, "deep", DEEP_TOML)
    write_atom(monad_home, "digits", "timeout = " + "7" * 5000 + "\n")
    write_atom(monad_home, "huge", "# padding\n" * 120_000 + 'command = "x"\n')  # 1.2 MB
    (monad_home / "atoms" / "mcp" / "latin.toml").write_bytes(b'command = "caf\xe9"\n')
    # A new good server after them: the reload that reads the bad files still applies it.
    _good_atom(monad_home, "after")
    wait_state(monad, "after", "connected", timeout=60)
    expected = {"deep": "nested too deeply", "digits": "integer string conversion",
                "huge": "larger than 1024 KiB", "latin": "`atoms/mcp/latin.toml`: not UTF-8 text; save it as UTF-8"}
    for name, words in expected.items():
        row = wait_state(monad, name, "failed")
        assert f"atoms/mcp/{name}.toml" in row["reason"] and words in row["reason"], row
        assert "\n" not in row["reason"] and len(row["reason"]) < 300, row
    assert status_of(monad, "before")["state"] == "connected"
    shown = monad("mcp", "status")
    assert shown.code == 0 and "Traceback" not in shown.err, shown
    log = (monad_home / "logs" / "daemon.log").read_text()
    assert "Traceback" not in log and "RecursionError" not in log, log[-3000:]


@pytest.mark.e2e
def test_a_hostile_agents_json_is_one_problem_and_add_still_works(supervisor: Any, monad_home: Path) -> None:
    monad = supervisor
    (monad_home / "agents.json").write_text(DEEP_JSON)
    cmd = light_cmd()
    r = monad("mcp", "add", "fresh", "--", *cmd)
    assert r.code == 0 and "internal" not in r.err and "Traceback" not in r.err, r
    wait_state(monad, "fresh", "connected", timeout=60)
    shown = wait_for(lambda: (s := monad("mcp", "status")) and "agents.json" in s.err and s)
    problem = next(line for line in shown.err.splitlines() if "agents.json" in line)
    assert "cannot be parsed: values nested too deeply" in problem, shown
    assert "fresh" in shown.out
    (monad_home / "agents.json").write_text('{"mcpServers": [' + "1" * 5000 + "]}")
    shown = wait_for(lambda: (s := monad("mcp", "status")) and "integer string conversion" in s.err and s)
    assert shown.code == 0 and "fresh" in shown.out, shown
    (monad_home / "agents.json").write_text('{"mcpServers": []}' + " " * (5 * 1024 * 1024))
    shown = wait_for(lambda: (s := monad("mcp", "status")) and "larger than 4 MiB" in s.err and s)
    assert shown.code == 0 and "fresh" in shown.out, shown
    log = (monad_home / "logs" / "daemon.log").read_text()
    assert "Traceback" not in log and "RecursionError" not in log, log[-3000:]


@pytest.mark.e2e
def test_a_hostile_settings_toml_keeps_the_last_good_defaults(supervisor: Any, monad_home: Path) -> None:
    monad = supervisor
    _good_atom(monad_home, "kept")
    wait_state(monad, "kept", "connected", timeout=60)
    (monad_home / "settings.toml").write_text(DEEP_TOML)
    _good_atom(monad_home, "next")
    wait_state(monad, "next", "connected", timeout=60)
    shown = wait_for(lambda: (s := monad("mcp", "status")) and "settings.toml" in s.err and s)
    assert "nested too deeply" in shown.err and "Traceback" not in shown.err, shown
    log = (monad_home / "logs" / "daemon.log").read_text()
    assert "Traceback" not in log and "RecursionError" not in log, log[-3000:]


@pytest.mark.e2e
def test_a_fifo_in_place_of_a_file_is_that_files_problem(monad: Any, monad_home: Path) -> None:
    """A FIFO where `env`, `agents.json`, `settings.toml` or `features/tools.toml` belongs
    once hung the supervisor's start (reading it waits for a writer for ever) and `monad env
    list`: each is now its file's one-line problem, and everything else runs (but for
    settings.toml, without which the supervisor does not start, as for any settings.toml it
    cannot read)."""
    import os

    _good_atom(monad_home, "good")
    (monad_home / "features").mkdir(mode=0o700)
    for where in ("env", "agents.json", "settings.toml", "features/tools.toml"):
        os.mkfifo(monad_home / where, 0o600)
    listed = monad("env", "list", timeout=20)
    assert listed.code == 0 and "`env` cannot be read: not a regular file" in listed.err, listed
    try:
        # settings.toml decides the journal: without it the supervisor does not start, in one line.
        r = monad("daemon", "start", timeout=40)
        assert r.code == 2 and r.err.count("\n") == 1, r
        assert "`settings.toml`: cannot read (not a regular file" in r.err, r
        (monad_home / "settings.toml").unlink()
        r = monad("daemon", "start", timeout=40)
        assert r.code == 0, r
        wait_state(monad, "good", "connected", timeout=60)
        shown = monad("mcp", "status", timeout=20)
        assert shown.code == 0 and "`agents.json` cannot be read: not a regular file" in shown.err, shown
        assert "`features/tools.toml`: cannot read (not a regular file" in shown.err, shown
    finally:
        monad("daemon", "stop")
