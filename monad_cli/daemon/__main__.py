"""`python -m monad_cli.daemon [--include-mcps GLOBS] [--exclude-mcps GLOBS]`: the
supervisor without the CLI around it (what `monad daemon start` spawns: no typer to import
on the way to the first spawn)."""

from __future__ import annotations

import argparse
import sys

from monad_cli.core.filters import PatternError, split_patterns
from monad_cli.core.paths import Paths, resolve_home
from monad_cli.daemon.main import run


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m monad_cli.daemon")
    ap.add_argument("--include-mcps", action="append", default=None)
    ap.add_argument("--exclude-mcps", action="append", default=None)
    args = ap.parse_args(argv)
    try:
        include = None if args.include_mcps is None else split_patterns(args.include_mcps, what="--include-mcps")
        exclude = None if args.exclude_mcps is None else split_patterns(args.exclude_mcps, what="--exclude-mcps")
    except PatternError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    # Not `paths()`: `run` checks the home's owner itself, and says so on the ready pipe.
    return run(Paths(resolve_home()), include=include, exclude=exclude)


if __name__ == "__main__":
    sys.exit(main())
