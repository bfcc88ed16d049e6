"""The stdio relay's direct lane for `resources/read`, `prompts/get` and `completion/complete`
(gateway/direct.py) against the SDK's path for the same requests: a differential test
through the real supervisor and the real `monad mcp serve`, with raw JSON-RPC lines so the
two paths get the very same requests on one connection.

The lane takes a plain request; the same request with one more `_meta` key (one the lane
does not know) goes to the SDK's server. For each case, in both agent eras, both give the
same answer (the id aside) and leave the same journal rows (the duration aside): a read, a
template read, an unknown URI (-32002), a get, an unknown prompt (-32602), a server asking
its agent during a get (tests/servers/askserver.py: an `elicitation/create` on the
connection, or at 2026-07-28 an `input_required` round), and a read of a stopped on-demand
server, which starts it; a completion, and one of an unknown prompt (-32602). The daemon
log's count says the lane took the plain ones.

The upstream half (daemon/sessions/direct.py) is held the same way: the same reads, gets,
errors and questions to a stdio server whose plain requests take that lane, and to the same
server declaring an extension (which keeps every request on the SDK's session), give equal
answers and journal rows; the session's end says which lane carried what.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import wait_for, wait_state, write_atom
from tests.e2e.test_ondemand_resources import idle_again, notes_atom

pytestmark = pytest.mark.e2e
SERVERS = Path(__file__).resolve().parents[1] / "servers"
MODERN = "2026-07-28"
SDK_PATH = {"example.com/path": "sdk"}  # a `_meta` key the lane does not take: the SDK's server answers
CAPABILITIES = {"elicitation": {"form": {}}}
NAME_ANSWER = {"action": "accept", "content": {"name": "Ada"}}
ROWS = 6  # each pass's journal rows: three reads, two gets (the unknown ones route nowhere), one question
CASES: list[tuple[str, dict[str, Any]]] = [
    ("resources/read", {"uri": "note://r/alpha"}),
    ("resources/read", {"uri": "note://r/dynamic/zed"}),  # by the template
    ("resources/read", {"uri": "note://nobody/here"}),  # -32002
    ("prompts/get", {"name": "r__greet", "arguments": {"name": "Ada"}}),
    ("prompts/get", {"name": "r__no_such_prompt"}),  # -32602
    ("prompts/get", {"name": "ask__ask"}),  # the server asks the agent
    ("resources/read", {"uri": "note://od/alpha"}),  # a stopped on-demand server: started
    ("completion/complete", {"ref": {"type": "ref/prompt", "name": "r__greet"},
                             "argument": {"name": "name", "value": "Al"}}),
    ("completion/complete", {"ref": {"type": "ref/prompt", "name": "r__no_such_prompt"},
                             "argument": {"name": "name", "value": "Al"}}),  # -32602
]


class RawAgent:
    """An MCP client of `monad mcp serve` speaking raw lines: `request` sends one and returns
    its response, answering the server's `elicitation/create` meanwhile (kept in `asked`)."""

    def __init__(self, proc: Any) -> None:
        self.proc = proc
        self.buffer = b""
        self.next_id = 0
        self.asked: list[dict[str, Any]] = []

    async def send(self, body: dict[str, Any]) -> None:
        await self.proc.stdin.send(json.dumps(body).encode() + b"\n")

    async def receive(self) -> dict[str, Any]:
        while b"\n" not in self.buffer:
            self.buffer += await self.proc.stdout.receive()
        line, self.buffer = self.buffer.split(b"\n", 1)
        message: dict[str, Any] = json.loads(line)
        return message

    async def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.next_id += 1
        request_id = self.next_id
        await self.send({"jsonrpc": "2.0", "id": request_id, "method": method,
                         **({"params": params} if params is not None else {})})
        with anyio.fail_after(60):
            while True:
                message = await self.receive()
                if message.get("method") == "elicitation/create":
                    self.asked.append(message.get("params", {}))
                    await self.send({"jsonrpc": "2.0", "id": message["id"], "result": NAME_ANSWER})
                elif "method" not in message and message.get("id") == request_id:
                    return message


def _atoms(home: Path, tmp: Path, supervisor: Any) -> None:
    py = json.dumps(sys.executable)
    write_atom(home, "r", f'command = {py}\nargs = {json.dumps([str(SERVERS / "resourceserver.py")])}\n')
    write_atom(home, "ask", f'command = {py}\nargs = {json.dumps([str(SERVERS / "askserver.py")])}\n')
    notes_atom(home, "od", tmp / "spawn.log")
    wait_state(supervisor, "r", "connected", timeout=90)
    wait_state(supervisor, "ask", "connected", timeout=90)
    idle_again(supervisor, "od", tmp / "spawn.log")


