"""Spawn first, import while they start: the supervisor's stdio servers are spawned before
the SDK is imported, and each actor adopts the process spawned for exactly its command."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import TESTSERVER, status_of, wait_state


def test_the_default_environment_is_the_sdks(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp.client.stdio import get_default_environment

    from monad_cli.supervisor.spawn import default_environment

    monkeypatch.setenv("SHELL", "() { :; }; echo shellshock")  # an exported function: never inherited
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.delenv("LOGNAME", raising=False)
    monkeypatch.setenv("MONAD_SECRET_LOOKING", "not for servers")
    assert default_environment() == get_default_environment()
    assert "SHELL" not in default_environment() and default_environment()["TERM"] == "xterm"


def test_early_processes_are_adopted_exactly_once_and_the_rest_stopped(tmp_path: Path) -> None:
    from monad_cli.supervisor.spawn import EarlySpawns

    async def main() -> None:
        early = EarlySpawns()
        env = {"PATH": os.environ["PATH"]}
        await early.spawn(["sleep", "30"], env, str(tmp_path))
        await early.spawn([sys.executable, "-c", "import sys; sys.stderr.write('hello'); input()"], env, None)
        assert early.take(["sleep", "30"], env, None) is None  # another cwd: another command
        assert early.take(["sleep", "30"], {**env, "X": "1"}, str(tmp_path)) is None  # another environment
        adopted = early.take(["sleep", "30"], env, str(tmp_path))
        assert adopted is not None and adopted.process.returncode is None
        assert early.take(["sleep", "30"], env, str(tmp_path)) is None  # once
        [left] = early.waiting.values()
        await early.discard()
        assert left.process.returncode is not None and not early.waiting
        adopted.process.kill()
        await adopted.process.wait()
        os.close(adopted.stderr_fd)

    anyio.run(main)


def _pids_with(word: str) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and word.encode() in (entry / "cmdline").read_bytes().split(b"\0"):
                pids.append(int(entry.name))
        except OSError:
            continue
    return pids


@pytest.mark.e2e
def test_daemon_start_spawns_before_the_sdk_and_the_actor_adopts_it(monad: Any, monad_home: Path) -> None:
    atoms = monad_home / "atoms" / "mcp"
    atoms.mkdir(parents=True)
    marker = "early-spawn-marker"
    (atoms / "early.toml").write_text(f'command = "{sys.executable}"\nargs = ["{TESTSERVER}", "--say", "{marker}"]\n')
    (atoms / "off.toml").write_text(f'command = "{sys.executable}"\nargs = ["{TESTSERVER}"]\nenabled = false\n')
    r = monad("daemon", "start")
    assert r.code == 0, r
    try:
        row = wait_state(monad, "early", "connected", timeout=90)
        log = (monad_home / "logs" / "daemon.log").read_text()
        assert "spawned 1 stdio server(s) before loading the SDK" in log  # not the disabled one
        # One process for the server: the one spawned early is the one connected.
        assert _pids_with(marker) == [row["pid"]], row
        # The early process's stderr reached the server's log (its pipe was adopted too).
        detail = status_of(monad, "early")
        assert any(marker in line for line in detail["stderrTail"]), detail["stderrTail"]
        assert "stopping early-spawned process" not in log
    finally:
        monad("daemon", "stop")
