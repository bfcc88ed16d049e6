"""A gateway call that waits for a person's approval says so to the agent at once (a
progress notification under its token, else a log message), ends at the approval timeout
with an error result that says how to approve it, and still finishes when a person approves
it meanwhile from another shell or the Studio (docs/gateway.md "A call that waits for
approval"). Through the real supervisor, `monad mcp serve` (stdio, both eras) and `--http`."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import LIGHTTOOLSERVER, free_port, gateway_up, wait_state
from tests.studio_helpers import StudioHTTP, open_studio

pytestmark = pytest.mark.e2e
ALLOW = re.compile(r"`monad approvals allow ([0-9a-f]{8})`")
TRUST = "`monad mcp trust ts --auto-approve ts__echo` lets it run unasked from now on"


def _atom(home: Path) -> None:
    path = home / "atoms" / "mcp" / "ts.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"command = {json.dumps(sys.executable)}\nargs = {json.dumps([LIGHTTOOLSERVER])}\ntimeout = 60\n")


@asynccontextmanager
async def _agent(home: Path, transport: str, mode: str, timeout: float, **kw: Any) -> AsyncIterator[Any]:
    """An SDK client of `monad mcp serve --approval-timeout TIMEOUT`, over stdio or `--http`."""
    from mcp import Client, StdioServerParameters

    flags = ["--approval-timeout", str(timeout)]
    if transport == "stdio":
        params = StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve", *flags],
                                       env={"MONAD_HOME": str(home), "MONAD_NO_AUTOSTART": "1"})
        async with Client(params, mode=mode, **kw) as client:
            await client.list_tools()  # a handshake-era connection's plain calls take the direct lane once it listed
            yield client
        return
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    port = free_port()
    http = subprocess.Popen([sys.executable, "-m", "monad_cli", "mcp", "serve", "--http", "--port", str(port),
                             *flags], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url, headers = await anyio.to_thread.run_sync(gateway_up, home, port)
        # A long read timeout, as the SDK's own HTTP client has: a question waits in silence.
        async with (httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as h,
                    Client(streamable_http_client(url, http_client=h), mode=mode, **kw) as client):
            yield client
    finally:
        http.send_signal(signal.SIGINT)
        try:
            http.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            http.kill()


class Signs:
    """The signs an agent got that its call waits: (seconds since the call, text)."""

    def __init__(self) -> None:
        self.start = time.monotonic()
        self.got: list[tuple[float, str]] = []
        self.arrived = anyio.Event()

    def add(self, text: str) -> None:
        self.got.append((time.monotonic() - self.start, text))
        self.arrived.set()

    async def on_progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.add(message or "")

    async def on_log(self, params: Any) -> None:
        assert params.level == "warning" and params.logger == "monad", params
        self.add(str(params.data))


@pytest.mark.parametrize(("transport", "mode", "sign"), [
    ("stdio", "legacy", "log"),  # a plain call: the stdio direct lane writes the log message
    ("stdio", "auto", "progress"),  # 2026-07-28 with a progressToken
    ("stdio", "auto", "log"),  # 2026-07-28 whose requests ask for log messages
    ("http", "legacy", "log"),  # the SDK's path, on the POST's own stream
])
def test_a_waiting_call_says_so_at_once_and_its_timeout_says_how_to_approve(
        supervisor: Any, monad_home: Path, transport: str, mode: str, sign: str) -> None:
    _atom(monad_home)
    wait_state(supervisor, "ts", "connected", timeout=90)
    signs = Signs()
    answer: dict[str, Any] = {}

    async def main() -> None:
        kw: dict[str, Any] = {"logging_callback": signs.on_log}
        if mode == "auto" and sign == "log":
            kw["log_level"] = "info"
        async with _agent(monad_home, transport, mode, 3, **kw) as client:
            signs.start = time.monotonic()
            progress = {"progress_callback": signs.on_progress} if sign == "progress" else {}
            result = await client.call_tool("ts__echo", {"text": "hi"}, **progress)
            answer.update(seconds=time.monotonic() - signs.start, error=result.is_error, text=result.content[0].text)

    anyio.run(main)
    assert len(signs.got) == 1 and signs.got[0][0] < 1.0, signs.got
    told = signs.got[0][1]
    m = ALLOW.search(told)
    assert m and told.startswith("call to `ts__echo` waits for a person's approval (up to 3 s): "), told
    assert f"`monad approvals deny {m.group(1)}` refuses it" in told and TRUST in told, told
    assert answer["error"] and 2.5 < answer["seconds"] < 8, answer
    assert answer["text"].startswith("call to `ts__echo` was not approved in time (no decision within 3 s), so "
                                     "server `ts` was not sent it; "), answer
    assert "the Studio shows it: `monad studio`" in answer["text"] and TRUST in answer["text"], answer
    assert " ID" not in answer["text"], answer  # real names only, no placeholder


def _approve_while_waiting(monad_home: Path, transport: str, mode: str, sign: str,
                           approve: Callable[[str], None]) -> tuple[Signs, Any]:
    signs = Signs()
    out: list[Any] = []

    async def main() -> None:
        kw: dict[str, Any] = {"logging_callback": signs.on_log}
        async with _agent(monad_home, transport, mode, 60, **kw) as client, anyio.create_task_group() as tg:
            async def decide() -> None:
                with anyio.fail_after(10):
                    await signs.arrived.wait()
                m = ALLOW.search(signs.got[0][1])
                assert m, signs.got
                await anyio.to_thread.run_sync(approve, m.group(1))

            tg.start_soon(decide)
            signs.start = time.monotonic()
            progress = {"progress_callback": signs.on_progress} if sign == "progress" else {}
            with anyio.fail_after(30):
                out.append(await client.call_tool("ts__echo", {"text": "approved"}, **progress))

    anyio.run(main)
    return signs, out[0]


def test_approved_from_another_shell_while_it_waits(supervisor: Any, monad_home: Path) -> None:
    _atom(monad_home)
    wait_state(supervisor, "ts", "connected", timeout=90)

    def allow(approval_id: str) -> None:
        r = supervisor("approvals", "allow", approval_id)
        assert r.code == 0 and "allowed `ts__echo` (once)" in r.err, r

    signs, result = _approve_while_waiting(monad_home, "stdio", "legacy", "log", allow)
    assert not result.is_error and result.content[0].text == "approved", result
    assert len(signs.got) == 1 and signs.got[0][0] < 1.0, signs.got


def test_approved_in_the_studio_while_it_waits(supervisor: Any, monad: Any, monad_home: Path) -> None:
    _atom(monad_home)
    wait_state(supervisor, "ts", "connected", timeout=90)
    studio = StudioHTTP(open_studio(monad)["url"])
    studio.login()
    decided: list[int] = []

    def allow(approval_id: str) -> None:
        r = studio.request("POST", f"/v1/approvals/{approval_id}", body={"decision": "allow", "scope": "once"})
        decided.append(r.status_code)

    try:
        signs, result = _approve_while_waiting(monad_home, "http", "auto", "progress", allow)
    finally:
        studio.close()
    assert decided == [200], decided
    assert len(signs.got) == 1 and signs.got[0][0] < 1.0, signs.got
    assert not result.is_error and result.content[0].text == "approved", result


def test_the_inspector_shows_how_to_approve(supervisor: Any, monad_home: Path, tmp_path: Path) -> None:
    """The MCP Inspector's CLI (which gave up silently at its own 60 s before): a call nobody
    approves within `--approval-timeout 3` prints a result that says how to approve it."""
    import os

    from tests.conftest import inspector_bin

    _atom(monad_home)
    wait_state(supervisor, "ts", "connected", timeout=90)
    r = subprocess.run([inspector_bin(), "--cli", "-e", f"MONAD_HOME={monad_home}", "-e", "MONAD_NO_AUTOSTART=1",
                        sys.executable, "-m", "monad_cli", "mcp", "serve", "--approval-timeout", "3",
                        "--method", "tools/call", "--tool-name", "ts__echo", "--tool-arg", "text=hi"],
                       capture_output=True, text=True, timeout=120,
                       env={**os.environ, "MCP_CATALOG_PATH": str(tmp_path / "catalog.json")})
    assert r.returncode == 5 and "tool_is_error" in r.stderr, (r.stdout, r.stderr)  # its exit for isError
    shown = json.loads(r.stdout)
    assert shown["isError"] is True, shown
    text = shown["content"][0]["text"]
    assert "was not approved in time (no decision within 3 s)" in text and TRUST in text, text
