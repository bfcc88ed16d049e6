"""A task returned to a plain `Client.call_tool` (the path other supervisor code takes, e.g.
tool calls through the approval gate): the SDK hands it to monad's resolver, which journals
it, waits for its end and returns the tool result; cancelling the caller cancels the task.

The real supervisor (without its control socket) runs in a child process that drives the
actor's own `Client`, against the real test server."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import SERVERS

SCENARIO = r'''
import json, sys
from pathlib import Path
import anyio
from monad_cli.paths import paths
from monad_cli.supervisor.supervisor import Supervisor

sup = Supervisor(paths())
out = {}

async def scenario():
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: sup.run(serve=False))
        with anyio.fail_after(30):
            while not (sup.actors.get("ts") and sup.actors["ts"].live and sup.tasks is not None):
                await anyio.sleep(0.05)
        client = sup.actors["ts"].client
        with anyio.fail_after(20):
            result = await client.call_tool("slow", {"seconds": 0.3, "label": "plain"})
        out["text"] = result.content[0].text
        out["meta"] = result.meta
        with anyio.move_on_after(1.0):  # the caller gives up: the task is cancelled
            await client.call_tool("slow", {"seconds": 60, "label": "abandoned"})
        with anyio.fail_after(20):
            while not any(r.state == "cancelled" for r in sup.tasks.store.rows()):
                await anyio.sleep(0.05)
        out["rows"] = [[r.tool, r.state, r.adopted, r.deliveries, r.cancel_requested]
                       for r in sorted(sup.tasks.store.rows(), key=lambda r: r.created_at)]
        sup.stop_event.set()

anyio.run(scenario)
print(json.dumps(out))
'''


def test_plain_call_tool_is_resolved_through_the_journal(monad_home: Path, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    atoms = monad_home / "atoms" / "mcp"
    atoms.mkdir(parents=True)
    args = json.dumps([str(SERVERS / "tasks_server.py"), "--log", str(log), "--poll-ms", "100"])
    (atoms / "ts.toml").write_text(f'schema = 1\ntransport = "stdio"\ncommand = {json.dumps(sys.executable)}\n'
                                   f"args = {args}\n")
    proc = subprocess.run([sys.executable, "-c", SCENARIO], capture_output=True, text=True, timeout=90)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["text"] == "slept 0.3 plain"
    assert set(out["meta"]) == {"io.modelcontextprotocol/related-task"}
    assert out["rows"] == [["slow", "completed", True, 1, False], ["slow", "cancelled", True, 0, True]]
    events = [json.loads(line) for line in log.read_text().splitlines()]
    assert [e["event"] for e in events if e["event"] in ("run", "cancel")] == ["run", "run", "cancel"]
