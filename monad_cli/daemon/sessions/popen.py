"""Spawning a stdio server with the standard library's `subprocess.Popen` (`close_fds=True`),
its pipes read and written through the event loop's own pipe transports.

Not `anyio.open_process`: under uvloop (daemon/main.py), `loop.subprocess_exec` leaves the
child extra copies of its stdin, stdout and stderr (uvloop 0.23 ignores `close_fds`). A server
that closes its stdout but lives on still holds it through the copy: no end-of-file, a call
waits for an answer that cannot come, `status` says `connected`. `Popen` closes every other
descriptor, on any loop. The exit is awaited on a pidfd (Linux ≥ 5.3: no thread, no SIGCHLD
handler), else in a worker thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence

import anyio
import anyio.abc

READ_LIMIT = 1 << 16  # the StreamReader's buffer mark; LineReader asks for chunks of its own size


class _Receive(anyio.abc.ByteReceiveStream):
    """A child's stdout: bytes as they come, `anyio.EndOfStream` once it is closed."""

    def __init__(self, reader: asyncio.StreamReader, transport: asyncio.ReadTransport) -> None:
        self._reader = reader
        self._transport = transport

    async def receive(self, max_bytes: int = 65536) -> bytes:
        data = await self._reader.read(max_bytes)
        if not data:
            raise anyio.EndOfStream
        return data

    async def aclose(self) -> None:
        self._transport.close()
        await anyio.lowlevel.checkpoint()


class _Send(anyio.abc.ByteSendStream):
    """A child's stdin: each send waits until the pipe takes it (flow control)."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer
        self._closed = False

    async def send(self, item: bytes) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        try:
            self._writer.write(item)
            await self._writer.drain()
        except (ConnectionResetError, BrokenPipeError, RuntimeError) as exc:
            # uvloop raises RuntimeError from write() on a closed pipe; asyncio BrokenPipeError.
            raise anyio.BrokenResourceError from exc

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            self._writer.close()
        await anyio.lowlevel.checkpoint()


class PipeProcess(anyio.abc.Process):
    """An `anyio.abc.Process` over a `subprocess.Popen` (see the module docstring)."""

    def __init__(self, popen: subprocess.Popen[bytes], stdin: _Send, stdout: _Receive) -> None:
        self._popen = popen
        self._stdin = stdin
        self._stdout = stdout
        self._lock = anyio.Lock()
        self._pidfd: int | None = None
        with contextlib.suppress(AttributeError, OSError):
            self._pidfd = os.pidfd_open(popen.pid)

    async def wait(self) -> int:
        async with self._lock:  # one waiter on the pidfd at a time; the others then see the code
            while self._popen.returncode is None:
                if self._pidfd is not None:
                    await anyio.wait_readable(self._pidfd)
                    self._popen.poll()
                else:
                    await anyio.to_thread.run_sync(self._popen.wait, abandon_on_cancel=True)
            if self._pidfd is not None:
                with contextlib.suppress(OSError):
                    os.close(self._pidfd)
                self._pidfd = None
            return self._popen.returncode

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def send_signal(self, sig: int) -> None:
        if self._popen.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._popen.send_signal(sig)

    async def aclose(self) -> None:
        with anyio.CancelScope(shield=True):
            await self._stdin.aclose()
            await self._stdout.aclose()
            await self.wait()

    @property
    def pid(self) -> int:
        return self._popen.pid

    @property
    def returncode(self) -> int | None:
        return self._popen.poll() if self._popen.returncode is None else self._popen.returncode

    @property
    def stdin(self) -> anyio.abc.ByteSendStream:
        return self._stdin

    @property
    def stdout(self) -> anyio.abc.ByteReceiveStream:
        return self._stdout

    @property
    def stderr(self) -> None:
        return None  # always a descriptor of the caller's (the stderr sink's pipe)


async def open_process(argv: Sequence[str], *, stderr: int, env: Mapping[str, str] | None,
                       cwd: str | None) -> PipeProcess:
    """Start `argv` in its own session (process group) with stdin and stdout pipes and
    `stderr` (a descriptor) as its stderr, and no other descriptor of the supervisor's.
    Raises OSError as `subprocess.Popen` does (a missing command, a bad cwd)."""
    await anyio.lowlevel.checkpoint()
    popen = subprocess.Popen(list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                             env=dict(env) if env is not None else None, cwd=cwd, start_new_session=True,
                             close_fds=True, bufsize=0)
    assert popen.stdin is not None and popen.stdout is not None
    loop = asyncio.get_running_loop()
    try:
        reader = asyncio.StreamReader(limit=READ_LIMIT, loop=loop)
        read_transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop),
                                                         popen.stdout)
        write_transport, write_protocol = await loop.connect_write_pipe(
            lambda: asyncio.streams.FlowControlMixin(loop=loop), popen.stdin)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(popen.pid, signal.SIGKILL)
        popen.stdin.close()
        popen.stdout.close()
        raise
    writer = asyncio.StreamWriter(write_transport, write_protocol, None, loop)
    return PipeProcess(popen, _Send(writer), _Receive(reader, read_transport))
