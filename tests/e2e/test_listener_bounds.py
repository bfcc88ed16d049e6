"""Every listener bounds what a stranger can hold (issue 38 item 5 and the listener smalls of
item 12): idle partial-header connections to the Studio's, the HTTP gateway's and the
/metrics ports cannot use up the supervisor's descriptors (the CLI keeps working, the log
says what was refused), HTTP gateway sessions are reaped after idle and capped, the bearer
scheme is case-insensitive, an empty token file says so, and a refused control connection
is one log line."""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import resource
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.conftest import free_port, gateway_up, wait_for, write_atom
from tests.studio_helpers import open_studio

pytestmark = pytest.mark.e2e
LIGHTSERVER = str(Path(__file__).resolve().parents[1] / "servers" / "lightserver.py")
HELD = 1100  # per port: more than the 1,019 that once used up a 1,024-descriptor supervisor
PARTIAL = b"GET /studio/ HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "  # headers that never end


def _low_nofile() -> None:
    """The supervisor's own limit as a default systemd service or login shell has it."""
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))


def _hold(port: int, count: int) -> list[socket.socket]:
    """`count` connections to `port` on 127.0.0.1, each having sent a partial request head."""
    held = []
    for _ in range(count):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=5)
            s.sendall(PARTIAL)
        except OSError:  # a refusal may already have closed it, or the backlog is full: keep going
            continue
        held.append(s)
    return held


def _open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


