"""Shared helpers for the benchmarks: a temp MONAD_HOME, the CLI, timing."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

BIN = str(Path(sys.executable).parent)


def temp_home() -> Path:
    home = Path(tempfile.mkdtemp(prefix="monad-bench-")) / "home"
    os.environ["MONAD_HOME"] = str(home)
    os.environ["PATH"] = BIN + os.pathsep + os.environ.get("PATH", "")
    return home


def monad(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run([os.path.join(BIN, "monad"), *args], capture_output=True, text=True, check=check)


def timed(fn: Callable[[], object], *, runs: int = 15, warmup: int = 2) -> float:
    """Median wall time of `fn` in seconds."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t)
    return statistics.median(samples)


def report(label: str, value: float, baseline: float, target: str) -> None:
    print(f"{label:<48} {value * 1000:8.1f} ms   {value / baseline:5.2f}x   (target {target})")
