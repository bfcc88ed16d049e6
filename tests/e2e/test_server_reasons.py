"""Reasons that point the right way, through the real supervisor and real servers (issue 30):
a server that dies before answering, a failed tool call with what the server logged
meanwhile, an older SDK's noise about the `server/discover` probe kept out of the stderr
tail, and reasons that stay one line."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LIGHTTOOLSERVER, SERVERS, status_of, wait_for, wait_state, write_atom

pytestmark = pytest.mark.e2e
WIRE_FAULTS = str(SERVERS / "wirefaultserver.py")


def test_a_server_that_dies_at_import_is_said_to_exit_before_answering(supervisor: Any, tmp_path: Path) -> None:
    """As a server whose dependency changed under it: a traceback on stderr, nothing on stdout."""
    monad = supervisor
    script = tmp_path / "server.py"
    script.write_text("import sys\nprint('starting', file=sys.stderr)\nimport json\njson.no_such_function()\n")
    assert monad("mcp", "add", "dies", "--", sys.executable, str(script)).code == 0
    row = wait_for(lambda: (s := status_of(monad, "dies"))["state"] in ("backoff", "failed") and s["reason"] and s)
    reason = row["reason"]
    assert reason.startswith("server process exited with status 1 before answering"), row
    assert "while negotiating the protocol version" not in reason
    assert "AttributeError: module 'json' has no attribute 'no_such_function'" in reason, row
    assert "json.no_such_function()" in reason and "^^^" not in reason, row
    r = monad("mcp", "wait", "dies", "--timeout", "0")
    assert r.code != 0 and "AttributeError" in r.err, r


def test_a_command_that_prints_to_stdout_and_exits_is_quoted(supervisor: Any, tmp_path: Path) -> None:
    """As a command that is not an MCP server, or one missing an argument: it prints its usage
    to stdout and exits. The reason quotes that line instead of only the exit status."""
    monad = supervisor
    script = tmp_path / "cli.py"
    script.write_text("import os, sys\nprint('usage: cli.py [--stdio] CONFIG', os.environ['API_KEY'])\nsys.exit(2)\n")
    assert monad("mcp", "add", "usage", "--env", "API_KEY=SENTINEL-usage-7c1d", "--", sys.executable,
                 str(script)).code == 0
    row = wait_for(lambda: (s := status_of(monad, "usage"))["state"] in ("backoff", "failed") and s["reason"] and s)
    reason = row["reason"]
    assert reason.startswith("server process exited with status 2 while"), row
    assert "the first: 'usage: cli.py [--stdio] CONFIG ***'" in reason, row  # a secret in it stays `***`


def test_a_failed_tool_call_quotes_what_the_server_logged_during_it(supervisor: Any) -> None:
    monad = supervisor
    assert monad("mcp", "add", "ts", "--", sys.executable, LIGHTTOOLSERVER).code == 0
    wait_state(monad, "ts", "connected")
    assert monad("mcp", "call", "ts__fail", "--arg", "message=before", "--arg", "log=an older line",
                 "--yes").code == 1
    log = "Traceback (most recent call last):\n  File \"fetch.py\", line 3\nValueError: no route to host"
    r = monad("mcp", "call", "ts__fail", "--arg", "message=Error executing tool fetch", "--arg", f"log={log}",
              "--yes")
    assert r.code == 1, r
    # Each line the server wrote on a line of its own, below the error (never glued together).
    assert r.err.splitlines() == ["error: tool `ts__fail` failed: Error executing tool fetch",
                                  "  the server's stderr during the call:",
                                  "    Traceback (most recent call last):", '    File "fetch.py", line 3',
                                  "    ValueError: no route to host"], r
    r = monad("mcp", "call", "ts__fail", "--arg", "message=Error executing tool fetch", "--arg", f"log={log}",
              "--yes", "--json")
    assert r.json()["serverStderr"][-1] == "ValueError: no route to host", r
    rows = monad("journal", "--calls", "--json").json()
    assert rows[-1]["error"].endswith('; stderr during the call: ["Traceback (most recent call last):", '
                                      '"File \\"fetch.py\\", line 3", "ValueError: no route to host"]'), rows[-1]
    # no stderr during the call: the reason is the tool's own text, as before
    r = monad("mcp", "call", "ts__fail", "--arg", "message=plain", "--yes")
    assert r.err.strip() == "error: tool `ts__fail` failed: plain", r


def test_the_stderr_a_crash_reason_quotes_is_printed_once(supervisor: Any) -> None:
    """A server that dies under a call: the error already quotes its stderr (the session's
    end reason), so `monad mcp call` does not print it again below (found by a new-user trial)."""
    monad = supervisor
    assert monad("mcp", "add", "cr", "--", sys.executable, LIGHTTOOLSERVER, "--crash").code == 0
    wait_state(monad, "cr", "connected")
    log = "Traceback (most recent call last):\n  File \"db.py\", line 9\nOSError: disk on fire"
    r = monad("mcp", "call", "cr__exit", "--arg", "status=3", "--arg", f"log={log}", "--yes")
    assert r.code == 1, r
    lines = [line for line in r.err.splitlines() if not line.startswith("waiting for server")]
    assert len(lines) == 1 and lines[0].startswith("error: server `cr` failed `exit`: its session ended during the "
                                                   "request: server process exited with status 3; stderr: "), r
    for said in ("Traceback (most recent call last):", 'File "db.py", line 9', "OSError: disk on fire"):
        assert r.err.count(said) == 1, (said, r.err)


def test_reasons_with_newlines_stay_one_line_in_every_row(supervisor: Any) -> None:
    monad = supervisor
    assert monad("mcp", "add", "ts", "--", sys.executable, LIGHTTOOLSERVER).code == 0
    wait_state(monad, "ts", "connected")
    r = monad("mcp", "call", "ts__fail", "--arg", "message=refused\nHint: check the proxy\n\nsee the docs",
              "--yes")
    assert r.code == 1 and r.err.strip() == (
        "error: tool `ts__fail` failed: refused | Hint: check the proxy | see the docs"), r
    assert monad("mcp", "call", "ts__echo", "--arg", "text=x", "--yes").code == 0
    r = monad("journal", "--calls")
    assert r.code == 0, r
    lines = r.out.strip().splitlines()
    assert len(lines) == 3 and "refused | Hint: check the proxy | see the docs" in lines[1], r.out


def test_an_older_sdks_probe_noise_stays_out_of_the_stderr_tail(supervisor: Any, monad_home: Path) -> None:
    """A healthy server on the Python SDK 1.x answers `server/discover` with ~60 lines of
    pydantic validation errors on stderr: the tail shown keeps the server's own lines."""
    monad = supervisor
    assert monad("mcp", "add", "old", "--", sys.executable, WIRE_FAULTS, "--discover", "old-sdk").code == 0
    row = wait_state(monad, "old", "connected")
    assert row["protocolVersion"] == "2025-11-25"
    assert row["stderrTail"] == ["hello from the server: starting", "hello from the server: serving"], row
    assert row["probeNoiseLines"] > 30
    r = monad("mcp", "status", "old")
    assert r.code == 0 and "validation errors" not in r.out and "left out of the tail" in r.err, r
    log = (monad_home / "logs" / "servers" / "old.stderr.log").read_text()
    assert "Failed to validate request: 31 validation errors for ClientRequest" in log  # the log keeps all


