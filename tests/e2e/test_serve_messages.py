"""What `monad mcp serve` says on stderr (issue 30): on a terminal, what it is and how agents
use it; where no server is defined, which MONAD_HOME it serves. Through the real CLI, relay
and supervisor."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import light_cmd, wait_state

pytestmark = pytest.mark.e2e
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}


def _serve_over_pipes(lines: list[dict[str, Any]], *args: str) -> tuple[list[dict[str, Any]], str]:
    """Run `monad mcp serve` as an MCP client would: JSON-RPC lines on its stdin, answers read."""
    proc = subprocess.Popen([sys.executable, "-m", "monad_cli", "mcp", "serve", *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdin and proc.stdout
    answers = []
    try:
        for message in lines:
            proc.stdin.write(json.dumps(message) + "\n")
            proc.stdin.flush()
            if "id" in message:
                answers.append(json.loads(proc.stdout.readline()))
        _, err = proc.communicate(timeout=60)  # closes its stdin: the client went away
    finally:
        if proc.poll() is None:
            proc.kill()
    return answers, err


def test_serve_in_an_empty_home_says_which_home_and_that_it_is_empty(monad: Any, monad_home: Path) -> None:
    answers, err = _serve_over_pipes([INIT, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                                      {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}])
    assert answers[1]["result"]["tools"] == []
    assert f"no server is defined in MONAD_HOME `{monad_home}`" in err and "MONAD_HOME in the client's entry" in err
    assert "speaking JSON-RPC" not in err  # not a terminal: an agent's client
    assert monad("daemon", "stop").code == 0


def test_serve_with_servers_says_nothing_to_a_client(monad: Any, monad_home: Path) -> None:
    assert monad("mcp", "add", "ts", "--", *light_cmd()).code == 0
    answers, err = _serve_over_pipes([INIT])
    assert answers[0]["result"]["serverInfo"]
    assert "no server is defined" not in err and "speaking JSON-RPC" not in err, err
    assert monad("daemon", "stop").code == 0


def test_serve_with_an_include_that_matches_no_server_says_so(monad: Any, monad_home: Path) -> None:
    assert monad("mcp", "add", "ts", "--", *light_cmd()).code == 0
    answers, err = _serve_over_pipes([INIT], "--include-mcps", "tz*,nope")
    assert answers[0]["result"]["serverInfo"]  # still served: a server added later under a matching name appears
    assert _warnings(err) == [
        "--include-mcps `tz*` matches no defined server (`monad mcp status` lists the names)",
        "--include-mcps `nope` matches no defined server (`monad mcp status` lists the names); it serves no tools",
    ], err
    answers, err = _serve_over_pipes([INIT], "--include-mcps", "t*,tsx")  # one matches: it serves, `tsx` is said
    assert answers[0]["result"]["serverInfo"], err
    assert _warnings(err) == ["--include-mcps `tsx` matches no defined server (did you mean `ts`?)"], err
    answers, err = _serve_over_pipes([INIT], "--include-mcps", "t*")
    assert answers[0]["result"]["serverInfo"] and "matches no" not in err, err
    assert monad("daemon", "stop").code == 0


def _warnings(err: str) -> list[str]:
    return [line.removeprefix("monad mcp serve: ") for line in err.splitlines()
            if line.startswith("monad mcp serve: ") and "matches no" in line]


def test_serve_says_each_filter_glob_that_matches_nothing(monad: Any, monad_home: Path) -> None:
    """Found by a new-user trial: `--exclude-mcps Time`, `--exclude-mcps tmie`, a mistyped
    `--exclude-tools` and `--include-tools 'Time__*'` (which serves 0 tools) said nothing, and
    a typo in an exclusion silently served what it meant to hide. Each glob that matches
    nothing is now one warning on stderr with the closest name or the case note; the
    gateway serves on."""
    assert monad("mcp", "add", "time", "--", *light_cmd()).code == 0
    assert monad("mcp", "add", "other", "--", *light_cmd()).code == 0
    assert monad("daemon", "start").code == 0
    wait_state(monad, "time", "connected")
    wait_state(monad, "other", "connected")
    tools_list = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    answers, err = _serve_over_pipes(
        [INIT, initialized, tools_list], "--exclude-mcps", "Time,tmie,other", "--exclude-tools", "time__ecoh,*__pid",
        "--include-tools", "Time__*,time__*")
    assert _warnings(err) == [
        "--exclude-mcps `Time` matches no defined server (names are case-sensitive: `time` differs only in case); "
        "it hides nothing",
        "--exclude-mcps `tmie` matches no defined server (did you mean `time`?); it hides nothing",
        "--include-tools `Time__*` matches no tool: no served server matches `Time` (names are case-sensitive: "
        "`time` differs only in case)",
        "--exclude-tools `time__ecoh` matches no tool of the served servers (did you mean `time__echo`?); it hides "
        "nothing",
    ], err
    served = sorted(t["name"] for t in answers[1]["result"]["tools"])
    assert "time__echo" in served and "time__pid" not in served and not any(n.startswith("other__") for n in served)

    # An --include-tools of which nothing matches serves no tools, and says so; the case of a tool name too.
    answers, err = _serve_over_pipes([INIT, initialized, tools_list], "--include-tools", "time__Echo")
    assert answers[1]["result"]["tools"] == []
    assert _warnings(err) == ["--include-tools `time__Echo` matches no tool of the served servers (names are "
                              "case-sensitive: `time__echo` differs only in case); it serves no tools"], err
    # Every glob that matches says nothing; per-server NAMEs are the served servers.
    _, err = _serve_over_pipes([INIT], "time", "--exclude-tools", "time__echo", "--include-tools", "time__*")
    assert _warnings(err) == [], err
    _, err = _serve_over_pipes([INIT], "time", "--exclude-tools", "other__echo")
    assert _warnings(err) == ["--exclude-tools `other__echo` matches no tool: no served server matches `other` "
                              "(`monad mcp status` lists the names); it hides nothing"], err
    assert monad("daemon", "stop").code == 0


def test_serve_on_a_terminal_says_what_it_is(monad: Any, monad_home: Path) -> None:
    assert monad("mcp", "add", "ts", "--", *light_cmd()).code == 0
    primary, secondary = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "monad_cli", "mcp", "serve"], stdin=secondary,
                            stdout=secondary, stderr=subprocess.PIPE, text=True)
    os.close(secondary)
    try:
        assert proc.stderr
        ready, _, _ = select.select([proc.stderr], [], [], 60)
        assert ready
        first = proc.stderr.readline()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        os.close(primary)
    assert first.startswith("monad mcp serve: an MCP server speaking JSON-RPC on stdin/stdout, for agents"), first
    assert "`monad mcp connect CLIENT`" in first


def test_a_serve_that_cannot_serve_answers_the_first_request_with_why(monad: Any, monad_home: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by a new-user trial: `monad mcp serve nosuch` under the MCP Inspector showed only
    "Connection closed" (a client keeps a stdio server's stderr to itself). The client's
    first request now gets a JSON-RPC error with the reason, which the client shows; stderr
    and the exit code stay as they were."""
    import anyio
    from mcp import Client, StdioServerParameters

    answers, err = _serve_over_pipes([INIT], "nosuch")
    assert answers[0]["id"] == 1 and "server `nosuch` is not defined" in answers[0]["error"]["message"], answers
    assert "error: server `nosuch` is not defined" in err, err

    async def connect() -> str:
        params = StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve", "nosuch"],
                                       env={"MONAD_HOME": str(monad_home)})
        try:
            async with Client(params):
                return "connected"
        except Exception as e:  # the SDK's own error for an error answer to its first request
            while isinstance(e, BaseExceptionGroup) and len(e.exceptions) == 1:
                e = e.exceptions[0]
            return f"{type(e).__name__}: {e}"

    said = anyio.run(connect)
    assert "server `nosuch` is not defined" in said, said
    assert monad("daemon", "stop").code == 0
    monkeypatch.setenv("MONAD_NO_AUTOSTART", "1")
    answers, err = _serve_over_pipes([INIT])
    assert "the supervisor is not running" in answers[0]["error"]["message"], answers
    assert "error: the supervisor is not running" in err, err


