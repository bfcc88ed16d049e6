"""The session upkeep logic in-process (monad_cli/daemon/sessions/upkeep.py), on short clocks; the
end-to-end storm and hang tests with real servers are in tests/e2e/test_server_faults.py."""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest

from monad_cli.daemon.sessions import upkeep


@pytest.fixture
def short_clocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(upkeep, "MIN_INTERVAL_S", 0.05)
    monkeypatch.setattr(upkeep, "STORM_COUNT", 5)
    monkeypatch.setattr(upkeep, "STORM_WINDOW_S", 1.0)
    monkeypatch.setattr(upkeep, "STORM_INTERVAL_S", 0.4)
    monkeypatch.setattr(upkeep, "STORM_QUIET_S", 0.8)


def test_notifications_during_a_refresh_coalesce_into_one_more(short_clocks: None) -> None:
    started: list[float] = []

    async def refresh() -> None:
        started.append(time.monotonic())
        await anyio.sleep(0.2)

    async def main() -> None:
        r = upkeep.ToolRefresh(refresh)
        async with anyio.create_task_group() as tg:
            tg.start_soon(r.run)
            r.request(announced=False)
            await anyio.sleep(0.05)
            for _ in range(200):  # while the first refresh runs
                r.request(announced=False)
            await anyio.sleep(0.6)
            tg.cancel_scope.cancel()

    anyio.run(main)
    assert len(started) == 2  # the one in flight, and one for all 200 that came meanwhile


def test_a_storm_slows_refreshes_and_clears_after_quiet(short_clocks: None) -> None:
    storms: list[str | None] = []
    refreshes: list[float] = []

    async def refresh() -> None:
        refreshes.append(time.monotonic())

    async def main() -> None:
        r = upkeep.ToolRefresh(refresh, on_storm=storms.append)
        async with anyio.create_task_group() as tg:
            tg.start_soon(r.run)
            t0 = time.monotonic()
            while time.monotonic() - t0 < 2.0:  # a server announcing a change every 10 ms
                r.request()
                await anyio.sleep(0.01)
            assert r.storm_reason == upkeep.STORM_REASON
            in_storm = [t for t in refreshes if t > t0 + 1.0]
            await anyio.sleep(1.5)  # quiet
            assert r.storm_reason is None
            tg.cancel_scope.cancel()
        assert 1 <= len(in_storm) <= 4  # one per STORM_INTERVAL_S, not one per notification
        assert r.notices > 100

    anyio.run(main)
    assert storms == [upkeep.STORM_REASON, None]  # one change in, one out: two state rows at most


def test_keep_alive_reports_a_hung_server_and_not_a_busy_or_chatty_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MONAD_PING_INTERVAL", "0.2")
    hung: list[str] = []

    async def main() -> None:
        pings = 0

        async def ping_ok() -> None:
            nonlocal pings
            pings += 1

        async def ping_error() -> None:
            raise RuntimeError("Method not found")  # an answer all the same

        async def ping_never() -> None:
            await anyio.sleep(3600)

        for ping in (ping_ok, ping_error):
            with anyio.move_on_after(1.0):
                await upkeep.keep_alive(ping, idle_for=lambda: 10.0, busy=lambda: False, on_hung=hung.append)
        assert pings >= 2 and hung == []
        with anyio.move_on_after(1.0):  # busy with a call: judged only after BUSY_PATIENCE × the timeout
            await upkeep.keep_alive(ping_never, idle_for=lambda: 10.0, busy=lambda: True, on_hung=hung.append)
        assert hung == []
        with anyio.fail_after(5):
            await upkeep.keep_alive(ping_never, idle_for=lambda: 10.0, busy=lambda: False, on_hung=hung.append)

    anyio.run(main)
    assert len(hung) == 1 and "no answer to a ping within 1 s" in hung[0]


def test_ping_schedule_defaults_and_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MONAD_PING_INTERVAL", raising=False)
    interval, timeout = upkeep.ping_schedule()
    assert (interval, timeout) == (30.0, 10.0) and interval + timeout <= 60  # noticed within a minute
    monkeypatch.setenv("MONAD_PING_INTERVAL", "nonsense")
    assert upkeep.ping_schedule() == (30.0, 10.0)


