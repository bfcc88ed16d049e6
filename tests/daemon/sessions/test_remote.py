"""Remote servers: the supervisor's HTTP transports (monad_cli/daemon/sessions/remote.py)
against real servers on 127.0.0.1 (the SDK's MCPServer in tests/servers/testserver.py),
driven by the real SDK client."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from mcp import Client

from monad_cli.config.schema import validate
from monad_cli.daemon.sessions.remote import legacy_sse_candidate, sse_transport, streamable_http_transport
from monad_cli.daemon.sessions.transports import Connection, TransportOptions
from tests.conftest import TESTSERVER, free_port, wait_for


class Servers:
    """Test servers by port; `restart(port)` starts the same server again on that port."""

    def __init__(self) -> None:
        self.procs: dict[int, tuple[subprocess.Popen[bytes], tuple[str, ...]]] = {}

    def start(self, *flags: str, port: int | None = None) -> int:
        port = port or free_port()
        proc = subprocess.Popen([sys.executable, TESTSERVER, "--http", str(port), *flags],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.procs[port] = (proc, flags)

        def up() -> bool:
            with socket.socket() as s:
                return s.connect_ex(("127.0.0.1", port)) == 0

        wait_for(up, timeout=30)
        return port

    def stop(self, port: int) -> None:
        proc, _ = self.procs.pop(port)
        proc.terminate()
        proc.wait(timeout=10)

    def restart(self, port: int) -> None:
        flags = self.procs[port][1]
        self.stop(port)
        self.start(*flags, port=port)

    def close(self) -> None:
        for port in list(self.procs):
            self.stop(port)


@pytest.fixture
def servers() -> Iterator[Servers]:
    s = Servers()
    yield s
    s.close()


def spec_for(url: str) -> Any:
    return validate({"url": url}, name="remote", source="atoms/mcp/remote.toml", environ={})


def _text(result: Any) -> str:
    return str(result.content[0].text)


def test_a_restarted_server_gets_a_new_session_and_the_call_is_retried(servers: Servers) -> None:
    port = servers.start("--legacy")  # stateful: it hands out an Mcp-Session-Id
    conn = Connection()

    async def main() -> tuple[str, str, str]:
        async with Client(streamable_http_transport(spec_for(f"http://127.0.0.1:{port}/mcp"), conn),
                          mode="auto") as client:
            before = _text(await client.call_tool("pid", {}))
            servers.restart(port)  # the new process knows nothing of the old session: 404
            with anyio.fail_after(30):
                after = _text(await client.call_tool("pid", {}))
                again = _text(await client.call_tool("echo", {"text": "same session"}))
            assert not conn.closed  # the same session went on
            return client.protocol_version, before, after + "|" + again

    version, before, after = anyio.run(main)
    assert version == "2025-11-25"
    new_pid, echoed = after.split("|")
    assert new_pid != before and echoed == "same session"
    assert conn.extra["keeper"].reinitialized == 1


def test_a_legacy_sse_endpoint_is_recognised_and_connects_over_sse(servers: Servers) -> None:
    port = servers.start("--sse")
    spec = spec_for(f"http://127.0.0.1:{port}/sse")
    first = Connection()

    async def streamable() -> None:
        async with Client(streamable_http_transport(spec, first), mode="auto"):
            pass

    with pytest.raises(BaseException):  # noqa: B017 - whatever the SDK raises, the statuses tell
        anyio.run(streamable)
    assert legacy_sse_candidate(first) and first.post_status["initialize"] in (404, 405)
    conn = Connection()

    async def sse() -> tuple[str, str]:
        async with Client(sse_transport(spec, conn, TransportOptions()), mode="legacy") as client:
            return client.protocol_version, _text(await client.call_tool("echo", {"text": "over sse"}))

    assert anyio.run(sse) == ("2025-11-25", "over sse")
    assert conn.transport == "sse"


def test_a_streamable_server_is_not_taken_for_a_legacy_one(servers: Servers) -> None:
    port = servers.start()
    conn = Connection()

    async def main() -> str:
        async with Client(streamable_http_transport(spec_for(f"http://127.0.0.1:{port}/mcp"), conn),
                          mode="auto") as client:
            return client.protocol_version

    started = time.monotonic()
    assert anyio.run(main) == "2026-07-28"
    assert not legacy_sse_candidate(conn) and time.monotonic() - started < 20


@pytest.mark.parametrize("flags", [(), ("--legacy",)], ids=["stateless", "with-session"])
def test_a_call_refused_with_an_http_error_says_the_status_and_the_url(servers: Servers,
                                                                       flags: tuple[str, ...]) -> None:
    """The server behind the URL is replaced by one that answers 404 to everything: the call
    fails naming `HTTP 404 Not Found` and the URL (with a session: after the new-session
    retry), not the SDK's bare `Not Found` / `Session terminated`."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from mcp import MCPError

    class NotFound(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def answer(self) -> None:
            body = b"<html>no such page</html>"
            self.send_response(404)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_DELETE = answer

    port = servers.start(*flags)
    url = f"http://127.0.0.1:{port}/mcp"
    stand_in: list[ThreadingHTTPServer] = []

    async def main() -> str:
        async with Client(streamable_http_transport(spec_for(url), Connection()), mode="auto") as client:
            assert _text(await client.call_tool("add", {"a": 1, "b": 2})) == "3"
            servers.stop(port)
            stand_in.append(ThreadingHTTPServer(("127.0.0.1", port), NotFound))
            threading.Thread(target=stand_in[0].serve_forever, daemon=True).start()
            with anyio.fail_after(30), pytest.raises(MCPError) as failed:
                await client.call_tool("add", {"a": 1, "b": 2})
            return failed.value.error.message

    try:
        message = anyio.run(main)
    finally:
        for s in stand_in:
            s.shutdown()
            s.server_close()
    assert message == f"HTTP 404 Not Found from {url}", message


def test_a_server_refusing_connections_mid_session_is_said_in_monads_words(servers: Servers) -> None:
    """Found by a new-user trial: a remote that was connected, then whose port closed, was
    `it cannot be reached: ConnectError: All connection attempts failed` (httpx2's words) in
    its status; the words of a refused first connect say what happened and where."""
    port = servers.start()
    conn = Connection()

    async def main() -> None:
        async with Client(streamable_http_transport(spec_for(f"http://127.0.0.1:{port}/mcp"), conn),
                          mode="auto") as client:
            assert _text(await client.call_tool("add", {"a": 1, "b": 2})) == "3"
            proc, _ = servers.procs.pop(port)
            proc.kill()
            proc.wait(timeout=10)
            with anyio.fail_after(30):
                await client.call_tool("add", {"a": 1, "b": 2})

    with pytest.raises(BaseException):  # noqa: B017 - the SDK's session ends; the reason is the keeper's
        anyio.run(main)
    assert conn.unreachable == f"connection to 127.0.0.1:{port} refused (nothing listens there)"
