"""The Studio's event stream: one bus in the supervisor, fanned out to every open page as
server-sent events (`GET /v1/events`; HTML Living Standard §9.2 "Server-sent events").

Every event is one JSON object on one SSE `data:` line (the SSE `id:` is its `id`):

    {"id": 42, "type": "server.state", "ts": 1764470000.12, "data": {...}}

`id` grows by one per published event; `ts` is seconds since the epoch. Types:

    snapshot          first event of every stream: {servers, problems, definitions, approvals,
                      authorizations}
    config            after each reload the supervisor applied: the same shape as snapshot
    server.state      {server: <status row>}: a state change or a new tool list of one server
                      (and the other side's row when a name collision comes or goes)
    authorize         {name, phase: started|url|device|done|failed|cancelled, ...}
    call              {call: {...}}: a tool call started, then the same id when it ended
    approval.pending  {approval: {...}}: a request the gate holds (again when its caller waits)
    approval.closed   {id, decision, by}
    task              {task: <task row>}: any change of a Task's row
    authorization.pending  {id, server, exposed, via, url, userCode, created, expires}: a call
                      waiting for its server's authorization (trust/authorization.py)
    authorization.closed   {id, outcome}

(`call` to `task`: transcript.py). The page ignores types it does not know. A page that
reconnects gets a fresh `snapshot` (no replay is kept); one more than `BUFFER` events behind
is cut off (and reconnects) rather than slowing the supervisor down.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

BUFFER = 512
RETRY_MS = 1000  # the browser's reconnect delay after a dropped stream (SSE `retry:`)
PING_S = 15


class EventBus:
    """Fan-out of events to the open streams. `publish` never blocks (it is called from the
    actors' state changes); `subscribe` is an async context manager yielding a stream."""

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._seq = 0
        # Each open stream's sending end, with the group (the listener) it belongs to.
        self._subscribers: dict[MemoryObjectSendStream[dict[str, Any]], object] = {}

    @property
    def listening(self) -> bool:
        """True while at least one stream is open (publishers may skip building events)."""
        return bool(self._subscribers)

    def envelope(self, type_: str, data: dict[str, Any], *, advance: bool = True) -> dict[str, Any]:
        """An event as sent. `advance=False` reuses the last id (a per-stream snapshot)."""
        if advance:
            self._seq += 1
        return {"id": self._seq, "type": type_, "ts": self._clock(), "data": data}

    def publish(self, type_: str, data: dict[str, Any]) -> None:
        if not self._subscribers:
            return
        event = self.envelope(type_, data)
        for send in list(self._subscribers):
            try:
                send.send_nowait(event)
            except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
                # Too far behind (or gone): end its stream; the page reconnects to a fresh snapshot.
                self._subscribers.pop(send, None)
                send.close()

    @contextlib.asynccontextmanager
    async def subscribe(self, group: object = None) -> AsyncIterator[MemoryObjectReceiveStream[dict[str, Any]]]:
        """A stream of the events published from now on; `group` lets `close` end a set of them."""
        send, receive = anyio.create_memory_object_stream[dict[str, Any]](BUFFER)
        self._subscribers[send] = group
        try:
            async with receive:
                yield receive
        finally:
            self._subscribers.pop(send, None)
            send.close()

    def close(self, group: object = None) -> None:
        """End the open streams of `group` (None: all), as when their listener stops."""
        for send, g in list(self._subscribers.items()):
            if group is None or g is group:
                self._subscribers.pop(send, None)
                send.close()


def encode(event: dict[str, Any], *, first: bool = False) -> dict[str, Any]:
    """The sse-starlette form of one event (`retry:` on a stream's first event only)."""
    out: dict[str, Any] = {"data": json.dumps(event, separators=(",", ":"), default=str), "id": str(event["id"])}
    if first:
        out["retry"] = RETRY_MS
    return out


async def event_stream(bus: EventBus, snapshot: Callable[[], dict[str, Any]], *,
                       group: object = None) -> AsyncIterator[dict[str, Any]]:
    """One page's stream: a snapshot, then every event, until the bus closes it."""
    async with bus.subscribe(group) as events:
        # Subscribed before the snapshot is taken, in the same step: nothing falls between.
        yield encode(bus.envelope("snapshot", snapshot(), advance=False), first=True)
        async for event in events:
            yield encode(event)
