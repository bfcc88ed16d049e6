"""The supervisor's own stdio transport (daemon/sessions/transports.py, framing.py) against a real server process
(tests/servers/wirefaultserver.py) that misbehaves on the wire, driven by the real SDK client.

Framing unit tests (line cuts, repairs, ids) come first; they need no process.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError
from mcp_types import Implementation

from monad_cli.config.schema import validate
from monad_cli.daemon.sessions.framing import LineReader, Oversize, decode_line, find_message_id, format_size
from monad_cli.daemon.sessions.stderr import StderrSink
from monad_cli.daemon.sessions.transports import Connection, TransportOptions, stdio_transport

WIRE_FAULTS = str(Path(__file__).resolve().parents[2] / "servers" / "wirefaultserver.py")


# -- framing ---------------------------------------------------------------------------
class _Chunks(anyio.abc.ByteReceiveStream):
    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = list(chunks)

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if not self.chunks:
            raise anyio.EndOfStream
        return self.chunks.pop(0)

    async def aclose(self) -> None:
        self.chunks = []


def _lines(chunks: list[bytes], limit: int) -> list[bytes | Oversize]:
    async def main() -> list[bytes | Oversize]:
        reader = LineReader(_Chunks(chunks), limit)
        out: list[bytes | Oversize] = []
        while True:
            try:
                out.append(await reader.next())
            except anyio.EndOfStream:
                return out

    return anyio.run(main)


def test_line_reader_cuts_lines_across_chunks_and_skips_oversize_ones() -> None:
    big = b'{"jsonrpc":"2.0","id":7,"result":"' + b"x" * 5000 + b'"}'
    out = _lines([b'{"a":1}\n{"b"', b':2}\n' + big[:3000], big[3000:] + b"\n{\"c\":3}\nlast"], limit=1024)
    assert out[0] == b'{"a":1}' and out[1] == b'{"b":2}'
    assert isinstance(out[2], Oversize) and out[2].size == len(big)
    assert find_message_id(out[2].head, out[2].tail) == 7
    assert out[3:] == [b'{"c":3}', b"last"]  # the session goes on; a final unterminated line is kept


def test_a_line_over_the_limit_that_comes_in_one_read_is_over_the_limit_too() -> None:
    # A whole 100 kB line in one chunk was returned as it was, under a 64 KiB limit.
    big = b"x" * 100_000
    out = _lines([b"small\n" + big + b"\nafter\n"], 65536)
    assert out[0] == b"small" and out[2] == b"after"
    assert isinstance(out[1], Oversize) and out[1].size == len(big) and out[1].head == big[:4096]


def test_decode_repairs_lone_surrogates_and_bad_utf8_with_u_fffd() -> None:
    d = decode_line(b'{"jsonrpc":"2.0","id":1,"result":{"t":"cut \\ud83d here","ok":"\\ud83d\\ude00"}}')
    assert d.message is not None and d.repaired and "surrogate" in d.repaired
    result = d.message.model_dump()["result"]
    assert result == {"t": "cut \ufffd here", "ok": "\U0001f600"}  # a whole pair is kept as the emoji
    d = decode_line(b'{"jsonrpc":"2.0","id":2,"result":{"t":"cut \xf0\x9f here"}}')
    assert d.message is not None and "invalid UTF-8" in (d.repaired or "")
    assert d.message.model_dump()["result"]["t"] == "cut \ufffd here"


def test_decode_names_the_response_a_broken_line_belonged_to() -> None:
    d = decode_line(b'{"jsonrpc":"2.0","id":5,"result":{"content":[{"type":"text","text":"cut')
    assert d.message is None and d.response_id == 5 and "not valid JSON" in (d.problem or "")
    d = decode_line(b'{"result":{"a":"unterminated},"jsonrpc":"2.0","id":"req-9"}')  # TypeScript key order
    assert d.response_id == "req-9"
    d = decode_line(b"Listening on port 3000")  # a stray log line: no request to fail
    assert d.message is None and d.response_id is None
    d = decode_line(b'{"jsonrpc":"2.0","id":3,"result":"not an object"}')
    assert d.message is None and d.response_id == 3
    assert format_size(16 * 1024 * 1024) == "16 MiB" and format_size(1536) == "1.5 KiB"


# -- against the real server -----------------------------------------------------------
def wire_faults_spec(*flags: str, name: str = "wild", **fields: Any) -> Any:
    return validate({"command": sys.executable, "args": [WIRE_FAULTS, *flags], **fields}, name=name,
                     source=f"atoms/mcp/{name}.toml", environ={})


async def _session(tmp_path: Path, spec: Any, options: TransportOptions | None, body: Any) -> Any:
    conn = Connection()
    sink = StderrSink(tmp_path / "wild.stderr.log")
    transport = stdio_transport(spec, sink, conn, options or TransportOptions(workdir=str(tmp_path / "work")))
    async with Client(transport, mode="auto", cache=None,
                      client_info=Implementation(name="monad-test", version="0")) as client:
        return await body(client, conn)


def run_session(tmp_path: Path, body: Any, *flags: str, options: TransportOptions | None = None) -> Any:
    return anyio.run(_session, tmp_path, wire_faults_spec(*flags), options, body)


def _text(result: Any) -> str:
    return result.content[0].text


def test_a_cut_emoji_is_repaired_not_dropped(tmp_path: Path) -> None:
    async def body(client: Client, conn: Connection) -> None:
        with anyio.fail_after(20):  # the bug: this call waited forever
            assert _text(await client.call_tool("emoji_cut", {})) == "cut \ufffd here"
            assert _text(await client.call_tool("bad_utf8", {})) == "cut \ufffd here"
        assert conn.repaired_lines == 2 and conn.stray_lines == 0

    run_session(tmp_path, body)


def test_an_unrepairable_response_fails_only_its_request(tmp_path: Path) -> None:
    async def body(client: Client, conn: Connection) -> None:
        with anyio.fail_after(20), pytest.raises(MCPError) as err:
            await client.call_tool("garbage", {})
        assert "response to `tools/call` was not valid JSON" in err.value.error.message
        assert "the session goes on" in err.value.error.message
        assert _text(await client.call_tool("echo", {"text": "still here"})) == "still here"

    run_session(tmp_path, body)


@pytest.mark.parametrize("depth", [600, 1100])
def test_a_deeply_nested_answer_fails_only_its_call(tmp_path: Path, depth: int) -> None:
    # 600 levels: over pydantic_core's parse depth (the line takes the repairing path), within
    # what json.loads takes. The repair's walk raised RecursionError out of the stdout reader
    # when it took two frames a level (Python 3.11's comprehensions), and the session died.
    # 1100: past json.loads on 3.11, within it on 3.12+ (a C recursion limit of its own), where
    # the walk then ran out of frames.
    async def body(client: Client, conn: Connection) -> None:
        pid = int(_text(await client.call_tool("pid", {})))
        with anyio.fail_after(20), pytest.raises(MCPError) as err:
            await client.call_tool("nested", {"depth": depth})
        if depth == 600:
            assert err.value.error.message == "nested too deep to say"
            value, levels = err.value.error.data["deep"], 0
            while value is not None:
                value, levels = value[0] if value else None, levels + 1
            assert levels == depth
        else:
            assert "response to `tools/call` was JSON nested too deeply" in err.value.error.message
        assert int(_text(await client.call_tool("pid", {}))) == pid and not conn.closed

    run_session(tmp_path, body)


@pytest.mark.parametrize("order", ["id-first", "id-last"])
def test_a_response_over_the_limit_fails_that_call_and_keeps_the_session(tmp_path: Path, order: str) -> None:
    flags = ("--id-last",) if order == "id-last" else ()

    async def body(client: Client, conn: Connection) -> None:
        pid = int(_text(await client.call_tool("pid", {})))
        with anyio.fail_after(30), pytest.raises(MCPError) as err:
            await client.call_tool("big", {"mib": 1.5})
        message = err.value.error.message
        assert "response to `tools/call` is 1.5 MiB, over the 1 MiB message limit" in message
        assert "raise `maxMessageBytes` in `atoms/mcp/wild.toml`" in message
        # Same process, same session: the next call is answered.
        assert int(_text(await client.call_tool("pid", {}))) == pid
        assert len(_text(await client.call_tool("big", {"mib": 0.5}))) == 512 * 1024
        assert conn.oversize_messages == 1 and not conn.closed

    run_session(tmp_path, body, *flags, options=TransportOptions(max_message_bytes=1024 * 1024,
                                                                 workdir=str(tmp_path)))


def test_the_default_limit_takes_results_over_the_old_4_mib_cap(tmp_path: Path) -> None:
    async def body(client: Client, conn: Connection) -> None:
        with anyio.fail_after(60):
            assert len(_text(await client.call_tool("big", {"mib": 10}))) == 10 * 1024 * 1024
            with pytest.raises(MCPError) as err:
                await client.call_tool("big", {"mib": 17})
        assert "over the 16 MiB message limit" in err.value.error.message

    run_session(tmp_path, body)


class _SendTimes:
    """The session's write stream (the SDK's `WriteStream` protocol) noting when each request
    method was first sent, then passing it on: the client's side of the negotiation, timed
    apart from how long the server process took to start."""

    def __init__(self, inner: Any, sent: dict[str, float]) -> None:
        self.inner, self.sent = inner, sent

    async def send(self, item: Any, /) -> None:
        method = getattr(item.message, "method", None)
        if isinstance(method, str):
            self.sent.setdefault(method, time.monotonic())
        await self.inner.send(item)

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> _SendTimes:
        await self.inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        result: bool | None = await self.inner.__aexit__(*exc)
        return result


@pytest.mark.parametrize("discover", ["error", "odd", "never"])
def test_any_legacy_server_negotiates_within_the_discover_budget(tmp_path: Path, discover: str) -> None:
    """`server/discover` gets the budget (1.5 s), then `initialize` goes out: never the SDK's
    own 10 s. Timed from the client's `server/discover` to its `initialize`, so the server's
    start (a Python process importing the SDK: 2 CPU-s, 10 s on a loaded machine) is not
    counted; the budget also bounds a server too slow to start to answer at all."""
    budget, sent = 1.5, dict[str, float]()

    @asynccontextmanager
    async def timed() -> AsyncIterator[tuple[Any, _SendTimes]]:
        options = TransportOptions(discover_budget=budget, workdir=str(tmp_path))
        spec = wire_faults_spec("--discover", discover)
        async with stdio_transport(spec, StderrSink(tmp_path / "wild.stderr.log"), Connection(), options) as (
                read_stream, write_stream):
            yield read_stream, _SendTimes(write_stream, sent)

    async def main() -> str:
        async with Client(timed(), mode="auto", cache=None,
                          client_info=Implementation(name="monad-test", version="0")) as client:
            return client.protocol_version

    assert anyio.run(main) == "2025-11-25"
    waited = sent["initialize"] - sent["server/discover"]
    # A timer fires late on a loaded machine, but not by 3.5 s; the SDK's own wait is 10 s.
    assert waited < budget + 3.5, waited
    if discover == "never":  # nothing answered: it was the budget that ended the wait
        assert waited >= budget - 0.05, waited


def _alive(pid: int) -> bool:
    from monad_cli.daemon.sessions.processes import alive

    return bool(alive([pid]))


def _read_pid(path: Path, timeout: float = 20) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return int(path.read_text())
        time.sleep(0.05)
    raise AssertionError(f"{path} was not written")


def test_descendants_that_left_the_group_die_with_the_server(tmp_path: Path) -> None:
    from monad_cli.daemon.sessions.processes import SpawnRecords

    setsid_pidfile, orphan_pidfile = tmp_path / "setsid.pid", tmp_path / "orphan.pid"
    records = SpawnRecords(tmp_path / "run")

    async def body(client: Client, conn: Connection) -> tuple[int, int, int]:
        server = int(_text(await client.call_tool("pid", {})))
        assert [r.pid for r in records.read_all()] == [server]  # recorded while it runs
        return server, _read_pid(setsid_pidfile), _read_pid(orphan_pidfile)

    server, child, orphan = run_session(tmp_path, body, "--setsid-child", str(setsid_pidfile),
                                        "--orphan-child", str(orphan_pidfile),
                                        options=TransportOptions(workdir=str(tmp_path), records=records))
    # They had left the server's session: its group kill alone would have missed them.
    assert not _alive(server)
    for pid in (child, orphan):
        assert not _alive(pid), f"pid {pid} outlived its server"
    assert records.read_all() == []  # forgotten once every process is gone


def test_a_server_without_cwd_runs_in_its_work_dir(tmp_path: Path) -> None:
    work = tmp_path / "work" / "wild"

    async def body(client: Client, conn: Connection) -> str:
        return os.readlink(f"/proc/{conn.pid}/cwd")

    assert run_session(tmp_path, body, options=TransportOptions(workdir=str(work))) == str(work)
    assert work.stat().st_mode & 0o777 == 0o700
