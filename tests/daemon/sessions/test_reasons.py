"""Why a connection failed, in one line (daemon/sessions/reasons.py), in-process: the stderr
tail without its noise, the phase a timeout hit, stdout noise and the package runner named;
end to end with real servers in tests/e2e/test_server_reasons.py."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError

from monad_cli.config.schema import ServerSpec, validate
from monad_cli.daemon.sessions.reasons import describe, explain_closed, explain_timeout, stderr_hint
from monad_cli.daemon.sessions.transports import Connection


def spec(command: str, **fields: object) -> ServerSpec:
    return validate({"command": command, **fields}, name="s", source="atoms/mcp/s.toml", environ={})


def test_the_stderr_tail_quotes_the_last_three_lines_that_say_something() -> None:
    traceback = ["Traceback (most recent call last):", '  File "server.py", line 3, in <module>',
                 "    connect(KEY)", "    ^^^^^^^^^^^^", "KeyError: 'API_KEY'", "   ~~~~   "]
    assert stderr_hint(traceback) == ('; stderr: File "server.py", line 3, in <module> | connect(KEY) | '
                                      "KeyError: 'API_KEY'")
    assert stderr_hint([]) == stderr_hint(["", "  ^^^"]) == ""


def test_npms_trailer_is_skipped_so_its_404_is_quoted() -> None:
    npm = ["npm error code E404", "npm error 404 Not Found - GET https://registry.npmjs.org/@x%2fmcp - Not found",
           "npm error 404", "npm error 404 Note that you can also install from a",
           "npm error 404 tarball, folder, http url, or git url.",
           "npm error A complete log of this run can be found in: /home/u/.npm/_logs/1.log"]
    assert stderr_hint(npm) == ("; stderr: npm error code E404 | npm error 404 Not Found - GET "
                                "https://registry.npmjs.org/@x%2fmcp - Not found")


def test_describe_is_one_line_for_a_result_of_the_wrong_shape() -> None:
    class Result(BaseModel):
        content: list[str]
        total: int

    with pytest.raises(ValidationError) as e:
        Result.model_validate({"content": "text", "total": "many"})
    assert describe(e.value) == ("the server's Result is not of the shape the protocol defines: "
                                 "content: Input should be a valid list (and 1 more)")
    assert describe(RuntimeError("two\n  lines")) == "two lines"
    assert describe(TimeoutError()) == "TimeoutError"


def test_a_timeout_names_the_phase_and_what_stdout_showed() -> None:
    quiet = Connection(stdout_lines=0)
    assert explain_timeout(spec("python3", timeout=2), "initializing", [], quiet) == (
        "timed out after 2 s while initializing; it wrote nothing to its stdout (does it flush its output?)")
    said = explain_timeout(spec("npx", args=["-y", "@x/mcp"]), "initializing", [], quiet)
    assert "`npx` may still be fetching the server on its first start: raise `timeout` in `atoms/mcp/s.toml`" in said
    assert "`npm cache clean --force`" in said and "before its first `[table]`" in said, said
    uvx = explain_timeout(spec("uvx", args=["mcp-server-time"]), "initializing", [], quiet)
    assert "before its first `[table]`" in uvx and "npm" not in uvx, uvx  # npx's cache is npx's alone
    proxy = explain_timeout(spec("python3"), "initializing", ["SSL: CERTIFICATE_VERIFY_FAILED"], quiet)
    assert "its stderr names a network or certificate problem" in proxy
    assert proxy.endswith("; stderr: SSL: CERTIFICATE_VERIFY_FAILED")
    noisy = Connection(stdout_lines=2, stray_lines=2, first_stray_line="Server ready on stdio")
    assert ("it wrote 2 lines to stdout that are not JSON-RPC (the first: 'Server ready on stdio'): "
            "a stdio server must log to stderr, not stdout") in explain_timeout(spec("python3"), "listing tools",
                                                                                [], noisy)


@pytest.mark.parametrize(("conn", "said"), [
    (Connection(returncode=3), "server process exited with status 3; stderr: boom"),
    (Connection(returncode=-9), "server process was killed by signal 9 (SIGKILL); stderr: boom"),
    (Connection(), "server process closed its stdout; stderr: boom"),
    (Connection(hung="it stopped answering"), "it stopped answering"),
    (Connection(protocol_error="a response to no request"), "closed the session: a response to no request"),
])
def test_a_closed_session_says_how_it_ended(conn: Connection, said: str) -> None:
    assert explain_closed(spec("python3"), conn, ["boom"]) == said
