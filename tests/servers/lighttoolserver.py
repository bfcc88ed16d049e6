"""toolserver.py's tools and flags on the standard library: ~0.05 s of CPU a start, not ~1.5 s.

    python lighttoolserver.py [--names] [--many N] [--page-size K] [--repeat-cursor]
                              [--tools-file PATH] [--marker-dir DIR] [--name NAME] [--progress]
                              [--rich-schema] [--big] [--crash] [--token T]

The same tools, flags and wire as toolserver.py (the SDK's lowlevel `Server`; see its
docstring for each tool): what that server writes for each request, in both eras, is what this
one writes — tests/servers/test_lighttoolserver.py holds the two equal over one scripted session.
For tests whose subject is monad's handling of a plain tool server, not the SDK server's own
behaviour. Newline-delimited JSON-RPC on stdin/stdout; `server/discover` (MCP 2026-07-28,
basic/lifecycle) and the `initialize` handshake up to 2025-11-25; list changes on a
`subscriptions/listen` stream at 2026-07-28, as `notifications/tools/list_changed` before;
`slow` and `steps` run on threads, and one cancelled (`notifications/cancelled`) is never
answered (basic/utilities/cancellation).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import traceback
from pathlib import Path
from typing import Any

MODERN = "2026-07-28"
HANDSHAKE = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
LONG_NAME = "a_tool_with_a_very_long_name_" + "x" * 41  # 70 characters
# The conformance suite's `json_schema_2020_12_tool` fixture (SEP-1613, SEP-2106) plus keywords
# whose values are easy to lose on the way: nulls (`default`, `const`), `$comment`, vendor
# `x-` keywords, an `x-mcp-header` annotation (SEP-2243), `$id`-less `$ref`s, `prefixItems`,
# `dependentRequired`, `unevaluatedProperties`.
RICH_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$comment": "kept verbatim",
    "type": "object",
    "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                          "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
    "properties": {
        "name": {"type": "string", "x-mcp-header": "Name"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string", "format": "email"},
        "note": {"type": ["string", "null"], "default": None},
        "nothing": {"const": None},
        "pair": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "items": False},
        "x-vendor": {"type": "string", "x-internal": True},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "dependentRequired": {"phone": ["name"]},
    "unevaluatedProperties": False,
    "additionalProperties": False,
}
WORDS = ["plain", "answer", "result", "value", "server", "tool", "data", "12345", "alpha", "beta",
         "gamma", "delta", "the", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog"]


def schema(props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required or list(props)}


def tool(name: str, description: str, input_schema: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "description": description, "inputSchema": input_schema}


def tool_defs(args: argparse.Namespace, shape: dict[str, Any]) -> list[dict[str, Any]]:
    """toolserver.py's list, in its order."""
    tools = [
        tool("echo", shape["description"], schema({shape["param"]: {"type": "string"}})),
        tool("add", "Add two integers.", schema({"a": {"type": "integer"}, "b": {"type": "integer"}})),
        tool("kinds", "Echo typed arguments as JSON.", schema({"flag": {"type": "boolean"}, "ratio": {"type": "number"},
                                                               "items": {"type": "array"}, "opts": {"type": "object"}},
                                                              ["flag"])),
        tool("fail", "Always a tool error.", schema({"message": {"type": "string"}, "log": {"type": "string"}},
                                                    ["message"])),
        tool("slow", "Sleep, then answer.", schema({"seconds": {"type": "number"}})),
        tool("mutate", "Change echo's description, then announce the change.",
             schema({"description": {"type": "string"}})),
    ]
    if args.progress:
        tools.append(tool("steps", "Report progress n times, then answer.",
                          schema({"n": {"type": "integer"}, "delay": {"type": "number"}}, ["n"])))
    if args.rich_schema:
        tools.append(tool("rich", "JSON Schema 2020-12 keywords.", RICH_SCHEMA))
    if args.big:
        tools.append(tool("big", "Answer kib KiB of words.", schema({"kib": {"type": "integer"}})))
    if args.crash:
        tools.append(tool("exit", "Write log to stderr, then exit with status.",
                          schema({"status": {"type": "integer"}, "log": {"type": "string"}}, ["status"])))
    if shape.get("extra"):
        tools.append(tool("extra", "An added tool.", schema({})))
    if args.names:
        for n in ("get.user", "get_user", "Dockerfile problems scanner", LONG_NAME):
            tools.append(tool(n, f"Answers with its name: {n}", schema({})))
    for i in range(args.many):
        tools.append(tool(f"t{i:03d}", f"Tool number {i}.", schema({})))
    return tools


