"""Fixtures: a tmp MONAD_HOME per test (the real home is guarded), the CLI in-process and
as a subprocess, the real supervisor as a subprocess, and the test servers."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
SERVERS = Path(__file__).resolve().parent / "servers"
TESTSERVER = str(SERVERS / "testserver.py")
# The standard library's server (testserver.py's stdio tools and fault flags): ~0.05 s of CPU to
# start, the SDK's ~1.5 s; for tests that need a plain stdio server, not the SDK server's own behaviour.
LIGHTSERVER = str(SERVERS / "lightserver.py")
# toolserver.py's tools and flags on the standard library, its wire held equal to the SDK
# server's (tests/servers/test_lighttoolserver.py): for tests of monad, not of the SDK server.
LIGHTTOOLSERVER = str(SERVERS / "lighttoolserver.py")
BIN = str(Path(sys.executable).parent)
REAL_HOME = Path.home()
# `make everything-deps` installs the reference server from npm here (`.ci/run` does, through `make test`).
EVERYTHING = Path(os.environ.get("MONAD_EVERYTHING_DIR", ROOT / ".cache" / "everything"))
INSPECTOR = Path(os.environ.get("MONAD_INSPECTOR_DIR", ROOT / ".cache" / "inspector"))


def inspector_bin() -> str:
    """The real MCP Inspector (`@modelcontextprotocol/inspector`, run with `--cli`), or skip saying why."""
    bin_ = INSPECTOR / "node_modules" / ".bin" / "mcp-inspector"
    if not bin_.exists():
        pytest.skip(f"@modelcontextprotocol/inspector is not installed in {INSPECTOR} "
                    f"(`make inspector-deps`; npm could not give it)")
    return str(bin_)


def everything_bin() -> str:
    """The real `@modelcontextprotocol/server-everything` executable, or skip saying why."""
    bin_ = EVERYTHING / "node_modules" / ".bin" / "mcp-server-everything"
    if not bin_.exists():
        pytest.skip(f"@modelcontextprotocol/server-everything is not installed in {EVERYTHING} "
                    f"(`make everything-deps`; npm could not give it)")
    return str(bin_)


# A shell without job control starts a background command (`make test &`) with SIGINT
# ignored, and every process it starts inherits that: the tests that press Ctrl-C on a
# `monad` command (it must cancel and exit 130) would see nothing happen. A handler, unlike
# an ignore, is reset to the default in each child this process starts.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session", autouse=True)
def _guard_real_home() -> Iterator[None]:
    """Tests can never touch the real ~/.monad: fail the run if it appeared or changed."""
    real = REAL_HOME / ".monad"
    before = real.stat().st_mtime_ns if real.exists() else None
    yield
    after = real.stat().st_mtime_ns if real.exists() else None
    assert before == after, f"a test touched the real {real}"


@pytest.fixture(autouse=True)
def monad_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "monad-home"
    fake_user_home = tmp_path / "user-home"
    fake_user_home.mkdir()
    monkeypatch.setenv("MONAD_HOME", str(home))
    monkeypatch.setenv("HOME", str(fake_user_home))
    monkeypatch.setenv("MONAD_BACKOFF_INITIAL", "0.2")
    monkeypatch.setenv("PATH", BIN + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.delenv("MONAD_NO_AUTOSTART", raising=False)
    monkeypatch.delenv("MONAD_DEBUG", raising=False)
    from monad_cli.core.paths import paths

    paths.cache_clear()
    yield home
    paths.cache_clear()
    _stop_supervisor(home)


def _stop_supervisor(home: Path) -> None:
    pid_file = home / "run" / "monad.pid"
    if not pid_file.exists():
        return
    try:
        pid = int(pid_file.read_text().strip())
    except ValueError:
        return
    try:  # only a supervisor of ours: a stale pid file may name a reused pid
        if b"monad_cli" not in Path(f"/proc/{pid}/cmdline").read_bytes():
            return
        os.kill(pid, 15)
    except (ProcessLookupError, FileNotFoundError):
        return
    # A supervisor the in-process CLI autostarted is this process's child: once it exits it
    # stays a zombie until reaped, and `os.kill(pid, 0)` still succeeds on a zombie, so this
    # waited out its whole 15 s. pid_alive counts a zombie as gone; reap ours. Up to 30 s, as
    # `monad daemon stop` waits: its servers' clean stops (stdin closed, 2 s, SIGTERM, 2 s).
    deadline = time.monotonic() + 30
    while pid_alive(pid):
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 9)
            break
        time.sleep(0.05)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


class CliResult:
    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err

    def json(self) -> Any:
        return json.loads(self.out)

    def __repr__(self) -> str:
        return f"CliResult(code={self.code}, out={self.out[:2000]!r}, err={self.err[:2000]!r})"


@pytest.fixture
def cli(capfd: pytest.CaptureFixture[str]) -> Any:
    """Run the CLI in this process: `cli("mcp", "add", ...)` → CliResult."""
    from monad_cli.cli.app import main
    from monad_cli.core.paths import paths

    def run(*argv: str) -> CliResult:
        paths.cache_clear()
        capfd.readouterr()
        code = main(list(argv))
        out, err = capfd.readouterr()
        return CliResult(code, out, err)

    return run


@pytest.fixture
def monad(monad_home: Path) -> Any:
    """Run the real `monad` executable as a subprocess."""

    def run(*argv: str, timeout: float = 60, env: dict[str, str] | None = None,
            input: str | None = None, cwd: str | Path | None = None) -> CliResult:
        proc = subprocess.run([sys.executable, "-m", "monad_cli", *argv], capture_output=True, text=True,
                              timeout=timeout, env={**os.environ, **(env or {})}, input=input, cwd=cwd)
        return CliResult(proc.returncode, proc.stdout, proc.stderr)

    run.home = monad_home  # type: ignore[attr-defined]  # the home `wait_state` polls in-process
    return run


@pytest.fixture
def supervisor(monad: Any, monad_home: Path) -> Iterator[Any]:
    """The real supervisor, started as `monad daemon start` starts it (`start_supervisor`:
    detached, returned once its ready pipe says it serves); stopped after the test with
    SIGTERM, its clean stop. Called from this process, not through two `monad` processes: a
    CLI run costs ~0.2 s of CPU, paid twice by each of hundreds of tests on a machine of 2
    cores. The `daemon start`/`stop` commands themselves are tests/e2e/test_supervisor.py's."""
    from monad_cli.cli.control import start_supervisor
    from monad_cli.core.paths import paths

    start_supervisor(paths())
    yield monad
    _stop_supervisor(monad_home)


