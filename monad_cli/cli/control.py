"""The CLI's side of the control API: HTTP/1.1 over the unix socket, on the bare socket.

Deliberately light: no httpx2, no SDK, and not even the standard library's `http.client`,
which pulls in `email` and `ssl` (~35 ms of `python -X importtime` on every command). The
supervisor is the only server this talks to (uvicorn behind `run/monad.sock`), so the
client speaks just what it answers: one request per connection (`Connection: close`), a
body by `Content-Length`, chunked, or up to the close. Starting the supervisor in the
background when a command needs it (as gpg-agent does) lives here too, unless
`MONAD_NO_AUTOSTART=1`. tests/cli/test_control_client.py holds the response reader to
`http.client` on the same bytes.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import time
from collections.abc import Iterator
from typing import Any

from monad_cli.core.envelope import decode_error, decode_line
from monad_cli.core.errors import Conflict, ConnectionClosed, MonadError, SupervisorNotRunning
from monad_cli.core.paths import MAX_SOCKET_PATH, Paths

START_TIMEOUT_S = 60.0
CHUNK = 65536


class _Cut(ConnectionError):
    """The answer ended early or is not HTTP."""


class _Response:
    """One HTTP/1.1 response read off a socket: `status`, `headers` (lower-case names) and
    the body, whole (`read`) or line by line as it arrives (`lines`, for NDJSON)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""
        head = self._until(b"\r\n\r\n")
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        parts = status_line.split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
            raise _Cut(f"not an HTTP response: {status_line[:60]!r}")
        self.status = int(parts[1])
        self.headers = {name.strip().lower(): value.strip()
                        for name, _, value in (line.partition(":") for line in header_lines)}

    def _fill(self) -> bool:
        chunk = self.sock.recv(CHUNK)
        self.buffer += chunk
        return bool(chunk)

    def _until(self, mark: bytes) -> bytes:
        while mark not in self.buffer:
            if not self._fill():
                raise _Cut("the connection closed mid-response")
        out, _, self.buffer = self.buffer.partition(mark)
        return out

    def _exactly(self, n: int) -> bytes:
        while len(self.buffer) < n:
            if not self._fill():
                raise _Cut("the connection closed mid-response")
        out, self.buffer = self.buffer[:n], self.buffer[n:]
        return out

    def chunks(self) -> Iterator[bytes]:
        """The body as it arrives."""
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            while True:
                size = int(self._until(b"\r\n").split(b";", 1)[0], 16)
                if size == 0:
                    return
                data = self._exactly(size)
                self._until(b"\r\n")
                yield data
        elif "content-length" in self.headers:
            yield self._exactly(int(self.headers["content-length"]))
        else:
            while self.buffer or self._fill():
                data, self.buffer = self.buffer, b""
                yield data

    def read(self) -> bytes:
        return b"".join(self.chunks())

    def lines(self) -> Iterator[bytes]:
        pending = b""
        for data in self.chunks():
            pending += data
            *whole, pending = pending.split(b"\n")
            yield from (line for line in whole if line.strip())
        if pending.strip():
            yield pending


