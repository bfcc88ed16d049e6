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

from tests.conftest import LIGHTSERVER, status_of, wait_for, wait_state


def test_the_default_environment_is_the_sdks(monkeypatch: pytest.MonkeyPatch) -> None:
    from mcp.client.stdio import get_default_environment

    from monad_cli.daemon.sessions.spawn import default_environment

    monkeypatch.setenv("SHELL", "() { :; }; echo shellshock")  # an exported function: never inherited
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.delenv("LOGNAME", raising=False)
    monkeypatch.setenv("MONAD_SECRET_LOOKING", "not for servers")
    from monad_cli.daemon.sessions.spawn import NETWORK_ENV_VARS

    for name in NETWORK_ENV_VARS:
        monkeypatch.delenv(name, raising=False)
    assert default_environment() == get_default_environment()
    assert "SHELL" not in default_environment() and default_environment()["TERM"] == "xterm"


def test_servers_inherit_the_proxy_and_ca_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """Behind a company proxy or a custom CA, `npx`/`uvx` servers need these (docs/atoms.md)."""
    from monad_cli.daemon.sessions.spawn import default_environment

    wanted = {"HTTPS_PROXY": "http://proxy.invalid:3128", "no_proxy": "localhost",
              "SSL_CERT_FILE": "/etc/ssl/corp.pem", "NODE_EXTRA_CA_CERTS": "/etc/ssl/corp.pem",
              "REQUESTS_CA_BUNDLE": "/etc/ssl/corp.pem", "PIP_CERT": "/etc/ssl/corp.pem"}
    for name, value in wanted.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("MONAD_SECRET_LOOKING", "not for servers")
    env = default_environment()
    assert {k: env.get(k) for k in wanted} == wanted
    assert "MONAD_SECRET_LOOKING" not in env


def test_the_early_spawn_path_imports_no_sdk() -> None:
    # What `python -m monad_cli.daemon` runs before its early spawns (the lock, the
    # definitions, the spawn code) must not pull in the SDK, pydantic or SQLModel: that
    # import is the time the servers' own starts overlap.
    from tests.cli.test_cli_weight import HEAVY

    code = "import monad_cli.daemon.__main__, monad_cli.daemon.startup, monad_cli.daemon.sessions.spawn"
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True,
                          timeout=60, check=True)
    mods = {line.rsplit("|", 1)[1].strip().split(".")[0] for line in proc.stderr.splitlines()
            if line.startswith("import time:") and "|" in line}
    assert "monad_cli" in mods and "anyio" in mods  # the measurement works
    assert not (mods & set(HEAVY)), sorted(mods & set(HEAVY))


def _cmd(argv: list[str], env: dict[str, str], cwd: str | None, marker: str) -> Any:
    from monad_cli.daemon.sessions.processes import MARKER_ENV
    from monad_cli.daemon.sessions.spawn import StdioCommand

    return StdioCommand(argv, {**env, MARKER_ENV: marker}, cwd, marker)


def test_early_processes_are_adopted_exactly_once_and_the_rest_stopped(tmp_path: Path) -> None:
    from monad_cli.daemon.sessions.processes import SpawnRecords, proc_info
    from monad_cli.daemon.sessions.spawn import EarlySpawns

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
    marker = f"early-spawn-marker-{os.getpid()}"  # its own: another run of this test may be on the machine
    (atoms / "early.toml").write_text(f'command = "{sys.executable}"\nargs = ["{LIGHTSERVER}", "--say", "{marker}"]\n')
    (atoms / "off.toml").write_text(f'command = "{sys.executable}"\nargs = ["{LIGHTSERVER}"]\nenabled = false\n')
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