def server_cmd(*flags: str) -> list[str]:
    """testserver.py's command: the SDK's `MCPServer`, for tests of what it does itself."""
    return [sys.executable, TESTSERVER, *flags]


def light_cmd(*flags: str) -> list[str]:
    """lightserver.py's command: the same stdio tools and flags as `server_cmd`'s, ~30× cheaper to start."""
    return [sys.executable, LIGHTSERVER, *flags]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def write_atom(home: Path, name: str, body: str) -> Path:
    """Write `atoms/mcp/NAME.toml` under `home` with `body` as it is; returns its path."""
    folder = home / "atoms" / "mcp"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.toml"
    path.write_text(body)
    return path


def pid_alive(pid: int) -> bool:
    """The one liveness check (a zombie counts as gone), as the CLI itself uses it."""
    from monad_cli.cli.control import pid_alive as alive

    return alive(pid)


@pytest.fixture
def servers() -> Iterator[Any]:
    """`servers.start(SCRIPT, *flags)` → base URL of a script serving on a free loopback port;
    every one is stopped after the test (tests/auth_helpers.py `Servers`)."""
    from tests.auth_helpers import Servers

    s = Servers()
    yield s
    s.stop()


def wait_for(predicate: Any, timeout: float = 20.0, interval: float = 0.05) -> Any:
    """`predicate()` until it is truthy (returned), or AssertionError after `timeout` s. Between
    tries at least `interval` s, and never less than the last try took: a predicate that runs
    the CLI (~0.3 s of CPU a run) polled every 50 ms kept a core busy, taken from the
    supervisor it waited for, on a machine of 2 cores and 2 test workers."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        started = time.monotonic()
        last = predicate()
        if last:
            return last
        time.sleep(max(interval, time.monotonic() - started))
    raise AssertionError(f"condition not met within {timeout} s (last: {last!r})")


def gateway_up(home: Path, port: int) -> tuple[str, dict[str, str]]:
    """Once `monad mcp serve --http --port PORT` answers (its token file written, its URL
    refusing a request without the token): the URL and the bearer header."""
    import httpx2

    token_file = home / "run" / "gateway.token"
    wait_for(lambda: token_file.exists(), timeout=30)
    url = f"http://127.0.0.1:{port}/mcp"

    def up() -> bool:
        try:
            return httpx2.get(url, timeout=2).status_code == 401
        except httpx2.HTTPError:
            return False

    wait_for(up, timeout=30)
    return url, {"Authorization": f"Bearer {token_file.read_text().strip()}"}


def status_of(monad: Any, name: str, *, waiting: bool = False) -> dict[str, Any]:
    """Server `name`'s row as `monad mcp status NAME --json` prints it (the control API's
    answer as it is). Asked of the supervisor's control API from this process when `monad`
    is the fixture's (its `home`): waits poll it many times, and a CLI run costs ~0.3 s of CPU
    on a machine of 2 cores and 2 test workers, taken from the supervisor being waited for.
    Through the CLI itself when nothing answers there (the CLI starts a supervisor then) or
    `monad` runs another home. `waiting`: a server the supervisor does not know (yet) is
    `{"state": None}`."""
    from urllib.parse import quote

    from monad_cli.cli.control import ControlClient
    from monad_cli.core.errors import ConnectionClosed, NotFound, SupervisorNotRunning
    from monad_cli.core.paths import Paths

    home = getattr(monad, "home", None)
    if home is not None and os.environ.get("MONAD_HOME") == str(home):
        try:
            return dict(ControlClient(Paths(home)).get(f"/v1/settings/mcp-servers/{quote(name, safe='')}/status"))
        except NotFound as e:
            if waiting:
                return {"state": None}
            raise AssertionError(f"`monad mcp status {name}`: {e.message}") from None
        except (SupervisorNotRunning, ConnectionClosed):
            pass
    r = monad("mcp", "status", name, "--json")
    assert r.code == 0, r
    return r.json()


def task_of(monad: Any, task_id: str) -> dict[str, Any]:
    """`monad tasks show ID --json`, its exit code checked: 1 for a failed task or a tool error
    (as `monad mcp call` exits), else 0."""
    r = monad("tasks", "show", task_id, "--json")
    task = r.json()
    result = task.get("result")
    failed = task["state"] == "failed" or (isinstance(result, dict) and bool(result.get("isError")))
    assert r.code == (1 if failed else 0), r
    return task


def wait_state(monad: Any, name: str, state: str, timeout: float = 30.0) -> dict[str, Any]:
    """Server `name`'s status row (`status_of`) once its state is `state`."""
    return wait_for(lambda: (s := status_of(monad, name, waiting=True))["state"] == state and s, timeout=timeout)


