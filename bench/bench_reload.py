"""Hot reload: atom written → connected, against connecting directly with the SDK; and 50
servers connecting concurrently."""

from __future__ import annotations

import os
import shutil
import statistics
import time

import anyio
from _util import monad, temp_home

from monad_cli.cli.control import ControlClient
from monad_cli.core.paths import Paths

COMMAND = shutil.which("mcp-server-time") or "mcp-server-time"
ARGS = ["--local-timezone", "UTC"]


async def direct_connect() -> float:
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    t = time.perf_counter()
    with open(os.devnull, "w") as errlog:
        async with Client(stdio_client(StdioServerParameters(command=COMMAND, args=ARGS), errlog=errlog)) as c:
            await c.list_tools()
            elapsed = time.perf_counter() - t
    return elapsed


def wait_connected(client: ControlClient, names: set[str], timeout: float = 120) -> float:
    t = time.perf_counter()
    while time.perf_counter() - t < timeout:
        rows = client.get("/v1/settings/mcp-servers/status")["servers"]
        if names <= {r["name"] for r in rows if r["state"] == "connected"}:
            return time.perf_counter()
        time.sleep(0.002)
    raise SystemExit(f"not connected within {timeout} s: {names}")


def main() -> None:
    home = temp_home()
    direct = statistics.median(anyio.run(direct_connect) for _ in range(5))
    monad("daemon", "start")
    client = ControlClient(Paths(home))
    try:
        samples = []
        for i in range(5):
            atom = home / "atoms" / "mcp" / f"t{i}.toml"
            t = time.perf_counter()
            atom.write_text(f'command = "{COMMAND}"\nargs = {ARGS!r}\n'.replace("'", '"'))
            samples.append(wait_connected(client, {f"t{i}"}) - t)
        reload = statistics.median(samples)
        print(f"{'direct SDK connect + tools/list':<48} {direct * 1000:8.1f} ms")
        print(f"{'atom written -> connected (hot reload)':<48} {reload * 1000:8.1f} ms   "
              f"+{(reload - direct) * 1000:.0f} ms   (target <= +150 ms)")
        for i in range(5):
            (home / "atoms" / "mcp" / f"t{i}.toml").unlink()
        t = time.perf_counter()
        for i in range(50):
            (home / "atoms" / "mcp" / f"m{i}.toml").write_text(
                f'command = "{COMMAND}"\nargs = {ARGS!r}\ntimeout = 120\n'.replace("'", '"'))
        all50 = wait_connected(client, {f"m{i}" for i in range(50)}, timeout=300) - t
        print(f"{'50 stdio servers connected (concurrently)':<48} {all50 * 1000:8.1f} ms   "
              f"{all50 / reload:5.1f}x one   (serial would be ~50x)")
    finally:
        monad("daemon", "stop", check=False)


if __name__ == "__main__":
    main()
