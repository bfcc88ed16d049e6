"""Shared helpers for the benchmarks: a temp MONAD_HOME, the CLI, timing, the target lines."""

from __future__ import annotations

import compileall
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

BIN = str(Path(sys.executable).parent)
# Measure monad as installed: `pip install` byte-compiles a package, but an editable install
# under PYTHONDONTWRITEBYTECODE=1 never writes its .pyc files, so every CLI run and every
# supervisor start would compile its monad modules again (~20 ms for `add`). Quiet, and a
# no-op when they are current.
compileall.compile_dir(str(Path(__file__).resolve().parent.parent / "monad_cli"), quiet=1)
# Every target a script checked, in order: (label, value, ratio, target, met). `run.py`
# prints them again, together, at the end of `make bench`.
TARGETS: list[tuple[str, str, str, str, bool]] = []


def temp_home() -> Path:
    home = Path(tempfile.mkdtemp(prefix="monad-bench-")) / "home"
    os.environ["MONAD_HOME"] = str(home)
    os.environ["PATH"] = BIN + os.pathsep + os.environ.get("PATH", "")
    return home


def monad(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run([os.path.join(BIN, "monad"), *args], capture_output=True, text=True, check=check)


def monad_env(home: str, extra: dict[str, str] | None = None) -> Callable[..., str]:
    """`monad ARGV` on `home` (with `extra` environment variables, e.g. another tree's
    PYTHONPATH): stdout, or SystemExit with its stderr."""
    os.environ["PATH"] = BIN + os.pathsep + os.environ.get("PATH", "")

    def run(*argv: str) -> str:
        r = subprocess.run([sys.executable, "-m", "monad_cli", *argv], capture_output=True, text=True,
                           env={**os.environ, "MONAD_HOME": home, **(extra or {})})
        if r.returncode != 0:
            raise SystemExit(f"monad {' '.join(argv)} failed: {r.stderr.strip()}")
        return r.stdout

    return run


def wait_connected(home: str, name: str, *, timeout: float = 60.0) -> None:
    """Until `monad mcp status NAME` says connected, or SystemExit after `timeout` s."""
    run = monad_env(home)
    deadline = time.monotonic() + timeout
    while json.loads(run("mcp", "status", name, "--json")).get("state") != "connected":
        if time.monotonic() > deadline:
            raise SystemExit(f"server {name} did not connect within {timeout:g} s")
        time.sleep(0.2)


def wait_tools(home: str, name: str, *, auto_approved: bool = False, timeout: float = 60.0) -> None:
    """Until `monad mcp tools` lists `name` (auto-approved, if asked): a trust edit reconnects."""
    run = monad_env(home)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        rows = json.loads(run("mcp", "tools", "--json"))
        if any(r["name"] == name and (r.get("autoApproved") or not auto_approved) for r in rows):
            return
        time.sleep(0.2)
    raise SystemExit(f"tool {name} did not appear within {timeout:g} s")


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


def report(label: str, value: float, baseline: float, goal: str) -> None:
    print(f"{label:<48} {value * 1000:8.1f} ms   {value / baseline:5.2f}x   (target {goal})")


def target(label: str, value: str, ratio: str, goal: str, met: bool) -> None:
    """Print one target line and remember it for the summary."""
    TARGETS.append((label, value, ratio, goal, met))
    print(f"TARGET {label}: {value} ({ratio}; target {goal}) {'met' if met else 'NOT MET'}")


def load() -> str:
    """The 1/5/15-minute load averages, to print beside the numbers (other work shares the cores)."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())
