"""The `tool_calls` rows of the tool service, and who hears of them as they are written.

`CallLog` writes a call's intent row before the call and its outcome after it (a deferred
outcome behind the answer, committed by `write_outcomes`), and tells its listeners (the
Studio's transcript) each time:

    listener("call.started",  {"id", "ts", "server", "tool", "exposed", "via", "arguments", "ref", "host"})
    listener("call.progress", {"id", "progress", "total", "message"})   (a notifications/progress of
                                                                        the call, `progress_of`)
    listener("call.finished", {"id", "outcome", "decision", "decidedBy", "durationMs", "error"})

The journal keeps only a digest of the arguments (docs/tools.md "The journal of calls");
the listeners get them. A listener's failure is logged, never fails the call. `ref` is the
caller's own tag (`ToolCall.ref`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio

from monad_cli.journal import tools as jt

if TYPE_CHECKING:
    from monad_cli.daemon.trust.servers import ProgressFn
    from monad_cli.journal.db import Journal

log = logging.getLogger("monad.tools")
Listener = Callable[[str, dict[str, Any]], None]
OUTCOME_DELAY_S = 0.02  # an outcome waits at most this long for the next call's intent row


class Listeners(list[Listener]):
    """Who hears `(kind, data)` of the calls, approvals and authorizations (the Studio)."""

    def tell(self, kind: str, data: dict[str, Any]) -> None:
        for listener in list(self):
            try:
                listener(kind, data)
            except Exception:  # a page listening must never fail a call
                log.exception("%s listener failed", kind)


class CallLog:
    """Owns the writes of `tool_calls` rows for one `ToolService` and the listeners of them."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self.listeners = Listeners()
        self._running: set[int] = set()  # calls started and not finished
        self._deferred = anyio.Event()

    async def write_outcomes(self) -> None:
        """Commit the deferred outcome rows within ~20 ms (run once, for the log's life): the
        answer goes out first; outcomes that pile up meanwhile share one commit, or ride on
        the next call's intent row; while the journal's disk takes no writes, retry the rows
        it holds every second. Never returns (cancel it); `Journal.close` writes the rest."""
        from monad_cli.journal.db import RETRY_S

        while True:
            # Also every RETRY_S: after a disk fault, that is the retry of the rows the journal
            # holds (`Journal` "held"); otherwise a flush with nothing queued, which costs nothing.
            with anyio.move_on_after(RETRY_S):
                await self._deferred.wait()
            if self._deferred.is_set():
                self._deferred = anyio.Event()
                await anyio.sleep(OUTCOME_DELAY_S)
                # Then until the oldest outcome waiting is OUTCOME_DELAY_S old: while calls
                # follow each other closer than that, each intent row takes the outcomes
                # before it along and nothing is left for a commit of its own.
                while self.journal.fault is None and (since := self.journal.deferred_since) is not None \
                        and (left := since + OUTCOME_DELAY_S - time.monotonic()) > 0:
                    await anyio.sleep(left)
            try:
                self.journal.flush()
            except Exception:
                log.exception("journal write failed")  # the next write transaction retries them

    def recover(self) -> int:
        """Once at startup: calls the last supervisor left running (it died mid-call) are
        journaled `interrupted`, with a `daemon` row saying how many. Returns that number."""
        n = jt.interrupt_running(self.journal)
        if n:
            self.journal.record("daemon", reason=f"{n} tool call(s) left running by the last supervisor "
                                                 f"marked interrupted")
        return n

    def start(self, *, server: str, tool: str, exposed: str, arguments: Any, via: str,
              decision: str | None = None, decided_by: str | None = None, ref: str | None = None) -> int:
        """The intent row (outcome `running`, with the approval `decision` and who made it);
        returns its id."""
        call_id = jt.start_call(self.journal, server=server, tool=tool, exposed=exposed, arguments=arguments,
                                via=via, decision=decision, decided_by=decided_by)
        self._running.add(call_id)
        self.listeners.tell("call.started", {"id": call_id, "ts": time.time(), "server": server, "tool": tool,
                                    "exposed": exposed, "via": via, "arguments": arguments, "ref": ref,
                                    "outcome": "running", "host": self.journal.host})
        return call_id

    def approved(self, call_id: int, *, decision: str, decided_by: str | None) -> None:
        """A held intent row (`approval: check`'s, no decision while a person is asked) gets
        its decision; listeners hear `call.decided` (a page stops showing it as waiting)."""
        jt.finish_call(self.journal, call_id, outcome="running", decision=decision, decided_by=decided_by)
        self.listeners.tell("call.decided", {"id": call_id, "outcome": "running", "decision": decision,
                                             "decidedBy": decided_by})

    def progress_of(self, call_id: int, forward: ProgressFn) -> ProgressFn:
        """The caller's `forward` for call `call_id`, which the listeners hear first (as
        `call.progress`, until `finish`; MCP spec, basic/utilities/progress)."""
        async def told(progress: float, total: float | None, message: str | None) -> None:
            if call_id in self._running:  # a notification that arrives after the answer is not news
                self.listeners.tell("call.progress", {"id": call_id, "progress": progress, "total": total,
                                                      "message": message})
            await forward(progress, total, message)

        return told

    def finish(self, call_id: int, *, outcome: str, decision: str | None = None, decided_by: str | None = None,
               duration_ms: float | None = None, error: str | None = None, defer: bool = False) -> None:
        """The outcome of call `call_id`, written after the side effect (`defer`: behind the
        answer, in the journal's next write transaction). Listeners hear of it at once."""
        jt.finish_call(self.journal, call_id, outcome=outcome, decision=decision, decided_by=decided_by,
                       duration_ms=duration_ms, error=error, defer=defer)
        if defer:
            self._deferred.set()
        self._running.discard(call_id)
        self.listeners.tell("call.finished", {"id": call_id, "outcome": outcome, "decision": decision,
                                     "decidedBy": decided_by, "durationMs": duration_ms,
                                     "error": self.journal.scrub(error)[:500] if error else None})
