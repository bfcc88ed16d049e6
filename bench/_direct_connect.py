"""Helper of bench_startup.py: what a direct SDK client does to connect N stdio servers at
once (each `mcp.Client` in its own task, tools/list on each). Prints `connected` when all
are, then holds the sessions until stdin closes.

    python bench/_direct_connect.py N COMMAND [ARGS...]
"""

from __future__ import annotations

import os
import sys

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main(n: int, command: str, args: list[str]) -> None:
    connected = anyio.Event()
    count = [0]
    done = anyio.Event()
    with open(os.devnull, "w") as errlog:

        async def one(i: int) -> None:
            params = StdioServerParameters(command=command, args=[*args, "--name", f"s{i}"])
            async with Client(stdio_client(params, errlog=errlog)) as client:
                await client.list_tools()
                count[0] += 1
                if count[0] == n:
                    connected.set()
                await done.wait()

        async with anyio.create_task_group() as tg:
            for i in range(n):
                tg.start_soon(one, i)
            await connected.wait()
            sys.stdout.write("connected\n")
            sys.stdout.flush()
            await anyio.to_thread.run_sync(sys.stdin.read)
            done.set()


if __name__ == "__main__":
    anyio.run(main, int(sys.argv[1]), sys.argv[2], sys.argv[3:])
