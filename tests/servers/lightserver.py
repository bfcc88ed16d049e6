"""A light MCP server over stdio: the standard library only, so it starts in ~20 ms.

    python lightserver.py [--name NAME] [--say LINE] [--exit-at-start N] [--hang]
                          [--stderr-flood BYTES] [--no-newlines] [--slow-start S]
                          [--stray-stdout [LINES]] [--crash-after S] [--tools-file PATH]

testserver.py's stdio tools and fault flags, with the same names and meaning, without the
SDK's import (~1.5 s of CPU a start, ~0.05 s here): for benchmarks (`bench/bench_startup.py`
starts 50) and for tests that need a plain server, not the SDK server's own behaviour (its
validation messages, elicitation, HTTP, the legacy-only era: those stay on testserver.py).
Tools `echo(text)`, `pid()`, `add(a, b)`, `slow(seconds)`, `env(name)`, listed as the SDK's
`MCPServer` lists them (input and output schemas, `structuredContent` `{"result": ...}`);
`--tools-file` shapes `echo` as testserver.py's does. Both protocol eras: `server/discover`
at 2026-07-28 (MCP spec 2026-07-28, basic/lifecycle) and the `initialize` handshake up to
2025-11-25. Newline-delimited JSON-RPC on stdin/stdout; an unknown method is answered
-32601; `slow` runs on a thread, and a cancelled one (`notifications/cancelled`) is never
answered (basic/utilities/cancellation).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from typing import Any

MODERN = "2026-07-28"
HANDSHAKE = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
JSON_TYPES: dict[str, Any] = {"string": str, "integer": int, "number": (int, float)}


def tool(name: str, description: str, params: dict[str, str], returns: str) -> dict[str, Any]:
    """A tool as the SDK's `MCPServer` lists one made from a typed function (pydantic's titles)."""
    schema: dict[str, Any] = {"type": "object", "title": f"{name}Arguments",
                              "properties": {p: {"title": p.replace("_", " ").title(), "type": t}
                                             for p, t in params.items()}}
    if params:
        schema["required"] = list(params)
    return {"name": name, "description": description, "inputSchema": schema,
            "outputSchema": {"type": "object", "title": f"{name}Output", "required": ["result"],
                             "properties": {"result": {"title": "Result", "type": returns}}}}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", default="lightserver")
    ap.add_argument("--say", default=None, help="write this line to stderr at start")
    ap.add_argument("--exit-at-start", type=int, default=None)
    ap.add_argument("--hang", action="store_true")
    ap.add_argument("--stderr-flood", type=int, default=0)
    ap.add_argument("--no-newlines", action="store_true")
    ap.add_argument("--slow-start", type=float, default=0.0)
    ap.add_argument("--stray-stdout", type=int, nargs="?", const=1, default=0, metavar="LINES")
    ap.add_argument("--crash-after", type=float, default=None)
    ap.add_argument("--tools-file", default=None)
    args = ap.parse_args()

    # The faults in testserver.py's order, with its words (tests read them in a server's reason).
    if args.say:
        print(args.say, file=sys.stderr, flush=True)
    if args.exit_at_start is not None:
        print(f"lightserver: exiting with {args.exit_at_start} as asked", file=sys.stderr, flush=True)
        sys.exit(args.exit_at_start)
    if args.hang:
        print("lightserver: hanging forever", file=sys.stderr, flush=True)
        while True:
            time.sleep(3600)
    if args.stderr_flood:
        chunk = ("x" * 1023 + ("" if args.no_newlines else "\n")).encode()
        for _ in range(0, args.stderr_flood, len(chunk)):
            os.write(2, chunk)
    time.sleep(args.slow_start)
    if args.stray_stdout:  # not JSON-RPC: a well-behaved client counts and ignores it
        sys.stdout.write("this is not json\n" * args.stray_stdout)
        sys.stdout.flush()
    if args.crash_after is not None:
        def crash() -> None:
            time.sleep(args.crash_after)
            print("lightserver: crashing as asked", file=sys.stderr, flush=True)
            os._exit(3)
        threading.Thread(target=crash, daemon=True).start()

    shape: dict[str, Any] = {"description": "Echo the text back.", "param": "text", "extra": False}
    if args.tools_file and os.path.exists(args.tools_file):
        with open(args.tools_file) as f:
            shape.update(json.load(f))
    tools = [tool("echo", shape["description"], {shape["param"]: "string"}, "string"),
             tool("pid", "The server's process id.", {}, "integer"),
             tool("add", "Add two integers.", {"a": "integer", "b": "integer"}, "integer"),
             tool("slow", "Sleep, then answer.", {"seconds": "number"}, "string"),
             tool("env", "The value of an environment variable in the server ('<unset>' if unset).",
                  {"name": "string"}, "string")]
    if shape["extra"]:
        tools.append(tool("extra", "An added tool.", {}, "string"))
    Server(args.name, {t["name"]: t for t in tools}).serve()


class Server:
    """One stdio session: requests answered in order, but `slow` on its own thread."""

    def __init__(self, name: str, tools: dict[str, dict[str, Any]]) -> None:
        self.info = {"name": name, "version": "1.0"}
        self.tools = tools
        self.modern = False
        self.lock = threading.Lock()  # one writer at a time: `slow` answers from its thread
        self.cancelled: dict[object, threading.Event] = {}  # request id -> set when cancelled

    def send(self, message: dict[str, Any]) -> None:
        with self.lock:
            sys.stdout.write(json.dumps(message) + "\n")
            sys.stdout.flush()

    def answer(self, rid: object, result: dict[str, Any]) -> None:
        if self.modern:  # 2026-07-28: every result says its type and which server sent it
            result = {"resultType": "complete", **result, "_meta": {"io.modelcontextprotocol/serverInfo": self.info}}
        self.send({"jsonrpc": "2.0", "id": rid, "result": result})

    def serve(self) -> None:
        for line in sys.stdin:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
            if method == "notifications/cancelled" and isinstance(params.get("requestId"), (str, int)):
                self.cancelled.get(params["requestId"], threading.Event()).set()
            if rid is None:
                continue  # a notification (initialized, cancelled): nothing to answer
            cache = {"ttlMs": 0, "cacheScope": "private"}
            if method == "server/discover":
                self.modern = True
                self.answer(rid, {"supportedVersions": [MODERN], "capabilities": {"tools": {}}, **cache})
            elif method == "initialize":
                asked = params.get("protocolVersion")
                self.answer(rid, {"protocolVersion": asked if asked in HANDSHAKE else HANDSHAKE[0],
                                  "capabilities": {"tools": {}}, "serverInfo": self.info})
            elif method == "tools/list":
                self.answer(rid, {"tools": list(self.tools.values()), **(cache if self.modern else {})})
            elif method == "tools/call":
                self.call(rid, str(params.get("name")), params.get("arguments") or {})
            elif method == "ping":
                self.answer(rid, {})
            else:
                self.send({"jsonrpc": "2.0", "id": rid,
                           "error": {"code": -32601, "message": f"Method not found: {method}"}})

    def call(self, rid: object, name: str, arguments: dict[str, Any]) -> None:
        """tools/call: unknown tools and bad arguments are tool errors (`isError`), as the SDK's."""
        if name not in self.tools:
            return self.answer(rid, error(f"Unknown tool: {name}"))
        schema = self.tools[name]["inputSchema"]
        for param, spec in schema["properties"].items():
            given = arguments.get(param)
            if not isinstance(given, JSON_TYPES[spec["type"]]) or isinstance(given, bool):
                return self.answer(rid, error(f"Error executing tool {name}: `{param}` must be {spec['type']}"))
        if name == "slow":
            self.cancelled[rid] = threading.Event()
            threading.Thread(target=self.slow, args=(rid, float(arguments["seconds"])), daemon=True).start()
            return None
        value: object = {
            "echo": lambda: arguments[next(iter(schema["properties"]))],  # its one parameter, whatever its name
            "pid": os.getpid, "add": lambda: arguments["a"] + arguments["b"], "extra": lambda: "extra",
            "env": lambda: os.environ.get(arguments["name"], "<unset>"),
        }[name]()
        return self.answer(rid, result(value))

    def slow(self, rid: object, seconds: float) -> None:
        if not self.cancelled[rid].wait(seconds):
            self.answer(rid, result(f"slept {seconds}"))
        self.cancelled.pop(rid, None)


def result(value: object) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": str(value)}], "structuredContent": {"result": value},
            "isError": False}


def error(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": True}


if __name__ == "__main__":
    main()