def test_a_serve_refused_before_the_supervisor_tells_the_agent_why(monad: Any, monad_home: Path) -> None:
    """Found by a new-user trial: a malformed features/gateway.toml (or a bad flag value in the
    client's entry) made every agent's `monad` entry say only "Connection closed": the refusal
    came before the relay, where the client's requests went unanswered. Now the agent's first
    request gets the one-line reason too, as for a supervisor that is not running."""
    import anyio
    from mcp import Client, StdioServerParameters

    (monad_home / "features").mkdir(parents=True, mode=0o700)
    (monad_home / "features" / "gateway.toml").write_text('toolSearch = "yes"\n')
    answers, err = _serve_over_pipes([INIT])
    assert "`features/gateway.toml`: `toolSearch` must be" in answers[0]["error"]["message"], answers
    assert "error: `features/gateway.toml`: `toolSearch` must be" in err, err

    async def connect(*flags: str) -> str:
        params = StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve", *flags],
                                       env={"MONAD_HOME": str(monad_home)})
        try:
            async with Client(params):
                return "connected"
        except Exception as e:  # the SDK's own error for an error answer to its first request
            while isinstance(e, BaseExceptionGroup) and len(e.exceptions) == 1:
                e = e.exceptions[0]
            return str(e)

    said = anyio.run(connect)
    assert "`toolSearch` must be \"off\", \"on\" or \"auto\"" in said, said
    (monad_home / "features" / "gateway.toml").unlink()
    said = anyio.run(connect, "--session-idle", "0s")
    assert "--session-idle must be a duration" in said, said
    # --tool-search (always) with --tool-search-above (past a size): refused, not one silently winning.
    said = anyio.run(connect, "--tool-search", "--tool-search-above", "100")
    assert "--tool-search and --tool-search-above contradict each other" in said, said
    assert not (monad_home / "run" / "monad.pid").exists()  # refused before any supervisor was started


def test_contradicting_search_flags_and_a_port_out_of_range_are_refused(monad: Any, tmp_path: Path) -> None:
    r = monad("mcp", "serve", "--no-tool-search", "--tool-search-above", "5", input="")
    assert r.code == 2 and "--no-tool-search and --tool-search-above contradict each other" in r.err, r
    r = monad("mcp", "serve", "--http", "--port", "99999")
    assert r.code == 2 and "'--port': 99999 is not in the range 0<=x<=65535" in r.err, r
    cursor = tmp_path / "mcp.json"
    r = monad("mcp", "connect", "cursor", str(cursor), "--tool-search", "--tool-search-above", "5")
    assert r.code == 2 and "--tool-search and --tool-search-above contradict each other" in r.err, r
    assert not cursor.exists()
