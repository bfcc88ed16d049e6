"""Server bugs named in public reports (issue 26), end to end: the real supervisor and CLI, real servers doing
what public bug reports show servers in the wild doing (tests/servers/toolfaultserver.py)."""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import free_port, status_of, wait_for, wait_state, write_atom

TOOL_FAULTS = str(Path(__file__).resolve().parents[1] / "servers" / "toolfaultserver.py")
pytestmark = pytest.mark.e2e


def add_tool_faults(monad: Any, name: str, *flags: str) -> None:
    r = monad("mcp", "add", name, "--", sys.executable, TOOL_FAULTS, *flags)
    assert r.code == 0, r


def call(monad: Any, tool: str, *args: str, json_out: bool = False, cwd: Path | None = None) -> Any:
    argv = ["mcp", "call", tool, "--yes", *(["--json"] if json_out else [])]
    for a in args:
        argv += ["--arg", a]
    return monad(*argv, timeout=60, cwd=cwd)


def tool_names(monad: Any, server: str) -> list[str]:
    r = monad("mcp", "tools", server, "--json")
    assert r.code == 0, r
    return sorted(t["name"] for t in r.json())


def test_a_repeated_tool_name_is_listed_once_with_a_warning_naming_server_and_tool(supervisor: Any) -> None:
    add_tool_faults(supervisor, "dup", "--duplicate")
    row = wait_state(supervisor, "dup", "degraded", timeout=60)
    assert row["reason"] == "tool `echo` is listed more than once; the first is kept", row
    names = tool_names(supervisor, "dup")
    assert names.count("dup__echo") == 1, names
    r = supervisor("mcp", "tools", "dup")
    assert r.code == 0 and "server `dup`: tool `echo` is listed more than once; the first is kept" in r.err, r
    # The first copy is the one kept, and it works.
    listed = {t["name"]: t for t in supervisor("mcp", "tools", "dup", "--json").json()}
    assert listed["dup__echo"]["inputSchema"]["required"] == ["text"]
    assert call(supervisor, "dup__echo", "text=once").out.strip() == "once"


def test_a_server_without_the_tools_capability_connects_with_no_tools(supervisor: Any, tmp_path: Path) -> None:
    log = tmp_path / "requests.log"
    add_tool_faults(supervisor, "prompts", "--no-tools", "--log-requests", str(log))
    row = wait_state(supervisor, "prompts", "connected", timeout=60)
    assert row["tools"] == 0 and row["reason"] is None, row
    assert "tools/list" not in log.read_text().splitlines()  # only what it declared is used
    assert tool_names(supervisor, "prompts") == []


def test_a_list_changed_burst_during_the_first_tools_list_is_not_lost(supervisor: Any) -> None:
    add_tool_faults(supervisor, "bursty", "--burst")
    wait_state(supervisor, "bursty", "connected", timeout=60)
    # The burst came before the first answer; only a re-listing shows `late`.
    wait_for(lambda: "bursty__late" in tool_names(supervisor, "bursty"), timeout=30)
    assert status_of(supervisor, "bursty")["state"] == "connected"


def test_a_required_property_with_a_default_may_be_left_out(supervisor: Any) -> None:
    add_tool_faults(supervisor, "pw")
    wait_state(supervisor, "pw", "connected", timeout=60)
    r = call(supervisor, "pw__shot")
    assert r.code == 0, r
    assert json.loads(r.out) == {}  # sent as given: the server fills its own defaults
    r = call(supervisor, "pw__shot", "scale=device")
    assert r.code == 0 and json.loads(r.out) == {"scale": "device"}, r
    # A value the schema does not allow is still refused before it is sent.
    r = call(supervisor, "pw__shot", "scale=huge")
    assert r.code != 0 and "argument `scale`" in r.err and "Traceback" not in r.err, r
    # A required property without a default is still required.
    r = call(supervisor, "pw__echo")
    assert r.code != 0 and "'text' is a required property" in r.err, r


def test_an_atom_with_a_bom_and_crlf_line_endings_is_accepted(supervisor: Any, monad_home: Path) -> None:
    body = f'schema = 1\r\ntransport = "stdio"\r\ncommand = {json.dumps(sys.executable)}\r\n' \
           f'args = [{json.dumps(TOOL_FAULTS)}]\r\n'
    path = write_atom(monad_home, "windows", "")
    path.write_bytes(b"\xef\xbb\xbf" + body.encode())
    row = wait_state(supervisor, "windows", "connected", timeout=60)
    assert row["configError"] is None and row["tools"] == 9, row
    # An edit keeps the file as its editor wrote it: BOM and CRLF.
    assert supervisor("mcp", "disable", "windows").code == 0
    wait_state(supervisor, "windows", "disabled")
    raw = path.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf") and b"\r\n" in raw and b"enabled = false" in raw, raw


