"""A light stdio MCP server that logs its own starts and exits, for on-demand tests.

    python spawnlog_server.py --log FILE [--tools-file PATH] [--crash-flag PATH] [--linger S] [--hang-lists]
    [--slow-lists S]

Standard library only (starts in ~20 ms, like lightserver.py). Every start appends
`start PID` to `--log`, every exit `exit PID`, so a test counts spawns without asking monad.
`--tools-file`: JSON `{"description": ...}` read at start shapes the `echo` tool (a tool set
that changes while the server is stopped). `--crash-flag`: when that file exists at start,
the server answers the handshake and tools/list, then exits with status 3 (a crash right
after an on-demand start). `--linger S`: after stdin closes, wait S seconds before exiting
(a slow shutdown, as servers that flush state do). `--hang-lists`: declares prompts and
resources but never answers their lists (a server that hangs on what it offers);
`--slow-lists S`: declares them and answers each list (empty) after S seconds. Both
protocol eras, as lightserver.py.
Tools: `echo(text)`, `slow(seconds)`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

MODERN = "2026-07-28"
HANDSHAKE = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")


def note(log: str, what: str) -> None:
    with open(log, "a") as f:
        f.write(f"{what} {os.getpid()}\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", required=True)
    ap.add_argument("--tools-file", default=None)
    ap.add_argument("--crash-flag", default=None)
    ap.add_argument("--linger", type=float, default=0.0)
    ap.add_argument("--hang-lists", action="store_true")
    ap.add_argument("--slow-lists", type=float, default=0.0)
    args = ap.parse_args()
    note(args.log, "start")
    description = "Echo the text back."
    if args.tools_file and os.path.exists(args.tools_file):
        with open(args.tools_file) as f:
            description = json.load(f).get("description", description)
    crash = bool(args.crash_flag and os.path.exists(args.crash_flag))
    tools = [{"name": "echo", "description": description,
              "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
             {"name": "slow", "description": "Sleep, then say so.",
              "inputSchema": {"type": "object", "properties": {"seconds": {"type": "number"}}}}]
    info = {"name": "spawnlog", "version": "1.0"}
    lists = args.hang_lists or args.slow_lists
    caps: dict[str, object] = {"tools": {}, **({"prompts": {}, "resources": {}} if lists else {})}
    modern = False
    out = sys.stdout

    def answer(rid: object, result: dict[str, object]) -> None:
        if modern:
            result = {"resultType": "complete", **result, "_meta": {"io.modelcontextprotocol/serverInfo": info}}
        out.write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}) + "\n")
        out.flush()

    try:
        for line in sys.stdin:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            method, rid = msg.get("method"), msg.get("id")
            if rid is None:
                continue
            params = msg.get("params") or {}
            if method == "server/discover":
                modern = True
                answer(rid, {"supportedVersions": [MODERN], "capabilities": caps, "ttlMs": 0,
                             "cacheScope": "private"})
            elif method == "initialize":
                asked = params.get("protocolVersion")
                answer(rid, {"protocolVersion": asked if asked in HANDSHAKE else HANDSHAKE[0],
                             "capabilities": caps, "serverInfo": info})
            elif method == "tools/list":
                answer(rid, {"tools": tools, **({"ttlMs": 0, "cacheScope": "private"} if modern else {})})
                if crash:
                    print("crashing right after start, as asked (--crash-flag)", file=sys.stderr, flush=True)
                    note(args.log, "exit")
                    os._exit(3)
            elif method == "tools/call":
                arguments = params.get("arguments") or {}
                if params.get("name") == "slow":
                    time.sleep(float(arguments.get("seconds", 1)))
                    text = f"slept {arguments.get('seconds', 1)}"
                else:
                    text = str(arguments.get("text", ""))
                answer(rid, {"content": [{"type": "text", "text": text}], "isError": False})
            elif method in ("prompts/list", "resources/list", "resources/templates/list") and args.hang_lists:
                continue  # never answered
            elif method in ("prompts/list", "resources/list", "resources/templates/list") and args.slow_lists:
                time.sleep(args.slow_lists)
                key = {"prompts/list": "prompts", "resources/list": "resources"}.get(method, "resourceTemplates")
                answer(rid, {key: []})
            elif method == "ping":
                answer(rid, {})
            else:
                out.write(json.dumps({"jsonrpc": "2.0", "id": rid,
                                      "error": {"code": -32601, "message": f"Method not found: {method}"}}) + "\n")
                out.flush()
        time.sleep(args.linger)
    finally:
        note(args.log, "exit")


if __name__ == "__main__":
    main()
