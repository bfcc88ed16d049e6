"""A server's requests in flight (`Demand.in_use`) and the wait for them to end
(`Demand.after_calls`: an on-demand server learns its other lists once the calls that started
it are answered)."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import anyio

from monad_cli.daemon.sessions.ondemand import Demand


def test_the_wait_for_the_calls_in_flight_ends_with_the_last_of_them_each_time() -> None:
    actor: Any = SimpleNamespace(live=True, spec=None, state="connected")
    demand = Demand(actor)

    async def hold(release: anyio.Event) -> None:
        async with demand.in_use():
            await release.wait()

    async def main() -> list[float]:
        waits = []
        for _ in range(2):  # the event a waiter waits on is new after each round
            async with anyio.create_task_group() as tg:
                first, second = anyio.Event(), anyio.Event()
                tg.start_soon(hold, first)
                tg.start_soon(hold, second)
                await anyio.sleep(0.01)
                assert demand.inflight == 2
                tg.start_soon(_release_later, first, second)
                started = time.monotonic()
                await demand.after_calls()
                waits.append(time.monotonic() - started)
                assert demand.inflight == 0
            async with demand.in_use():  # a call with nobody waiting
                pass
        return waits

    async def _release_later(first: anyio.Event, second: anyio.Event) -> None:
        await anyio.sleep(0.05)
        first.set()
        await anyio.sleep(0.05)
        second.set()

    waits = anyio.run(main)
    assert all(0.09 <= w < 5.0 for w in waits), waits  # the last call's end, not START_SLACK_S (10 s)
