"""CLI latency vs the floor of the stack (`python -c "import typer"`), with a live supervisor
that has 50 servers defined (disabled, so the bench measures the CLI, not spawns).

Targets (issue 15): `monad mcp status --json`, `add` and `remove` each ≤ 1.5× the floor.
Issue 39: `monad journal --json` on the same home ≤ 1.5× `monad mcp status --json` (the
journal's first issue set it; it was 1.85×: the journal group loaded every command module).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Callable

from _util import monad, report, target, temp_home


def alternating(first: Callable[[], object], second: Callable[[], object], *, runs: int) -> tuple[float, float]:
    """Median wall times of `first` and `second`, run in turn (after one warm-up each)."""
    first()
    second()
    a: list[float] = []
    b: list[float] = []
    for _ in range(runs):
        for fn, samples in ((first, a), (second, b)):
            t = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - t)
    return statistics.median(a), statistics.median(b)


def main() -> None:
    home = temp_home()
    atoms = home / "atoms" / "mcp"
    atoms.mkdir(parents=True)
    for i in range(50):
        (atoms / f"s{i}.toml").write_text(f'command = "echo"\nargs = ["{i}"]\nenabled = false\n')
    monad("daemon", "start")
    try:
        def floor_run() -> None:
            subprocess.run([sys.executable, "-c", "import typer"], check=True)

        # Each command alternates with its own floor runs, so that the load other work puts on
        # the cores weighs on both sides of a ratio (measured apart, a loaded machine made
        # `status` 3.2x a floor taken a minute before it).
        floor, status = alternating(floor_run, lambda: monad("mcp", "status", "--json"), runs=21)
        label = 'python -c "import typer" (floor)'
        print(f"{label:<48} {floor * 1000:8.1f} ms")
        report("monad mcp status --json (50 servers, live)", status, floor, "<= 1.5x")
        floor_list, listed = alternating(floor_run, lambda: monad("mcp", "list", "--json"), runs=21)
        report("monad mcp list --json", listed, floor_list, "<= 1.5x")
        counter = iter(range(10_000))
        names: list[str] = []

        def add() -> None:
            names.append(f"b{next(counter)}")
            monad("mcp", "add", names[-1], "--disabled", "--", "echo")

        def remove() -> None:
            monad("mcp", "remove", names.pop())

        floor_add, added = alternating(floor_run, add, runs=21)
        floor_remove, removed = alternating(floor_run, remove, runs=21)
        report("monad mcp add", added, floor_add, "<= 1.5x")
        report("monad mcp remove", removed, floor_remove, "<= 1.5x")
        # Side by side, alternating, so that the load other work puts on the cores weighs on both.
        status_again, journal = alternating(lambda: monad("mcp", "status", "--json"),
                                            lambda: monad("journal", "--json"), runs=21)
        report("monad journal --json (the same home)", journal, status_again, "<= 1.5x status --json")
        print(f"{'monad journal --json / monad mcp status --json':<48} {journal / status_again:8.2f}x   "
              f"(status --json {status_again * 1000:.1f} ms in the same run)")
        for what, value, base in (("status --json", status, floor), ("add", added, floor_add),
                                  ("remove", removed, floor_remove)):
            target(f"cli: monad mcp {what} (50 servers, live supervisor)", f"{value * 1000:.0f} ms",
                   f"{value / base:.2f}x import typer", "<= 1.5x", value <= 1.5 * base)
        target("cli: monad journal --json (the same home)", f"{journal * 1000:.0f} ms",
               f"{journal / status_again:.2f}x monad mcp status --json", "<= 1.5x", journal <= 1.5 * status_again)
    finally:
        monad("daemon", "stop", check=False)


if __name__ == "__main__":
    main()