def test_a_multi_line_refusal_is_one_status_row(supervisor: Any) -> None:
    monad = supervisor
    refusal = "cannot start\nHint: the proxy refused the certificate\n  (see the docs)"
    assert monad("mcp", "add", "refuses", "--", sys.executable, WIRE_FAULTS, "--refuse", refusal).code == 0
    assert monad("mcp", "add", "other", "--disabled", "--", sys.executable, WIRE_FAULTS).code == 0
    row = wait_for(lambda: (s := status_of(monad, "refuses"))["state"] in ("backoff", "failed") and s["reason"]
                   and s)
    assert "\n" not in row["reason"], row
    assert "cannot start | Hint: the proxy refused the certificate | (see the docs)" in row["reason"], row
    table = monad("mcp", "status").out.strip().splitlines()
    assert len(table) == 3 and table[2].startswith("refuses "), table  # header, other, refuses
    r = monad("journal", "--server", "refuses", "--json")
    assert all("\n" not in (e.get("reason") or "") for e in r.json()), r


def test_a_package_runner_that_times_out_is_told_to_raise_the_timeout(supervisor: Any, tmp_path: Path) -> None:
    """Found by a new-user trial: the README's `npx -y @modelcontextprotocol/server-memory`
    took longer than the 10 s connect timeout while npx fetched the package (silently), and
    the reason asked "does it flush its output?". Behind a package runner the reason now says
    it may still be fetching and which `timeout` to raise. (A silent `npx` stands in for one
    fetching over a slow network.)"""
    monad = supervisor
    runner = tmp_path / "bin" / "npx"
    runner.parent.mkdir()
    runner.write_text("#!/bin/sh\nexec sleep 30\n")
    runner.chmod(0o755)
    assert monad("mcp", "add", "memory", "--timeout", "1", "--", str(runner), "-y", "some-server").code == 0
    row = wait_for(lambda: (s := status_of(monad, "memory"))["state"] in ("backoff", "failed") and s["reason"] and s)
    reason = row["reason"]
    assert "timed out after 1 s" in reason and "flush" not in reason, row
    assert ("`npx` may still be fetching the server on its first start: raise `timeout` in `atoms/mcp/memory.toml`, "
            "e.g. `timeout = 60` on a line before its first `[table]`") in reason, row
    # A download killed half way leaves npx's cache broken (every later start fails with
    # ERR_MODULE_NOT_FOUND): the hint says what to do then (found by a new-user trial).
    assert "or run the command once by hand; if that fails with ERR_MODULE_NOT_FOUND" in reason, row
    assert "`npm cache clean --force` (or remove the `_npx` folder of npm's cache" in reason, row


