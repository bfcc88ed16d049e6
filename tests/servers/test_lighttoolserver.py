"""lighttoolserver.py writes what toolserver.py (the SDK's lowlevel `Server`) writes: the same
lines for one scripted session of every tool and flag, at 2026-07-28 and in the handshake era.
The tests that run the light twin read what they assert from these answers."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import wait_for

SERVERS = Path(__file__).resolve().parent
FLAGS = ["--names", "--many", "3", "--page-size", "6", "--progress", "--rich-schema", "--big", "--crash",
         "--name", "twin", "--token", "t0k3n"]
CLIENT_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
               "io.modelcontextprotocol/clientCapabilities": {}}


class Session:
    """A stdio server under a scripted client: every line it writes, in order, kept."""

    def __init__(self, argv: list[str], era: str) -> None:
        self.era = era
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(json.loads(line))

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any], rid: object, *, answered: bool = True) -> None:
        """Send a request; when `answered`, read (and keep) lines until its answer."""
        if self.era == "modern":
            params = {**params, "_meta": {**CLIENT_META, **params.get("_meta", {})}}
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while answered:
            line = self.lines.get(timeout=30)
            self.seen.append(line)
            answered = line.get("id") != rid


def transcript(script: str, era: str, tmp_path: Path) -> tuple[list[dict[str, Any]], int, bytes, list[str]]:
    """The session's lines, exit status, stderr and marker files for one server script."""
    markers = tmp_path / script
    markers.mkdir()
    tools_file = tmp_path / f"{script}.json"
    tools_file.write_text(json.dumps({"description": "Shaped.", "param": "words", "extra": True}))
    s = Session([sys.executable, str(SERVERS / script), *FLAGS, "--marker-dir", str(markers),
                 "--tools-file", str(tools_file)], era)
    if era == "modern":
        s.request("server/discover", {}, 1)
        s.request("subscriptions/listen", {"notifications": {"toolsListChanged": True}}, "L1", answered=False)
    else:
        s.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                 "clientInfo": {"name": "test", "version": "1"}}, 1)
        s.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    s.request("tools/list", {}, 2)
    s.request("tools/list", {"cursor": "6"}, 3)
    s.request("tools/list", {"cursor": "12"}, 4)
    for rid, method in ((5, "ping"), (6, "resources/list"), (7, "bogus/method")):
        s.request(method, {}, rid)
    calls: list[tuple[str, dict[str, Any]]] = [
        ("echo", {"words": "hi"}), ("echo", {}), ("add", {"a": 40, "b": 2}),
        ("kinds", {"flag": True, "ratio": 0.5, "items": [1, "x"], "opts": {"k": None}}),
        ("fail", {"message": "boom", "log": "a traceback line"}), ("nope", {}), ("get.user", {}), ("t002", {}),
        ("rich", {"name": "n", "email": "e@example.com"}), ("big", {"kib": 2}), ("extra", {}),
        ("add", {"a": 1}),
        ("steps", {"n": 2, "delay": 0.01}), ("slow", {"seconds": 0.01})]
    for rid, (name, arguments) in enumerate(calls, start=10):
        s.request("tools/call", {"name": name, "arguments": arguments}, rid)
    s.request("tools/call", {"name": "steps", "arguments": {"n": 3, "delay": 0.01}, "_meta": {"progressToken": "p"}},
              30)
    # A slow call cancelled: never answered, and the server says it saw the cancel.
    s.request("tools/call", {"name": "slow", "arguments": {"seconds": 30}}, "slow-1", answered=False)
    wait_for((markers / "slow.started").exists)
    s.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "slow-1"}})
    wait_for((markers / "slow.cancelled").exists)
    s.request("tools/call", {"name": "mutate", "arguments": {"description": "Changed."}}, 31)
    s.request("tools/list", {}, 32)
    s.request("tools/call", {"name": "exit", "arguments": {"status": 4, "log": "bye"}}, 33, answered=False)
    status = s.proc.wait(timeout=30)
    while not s.lines.empty():
        s.seen.append(s.lines.get())
    assert s.proc.stderr is not None
    return s.seen, status, s.proc.stderr.read(), sorted(p.name for p in markers.iterdir())


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_the_light_twin_answers_as_the_sdk_server_does(era: str, tmp_path: Path) -> None:
    sdk = transcript("toolserver.py", era, tmp_path)
    light = transcript("lighttoolserver.py", era, tmp_path)
    for mine, theirs in zip(light[0], sdk[0], strict=False):
        assert mine == theirs
    assert len(light[0]) == len(sdk[0])
    assert (light[1], light[3]) == (sdk[1], sdk[3]) == (4, ["slow.cancelled", "slow.started"])
    # What each writes to stderr: the tools' own lines, and the traceback each logs its own way.
    for err in (light[2], sdk[2]):
        assert err.startswith(b"a traceback line\n") and err.endswith(b"KeyError: 'b'\nbye\n"), err
