"""Spawn first, import while they start: the supervisor's stdio servers are spawned before
the SDK is imported, and each actor adopts the process spawned for exactly its command."""

from __future__ import annotations

import json
import os
import subprocess
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


def test_the_early_spawn_path_imports_no_sdk() -> None:
    # What `python -m monad_cli.supervisor` runs before its early spawns (the lock, the
    # definitions, the spawn code) must not pull in the SDK, pydantic or SQLModel: that
    # import is the time the servers' own starts overlap.
    from tests.test_cli_weight import HEAVY

    code = "import monad_cli.supervisor.__main__, monad_cli.supervisor.startup, monad_cli.supervisor.spawn"
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True,
                          timeout=60, check=True)
    mods = {line.rsplit("|", 1)[1].strip().split(".")[0] for line in proc.stderr.splitlines()
            if line.startswith("import time:") and "|" in line}
    assert "monad_cli" in mods and "anyio" in mods  # the measurement works
    assert not (mods & set(HEAVY)), sorted(mods & set(HEAVY))


def _cmd(argv: list[str], env: dict[str, str], cwd: str | None, marker: str) -> Any:
    from monad_cli.supervisor.processes import MARKER_ENV
    from monad_cli.supervisor.spawn import StdioCommand

    return StdioCommand(argv, {**env, MARKER_ENV: marker}, cwd, marker)


def test_early_processes_are_adopted_exactly_once_and_the_rest_stopped(tmp_path: Path) -> None:
    from monad_cli.supervisor.processes import SpawnRecords, proc_info
    from monad_cli.supervisor.spawn import EarlySpawns

    records = SpawnRecords(tmp_path / "run")

    async def main() -> None:
        early = EarlySpawns()
        env = {"PATH": os.environ["PATH"]}
        await early.spawn("a", _cmd(["sleep", "30"], env, str(tmp_path), "a.1"), records)
        await early.spawn("b", _cmd([sys.executable, "-c", "import sys; sys.stderr.write('hello'); input()"], env,
                                    None, "b.1"), records)
        assert sorted(r.server for r in records.read_all()) == ["a", "b"]  # recorded like any spawn
        assert early.take(_cmd(["sleep", "30"], env, None, "a.2")) is None  # another cwd: another command
        assert early.take(_cmd(["sleep", "30"], {**env, "X": "1"}, str(tmp_path), "a.2")) is None  # another env
        # The same command with a new spawn marker (each attempt makes one) is adopted, and
        # keeps the marker its process was started with.
        adopted = early.take(_cmd(["sleep", "30"], env, str(tmp_path), "a.2"))
        assert adopted is not None and adopted.process.returncode is None and adopted.marker == "a.1"
        environ = Path(f"/proc/{adopted.process.pid}/environ").read_bytes().split(b"\0")
        assert b"MONAD_SERVER_ID=a.1" in environ
        assert early.take(_cmd(["sleep", "30"], env, str(tmp_path), "a.3")) is None  # once
        [left] = early.waiting.values()
        await early.discard()
        assert left.process.returncode is not None and not early.waiting
        assert proc_info(left.process.pid) is None or proc_info(left.process.pid).zombie  # type: ignore[union-attr]
        assert [r.server for r in records.read_all()] == ["a"]  # the discarded one's record is gone
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
        # Its spawn record names it with the marker it runs with (a crash leaves it findable).
        [rec] = [json.loads(p.read_text()) for p in (monad_home / "run" / "servers").glob("early.*.json")]
        environ = Path(f"/proc/{row['pid']}/environ").read_bytes().split(b"\0")
        assert rec["pid"] == row["pid"] and f"MONAD_SERVER_ID={rec['marker']}".encode() in environ, rec
    finally:
        monad("daemon", "stop")