def wait_reconnected(monad: Any, name: str, old_pid: int, timeout: float = 60.0) -> dict[str, Any]:
    """Server `name`'s status row once a new process serves it: connected, with a pid that is
    not `old_pid`. A row may still say `connected` with no pid for the moment between the old
    process's exit and the supervisor noticing it; that is not the new session."""
    return wait_for(lambda: (s := status_of(monad, name))["state"] == "connected"
                    and s["pid"] not in (None, old_pid) and s, timeout=timeout)


@pytest.fixture
def http_testserver() -> Iterator[Any]:
    """Start a test server over streamable HTTP on a free loopback port; returns its URL.

    `start(*flags, path="/mcp", script=None)`: tests/servers/testserver.py by default, or
    another server script that takes `--http PORT` (and serves `/mcp`)."""
    procs: list[subprocess.Popen[bytes]] = []

    def start(*flags: str, path: str = "/mcp", script: str | None = None) -> str:
        port = free_port()
        argv = ([sys.executable, script, "--http", str(port), *flags] if script
                else server_cmd("--http", str(port), "--path", path, *flags))
        procs.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

        def up() -> bool:
            with socket.socket() as s:
                return s.connect_ex(("127.0.0.1", port)) == 0

        wait_for(up, timeout=30)
        return f"http://127.0.0.1:{port}{path}"

    yield start
    for p in procs:
        end_test_server(p)


