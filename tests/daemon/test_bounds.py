"""A listener's refusals, tallied (daemon/bounds.py `Tally`): the first of a kind logged at
once, the rest summed into one line at most every `LOG_EVERY_S`, each kind on its own clock;
end to end with real connections in tests/e2e/test_listener_bounds.py."""

from __future__ import annotations

import asyncio

import pytest

from monad_cli.daemon import bounds
from monad_cli.daemon.bounds import LOG_EVERY_S, Tally


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "monad.listeners"]


def test_refusals_are_summed_into_one_line_per_interval_and_kind(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    tally = Tally("the Studio on port 8720", clock=clock)
    tally.note("slow", "a request's headers took too long (1.2.3.4:5)")
    for n in range(3):  # no event loop here: nothing is scheduled, the next due line sums them
        clock.now += 1
        tally.note("slow", f"a request's headers took too long (peer {n})")
    tally.note("busy", "too many unauthenticated connections")
    clock.now += LOG_EVERY_S
    tally.note("slow", "a request's headers took too long (peer 3)")
    assert lines(caplog) == [
        "the Studio on port 8720: a request's headers took too long (1.2.3.4:5)",
        "the Studio on port 8720: too many unauthenticated connections",
        f"the Studio on port 8720: a request's headers took too long (peer 3) (4 in the last {LOG_EVERY_S:.0f} s)",
    ]


def test_what_is_held_back_is_written_when_its_interval_ends(caplog: pytest.LogCaptureFixture,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bounds, "LOG_EVERY_S", 0.05)

    async def main() -> None:
        tally = bounds.Tally("/metrics on port 9464")  # the real monotonic clock
        tally.note("slow", "first")
        tally.note("slow", "second")  # within the interval: held back, its line scheduled
        assert lines(caplog) == ["/metrics on port 9464: first"]
        await asyncio.sleep(0.2)

    asyncio.run(main())
    assert lines(caplog) == ["/metrics on port 9464: first", "/metrics on port 9464: second"]
