"""An MCP stdio server that tries to write files, to observe a sandbox from inside.

    python sandboxprobe.py [--try-write PATH]... [--try-write-tmpdir]

At start it tries each write and reports `probe: write PATH: ok` or
`probe: write PATH: denied (<strerror>)` on stderr, then serves tools `write(path, text)`
(returns "ok" or "denied: <strerror>"), `read(path)` and `pid()`.
"""

from __future__ import annotations

import gc

if __name__ == "__main__":  # a server process: no cyclic collection while the SDK is imported
    gc.disable()

import argparse
import os
import sys

from mcp.server import MCPServer


def try_write(path: str, text: str) -> str:
    try:
        with open(path, "w") as f:
            f.write(text)
    except OSError as e:
        return f"denied: {e.strerror}"
    return "ok"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--try-write", action="append", default=[])
    ap.add_argument("--try-write-tmpdir", action="store_true")
    args = ap.parse_args()
    targets = list(args.try_write)
    if args.try_write_tmpdir:
        targets.append(os.path.join(os.environ.get("TMPDIR", "/tmp"), "probe-tmp.txt"))
    for path in targets:
        print(f"probe: write {path}: {try_write(path, 'from the probe')}", file=sys.stderr, flush=True)
    print(f"probe: cwd {os.getcwd()}", file=sys.stderr, flush=True)

    mcp = MCPServer("sandboxprobe")

    @mcp.tool()
    def write(path: str, text: str) -> str:
        """Write text to a file: "ok" or "denied: <reason>"."""
        return try_write(path, text)

    @mcp.tool()
    def read(path: str) -> str:
        """Read a text file."""
        with open(path) as f:
            return f.read()

    @mcp.tool()
    def pid() -> int:
        """The server's process id."""
        return os.getpid()

    mcp.run()


if __name__ == "__main__":
    # The SDK's import made ~1e5 lasting objects (pydantic models): kept out of every later
    # collection (`gc.freeze`), ~0.3 s of CPU less at each of hundreds of server starts a run.
    gc.freeze()
    gc.enable()
    main()
