"""URL-mode input requests of tasks (MCP 2025-11-25 client/elicitation "URL Mode"): shown
whole with their host, answered by the person's action alone, exposed in the API as
`inputs`; a URL monad will not offer is shown as such. Real supervisor, SEP-2663 test server."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SERVERS, task_of, wait_for, wait_state

pytestmark = pytest.mark.e2e


def test_a_url_request_is_shown_and_answered(monad_home: Path, supervisor: Any) -> None:
    atoms = monad_home / "atoms" / "mcp"
    atoms.mkdir(parents=True, exist_ok=True)
    args = json.dumps([str(SERVERS / "tasks_server.py"), "--poll-ms", "100"])
    (atoms / "ts.toml").write_text(f'schema = 1\ntransport = "stdio"\ncommand = {json.dumps(sys.executable)}\n'
                                   f"args = {args}\n")
    wait_state(supervisor, "ts", "connected")
    r = supervisor("mcp", "call", "ts__ask", "--arg", "mode=url", "--detach", "--yes")
    assert r.code == 0, r
    task_id = r.out.strip()
    task = wait_for(lambda: (t := task_of(supervisor, task_id))["inputs"] and t)
    [signin] = task["inputs"]
    assert signin["mode"] == "url" and signin["key"] == "signin" and signin["host"] == "calendar.example.com"
    assert signin["url"] == f"https://calendar.example.com/connect?elicitationId={signin['elicitationId']}"
    assert signin["message"] == "Sign in to the example calendar"

    # `tasks show` and `--wait` (no TTY: it stops at the question) say what to do.
    for argv in (("tasks", "show", task_id), ("tasks", "show", task_id, "--wait")):
        r = supervisor(*argv)
        assert r.code == 0, r
        assert "asks you to open a URL (on calendar.example.com): Sign in to the example calendar" in r.out
        assert f"  {signin['url']}\n" in r.out
        assert f"then run `monad tasks input {task_id[:12]} --accept` (or --decline)" in r.out
    r = supervisor("tasks", "input", task_id, "--set", "code=1234")
    assert r.code != 0 and "a URL request takes no fields" in r.err and "Traceback" not in r.err, r
    r = supervisor("tasks", "input", task_id, "--accept")
    assert r.code == 0, r
    r = supervisor("tasks", "show", task_id, "--wait")
    assert r.code == 0 and '{"action": "accept"}' in r.out, r


def test_a_url_monad_will_not_offer_is_named_not_shown(monad_home: Path, supervisor: Any) -> None:
    atoms = monad_home / "atoms" / "mcp"
    atoms.mkdir(parents=True, exist_ok=True)
    args = json.dumps([str(SERVERS / "tasks_server.py"), "--poll-ms", "100"])
    (atoms / "ts.toml").write_text(f'schema = 1\ntransport = "stdio"\ncommand = {json.dumps(sys.executable)}\n'
                                   f"args = {args}\n")
    wait_state(supervisor, "ts", "connected")
    r = supervisor("mcp", "call", "ts__ask", "--arg", "mode=url", "--arg", "url=javascript:alert(1)",
                   "--detach", "--yes")
    task_id = r.out.strip()
    task = wait_for(lambda: (t := task_of(supervisor, task_id))["inputs"] and t)
    assert task["inputs"][0]["mode"] == "unsupported" and "not http or https" in task["inputs"][0]["problem"]
    r = supervisor("tasks", "show", task_id)
    assert "javascript:" not in r.out and "asks for input monad cannot show" in r.out, r
    assert f"`monad tasks input {task_id[:12]} --decline`" in r.out
    r = supervisor("tasks", "input", task_id, "--accept")
    assert r.code != 0 and "not http or https" in r.err, r
    r = supervisor("tasks", "input", task_id, "--decline")
    assert r.code == 0, r
    r = supervisor("tasks", "show", task_id, "--wait")
    assert r.code == 0 and '{"action": "decline"}' in r.out, r