def _rows(supervisor: Any) -> list[dict[str, Any]]:
    """The journal's reads, gets and questions, without what differs by nature (times, ids)."""
    out = []
    for e in supervisor("journal", "--json", "-n", "1000").json():
        if e["kind"] in ("resource.read", "prompt.get", "question"):
            detail = {k: v for k, v in (e.get("detail") or {}).items() if k not in ("durationMs", "callId")}
            out.append({"kind": e["kind"], "server": e.get("server"), "detail": detail})
    return out


def _settled(supervisor: Any, count: int) -> list[dict[str, Any]]:
    """The rows once there are `count` (a read's or get's row is written just after its answer)."""
    return wait_for(lambda: (rows := _rows(supervisor)) and len(rows) >= count and rows, timeout=30)


def _key(row: dict[str, Any]) -> str:
    return json.dumps(row, sort_keys=True)


async def _run_cases(agent: RawAgent, supervisor: Any, tmp: Path, cases: list[tuple[str, dict[str, Any]]], *,
                     modern: bool, sdk: bool) -> list[Any]:
    """Every case once, on the lane or (`sdk`) on the SDK's path: the answers, ids removed."""
    answers: list[Any] = []
    for method, params in cases:
        if "od" in params.get("uri", ""):
            await anyio.to_thread.run_sync(idle_again, supervisor, "od", tmp / "spawn.log")
        meta: dict[str, Any] = {}
        if modern:
            meta = {"io.modelcontextprotocol/protocolVersion": MODERN,
                    "io.modelcontextprotocol/clientCapabilities": CAPABILITIES}
        if sdk:
            meta = {**meta, **SDK_PATH}
        answer = await agent.request(method, {**params, **({"_meta": meta} if meta else {})})
        answer.pop("id")
        result = answer.get("result") or {}
        if result.get("resultType") == "input_required":
            # The round that brings the answer back carries a requestState: the SDK's path
            # for both (the lane takes first rounds only); the token is new each round.
            token = result.pop("requestState")
            assert isinstance(token, str) and token
            answers.append(answer)
            responses = {key: NAME_ANSWER for key in result["inputRequests"]}
            answer = await agent.request(method, {**params, "_meta": meta, "requestState": token,
                                                  "inputResponses": responses})
            answer.pop("id")
        answers.append(answer)
    return answers


def _both_paths(supervisor: Any, home: Path, tmp: Path, era: str, cases: list[tuple[str, dict[str, Any]]],
                rows: int, *names: str) -> tuple[list[Any], list[Any], list[Any], list[Any]]:
    """`cases` on one `monad mcp serve NAMES` connection of an agent of `era`, first on the
    lane, then on the SDK's path: (lane answers, SDK answers, [questions each path's agent
    was asked], [journal rows of each path], `rows` each)."""
    modern = era == MODERN

    async def main() -> tuple[list[Any], list[Any], list[Any], list[Any]]:
        env = {**os.environ, "MONAD_HOME": str(home), "MONAD_NO_AUTOSTART": "1"}
        async with await anyio.open_process([sys.executable, "-m", "monad_cli", "mcp", "serve", *names],
                                            env=env) as proc:
            agent = RawAgent(proc)
            if not modern:
                init = await agent.request("initialize", {"protocolVersion": era, "capabilities": CAPABILITIES,
                                                          "clientInfo": {"name": "raw", "version": "1"}})
                assert init["result"]["protocolVersion"] == era, init
                await agent.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
                # The first listing registers the connection (list changes); the lane takes
                # reads and gets after it, as it takes tool calls.
                assert (await agent.request("resources/list"))["result"]["resources"]
            before = len(await anyio.to_thread.run_sync(_rows, supervisor))
            lane = await _run_cases(agent, supervisor, tmp, cases, modern=modern, sdk=False)
            lane_asked = list(agent.asked)
            lane_rows = (await anyio.to_thread.run_sync(_settled, supervisor, before + rows))[before:]
            sdk = await _run_cases(agent, supervisor, tmp, cases, modern=modern, sdk=True)
            sdk_rows = (await anyio.to_thread.run_sync(_settled, supervisor, before + 2 * rows))[before + rows:]
            await proc.stdin.aclose()
            await proc.wait()
        return lane, sdk, [lane_asked, agent.asked[len(lane_asked):]], [lane_rows, sdk_rows]

    return anyio.run(main)


