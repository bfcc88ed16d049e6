"""When a server runs: `start` (`always` | `on-demand`) and `idleStop` (a duration), per
definition or as defaults in `MONAD_HOME/settings.toml` (docs/atoms.md "start").

    # MONAD_HOME/settings.toml
    [servers]
    start = "on-demand"     # the default for definitions without `start` (else "always")
    idleStop = "10m"        # how long an on-demand server stays up without use

A duration is a number of seconds or a string: `500ms`, `30s`, `10m`, `1h`, or several
(`1h30m`). Stdlib only: the CLI validates definitions without loading anything heavy.
"""

from __future__ import annotations

import re

START_MODES = ("always", "on-demand")
DEFAULT_START = "always"
DEFAULT_IDLE_STOP_S = 600.0
MAX_IDLE_STOP_S = 7 * 24 * 3600.0
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")


def parse_duration(value: object) -> float | None:
    """Seconds (> 0, at most a week) from a number of seconds or a string such as `10m`,
    `1h30m`, `500ms`; None when `value` is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str):
        text = value.strip().replace(" ", "")
        parts = _PART.findall(text)
        if not text or "".join(n + u for n, u in parts) != text:
            return None
        seconds = sum(float(n) * _UNITS[u] for n, u in parts)
    else:
        return None
    return seconds if 0 < seconds <= MAX_IDLE_STOP_S else None


def describe_duration(seconds: float) -> str:
    """`10m`, `1h30m`, `45s`, `0.5s`: how `monad` writes a duration back."""
    if seconds < 60 or seconds % 60:
        return f"{seconds:g}s"
    minutes = int(seconds // 60)
    hours, minutes = divmod(minutes, 60)
    return (f"{hours}h" if hours else "") + (f"{minutes}m" if minutes else "")