def test_results_that_are_not_text(supervisor: Any, tmp_path: Path) -> None:
    add_tool_faults(supervisor, "res")
    wait_state(supervisor, "res", "connected", timeout=60)
    # An embedded text resource: its text on stdout, its URI on stderr.
    r = call(supervisor, "res__embedded_text")
    assert r.code == 0 and r.out == "the embedded note\n", r
    assert "memo://notes/1" in r.err, r
    # A resource_link: its URI on stdout.
    r = call(supervisor, "res__link")
    assert r.code == 0 and r.out == "https://example.invalid/report.pdf\n", r
    assert "report.pdf" in r.err and "application/pdf" in r.err, r
    # An embedded blob: saved to a file the output names; the URI shown.
    from tests.servers.toolfaultserver import BLOB

    for tool in ("res__embedded_blob", "res__image"):
        r = call(supervisor, tool, cwd=tmp_path)
        assert r.code == 0, r
        saved = Path(r.out.strip().splitlines()[-1])
        assert saved.is_file() and saved.read_bytes() == base64.b64decode(BLOB), r
        assert saved.suffix == ".png" and str(saved) in r.err, r
        if tool == "res__embedded_blob":
            assert r.out.startswith("a picture follows\n") and "file:///pictures/dot.png" in r.err, r
    # --json gives everything, the blob in full.
    r = call(supervisor, "res__embedded_blob", json_out=True)
    assert r.code == 0 and r.json()["content"][1]["resource"]["blob"] == BLOB, r


# -- remote servers ------------------------------------------------------------------------
EDGE = str(Path(__file__).resolve().parents[1] / "servers" / "edgeserver.py")


def start_edge(port: int, *flags: str) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, EDGE, "--http", str(port), *flags],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def up() -> bool:
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    wait_for(up, timeout=30)
    return proc


@pytest.fixture
def edge() -> Iterator[Any]:
    """`edge(port, *flags)` starts tests/servers/edgeserver.py; all are stopped after the test."""
    procs: list[subprocess.Popen[bytes]] = []

    def start(port: int, *flags: str) -> subprocess.Popen[bytes]:
        procs.append(start_edge(port, *flags))
        return procs[-1]

    yield start
    for p in procs:
        p.kill()
        p.wait(timeout=10)


def test_429_with_retry_after_is_honoured_and_never_final(supervisor: Any, edge: Any, tmp_path: Path) -> None:
    log = tmp_path / "http.log"
    port = free_port()
    edge(port, "--busy-for", "8", "--retry-after", "3", "--log", str(log))
    assert supervisor("mcp", "add", "busy", "--url", f"http://127.0.0.1:{port}/mcp").code == 0
    row = wait_for(lambda: (s := status_of(supervisor, "busy"))["state"] == "backoff" and s, timeout=30)
    assert "HTTP 429" in row["reason"] and "it asked to wait 3 s (Retry-After)" in row["reason"], row
    assert row["nextAttemptAt"] is not None and row["nextAttemptAt"] > row["since"], row
    wait_state(supervisor, "busy", "connected", timeout=60)
    refused = [line for line in log.read_text().splitlines() if line.endswith(" 429")]
    # 8 s of 429s, a 3 s wait each time: at most 4 requests met them (one per attempt; the
    # SDK's initialize after a refused server/discover is answered locally, not sent).
    assert 1 <= len(refused) <= 4, refused
    assert call(supervisor, "busy__echo", "text=served").out.strip() == "served"


def test_a_restarted_remote_answering_the_old_session_with_400_is_reconnected(supervisor: Any, edge: Any,
                                                                              monad_home: Path) -> None:
    port = free_port()
    first = edge(port, "--stale-session-status", "400")
    assert supervisor("mcp", "add", "ts", "--url", f"http://127.0.0.1:{port}/mcp").code == 0
    wait_state(supervisor, "ts", "connected", timeout=60)
    assert call(supervisor, "ts__pid").out.strip() == str(first.pid)
    first.kill()
    first.wait(timeout=10)
    second = edge(port, "--stale-session-status", "400")  # it knows no session of the first
    r = call(supervisor, "ts__pid")
    assert r.code == 0 and r.out.strip() == str(second.pid), r
    assert status_of(supervisor, "ts")["state"] == "connected"
    log = (monad_home / "logs" / "daemon.log").read_text()
    assert "-32603" not in log and "No valid session ID provided (MCP error" not in log


