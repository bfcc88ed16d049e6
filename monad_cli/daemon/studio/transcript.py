"""The Studio's transcript: every tool call (from the page, the CLI, the gateway, an MCP App),
every approval request and every Task, live, on the one event stream (events.py).

`Transcript` listens to the tool service's call log (`trust/calls.py`), the approval gate
and the task ledger, and publishes:

    call              {call: {id, ts?, server?, tool?, exposed?, via?, arguments?, ref?, host?,
                              outcome, decision?, decidedBy?, durationMs?, error?}}
                      (a call that started, then the same id again when it finished)
    call.progress     {id, progress, total, message}: the server's notifications/progress of a
                      running call whose caller asked for progress (the page, `monad mcp call`, an
                      agent that sent a progressToken); at most one per `PROGRESS_GAP_S` per
                      call, the latest always sent; none after the call's end
    approval.pending  {approval: {id, server, tool, exposed, arguments, hostEscape, command,
                                  url, via, created, expires}}
    approval.closed   {id, decision, by}
    task              {task: <the task row, as GET /v1/tasks/{id} answers>}

The journal keeps a call's arguments only as a digest (docs/tools.md), so the transcript
keeps those of the last `KEEP` calls in memory, scrubbed. `GET /v1/journal/calls` merges them
back in, with `fleet` (docs/fleet.md: the page then shows each call's host) and `host`.
"""

from __future__ import annotations

import json
import time
from collections import OrderedDict
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

import anyio

if TYPE_CHECKING:
    from monad_cli.daemon.tasks.manager import TaskManager
    from monad_cli.daemon.trust.service import ToolService

KEEP = 500  # calls whose arguments are kept
PROGRESS_GAP_S = 0.1  # a server that reports progress in a tight loop cannot flood the pages
MAX_ARGUMENTS = 16 * 1024  # bytes of JSON per call; larger ones show their size only
MAX_CALLS = 500
# `json.dumps(arguments, default=str)` builds an encoder per call; one kept writes the same text.
_SIZE = json.JSONEncoder(default=str)


class Transcript:
    """Owns the in-memory arguments of recent calls and turns the services' callbacks into
    events; `listening()`: whether any page listens (a task row is read only then)."""

    def __init__(self, tools: ToolService, tasks: TaskManager, *, publish: Callable[[str, dict[str, Any]], None],
                 listening: Callable[[], bool],
                 start_soon: Callable[[Callable[[], Coroutine[Any, Any, Any]]], None]) -> None:
        self.tools = tools
        self.tasks = tasks
        self.publish = publish
        self.listening = listening
        self.start_soon = start_soon
        self.arguments: OrderedDict[int, tuple[Any, str | None]] = OrderedDict()  # call id → (arguments, ref)
        # Running calls that reported progress: id → [when it was last published, the one held back]
        self.progressing: dict[int, list[Any]] = {}
        tools.calls.listeners.append(self.on_call)
        tools.gate.listeners.append(self.on_approval)
        tasks.ledger.listeners.append(self.on_task)

    def on_call(self, kind: str, data: dict[str, Any]) -> None:
        if kind == "call.progress":
            self.on_progress(data)
            return
        if kind == "call.finished":
            self.progressing.pop(data["id"], None)  # a progress held back is old news now
        call = dict(data)
        if kind == "call.started":
            arguments = call.get("arguments")
            size = len(_SIZE.encode(arguments))
            if size > MAX_ARGUMENTS:
                arguments = {"(not kept)": f"{size} bytes of arguments"}
            call["arguments"] = arguments
            self.arguments[call["id"]] = (arguments, call.get("ref"))
            while len(self.arguments) > KEEP:
                self.arguments.popitem(last=False)
        self.publish("call", {"call": call})

    def on_progress(self, data: dict[str, Any]) -> None:
        """Publish a call's progress now, or, within `PROGRESS_GAP_S` of the last one, hold it
        and publish the latest held at the end of the gap (unless the call ended meanwhile)."""
        if not self.listening():
            return
        now = time.monotonic()
        seen = self.progressing.get(data["id"])
        if seen is None or now - seen[0] >= PROGRESS_GAP_S:
            self.progressing[data["id"]] = [now, None]
            self.publish("call.progress", dict(data))
            return
        held, seen[1] = seen[1], dict(data)
        if held is None:
            self.start_soon(lambda: self._publish_held(data["id"], seen[0] + PROGRESS_GAP_S - now))

    async def _publish_held(self, call_id: int, delay: float) -> None:
        await anyio.sleep(delay)
        seen = self.progressing.get(call_id)
        if seen is not None and seen[1] is not None:
            held, seen[0], seen[1] = seen[1], time.monotonic(), None
            self.publish("call.progress", held)

    def on_approval(self, kind: str, data: dict[str, Any]) -> None:
        self.publish(kind, {"approval": data} if kind == "approval.pending" else data)

    def on_task(self, row_id: str) -> None:
        if not self.listening():
            return
        row = self.tasks.store.get(row_id)
        if row is not None:
            self.publish("task", {"task": self.tasks.view(row)})

    async def calls(self, *, server: str | None, limit: int) -> list[dict[str, Any]]:
        """The journal's `tool_calls` rows, newest first, with `arguments` and `ref` where kept."""
        from monad_cli.journal import tools as jt

        journal = self.tools.journal
        rows = await anyio.to_thread.run_sync(lambda: jt.calls(journal, server=server, limit=limit))
        for row in rows:
            kept = self.arguments.get(row["id"])
            if kept is not None:
                row["arguments"], row["ref"] = kept
        return rows[::-1]
