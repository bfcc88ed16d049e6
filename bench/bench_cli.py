"""CLI latency vs the floor of the stack (`python -c "import typer"`)."""

from __future__ import annotations

import subprocess
import sys

from _util import monad, report, temp_home, timed


def main() -> None:
    home = temp_home()
    atoms = home / "atoms" / "mcp"
    atoms.mkdir(parents=True)
    for i in range(50):  # 50 configured servers; disabled so the bench measures the CLI, not spawns
        (atoms / f"s{i}.toml").write_text(f'command = "echo"\nargs = ["{i}"]\nenabled = false\n')
    monad("daemon", "start")
    try:
        floor = timed(lambda: subprocess.run([sys.executable, "-c", "import typer"], check=True))
        label = 'python -c "import typer" (floor)'
        print(f"{label:<48} {floor * 1000:8.1f} ms")
        report("monad mcp status --json (50 servers, live)", timed(lambda: monad("mcp", "status", "--json")),
               floor, "<= 2x")
        report("monad mcp list --json", timed(lambda: monad("mcp", "list", "--json")), floor, "<= 2x")
        counter = iter(range(10_000))

        def add_remove() -> None:
            n = next(counter)
            monad("mcp", "add", f"b{n}", "--disabled", "--", "echo")
            monad("mcp", "remove", f"b{n}")

        report("monad mcp add + remove (two processes)", timed(add_remove) / 2, floor, "<= 2x each")
    finally:
        monad("daemon", "stop", check=False)


if __name__ == "__main__":
    main()