def test_keep_alive_watches_while_calls_wait_with_more_patience(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MONAD_PING_INTERVAL", "0.2")
    monkeypatch.setattr(upkeep, "BUSY_PATIENCE", 3)
    hung: list[str] = []
    gone_reasons: list[str] = []

    async def ping_never() -> None:
        await anyio.sleep(3600)

    async def main() -> None:
        with anyio.fail_after(10):  # busy, and nothing answers: reported after 3 × 1 s
            await upkeep.keep_alive(ping_never, idle_for=lambda: 10.0, busy=lambda: True, on_hung=hung.append)
        with anyio.fail_after(10):  # a remote that cannot be reached: at once, busy or not
            await upkeep.keep_alive(ping_never, idle_for=lambda: 10.0, busy=lambda: True,
                                    on_hung=gone_reasons.append, gone=lambda: "ConnectError: refused")

    anyio.run(main)
    assert hung == ["it stopped answering: no answer to a ping within 3 s after 0.2 s without traffic "
                    "while calls waited"]
    assert gone_reasons == ["it cannot be reached: ConnectError: refused"]


def test_a_call_that_ended_during_the_ping_earns_it_no_patience(monkeypatch: pytest.MonkeyPatch) -> None:
    """The busy patience is for calls still waiting when the ping's own time is up: a server
    that answered its last call as the ping went out, then froze, is judged by the ping's time."""
    monkeypatch.setenv("MONAD_PING_INTERVAL", "0.2")
    monkeypatch.setattr(upkeep, "BUSY_PATIENCE", 60)
    hung: list[str] = []

    async def ping_never() -> None:
        await anyio.sleep(3600)

    def busy() -> bool:  # a call waits as the ping goes out (the first tick, after 0.05 s) and ends 0.4 s in
        return time.monotonic() < ended_at

    async def main() -> None:
        with anyio.fail_after(10):  # not BUSY_PATIENCE × 1 s
            await upkeep.keep_alive(ping_never, idle_for=lambda: 10.0, busy=busy, on_hung=hung.append)

    ended_at = time.monotonic() + 0.4

    anyio.run(main)
    assert hung == ["it stopped answering: no answer to a ping within 1 s after 0.2 s without traffic"]


@pytest.mark.parametrize(("fresh_for", "relisted"), [(0.0, 1), (3600.0, 0)])
def test_once_the_listen_stream_is_open_tools_are_listed_again_unless_still_fresh(
        fresh_for: float, relisted: int) -> None:
    """A real 2026-07-28 SDK server (in memory): the stream opens after the first tools/list;
    a listing the server said is fresh for longer is not asked for again (its cost)."""
    import math

    from mcp import Client
    from mcp.server import MCPServer

    server = MCPServer("fresh")

    @server.tool()
    def echo(text: str) -> str:
        return text

    class Counting:
        def __init__(self) -> None:
            self.requests = 0

        def request(self, *, announced: bool = True) -> None:
            assert announced is False  # not the server's announcement: no storm counting
            self.requests += 1

    async def main() -> tuple[int, bool]:
        asked = anyio.Event()
        listed_until = time.monotonic() + fresh_for

        def fresh_until() -> float:
            asked.set()  # read once the stream is acknowledged
            return listed_until if fresh_for else -math.inf

        refresh = Counting()
        async with Client(server) as client, anyio.create_task_group() as tg:
            assert client.protocol_version == "2026-07-28"
            stub: Any = refresh  # counts what ToolRefresh would be asked
            tg.start_soon(upkeep.listen_for_tool_changes, client, stub, "fresh", fresh_until)
            with anyio.fail_after(10):
                await asked.wait()
            await anyio.sleep(0)
            tg.cancel_scope.cancel()
        return refresh.requests, asked.is_set()

    requests, asked = anyio.run(main)
    assert asked and requests == relisted
