"""The shape of a message for a person: one line, no value longer than a line.

A message names what failed by quoting it (``server `github` is not defined``), and the
quoted thing comes from the person or from a server: a 10,000-character name, a pasted
file, an HTTP library's multi-line hint. `cut` shortens one value, `cut_values` every
overlong word of a finished message, `one_line` folds a reason that spans lines into the
single line a `status` row or a journal row has room for. Stdlib only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from monad_cli.core.order import by_name

VALUE_LIMIT = 80
"""Characters of one quoted value kept in a message (the rest is counted, not shown)."""

NET_LIMIT = 240
"""A word (no whitespace) of a finished message longer than this is a value pasted whole: no
path, URL or name a person reads is that long, and a test's temporary paths stay shorter."""

_LONG_WORD = re.compile(r"\S{" + str(NET_LIMIT + 1) + ",}")


def cut(value: object, limit: int = VALUE_LIMIT) -> str:
    """`value` as text, at most `limit` characters plus a note of its full length:
    `xxxx…(10000 characters)`."""
    text = str(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}…({len(text)} characters)"


def cut_values(message: str) -> str:
    """`message` with each whitespace-free run longer than `NET_LIMIT` characters cut to
    `VALUE_LIMIT` (`cut`): a net for messages that quote a value whole. Shorter words, and so
    every path, URL and name of ordinary size, stay as they are."""
    return _LONG_WORD.sub(lambda m: _cut_word(m.group(0)), message)


_OPENERS = "`'\"([{<"
_CLOSERS = "`'\")]}>.,;:"


def _cut_word(word: str) -> str:
    """`cut` for the value inside `word`, keeping the quotes and punctuation around it
    (a quoted name stays quoted, and the count is the value's own)."""
    core = word.lstrip(_OPENERS)
    lead = word[:len(word) - len(core)]
    stripped = core.rstrip(_CLOSERS)
    trail = core[len(stripped):]
    return f"{lead}{cut(stripped)}{trail}"


def one_line(text: str) -> str:
    """`text` on one line: its non-blank lines, stripped, joined by ` | ` (a reason that
    quotes a multi-line hint stays one row of `status` and one journal field)."""
    if "\n" not in text and "\r" not in text:
        return text
    return " | ".join(line.strip() for line in text.splitlines() if line.strip())


# What pydantic's ValidationError text wraps its problems in, which the SDK quotes in an
# MCPError ("Failed to parse JSON response: 4 validation errors for union[…] …"): its header,
# the `[type=…, input_value=…]` bracket (the server's bytes again) and the docs link.
_PYDANTIC_FRAME = re.compile(r"\d+ validation errors? for \S+\s*|[ \t]*\[type=[^\]]*\]|"
                             r"\s*For further information visit https://errors\.pydantic\.dev/\S+")


def without_pydantic_frame(text: str) -> str:
    """`text` (an error message) with a pydantic report it quotes cut to its problems, on one
    line: `…: JSONRPCRequest.method: Field required; JSONRPCResponse.result: Input should be
    an object`. Text without pydantic's frame is returned as it is (a server's own lines stay
    lines, for `one_line`)."""
    said, framed = _PYDANTIC_FRAME.subn("", text)
    if not framed:
        return text
    # pydantic's layout: a location's line, its problem indented under it.
    said = re.sub(r"\n[ \t]+(?=\S)", ": ", said.strip())
    return " ".join("; ".join(line.strip() for line in said.splitlines() if line.strip()).split())


def did_you_mean(word: str, choices: Iterable[str], *, known: bool = False) -> str:
    """`` (did you mean `X`?)`` for the closest of `choices` to a mistyped `word` (as written,
    else without case: `GitHb` is offered `github`); else "", or with `known`, ``; known: A, B``
    (every choice, sorted)."""
    import difflib  # only on an error

    names = by_name(choices)
    close = difflib.get_close_matches(word, names, n=1)
    if not close:  # then without case: `GitHb` is not close to `github` as written
        lowered = {name.lower(): name for name in reversed(names)}  # the first of a case-only pair
        close = [lowered[m] for m in difflib.get_close_matches(word.lower(), list(lowered), n=1)]
    if close:
        return f" (did you mean `{close[0]}`?)"
    return f"; known: {', '.join(names)}" if known else ""