def options() -> tuple[argparse.Namespace, dict[str, Any]]:
    """The command line both tool servers take (this one and toolserver.py, the SDK's), and
    the echo tool's shape: its description, parameter name and extras (`--tools-file`)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", default="toolserver")
    ap.add_argument("--names", action="store_true")
    ap.add_argument("--many", type=int, default=0)
    ap.add_argument("--page-size", type=int, default=40)
    ap.add_argument("--repeat-cursor", action="store_true")
    ap.add_argument("--tools-file", default=None)
    ap.add_argument("--marker-dir", default=None)
    ap.add_argument("--progress", action="store_true")
    ap.add_argument("--rich-schema", action="store_true")
    ap.add_argument("--big", action="store_true")
    ap.add_argument("--crash", action="store_true")
    ap.add_argument("--token", default=None, help="ignored: a secret-looking argument for redaction tests")
    args = ap.parse_args()
    shape: dict[str, Any] = {"description": "Echo the text back.", "param": "text", "extra": False}
    if args.tools_file and os.path.exists(args.tools_file):
        shape.update(json.loads(Path(args.tools_file).read_text()))
    return args, shape


def main() -> None:
    args, shape = options()
    Server(args, shape["param"], tool_defs(args, shape)).serve()


class Server:
    """One stdio session, its requests answered as the SDK's lowlevel `Server` answers them."""

    def __init__(self, args: argparse.Namespace, param: str, tools: list[dict[str, Any]]) -> None:
        self.args, self.param, self.tools = args, param, tools
        self.info = {"name": args.name, "version": ""}
        self.marker = Path(args.marker_dir) if args.marker_dir else None
        self.modern = False
        self.lock = threading.Lock()  # one writer at a time: `slow` and `steps` answer from threads
        self.cancelled: dict[object, threading.Event] = {}  # request id -> set when cancelled
        self.listens: list[object] = []  # ids of the `subscriptions/listen` streams asking for tool changes

    def send(self, message: dict[str, Any]) -> None:
        with self.lock:
            sys.stdout.write(json.dumps(message) + "\n")
            sys.stdout.flush()

    def answer(self, rid: object, result: dict[str, Any]) -> None:
        if self.modern:  # 2026-07-28: every result says its type and which server sent it
            result = {**result, "resultType": "complete", "_meta": {"io.modelcontextprotocol/serverInfo": self.info}}
        self.send({"jsonrpc": "2.0", "id": rid, "result": result})

    def not_found(self, rid: object, method: str) -> None:
        self.send({"jsonrpc": "2.0", "id": rid,
                   "error": {"code": -32601, "message": "Method not found", "data": method}})

    def serve(self) -> None:
        for line in sys.stdin:
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            method, rid, params = msg.get("method"), msg.get("id"), msg.get("params") or {}
            if method == "notifications/cancelled":
                self.cancelled.get(params.get("requestId"), threading.Event()).set()
                if params.get("requestId") in self.listens:
                    self.listens.remove(params["requestId"])
            if rid is None or method is None:
                continue  # a notification (initialized, cancelled): nothing to answer
            cache = {"ttlMs": 0, "cacheScope": "private"}
            capabilities = {"tools": {"listChanged": True}}
            if method == "server/discover":
                self.modern = True
                self.answer(rid, {"supportedVersions": [MODERN], "capabilities": capabilities, **cache})
            elif method == "initialize":
                asked = params.get("protocolVersion")
                self.answer(rid, {"protocolVersion": asked if asked in HANDSHAKE else HANDSHAKE[0],
                                  "capabilities": capabilities, "serverInfo": self.info})
            elif method == "subscriptions/listen" and self.modern:
                wanted = params.get("notifications") or {}
                if wanted.get("toolsListChanged"):
                    self.listens.append(rid)
                self.send({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                           "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": rid},
                                      "notifications": wanted}})
            elif method == "tools/list":
                self.answer(rid, {**self.page(params.get("cursor")), **(cache if self.modern else {})})
            elif method == "tools/call":
                name, arguments = str(params.get("name")), params.get("arguments") or {}
                token = (params.get("_meta") or {}).get("progressToken")
                if name in ("slow", "steps"):
                    self.cancelled[rid] = threading.Event()
                    threading.Thread(target=getattr(self, name), args=(rid, arguments, token), daemon=True).start()
                else:
                    self.call_inline(rid, name, arguments)
            elif method == "ping" and not self.modern:
                self.answer(rid, {})
            else:
                self.not_found(rid, method)

    def call_inline(self, rid: object, name: str, arguments: dict[str, Any]) -> None:
        try:
            result = self.call(name, arguments)
        except Exception as e:  # a handler's exception, logged: its text (code 0) before 2026-07-28, not after
            traceback.print_exc()
            error = ({"code": -32603, "message": "Internal server error"} if self.modern
                     else {"code": 0, "message": str(e)})
            self.send({"jsonrpc": "2.0", "id": rid, "error": error})
        else:
            self.answer(rid, result)

    def page(self, cursor: str | None) -> dict[str, Any]:
        if self.args.repeat_cursor:
            return {"tools": self.tools[:2], "nextCursor": "again"}
        start = int(cursor) if cursor else 0
        end = start + self.args.page_size
        return {"tools": self.tools[start:end], **({"nextCursor": str(end)} if end < len(self.tools) else {})}

    def call(self, name: str, a: dict[str, Any]) -> dict[str, Any]:
        if (result := plain_call(name, a, self.param)) is not None:
            return result
        if name == "mutate":
            # A rug pull at runtime: the tool set changes under a live session.
            self.tools[0] = {**self.tools[0], "description": str(a.get("description"))}
            if self.modern:
                for listen in self.listens:
                    self.send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                               "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": listen}}})
            else:
                self.send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            return text("mutated")
        if name in {t["name"] for t in self.tools}:
            return text(name)
        return text(f"unknown tool {name}", error=True)

    def slow(self, rid: object, a: dict[str, Any], token: object) -> None:
        if self.marker:
            (self.marker / "slow.started").write_text("1")
        if self.cancelled[rid].wait(float(a.get("seconds", 1))):
            if self.marker:
                (self.marker / "slow.cancelled").write_text("1")
        else:
            self.answer(rid, text(f"slept {a.get('seconds')}"))
        self.cancelled.pop(rid, None)

    def steps(self, rid: object, a: dict[str, Any], token: object) -> None:
        n = int(a.get("n", 3))
        for i in range(1, n + 1):
            if token is not None:  # progress only for a caller that asked (basic/utilities/progress)
                self.send({"jsonrpc": "2.0", "method": "notifications/progress",
                           "params": {"progressToken": token, "progress": float(i), "total": float(n),
                                      "message": f"step {i}"}})
            if self.cancelled[rid].wait(float(a.get("delay", 0.05))):
                self.cancelled.pop(rid, None)
                return
        self.answer(rid, text(f"did {n} steps"))
        self.cancelled.pop(rid, None)