@pytest.fixture
def gateway(monad_home: Path) -> Iterator[Any]:
    """`start(*args)` → (url, headers, process) of a `monad mcp serve --http`, stopped after the test."""
    procs: list[subprocess.Popen[str]] = []

    def start(*args: str) -> tuple[str, dict[str, str], subprocess.Popen[str]]:
        port = free_port()
        proc = subprocess.Popen([sys.executable, "-m", "monad_cli", "mcp", "serve", "--http", "--port", str(port),
                                 *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append(proc)
        url, headers = gateway_up(monad_home, port)
        return url, headers, proc

    yield start
    for proc in procs:
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_a_thousand_idle_connections_per_port_leave_the_cli_working(monad: Any, monad_home: Path,
                                                                   gateway: Any) -> None:
    write_atom(monad_home, "light", f"command = {json.dumps(sys.executable)}\nargs = {json.dumps([LIGHTSERVER])}\n")
    (monad_home / "settings.toml").write_text("[telemetry]\nenabled = true\n")
    started = subprocess.run([sys.executable, "-m", "monad_cli", "daemon", "start"], capture_output=True, text=True,
                             timeout=120, preexec_fn=_low_nofile)
    assert started.returncode == 0, started
    held: list[socket.socket] = []
    try:
        pid = int((monad_home / "run" / "monad.pid").read_text())
        studio_port = open_studio(monad)["port"]
        url, _, _ = gateway()
        metrics = monad("metrics", "--where", "--json").json()["url"]
        ports = {"Studio": studio_port, "HTTP gateway": int(url.split(":")[2].split("/")[0]),
                 "/metrics": int(metrics.split(":")[2].split("/")[0])}
        baseline = _open_fds(pid)
        for port in ports.values():
            held += _hold(port, HELD)
        # The CLI works while they are held, and the supervisor holds only a bounded number.
        for _ in range(3):
            r = monad("mcp", "status")
            assert r.code == 0 and "light" in r.out, r
        assert _open_fds(pid) < baseline + 3 * 64 + 32, (_open_fds(pid), baseline)
        log = monad_home / "logs" / "daemon.log"
        for what, port in ports.items():
            line = f"on port {port}: refused a connection from 127.0.0.1:"
            assert wait_for(lambda line=line: line in log.read_text(), timeout=30), what
            assert "connections without credentials are open already (at most 64)" in log.read_text()
        # Within a few seconds the ones let in are closed for never finishing their headers.
        for what, port in ports.items():
            line = f"on port {port}: closed a connection from 127.0.0.1:"
            assert wait_for(lambda line=line: line in log.read_text(), timeout=30), what
        wait_for(lambda: _open_fds(pid) <= baseline + 8, timeout=30)
        text = log.read_text()
        assert "Traceback" not in text and text.count("\n") < 200, text[-5000:]  # one line per kind, not per peer
        # The listeners still answer a real request.
        assert httpx2.get(url, timeout=10).status_code == 401
        assert monad("mcp", "status").code == 0
    finally:
        for s in held:
            s.close()
        monad("daemon", "stop")


def test_gateway_sessions_are_reaped_after_idle_and_capped(supervisor: Any, monad_home: Path,
                                                           gateway: Any) -> None:
    url, headers, _ = gateway("--session-idle", "2s")
    headers = {**headers, "Accept": "application/json, text/event-stream", "Content-Type": "application/json"}

    def initialize(client: httpx2.Client) -> httpx2.Response:
        return client.post(url, headers=headers, json={
            "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})

    with httpx2.Client(timeout=30) as client:
        first = initialize(client)
        assert first.status_code == 200, first.text
        session = first.headers["mcp-session-id"]

        def ping() -> int:
            asked = {**headers, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25"}
            return client.post(url, headers=asked, json={"jsonrpc": "2.0", "id": 2, "method": "ping"}).status_code

        assert ping() == 200
        time.sleep(3.5)
        assert ping() == 404  # reaped: the client starts a new session
        opened = [initialize(client) for _ in range(101)]
        assert [r.status_code for r in opened[:100]] == [200] * 100
        assert opened[100].status_code == 503, opened[100].text


def test_the_bearer_scheme_is_case_insensitive(supervisor: Any, monad_home: Path, gateway: Any) -> None:
    url, headers, _ = gateway()
    token = headers["Authorization"].split(" ", 1)[1]
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    for scheme in ("Bearer", "bearer", "BEARER", "bEaReR"):
        r = httpx2.post(url, json=body, timeout=10, headers={
            "Authorization": f"{scheme} {token}", "Accept": "application/json, text/event-stream"})
        assert r.status_code != 401, (scheme, r.status_code, r.text)
    for wrong in (f"Basic {token}", f"Bearer{token}", f"Bearer {token}x", "Bearer"):
        r = httpx2.post(url, json=body, timeout=10, headers={"Authorization": wrong})
        assert r.status_code == 401, (wrong, r.status_code)


def test_an_empty_gateway_token_file_fails_closed_and_says_so(supervisor: Any, monad_home: Path) -> None:
    (monad_home / "run" / "gateway.token").write_text("")
    os.chmod(monad_home / "run" / "gateway.token", 0o600)
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "monad_cli", "mcp", "serve", "--http", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = f"http://127.0.0.1:{port}/mcp"

        def answer() -> httpx2.Response | None:
            with contextlib.suppress(httpx2.HTTPError):
                return httpx2.post(url, json={}, headers={"Authorization": "Bearer anything"}, timeout=2)
            return None

        r = wait_for(answer, timeout=30)
        assert r.status_code == 401 and "run/gateway.token is empty, so every request is refused" in r.text, r.text
        log = (monad_home / "logs" / "daemon.log").read_text()
        assert "HTTP gateway: run/gateway.token is empty, so every request is refused; delete the file" in log
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=20)


def test_a_refused_control_connection_is_one_log_line(monad: Any) -> None:
    if os.geteuid() != 0:
        pytest.skip("connecting as another account needs root (setuid); run as root to test it")
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no `nobody` account on this machine to connect as")
    import shutil
    import tempfile

    # A home the other account can reach the socket in (pytest's own folders are 0700): the
    # 0700 home and run/ and the 0600 socket are the first lock; this tests the second, the
    # peer's uid, by opening the first one.
    top = Path(tempfile.mkdtemp(prefix="monad-peer-"))
    home = top / "h"
    env = {"MONAD_HOME": str(home)}
    try:
        assert monad("daemon", "start", env=env).code == 0
        for path in (top, home, home / "run"):
            os.chmod(path, 0o711)
        os.chmod(home / "run" / "monad.sock", 0o666)
        code = ("import socket, sys\ns = socket.socket(socket.AF_UNIX)\ns.connect(sys.argv[1])\n"
                "try:\n    s.sendall(b'GET /v1/health HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n')\n    d = s.recv(100)\n"
                "except (ConnectionResetError, BrokenPipeError):\n    d = b''\nprint(repr(d))\n")
        for _ in range(3):
            proc = subprocess.run(["/usr/bin/python3", "-c", code, str(home / "run" / "monad.sock")],
                                  capture_output=True, text=True, timeout=30, user=nobody.pw_uid, group=nobody.pw_gid,
                                  cwd="/")
            assert proc.returncode == 0 and proc.stdout.strip() == "b''", proc  # closed, nothing answered
        log = home / "logs" / "daemon.log"
        wait_for(lambda: f"refused a connection from uid {nobody.pw_uid}" in log.read_text(), timeout=10)
        time.sleep(0.5)
        text = log.read_text()
        assert "Traceback" not in text, text[-3000:]
        # Three refusals within seconds: one line, the rest counted into the next.
        assert text.count(f"refused a connection from uid {nobody.pw_uid}") == 1, text[-3000:]
        for path in (home, home / "run"):
            os.chmod(path, 0o700)
        assert monad("mcp", "status", env=env).code == 0
    finally:
        monad("daemon", "stop", env=env)
        shutil.rmtree(top, ignore_errors=True)


_NEAR_THE_LIMIT = """
import asyncio, logging, resource, socket, sys
import uvloop
from monad_cli.daemon import bounds

logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="%(message)s")
_, hard = resource.getrlimit(resource.RLIMIT_NOFILE)


async def main() -> None:
    bounds.log_accept_errors(asyncio.get_running_loop())
    held = []

    async def on(reader, writer):
        held.append(writer)

    server = await asyncio.start_server(on, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    clients = [socket.socket() for _ in range(40)]  # the peers' side, made before the limit is lowered
    resource.setrlimit(resource.RLIMIT_NOFILE, (len(__import__("os").listdir("/proc/self/fd")) + 20, hard))
    for c in clients:
        c.setblocking(False)
        try:
            c.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
    await asyncio.sleep(0.5)
    print("accepted", len(held), flush=True)
    bounds.check_descriptors()
    await asyncio.sleep(0.1)


uvloop.run(main())
"""


def test_descriptors_running_out_under_uvloop_are_logged() -> None:
    """uvloop (libuv) closes a connection it cannot accept without reporting it to the loop:
    the listeners' refusals were silent. Near the limit, the supervisor's watch says so."""
    proc = subprocess.run([sys.executable, "-c", _NEAR_THE_LIMIT], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    accepted = int(proc.stdout.split("accepted ", 1)[1].split()[0])
    assert accepted < 40, proc.stdout  # some connections were dropped: the limit was reached
    assert "accepting connections:" in proc.stdout and "descriptors are open: new connections fail" in proc.stdout, \
        proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
