"""`python -I -m monad_cli.daemon.sandbox.launch [--abi-max N] [--rw PATH]... -- COMMAND [ARGS]`

Confine this process with Landlock (monad_cli/daemon/sandbox/landlock.py), then exec COMMAND,
which inherits the confinement. Run by the stdio transport for `sandbox = true`; `-I`
keeps the server's cwd and PYTHON* variables out of the launcher's own imports.

Exit status 126 with a one-line `monad sandbox: ...` on stderr when it cannot confine or
exec; the server is never started unconfined.
"""

from __future__ import annotations

import argparse
import os
import sys

from monad_cli.daemon.sandbox import landlock_abi, unavailable_reason

EXIT_CANNOT_CONFINE = 126


def _fail(message: str) -> int:
    print(f"monad sandbox: {message}", file=sys.stderr, flush=True)
    return EXIT_CANNOT_CONFINE


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--" not in argv:
        return _fail("usage: launch [--abi-max N] [--rw PATH]... -- COMMAND [ARGS]")
    split = argv.index("--")
    parser = argparse.ArgumentParser(prog="monad_cli.daemon.sandbox.launch")
    parser.add_argument("--rw", action="append", default=[])
    parser.add_argument("--abi-max", type=int, default=None)
    opts = parser.parse_args(argv[:split])
    command = argv[split + 1:]
    if not command:
        return _fail("no command after `--`")
    abi = landlock_abi()
    if opts.abi_max is not None:
        abi = min(abi, max(0, opts.abi_max))
    reason = unavailable_reason(abi)
    if reason:
        return _fail(reason)
    from monad_cli.daemon.sandbox.landlock import confine

    try:
        confine(opts.rw, abi=abi)
    except OSError as e:
        return _fail(f"cannot apply the Landlock ruleset: {e.strerror or e}"
                     f"{f' (`{e.filename}`)' if e.filename else ''}")
    try:
        os.execv(command[0], command)
    except OSError as e:
        return _fail(f"cannot start `{command[0]}`: {e.strerror or e}")
    return 0  # not reached: execv replaced this process


if __name__ == "__main__":
    sys.exit(main())
