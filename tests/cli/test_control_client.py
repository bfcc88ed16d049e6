"""The CLI's hand-written HTTP/1.1 response reader (`cli/control.py`'s `_Response`) held to the
standard library's `http.client` on the same bytes: the status, the headers and the body
(Content-Length, chunked with extensions and trailers, delimited by the close), and a cut
response refused. It exists to keep `http.client` (and with it `email` and `ssl`, ~35 ms of
import time) off every CLI command; this test keeps it reading what the library reads."""

from __future__ import annotations

import http.client
import socket
import threading

import pytest

from monad_cli.cli.control import _Cut, _Response

RESPONSES = {
    "content-length": (b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 13\r\n"
                       b"connection: close\r\n\r\n{\"ok\": true}\n"),
    "chunked": (b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\nX-Name:  spaced value \r\n\r\n"
                b"5;ext=1\r\n{\"a\":\r\n3\r\n 1}\r\n1\r\n\n\r\n0\r\nTrailer: x\r\n\r\n"),
    "until-close": b"HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\n\r\nnothing here\nat all",
    "ndjson": (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
               b"b\r\n{\"p\": 1}\n{\"\r\n8\r\np\": 2}\n\n\r\n0\r\n\r\n"),
    "empty": b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n",
}


def _served(raw: bytes) -> socket.socket:
    """A socket whose peer writes `raw` in small pieces, then closes."""
    ours, theirs = socket.socketpair()

    def write() -> None:
        for i in range(0, len(raw), 7):
            theirs.sendall(raw[i:i + 7])
        theirs.close()
    threading.Thread(target=write, daemon=True).start()
    return ours


def _by_library(raw: bytes) -> tuple[int, dict[str, str], bytes]:
    sock = _served(raw)
    resp = http.client.HTTPResponse(sock)
    resp.begin()
    body = resp.read()
    sock.close()
    return resp.status, {k.lower(): v for k, v in resp.getheaders()}, body


@pytest.mark.parametrize("name", sorted(RESPONSES))
def test_reads_what_http_client_reads(name: str) -> None:
    raw = RESPONSES[name]
    status, headers, body = _by_library(raw)
    sock = _served(raw)
    ours = _Response(sock)
    assert (ours.status, ours.read()) == (status, body)
    # RFC 9110 §5.5: a field value excludes the whitespace around it; http.client keeps the
    # trailing one, the one place the two differ on purpose.
    assert {k: ours.headers[k] for k in headers} == {k: v.strip() for k, v in headers.items()}
    sock.close()


def test_lines_split_the_body_as_ndjson() -> None:
    sock = _served(RESPONSES["ndjson"])
    assert list(_Response(sock).lines()) == [b'{"p": 1}', b'{"p": 2}']
    sock.close()


@pytest.mark.parametrize("raw", [b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nshort",
                                 b"SSH-2.0-OpenSSH\r\n\r\n"])
def test_a_cut_or_foreign_answer_is_refused_as_the_library_refuses_it(raw: bytes) -> None:
    with pytest.raises((http.client.HTTPException, ValueError)):
        _by_library(raw)
    sock = _served(raw)
    with pytest.raises(_Cut):
        _Response(sock).read()
    sock.close()


def test_a_head_cut_by_the_close_is_refused() -> None:
    """Where the two differ on purpose: http.client takes headers cut off by the close as a
    whole response; the control client refuses it (the supervisor never sends one)."""
    raw = b"HTTP/1.1 200 OK\r\nx: y"
    assert _by_library(raw)[0] == 200
    sock = _served(raw)
    with pytest.raises(_Cut):
        _Response(sock).read()
    sock.close()