def test_an_npx_whose_cache_a_stopped_download_broke_is_told_to_clear_it(supervisor: Any, tmp_path: Path) -> None:
    """What the start after a killed first fetch gives: npx runs the package from its
    half-written cache folder and node fails with ERR_MODULE_NOT_FOUND. (An `npx` script
    stands in, printing what node prints.)"""
    monad = supervisor
    runner = tmp_path / "bin" / "npx"
    runner.parent.mkdir()
    runner.write_text('#!/bin/sh\necho "node:internal/modules/esm/resolve:873" >&2\n'
                      'echo "Error [ERR_MODULE_NOT_FOUND]: Cannot find package \'/cache/_npx/9c1e/node_modules/'
                      '@modelcontextprotocol/sdk/index.js\'" >&2\necho "  code: \'ERR_MODULE_NOT_FOUND\'" >&2\n'
                      "exit 1\n")
    runner.chmod(0o755)
    assert monad("mcp", "add", "memory", "--", str(runner), "-y", "some-server").code == 0
    row = wait_for(lambda: (s := status_of(monad, "memory"))["state"] in ("backoff", "failed") and s["reason"] and s)
    reason = row["reason"]
    assert reason.startswith("server process exited with status 1 before answering"), row
    assert ("npx's cache may have been left broken by a stopped download: run the command once by hand; if it "
            "fails with ERR_MODULE_NOT_FOUND too, clear npx's cache with `npm cache clean --force`") in reason, row
    assert "code: 'ERR_MODULE_NOT_FOUND'" in reason, row  # its stderr still quoted