class ControlClient:
    """The CLI's handle on one supervisor's control API (`run/monad.sock`).

    Owns: one short HTTP/1.1 connection per request (`timeout` seconds for connect and
    each read; None: no deadline), the JSON in and out, and turning every failure into a
    `MonadError` kind: an error answer becomes the kind its envelope names
    (`core/envelope.py`), nothing listening `SupervisorNotRunning`, a connection cut
    `ConnectionClosed`.

    Never: imports the SDK, httpx2, pydantic, `http.client` or the server stack (the CLI's
    light path builds one), opens an MCP session or reads the journal (the supervisor owns
    both), starts a supervisor itself (`connect` / `start_supervisor` do), or looks at a
    message's text to decide anything (branch on the kind).
    """

    def __init__(self, paths: Paths, *, timeout: float | None = 30.0) -> None:
        self.paths = paths
        self.timeout = timeout

    @contextlib.contextmanager
    def exchange(self, method: str, path: str, body: Any = None) -> Iterator[_Response]:
        """Send one request and yield its response (status and headers read, body not yet).
        Raises `SupervisorNotRunning`, `ConnectionClosed`, or `MonadError` on a timeout."""
        if len(str(self.paths.socket).encode()) > MAX_SOCKET_PATH:
            self.paths.ensure()  # raises the clear "MONAD_HOME is too long" error
        payload = json.dumps(body).encode() if body is not None else b""
        head = f"{method} {path} HTTP/1.1\r\nHost: monad\r\nConnection: close\r\n"
        if body is not None:
            head += "Content-Type: application/json\r\n"
        if body is not None or method not in ("GET", "HEAD"):
            head += f"Content-Length: {len(payload)}\r\n"
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(self.timeout)
            try:
                sock.connect(str(self.paths.socket))
            except (FileNotFoundError, ConnectionRefusedError):
                raise SupervisorNotRunning(
                    f"the supervisor is not running for `{self.paths.home}`; start it with "
                    f"`monad daemon start`") from None
            try:
                sock.sendall(head.encode("latin-1") + b"\r\n" + payload)
                yield _Response(sock)
            except (BrokenPipeError, ConnectionResetError, _Cut):
                # Without this, click treats EPIPE as a closed stdout and exits 1 silently.
                raise ConnectionClosed(f"the supervisor closed the connection during {method} {path} (is it "
                                       f"stopping? see `{self.paths.daemon_log}`)") from None
            except TimeoutError:
                raise MonadError(f"the supervisor did not answer {method} {path} within "
                                 f"{self.timeout:g} s (see `{self.paths.daemon_log}`)") from None
        finally:
            sock.close()

    def request(self, method: str, path: str, body: Any = None) -> Any:
        """One API call: the answer's decoded JSON. Raises `SupervisorNotRunning` if
        nothing listens, `ConnectionClosed` if the supervisor hung up, the decoded kind
        (`NotFound`, `InvalidInput`, `Conflict`, ...) for an error answer."""
        with self.exchange(method, path, body) as resp:
            data = resp.read()
            status = resp.status
        return self._decode(method, path, status, data)

    def _decode(self, method: str, path: str, status: int, data: bytes) -> Any:
        try:
            decoded = json.loads(data) if data else None
        except ValueError:
            if status >= 400:
                # Not one of our answers: the route does not exist, or the supervisor is stopping.
                raise decode_error(status, None, default_message=(
                    f"the supervisor answered HTTP {status} to {method} {path} (is it stopping? see "
                    f"`{self.paths.daemon_log}`)")) from None
            raise MonadError(f"the supervisor sent a non-JSON answer to {method} {path}") from None
        if status >= 400:
            raise decode_error(status, decoded)
        return decoded

    def stream(self, method: str, path: str, body: Any = None) -> Iterator[dict[str, Any]]:
        """An NDJSON answer (`application/x-ndjson`), one decoded object per line. A line
        `{"error": ..., "status": N}` raises its kind, as an error answer would; a plain
        (non-streamed) answer is yielded as its one object."""
        with self.exchange(method, path, body) as resp:
            if "ndjson" not in resp.headers.get("content-type", ""):
                yield self._decode(method, path, resp.status, resp.read())
                return
            for line in resp.lines():
                item = json.loads(line)
                if isinstance(item, dict) and "error" in item:
                    raise decode_error(int(item.get("status") or 500), item)
                yield item

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def post(self, path: str, body: Any = None) -> Any:
        return self.request("POST", path, body if body is not None else {})

    def is_running(self) -> bool:
        try:
            self.get("/v1/health")
            return True
        except SupervisorNotRunning:
            return False


def starting_pid(p: Paths) -> int | None:
    """The pid of a process holding the flock on `run/daemon.lock` (a supervisor that is
    starting when the control socket does not answer yet), or None. Read from /proc/locks
    (Linux) without touching the lock, so a start racing this probe is never refused."""
    try:
        st = os.stat(p.daemon_lock)
        with open("/proc/locks") as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    where = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    for line in lines:  # "1: FLOCK  ADVISORY  WRITE 4242 fd:01:123456 0 EOF"
        fields = line.split()
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == where and fields[4].isdigit():
            return int(fields[4])
    return None


