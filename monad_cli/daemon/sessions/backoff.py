"""Restart policy (docs/supervisor.md; systemd's RestartSteps and StartLimitBurst, supervisord's
BACKOFF and FATAL).

Delay before retry n (consecutive failures, from 1): initial × 2^(n-1), capped at 60 s,
±20 % jitter. Over `give_up_after` failures within `window` seconds gives up (`failed`) until
`monad mcp reconnect`, for a stdio crash loop only: a remote's failures (refused, reset, 5xx,
429, timeouts) are transient (`may_give_up=False`). A `Retry-After` stretches one delay
(`delay_for`), never past `MAX_DELAY_S` (5 minutes). Up `healthy_after` seconds resets the
count. Times are monotonic seconds.
"""

from __future__ import annotations

import os
import random
from collections import deque
from dataclasses import dataclass, field

MAX_DELAY_S = 300.0  # never longer between attempts, whatever a Retry-After asks


@dataclass
class Backoff:
    # Tests shorten the schedule (MONAD_BACKOFF_INITIAL, docs/supervisor.md).
    initial: float = field(default_factory=lambda: float(os.environ.get("MONAD_BACKOFF_INITIAL", "1.0")))
    factor: float = 2.0
    cap: float = 60.0
    jitter: float = 0.2
    give_up_after: int = 5
    window: float = 60.0
    healthy_after: float = 10.0
    consecutive: int = 0
    failures: deque[float] = field(default_factory=deque)

    def record_failure(self, now: float, *, may_give_up: bool = True) -> bool:
        """Count one failure; True when the server should be given up on (never when not
        `may_give_up`)."""
        self.consecutive += 1
        self.failures.append(now)
        while self.failures and now - self.failures[0] > self.window:
            self.failures.popleft()
        return may_give_up and len(self.failures) >= self.give_up_after

    def next_delay(self) -> float:
        base = min(self.cap, self.initial * self.factor ** max(0, self.consecutive - 1))
        return max(0.0, base * (1 + random.uniform(-self.jitter, self.jitter)))

    def delay_for(self, retry_after: float | None) -> float:
        """The next delay, or what the server's `Retry-After` asked if longer (RFC 9110
        §10.2.3), plus a little jitter so many clients do not return at once; at most
        `MAX_DELAY_S`."""
        delay = self.next_delay()
        if retry_after is not None and retry_after > delay:
            delay = retry_after * (1 + random.uniform(0, self.jitter / 2))
        return min(MAX_DELAY_S, delay)

    def record_uptime(self, seconds: float) -> None:
        if seconds >= self.healthy_after:
            self.consecutive = 0

    def reset(self) -> None:
        self.consecutive = 0
        self.failures.clear()