def counted(n: int, noun: str) -> str:
    """`1 tool`, `2 tools`, `0 tools`: a count with its noun in the number it takes (`noun`
    singular; the plural adds `s`)."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def server_not_defined(name: str, defined: Iterable[str]) -> str:
    """``server `Time` is not defined (names are case-sensitive: `time` is) (see `monad mcp
    list`)``: a name that differs from a defined one only in case says so; a near one gets
    `did_you_mean`."""
    same = [n for n in defined if n.lower() == name.lower() and n != name]
    near = f" (names are case-sensitive: `{same[0]}` is)" if same else did_you_mean(name, defined)
    return f"server `{name}` is not defined{near} (see `monad mcp list`)"


def transport_error(exc: BaseException) -> str:
    """An HTTP client's error for a message: a transport error (refused, unknown host, a TLS
    certificate problem, a timeout) by its own text, `[Errno 111] Connection refused`, since
    the class name alone (`ConnectError`) does not say which; any other by its class name.
    Only transport errors: their text comes from the socket or TLS layer, while an HTTP status
    error's text quotes the request URL, whose query may hold a key. Matched by class name so
    this module needs no HTTP client (httpx2 and httpcore2 use the same names)."""
    name = type(exc).__name__
    if "TransportError" not in {c.__name__ for c in type(exc).__mro__}:
        return name
    text = " ".join(str(exc).split())
    return f"{name}: {cut(text, 160)}" if text else name


def _chain(exc: BaseException) -> list[BaseException]:
    """`exc` and what it was raised from, outermost first (an HTTP client wraps the socket's
    error twice: httpx2's ConnectError from httpcore2's from the OSError)."""
    out: list[BaseException] = []
    at: BaseException | None = exc
    while at is not None and at not in out and len(out) < 16:
        out.append(at)
        at = at.__cause__ or at.__context__
    return out


def connect_failure(exc: BaseException, url: str, *, timeout: float | None = None) -> str:
    """What went wrong when an HTTP request to `url` got no answer, in the words a person acts
    on: ``connection to HOST:PORT refused (nothing listens there)``, ``the host name `HOST`
    does not resolve (DNS: …)``, ``connecting to HOST:PORT timed out``, ``HOST:PORT took the
    connection but did not answer within N s``, the TLS certificate or handshake, a network
    that is unreachable; any other error as `transport_error` says it. Read from the socket's
    own error under the client's (by type: ConnectionRefusedError, socket.gaierror, ssl's) and
    the client's timeout classes by name, so this module needs no HTTP client."""
    import errno
    import socket
    import ssl
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    host = parts.hostname or "?"
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        port = 0
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    chain = _chain(exc)
    for e in chain:
        if isinstance(e, socket.gaierror):
            return f"the host name `{host}` does not resolve (DNS: {e.strerror or e})"
        if isinstance(e, ConnectionRefusedError):
            return f"connection to {where} refused (nothing listens there)"
        if isinstance(e, ssl.SSLCertVerificationError):
            return f"the TLS certificate of {where} is not trusted ({e.verify_message or e.reason})"
        if isinstance(e, ssl.SSLError):
            return f"the TLS handshake with {where} failed ({e.reason or e})"
    names = {type(e).__name__ for e in chain}
    within = f" within {timeout:g} s" if timeout else ""
    if "ConnectTimeout" in names:
        return f"connecting to {where} timed out{within}"
    if names & {"ReadTimeout", "WriteTimeout", "PoolTimeout", "TimeoutError"}:
        return f"{where} took the connection but did not answer{within}"
    for e in chain:
        if isinstance(e, OSError) and e.errno in (errno.ENETUNREACH, errno.EHOSTUNREACH):
            return f"{where} is unreachable ({e.strerror})"
    return transport_error(exc)


__all__ = ["NET_LIMIT", "VALUE_LIMIT", "connect_failure", "counted", "cut", "cut_values", "did_you_mean", "one_line",
           "server_not_defined", "transport_error"]