def pid_alive(pid: int) -> bool:
    """True while `pid` runs; a zombie (exited, not yet reaped by its parent) counts as gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def start_supervisor(paths: Paths, *, timeout: float = START_TIMEOUT_S, extra_args: list[str] | None = None,
                     check_required: bool = True) -> int:
    """Start the supervisor (`python -m monad_cli.daemon`, what `monad daemon run` runs)
    detached and wait until it answers; returns its pid.

    Readiness comes through a pipe (like sd_notify): the supervisor writes `ok` once the
    socket serves, or, before it exits, one line of the API's error envelope
    (`core/envelope.py`): `Conflict` when another supervisor holds this MONAD_HOME,
    `Unavailable` when a required server failed. Raises that kind, its message prefixed
    with "the supervisor did not start"; `MonadError` when it neither answers nor says why.
    """
    paths.ensure()
    read_fd, write_fd = os.pipe()
    env = dict(os.environ)
    env["MONAD_READY_FD"] = str(write_fd)
    env["MONAD_HOME"] = str(paths.home)
    if not check_required:
        env["MONAD_SKIP_REQUIRED"] = "1"
    import subprocess

    log = open(paths.daemon_log, "ab")  # noqa: SIM115 - handed to the child
    try:
        # The supervisor's own entry, not `monad daemon run`: no CLI (typer) to import first.
        # `-P`: never the caller's directory first on sys.path (a folder holding a `monad_cli`
        # package would run its code as the supervisor); the installed code, whatever the cwd.
        proc = subprocess.Popen([sys.executable, "-P", "-m", "monad_cli.daemon", *(extra_args or [])],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env,
                                pass_fds=(write_fd,), start_new_session=True, close_fds=True)
    finally:
        os.close(write_fd)
        log.close()
    message = b""
    deadline = time.monotonic() + timeout
    with os.fdopen(read_fd, "rb") as ready:
        import selectors

        sel = selectors.DefaultSelector()
        sel.register(ready, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if not sel.select(timeout=max(0.0, deadline - time.monotonic())):
                break
            chunk = os.read(read_fd, 4096)
            if not chunk:
                break
            message += chunk
            if message.endswith(b"\n"):
                break
    text = message.decode(errors="replace").strip()
    if text == "ok":
        return proc.pid
    refused = decode_line(text)
    if refused is not None:
        proc.wait(timeout=30)
        raise type(refused)(f"the supervisor did not start: {refused.message}")
    code = proc.poll()
    if code is None:
        raise MonadError(f"the supervisor did not answer within {timeout:g} s (see `{paths.daemon_log}`)")
    raise MonadError(f"the supervisor exited with status {code} while starting (see `{paths.daemon_log}`)")


class LostStartRace(Exception):
    """Another CLI started the supervisor first; its pid is `pid`."""

    def __init__(self, pid: int) -> None:
        super().__init__(pid)
        self.pid = pid


def start_or_join(paths: Paths, **kwargs: Any) -> int:
    """`start_supervisor`, except that losing the race to another starter (the `Conflict`
    its ready pipe reports) is not an error: wait for the winner's socket and raise
    `LostStartRace` with its pid. A winner that dies without serving (its lock is free
    again) is no reason to fail: the start is tried once more, and its own error is the
    one raised."""
    for attempt in range(2):
        try:
            return start_supervisor(paths, **kwargs)
        except Conflict:
            if attempt:
                raise
        # The winner may take as long as a start may (`START_TIMEOUT_S`: a loaded machine's
        # imports alone can pass 10 s), so the loser waits as long before it gives up.
        client = ControlClient(paths)
        deadline = time.monotonic() + kwargs.get("timeout", START_TIMEOUT_S)
        while time.monotonic() < deadline:
            if client.is_running():
                raise LostStartRace(int(client.get("/v1/health")["pid"]))
            # Gone without serving: its lock is free (read from Linux's /proc/locks).
            if os.path.exists("/proc/locks") and starting_pid(paths) is None and not client.is_running():
                break
            time.sleep(0.05)
        else:
            break
    raise MonadError(f"another supervisor is starting for `{paths.home}` but does not answer yet; try again")


def connect(paths: Paths, *, autostart: bool = True) -> ControlClient:
    """A client to a running supervisor, starting one if allowed and needed."""
    client = ControlClient(paths)
    if client.is_running():
        return client
    if autostart and os.environ.get("MONAD_NO_AUTOSTART", "") not in ("1", "true", "yes"):
        with contextlib.suppress(LostStartRace):  # another CLI started it: same result
            start_or_join(paths, check_required=False)
        return client
    raise SupervisorNotRunning(f"the supervisor is not running for `{paths.home}` (MONAD_NO_AUTOSTART is "
                               f"set); start it with `monad daemon start`")
