"""`make bench`: run every bench/bench_*.py in turn."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

here = Path(__file__).resolve().parent
sys.path.insert(0, str(here))
for script in sorted(here.glob("bench_*.py")):
    print(f"\n== {script.name}")
    runpy.run_path(str(script), run_name="__main__")
