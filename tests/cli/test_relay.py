"""`cli/relay.py`'s gateway hello against a supervisor that refuses it at once: the refusal
is what the command says, whatever the timing of the supervisor's close."""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path

import pytest

from monad_cli.cli.relay import open_relay
from monad_cli.core.envelope import encode_line
from monad_cli.core.errors import NotFound
from monad_cli.core.paths import Paths


def test_a_refused_hello_says_the_refusal_also_when_the_supervisor_closed_first(tmp_path: Path) -> None:
    # The supervisor reads the hello, answers its refusal and closes. The hello with the
    # client's pipes (SCM_RIGHTS) goes whole in one sendmsg; a second, empty send after it met
    # the closed socket (EPIPE) about one time in ten, and click ended the command with exit 1
    # and no word (`monad mcp serve NAME` for an undefined NAME, from an agent's pipes).
    paths = Paths(tmp_path)
    paths.gateway_socket.parent.mkdir(parents=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(paths.gateway_socket))
    listener.listen(8)
    refusal = (encode_line(NotFound("server `githb` is not defined")) + "\n").encode()

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                data = b""
                while b"\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                conn.sendall(refusal)

    threading.Thread(target=serve, daemon=True).start()
    r, w = os.pipe()
    try:
        for _ in range(300):
            with pytest.raises(NotFound, match="is not defined"):
                open_relay(paths, b'{"monad":"gateway"}\n', timeout=5, fds=[r, w])
    finally:
        listener.close()
        os.close(r)
        os.close(w)