def test_a_field_written_after_the_env_table_is_warned_of(supervisor: Any, monad_home: Path) -> None:
    """Found by a new-user trial: `timeout = 60` appended to an atom that ends with an `[env]`
    table is an environment variable (TOML puts it in the table above), silently. `status
    NAME` and `get NAME` say so."""
    monad = supervisor
    write_atom(monad_home, "slow", f'command = {json.dumps(sys.executable)}\nargs = [{json.dumps(LIGHTTOOLSERVER)}]\n'
                                   '[env]\nLOG_LEVEL = "info"\ntimeout = 60\n')
    wait_state(monad, "slow", "connected", timeout=60)
    said = ("server `slow`: `env.timeout = 60` is an environment variable of the server, not its `timeout`: "
            "a line after the `[env]` table of `atoms/mcp/slow.toml` belongs to it; move it above the first `[table]`")
    r = monad("mcp", "status", "slow")
    assert r.code == 0 and said in r.err, r
    r = monad("mcp", "get", "slow")
    assert r.code == 0 and said in r.err, r
    assert "LOG_LEVEL" not in r.err, r  # a string entry is an environment variable as meant


NPM_404 = """npm error code E404
npm error 404 Not Found - GET https://registry.example/@acme%2fmcp-servr - Not found
npm error 404
npm error 404  '@acme/mcp-servr@*' is not in this registry.
npm error 404
npm error 404 Note that you can also install from a
npm error 404 tarball, folder, http url, or git url.
npm error A complete log of this run can be found in: /home/user/.npm/_logs/debug-0.log
"""


def test_a_mistyped_npx_package_is_named_in_the_reason(supervisor: Any, tmp_path: Path) -> None:
    """Found by a new-user trial: `npx -y` of a package name with a typo failed with a reason
    quoting npm's trailer ("Note that you can also install from a | tarball, folder, http url,
    or git url. | A complete log …"), not its error. The trailer is skipped now. (A stand-in
    `npx` writes what npm 10 writes for a package that is not in the registry.)"""
    monad = supervisor
    runner = tmp_path / "bin" / "npx"
    runner.parent.mkdir()
    runner.write_text(f"#!/bin/sh\ncat >&2 <<'EOF'\n{NPM_404}EOF\nexit 1\n")
    runner.chmod(0o755)
    assert monad("mcp", "add", "acme", "--", str(runner), "-y", "@acme/mcp-servr").code == 0
    row = wait_for(lambda: (s := status_of(monad, "acme"))["state"] in ("backoff", "failed") and s["reason"] and s)
    reason = row["reason"]
    assert "404 Not Found - GET https://registry.example/@acme%2fmcp-servr" in reason, row
    assert "'@acme/mcp-servr@*' is not in this registry" in reason, row
    assert "tarball" not in reason and "A complete log" not in reason, row


def test_a_remote_that_answers_what_is_not_json_rpc_is_one_line_in_the_reason_and_the_log(
        supervisor: Any, monad_home: Path) -> None:
    """Found by a new-user trial: the reason quoted pydantic's whole error ("1 validation error
    for union[…] … For further information visit https://errors.pydantic.dev/…"), and
    daemon.log took the SDK's traceback for each bad message, on every retry."""
    import http.server
    import threading

    class Garbage(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            self.wfile.write(b"event: message\ndata: {not json\n\n")

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Garbage)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        (monad_home / "atoms" / "mcp").mkdir(parents=True, exist_ok=True)
        (monad_home / "atoms" / "mcp" / "gsse.toml").write_text(
            f'url = "http://127.0.0.1:{server.server_address[1]}/mcp"\ntimeout = 3\n')
        row = wait_state(supervisor, "gsse", "backoff", timeout=60)
    finally:
        server.shutdown()
    assert row["reason"].startswith("Failed to parse SSE message: Invalid JSON: key must be a string at line 1 "
                                    "column 2 (MCP error -32700)"), row
    assert "pydantic" not in row["reason"] and "validation error" not in row["reason"], row
    log = (monad_home / "logs" / "daemon.log").read_text()
    assert "ERROR mcp.client.streamable_http: Error parsing SSE message (ValidationError: " in log, log[-2000:]
    assert "Traceback" not in log, log[-2000:]