def end_test_server(proc: subprocess.Popen[Any]) -> None:
    """Kill a test server once its test is over, and reap it. Not SIGTERM: uvicorn's graceful
    shutdown waits for open connections, and the supervisor under test holds one (its
    session's stream) until it stops, after this fixture's teardown; every such test then
    waited out the 5 s grace. Nothing of the server's own shutdown is under test here."""
    proc.kill()
    proc.wait()


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Any]:
    """One throwaway PostgreSQL cluster per test worker (tests/pg.py); skipped without the
    binaries, except where MONAD_REQUIRE_POSTGRES=1 (`.ci/run` installs Debian's postgresql
    and sets it): there it fails."""
    import secrets

    from tests.pg import Cluster, find_bindir

    bindir = find_bindir()
    if bindir is None:
        if os.environ.get("MONAD_REQUIRE_POSTGRES") == "1":
            pytest.fail("PostgreSQL is not installed (.ci/run installs Debian's postgresql)")
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    cluster = Cluster(bindir, free_port(), "pg-sentinel-" + secrets.token_hex(8))
    cluster.init()
    cluster.start()
    yield cluster
    cluster.destroy()


class FleetDB:
    """One fresh database of the cluster: `url` has the password as `${MONAD_TEST_PG_PASSWORD}`."""

    def __init__(self, cluster: Any, name: str) -> None:
        self.cluster, self.name = cluster, name
        self.url = cluster.url(name)
        self.password = cluster.password

    def query(self, sql: str, *params: object) -> list[tuple[Any, ...]]:
        return self.cluster.query(self.name, sql, *params)


@pytest.fixture
def pg(pg_cluster: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[FleetDB]:
    """A new database for this test; the cluster is started again if a test stopped it."""
    import secrets

    name = "t_" + secrets.token_hex(6)
    pg_cluster.create_database(name)
    monkeypatch.setenv("MONAD_TEST_PG_PASSWORD", pg_cluster.password)
    yield FleetDB(pg_cluster, name)
    pg_cluster.start_if_stopped()


def pytest_configure(config: pytest.Config) -> None:
    """Byte-compile monad_cli once, in the run's first process (not in each xdist worker).
    The editable install has no .pyc files of its own, and under PYTHONDONTWRITEBYTECODE=1
    (set in many shells and images) Python never writes them: every supervisor the suite starts
    compiled its ~150 modules again from source, ~0.5 CPU-s of a start's ~2.5 (a fresh clone's
    run, as CI's). Quiet, and a few ms when they are current (bench/_util.py does the same)."""
    if not hasattr(config, "workerinput"):
        import compileall

        compileall.compile_dir(str(ROOT / "monad_cli"), quiet=1)


# The directories whose files run real supervisors, servers or a browser: seconds a test.
SLOW_FIRST = ("e2e", "browser")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The slow files first, the quick unit files last (a stable sort: each file keeps its
    order). `make test` hands out whole files (`--dist loadfile`) in collection order
    (`--no-loadscope-reorder`): xdist's own order, most tests first, put the long files of one
    or two tests (the README install, the conformance suites) at the very end, where one
    worker ran them alone while the other had nothing left. Last, the many short unit files
    even the two workers out."""
    items.sort(key=lambda item: not any(f"{part}/" in item.nodeid for part in SLOW_FIRST))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Print the `summary` properties tests recorded (e.g. the conformance pass count)."""
    for report in terminalreporter.stats.get("passed", []):
        for key, value in getattr(report, "user_properties", []):
            if key == "summary":
                terminalreporter.write_line(str(value))


__all__ = ["LIGHTSERVER", "LIGHTTOOLSERVER", "TESTSERVER", "end_test_server", "free_port", "light_cmd", "pid_alive",
           "server_cmd", "shutil", "status_of", "wait_for", "wait_state", "write_atom"]
