"""`make bench`: run every bench/bench_*.py in turn, then every target again with its ratio.

`python bench/run.py soak full_disk` runs the optional ones as well: bench/soak.py (about
five minutes of load) and bench/full_disk.py (mounts a tmpfs: root), which `make bench`
leaves out."""

from __future__ import annotations

import os
import runpy
import sys
import time
from pathlib import Path

here = Path(__file__).resolve().parent
sys.path.insert(0, str(here))
import _util  # noqa: E402 - after the path insert, like the scripts' own `from _util import`

only = sys.argv[1:]  # e.g. `python bench/run.py gateway startup`
started = time.time()
print(f"load average before: {_util.load()} ({os.cpu_count()} cores)")
OPTIONAL = [here / "soak.py", here / "full_disk.py"]  # only when named (long; root)
for script in [*sorted(here.glob("bench_*.py")), *(s for s in OPTIONAL if any(w in s.name for w in only))]:
    if only and not any(word in script.name for word in only):
        continue
    print(f"\n== {script.name} (load {_util.load()})")
    sys.argv = [str(script)]
    runpy.run_path(str(script), run_name="__main__")
print(f"\n== targets (one run, {time.time() - started:.0f} s; load average after: {_util.load()})")
for label, value, ratio, goal, met in _util.TARGETS:
    print(f"{'met    ' if met else 'NOT MET'}  {label:<58} {value:>12}  {ratio:<22} target {goal}")