def text(s: str, *, error: bool = False) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": s}], "isError": error}


def plain_call(name: str, a: dict[str, Any], param: str) -> dict[str, Any] | None:
    """The result (wire shape) of a tool that needs no session (echo, add, kinds, rich, fail,
    exit, big): the one body both servers answer with (toolserver.py validates it as the SDK's
    `CallToolResult`); None for any other tool."""
    if name == "echo":
        return text(str(a.get(param, "")))
    if name == "add":
        return text(str(a["a"] + a["b"]))
    if name in ("kinds", "rich"):
        return text(json.dumps(a, sort_keys=True))
    if name == "fail":
        if a.get("log"):  # what it logs before the opaque answer, as a server's traceback
            sys.stderr.write(str(a["log"]) + "\n")
            sys.stderr.flush()
        return text(str(a.get("message", "failed")), error=True)
    if name == "exit":
        sys.stderr.write(str(a.get("log", "")) + "\n")
        sys.stderr.flush()
        os._exit(int(a["status"]))  # no answer, no cleanup: as a crash
    if name == "big":
        out: list[str] = []
        size = 0
        while size < int(a.get("kib", 1024)) * 1024:
            out.append(WORDS[len(out) % len(WORDS)] + str(len(out) % 97))
            size += len(out[-1]) + 1
        return text(" ".join(out))
    return None


if __name__ == "__main__":
    main()