def test_the_supervisors_modules_import_no_sqlalchemy() -> None:
    # The journal has no ORM (journal/schema.py, sqlite3 and psycopg): nothing the supervisor
    # imports pulls SQLAlchemy or SQLModel in (~0.2 s), before or after its start.
    code = ("import sys; import monad_cli.daemon.__main__, monad_cli.daemon.api.server, "
            "monad_cli.daemon.supervisor, monad_cli.daemon.tasks.manager, monad_cli.daemon.gateway.listener; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'sqlalchemy', 'sqlmodel', 'mcp'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "['mcp']"  # the SDK is there: the measurement works


def test_the_supervisor_runs_with_the_collector_on_and_the_imports_frozen(tmp_path: Path) -> None:
    # `main.run` turns the cyclic collector off for its imports; the supervisor itself must
    # run with it on again (else every reference cycle it makes would stay), and with the
    # imports' objects frozen out of it. `Supervisor.run` is replaced here by a probe.
    code = ("import gc, json, sys; from pathlib import Path\n"
            "from monad_cli.core.paths import Paths\n"
            "from monad_cli.daemon import main, supervisor\n"
            "async def probe(self, **kwargs):\n"
            "    print(json.dumps([gc.isenabled(), gc.get_freeze_count(), 'sqlalchemy' in sys.modules]))\n"
            "supervisor.Supervisor.run = probe\n"
            "sys.exit(main.run(Paths(Path(sys.argv[1]))))\n")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "home")], capture_output=True, text=True,
                         timeout=60, check=True)
    enabled, frozen, orm = json.loads(out.stdout)
    assert enabled is True and frozen > 50_000 and orm is False, out.stdout


@pytest.mark.parametrize("choice, loop", [("", "uvloop"), ("asyncio", "asyncio")])
def test_the_supervisor_runs_on_uvloop_unless_told_asyncio(tmp_path: Path, choice: str, loop: str) -> None:
    pytest.importorskip("uvloop")  # a dependency on POSIX
    code = ("import asyncio, sys; from pathlib import Path\n"
            "from monad_cli.core.paths import Paths\n"
            "from monad_cli.daemon import main, supervisor\n"
            "async def probe(self, **kwargs):\n"
            "    print(type(asyncio.get_running_loop()).__module__.split('.')[0])\n"
            "supervisor.Supervisor.run = probe\n"
            "sys.exit(main.run(Paths(Path(sys.argv[1]))))\n")
    env = {**os.environ, "MONAD_EVENT_LOOP": choice}
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "home")], capture_output=True, text=True,
                         timeout=60, check=True, env=env)
    assert out.stdout.strip() == loop, out


@pytest.mark.e2e
def test_daemon_stop_during_the_start_waits_for_it_and_stops_it(monad: Any, monad_home: Path) -> None:
    from monad_cli.cli.control import pid_alive, starting_pid
    from monad_cli.core.paths import Paths

    atoms = monad_home / "atoms" / "mcp"
    atoms.mkdir(parents=True)
    for i in range(10):
        (atoms / f"s{i}.toml").write_text(f'command = "{sys.executable}"\nargs = ["{LIGHTSERVER}"]\n')
    start = subprocess.Popen([sys.executable, "-m", "monad_cli", "daemon", "start"], env=os.environ.copy(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # The supervisor holds the daemon lock well before its control socket answers.
        holder = wait_for(lambda: starting_pid(Paths(monad_home)), timeout=60, interval=0.005)
        r = monad("daemon", "stop", "--timeout", "90", timeout=120)
        assert r.code == 0 and f"supervisor stopped (pid {holder})" in r.err, r
        assert not pid_alive(holder)
        assert starting_pid(Paths(monad_home)) is None
    finally:
        start.communicate(timeout=120)
        monad("daemon", "stop")


def test_the_supervisor_runs_the_installed_code_whatever_the_callers_directory(monad_home: Path,
                                                                               tmp_path: Path) -> None:
    """A folder holding a `monad_cli` package (a checkout, a hostile repository an editor opened)
    must not become the supervisor: it is started with `python -P`, never the cwd first."""
    evil = tmp_path / "project"
    (evil / "monad_cli" / "daemon").mkdir(parents=True)
    marker = tmp_path / "ran-from-cwd"
    (evil / "monad_cli" / "__init__.py").write_text("")
    (evil / "monad_cli" / "daemon" / "__init__.py").write_text("")
    (evil / "monad_cli" / "daemon" / "__main__.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    monad_bin = Path(sys.executable).parent / "monad"
    env = {**os.environ, "MONAD_HOME": str(monad_home)}
    try:
        r = subprocess.run([str(monad_bin), "daemon", "start"], cwd=evil, env=env, capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert not marker.exists()
    finally:
        subprocess.run([str(monad_bin), "daemon", "stop"], env=env, capture_output=True, timeout=60)
