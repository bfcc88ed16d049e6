"""The restart policy (daemon/sessions/backoff.py): doubling delays with jitter under a cap,
giving up on a stdio crash loop only, a server's Retry-After honoured up to five minutes,
and a healthy connection starting the count again."""

from __future__ import annotations

import pytest

from monad_cli.daemon.sessions.backoff import MAX_DELAY_S, Backoff


def test_delays_double_from_the_initial_one_up_to_the_cap() -> None:
    b = Backoff(initial=1.0, jitter=0.0, cap=60.0)
    delays = []
    for n in range(8):
        b.record_failure(float(n), may_give_up=False)
        delays.append(b.next_delay())
    assert delays == [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 60.0, 60.0]


def test_jitter_keeps_each_delay_within_a_fifth_of_its_base() -> None:
    b = Backoff(initial=10.0)
    b.record_failure(0.0)
    assert all(8.0 <= b.next_delay() <= 12.0 for _ in range(200))


def test_the_give_up_count_is_reached_inside_the_window_only() -> None:
    b = Backoff(give_up_after=3, window=60.0)
    assert [b.record_failure(t) for t in (0.0, 1.0)] == [False, False]
    assert b.record_failure(2.0) is True
    spread = Backoff(give_up_after=3, window=60.0)
    # Failures a minute apart fall out of the window: a slow crash loop is retried for ever.
    assert [spread.record_failure(t) for t in (0.0, 61.0, 122.0, 183.0)] == [False, False, False, False]


def test_a_remote_never_gives_up() -> None:
    b = Backoff(give_up_after=2)
    assert not any(b.record_failure(float(t), may_give_up=False) for t in range(10))


@pytest.mark.parametrize(("retry_after", "jitter", "lowest", "highest"), [
    (None, 0.0, 1.0, 1.0),  # nothing asked: the schedule's own delay
    (0.5, 0.0, 1.0, 1.0),  # asked for less than the schedule: the schedule wins
    (30.0, 0.2, 30.0, 33.0),  # asked for more: at least that, plus up to half the jitter
    (3600.0, 0.2, MAX_DELAY_S, MAX_DELAY_S),  # never past five minutes, whatever it asks
])
def test_retry_after_stretches_one_delay_within_the_bound(retry_after: float | None, jitter: float,
                                                          lowest: float, highest: float) -> None:
    b = Backoff(initial=1.0, jitter=jitter)
    b.record_failure(0.0)
    assert all(lowest <= b.delay_for(retry_after) <= highest for _ in range(50))


def test_a_healthy_connection_starts_the_count_again_and_reset_forgets_the_window() -> None:
    b = Backoff(initial=1.0, jitter=0.0, healthy_after=10.0, give_up_after=3)
    for t in (0.0, 1.0):
        b.record_failure(t)
    b.record_uptime(9.9)  # not long enough to count as healthy
    assert b.next_delay() == 2.0
    b.record_uptime(10.0)
    assert b.next_delay() == 1.0
    b.reset()
    assert b.record_failure(3.0) is False and b.record_failure(4.0) is False  # the window was emptied
    assert b.record_failure(5.0) is True


def test_the_initial_delay_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MONAD_BACKOFF_INITIAL", "0.25")
    assert Backoff().initial == 0.25
