"""The Studio's event bus in-process (daemon/studio/events.py): fan-out in order, a
subscriber that falls behind cut off, and a stream that starts with a snapshot."""

from __future__ import annotations

import json
from typing import Any

import anyio

from monad_cli.daemon.studio.events import BUFFER, EventBus, event_stream


def test_the_bus_fans_out_in_order_and_cuts_off_a_subscriber_that_falls_behind() -> None:
    async def main() -> None:
        bus = EventBus(clock=lambda: 5.0)
        bus.publish("server.state", {"n": 0})  # nobody listens: nothing is built or kept
        assert not bus.listening
        async with bus.subscribe() as fast, bus.subscribe() as slow:
            assert bus.listening
            bus.publish("server.state", {"n": 1})
            bus.publish("config", {"n": 2})
            got = [await fast.receive(), await fast.receive()]
            assert got == [{"id": 1, "type": "server.state", "ts": 5.0, "data": {"n": 1}},
                           {"id": 2, "type": "config", "ts": 5.0, "data": {"n": 2}}]
            for i in range(BUFFER):
                bus.publish("server.state", {"n": i})
                await fast.receive()
            # `slow` never read: past its buffer it is closed instead of holding events back.
            received = [e async for e in slow]
            assert len(received) == BUFFER and received[0]["data"] == {"n": 1}
            bus.publish("server.state", {"n": "after"})
            assert (await fast.receive())["data"] == {"n": "after"}

    anyio.run(main)


def test_a_stream_starts_with_a_snapshot_and_closing_a_group_ends_only_its_streams() -> None:
    async def main() -> None:
        bus = EventBus()
        mine, theirs = object(), object()
        out: dict[str, list[dict[str, Any]]] = {"mine": [], "theirs": []}

        async def read(key: str, group: object) -> None:
            async for item in event_stream(bus, lambda: {"servers": []}, group=group):
                out[key].append(json.loads(item["data"]))

        async with anyio.create_task_group() as tg:
            tg.start_soon(read, "mine", mine)
            tg.start_soon(read, "theirs", theirs)
            await anyio.wait_all_tasks_blocked()
            bus.publish("server.state", {"n": 1})
            await anyio.wait_all_tasks_blocked()
            bus.close(group=mine)
            await anyio.wait_all_tasks_blocked()
            bus.publish("server.state", {"n": 2})
            await anyio.wait_all_tasks_blocked()
            bus.close()
        assert [e["type"] for e in out["mine"]] == ["snapshot", "server.state"]
        assert [e["type"] for e in out["theirs"]] == ["snapshot", "server.state", "server.state"]
        assert out["mine"][0]["data"] == {"servers": []}

    anyio.run(main)