@pytest.mark.parametrize("era", ["2025-11-25", MODERN])
def test_reads_and_gets_on_the_lane_answer_and_journal_as_the_sdks_path(supervisor: Any, monad_home: Path,
                                                                         tmp_path: Path, era: str) -> None:
    _atoms(monad_home, tmp_path, supervisor)
    modern = era == MODERN
    lane, sdk, (lane_asked, sdk_asked), (lane_rows, sdk_rows) = _both_paths(supervisor, monad_home, tmp_path, era,
                                                                            CASES, ROWS)
    assert lane == sdk
    # What the cases are: a text, a template's text, the two errors, a prompt, the question's
    # outcome, and the on-demand server's note.
    texts = json.dumps(lane)
    assert "the first note" in texts and "note zed" in texts and "Hello, Ada!" in texts, lane
    codes = [a["error"]["code"] for a in lane if "error" in a]
    assert codes == [-32002, -32602, -32602], lane
    assert "Alan" in json.dumps(lane[-2]), lane
    if modern:
        assert any((a.get("result") or {}).get("resultType") == "input_required" for a in lane), lane
        assert not lane_asked and not sdk_asked
    else:
        assert lane_asked == sdk_asked and len(lane_asked) == 1 and lane_asked[0]["message"]
    # The same journal rows, each path's in its own order.
    assert sorted(map(_key, lane_rows)) == sorted(map(_key, sdk_rows))
    kinds = sorted(r["kind"] for r in lane_rows)
    assert len(lane_rows) == ROWS and kinds.count("resource.read") == 3 and kinds.count("prompt.get") == 2, lane_rows
    assert any(r["kind"] == "question" and r["detail"]["outcome"] == "answered" for r in lane_rows), lane_rows
    assert any(r["server"] == "od" and r["detail"]["outcome"] == "ok" for r in lane_rows), lane_rows
    # The plain requests took the lane, the others the SDK's server (the session's end says so).
    # (At 2026-07-28 the question's first round is plain; the round answering it is not.)
    log = monad_home / "logs" / "daemon.log"
    wait_for(lambda: f"{len(CASES)} resources/read, prompts/get and completion/complete on the direct lane"
             in log.read_text(), timeout=30)
    # Upstream, r's plain reads and gets took its stdio session's lane: both passes' two
    # routed reads and one get (the unknown ones route nowhere).
    supervisor("mcp", "disable", "r")
    assert _upstream(monad_home, "r") == {"resources/read": 4, "prompts/get": 2}