def test_a_legacy_era_is_remembered_across_reconnect_and_supervisor_restart(supervisor: Any, tmp_path: Path,
                                                                            monad_home: Path) -> None:
    log = tmp_path / "requests.log"
    r = supervisor("mcp", "add", "old", "--timeout", "6", "--", sys.executable, TOOL_FAULTS, "--discover", "never",
                   "--log-requests", str(log))
    assert r.code == 0, r
    wait_state(supervisor, "old", "connected", timeout=60)
    seen = log.read_text().splitlines()
    assert seen[:2] == ["server/discover", "initialize"], seen
    assert supervisor("mcp", "reconnect", "old").code == 0
    wait_for(lambda: log.read_text().splitlines().count("initialize") == 2, timeout=60)
    wait_state(supervisor, "old", "connected", timeout=60)
    assert supervisor("daemon", "stop").code == 0
    assert supervisor("daemon", "start").code == 0
    wait_for(lambda: log.read_text().splitlines().count("initialize") == 3, timeout=60)
    assert status_of(supervisor, "old")["protocolVersion"] == "2025-11-25"
    methods = log.read_text().splitlines()
    assert methods.count("server/discover") == 1, methods  # only the first connect probed it
    assert "tools/list" in methods[methods.index("initialize", 2):]
    # The file names no command, URL or secret: only the definition's fingerprint.
    stored = json.loads((monad_home / "run" / "eras.json").read_text())
    assert next(iter(stored.values()))["legacy"] is True and TOOL_FAULTS not in json.dumps(stored)


def test_server_everything_restarted_in_streamable_http_mode_is_reconnected(supervisor: Any,
                                                                            monad_home: Path) -> None:
    """The official reference server answers an unknown session 400 "Bad Request: No valid
    session ID provided" (not 404); the session is re-established and the call answered."""
    from tests.conftest import everything_bin

    binary = everything_bin()
    port = free_port()

    def start() -> subprocess.Popen[bytes]:
        proc = subprocess.Popen([binary, "streamableHttp"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env={**os.environ, "PORT": str(port)})

        def up() -> bool:
            with socket.socket() as s:
                return s.connect_ex(("127.0.0.1", port)) == 0

        wait_for(up, timeout=30)
        return proc

    first = start()
    second: subprocess.Popen[bytes] | None = None
    try:
        assert supervisor("mcp", "add", "everything", "--url", f"http://127.0.0.1:{port}/mcp").code == 0
        wait_state(supervisor, "everything", "connected", timeout=60)
        assert "Echo: before" in call(supervisor, "everything__echo", "message=before").out
        first.kill()
        first.wait(timeout=10)
        second = start()
        r = call(supervisor, "everything__echo", "message=after")
        assert r.code == 0 and "Echo: after" in r.out, r
        assert status_of(supervisor, "everything")["state"] == "connected"
        log = (monad_home / "logs" / "daemon.log").read_text()
        assert "No valid session ID provided (MCP error" not in log and "-32603" not in log
    finally:
        for proc in (first, second):
            if proc is not None:
                proc.kill()
                proc.wait(timeout=10)


def test_through_the_gateway_one_copy_of_a_repeated_tool_and_a_required_default_accepted(
        supervisor: Any, monad_home: Path) -> None:
    """What an agent sees: the gateway's tools/list names `echo` once (Claude's API refuses a
    list with two), and a call leaving out a required property that has a default is sent."""
    from mcp import Client, StdioServerParameters

    add_tool_faults(supervisor, "gw", "--duplicate")
    assert supervisor("mcp", "trust", "gw", "--auto-approve", "shot").code == 0
    wait_state(supervisor, "gw", "degraded", timeout=60)
    params = StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve"],
                                   env={"MONAD_HOME": str(monad_home), "MONAD_NO_AUTOSTART": "1"})

    async def main() -> None:
        async with Client(params) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            assert names.count("gw__echo") == 1, names
            result = await client.call_tool("gw__shot", {})
            assert not result.is_error and json.loads(result.content[0].text) == {}, result

    anyio.run(main)