@pytest.mark.parametrize("era", ["2025-11-25", MODERN])
def test_a_per_server_entry_on_the_lane_answers_as_the_sdks_path(supervisor: Any, monad_home: Path,
                                                                  tmp_path: Path, era: str) -> None:
    """`monad mcp serve r`: the server's own names, its results untouched, its serverInfo."""
    write_atom(monad_home, "r", f'command = {json.dumps(sys.executable)}\n'
                                f'args = {json.dumps([str(SERVERS / "resourceserver.py")])}\n')
    wait_state(supervisor, "r", "connected", timeout=90)
    cases: list[tuple[str, dict[str, Any]]] = [
        ("resources/read", {"uri": "note://r/beta"}),
        ("prompts/get", {"name": "greet", "arguments": {"name": "Ada"}}),
        ("prompts/get", {"name": "r__greet", "arguments": {"name": "Ada"}}),  # a merged name: the server's error
        ("completion/complete", {"ref": {"type": "ref/prompt", "name": "greet"},
                                 "argument": {"name": "name", "value": "A"}}),
    ]
    lane, sdk, _asked, (lane_rows, sdk_rows) = _both_paths(supervisor, monad_home, tmp_path, era, cases, 3, "r")
    assert lane == sdk
    assert "the second note" in json.dumps(lane[0]) and "Hello, Ada!" in json.dumps(lane[1]), lane
    assert lane[1]["result"]["description"] == "Greets someone by name." and "error" in lane[2], lane
    assert "Ada" in json.dumps(lane[3]), lane
    if era == MODERN:  # the server's own identity, as a direct session gives it
        assert lane[0]["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "resourceserver"
    assert sorted(map(_key, lane_rows)) == sorted(map(_key, sdk_rows))
    assert [r["detail"]["outcome"] for r in lane_rows if r["kind"] == "prompt.get"] == ["ok", "error"], lane_rows
    log = monad_home / "logs" / "daemon.log"
    wait_for(lambda: "4 resources/read, prompts/get and completion/complete on the direct lane" in log.read_text(),
             timeout=30)


def _upstream(home: Path, server: str) -> dict[str, int]:
    """What `server`'s stdio session carried on its upstream direct lane, by method, as its
    end logs it (waits for the line; {} when the session ended without one)."""
    log = home / "logs" / "daemon.log"
    prefix = f"server {server}: "

    def line() -> str | None:
        lines = log.read_text().splitlines()
        for text in reversed(lines):
            if prefix in text and "on the direct lane this session" in text:
                return text
        return None

    found = wait_for(lambda: line() or None, timeout=30)
    counts = found.split(prefix, 1)[1].split(" on the direct lane", 1)[0]
    return {method: int(n) for n, method in (part.split(" ", 1) for part in counts.split(", "))}


def _same_server(rows: list[dict[str, Any]]) -> list[str]:
    """The rows without the server's name (two servers compared), as sortable keys."""
    return sorted(_key({**r, "server": None}) for r in rows)


@pytest.mark.parametrize("era", ["2025-11-25", MODERN])
def test_reads_gets_and_questions_upstream_answer_as_the_sdks_session(supervisor: Any, monad_home: Path,
                                                                       tmp_path: Path, era: str) -> None:
    """The upstream lane against the SDK's session: `r`/`ask` take the lane, `rs`/`asks` (the
    same servers declaring an extension) the SDK's session; each served alone (`monad mcp
    serve NAME`: the server's own names), every case on both agent-side paths."""
    py = json.dumps(sys.executable)
    resources, ask = str(SERVERS / "resourceserver.py"), str(SERVERS / "askserver.py")
    write_atom(monad_home, "r", f"command = {py}\nargs = {json.dumps([resources])}\n")
    same_r = [resources, "--prefix", "r", "--inert-extension"]  # the same URIs as r's
    write_atom(monad_home, "rs", f"command = {py}\nargs = {json.dumps(same_r)}\n")
    write_atom(monad_home, "ask", f"command = {py}\nargs = {json.dumps([ask])}\n")
    write_atom(monad_home, "asks", f"command = {py}\nargs = {json.dumps([ask, '--inert-extension'])}\n")
    for name in ("r", "rs", "ask", "asks"):
        wait_state(supervisor, name, "connected", timeout=90)
    notes: list[tuple[str, dict[str, Any]]] = [
        ("resources/read", {"uri": "note://r/alpha"}),
        ("resources/read", {"uri": "note://r/dynamic/zed"}),  # by the template
        ("resources/read", {"uri": "note://unknown/here"}),  # the server's error
        ("prompts/get", {"name": "greet", "arguments": {"name": "Ada"}}),
        ("prompts/get", {"name": "no_such_prompt"}),  # the server's error
    ]
    questions: list[tuple[str, dict[str, Any]]] = [
        ("prompts/get", {"name": "ask"}),  # the server asks the agent
        ("resources/read", {"uri": "ask://name"}),
    ]
    lane_notes = _both_paths(supervisor, monad_home, tmp_path, era, notes, 5, "r")
    sdk_notes = _both_paths(supervisor, monad_home, tmp_path, era, notes, 5, "rs")
    rows = 4  # a get, a read and each one's question
    lane_asks = _both_paths(supervisor, monad_home, tmp_path, era, questions, rows, "ask")
    sdk_asks = _both_paths(supervisor, monad_home, tmp_path, era, questions, rows, "asks")
    for lane, sdk, twin in ((lane_notes, sdk_notes, "rs"), (lane_asks, sdk_asks, "asks")):
        # Answers: every path the same (an error names its server: the twin's name aside).
        renamed = [json.loads(json.dumps(a).replace(f"server `{twin}`", f"server `{twin[:-1]}`")) for a in sdk[:2]]
        assert lane[0] == lane[1] == renamed[0] == renamed[1]
        assert lane[2] == sdk[2]  # the questions the agent was asked
        assert _same_server(lane[3][0]) == _same_server(lane[3][1]) == _same_server(sdk[3][0]) \
            == _same_server(sdk[3][1])  # journal rows
    texts = json.dumps(lane_notes[0])
    assert "the first note" in texts and "note zed" in texts and "Hello, Ada!" in texts, lane_notes[0]
    assert [a["error"]["code"] for a in lane_notes[0] if "error" in a] == [-32602, -32603], lane_notes[0]
    assert "Hello, Ada!" in json.dumps(lane_asks[0]) and "hello Ada" in json.dumps(lane_asks[0]), lane_asks[0]
    questions_rows = [r for r in lane_asks[3][0] if r["kind"] == "question"]
    assert [r["detail"]["outcome"] for r in questions_rows] == ["answered", "answered"], lane_asks[3][0]
    for name in ("r", "rs", "ask", "asks"):
        supervisor("mcp", "disable", name)
    # Both passes of every case upstream: r's reads and gets all on its lane, none of rs's.
    assert _upstream(monad_home, "r") == {"resources/read": 6, "prompts/get": 4}
    # ask's first round is plain (at 2026-07-28 it answers input_required, which goes again
    # through the SDK's session); before 2026, the whole request is on the lane.
    assert _upstream(monad_home, "ask") == {"prompts/get": 2, "resources/read": 2}
    for name in ("rs", "asks"):
        wait_state(supervisor, name, "disabled", timeout=30)  # their sessions ended, with no lane line
    log = (monad_home / "logs" / "daemon.log").read_text().splitlines()
    twins = ("server rs: ", "server asks: ")
    assert not [line for line in log if "on the direct lane" in line and any(t in line for t in twins)]
