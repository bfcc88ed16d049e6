"""A stdio MCP server with faults on its wire and in its processes, as servers in the wild have
(issue 17): cut and oversize lines, bad UTF-8, freezes, children that outlive it, odd eras.

The standard library only (~0.05 s of CPU a start; the SDK's import was ~1.5 s): it answers
as the SDK's lowlevel `Server` did (the same messages, era by era), and owns its stdio wire,
so it can bend what crosses it the way the public bug reports describe:

    python wirefaultserver.py [--discover answer|error|odd|never|old-sdk] [--id-last] [--storm]
                         [--log-requests PATH] [--setsid-child PIDFILE]
                         [--orphan-child PIDFILE] [--remote-ref URL]

Resources: `wild://fine` (a text), `wild://bad-shape` (its answer's `contents` is a string,
not a list: a result of no shape the protocol defines).

Tools:
- `echo(text)`, `pid()`;
- `big(mib)`: a text result of `mib` MiB (a response over a line limit);
- `emoji_cut()`: a result carrying a lone UTF-16 surrogate escape `\\ud83d` (an emoji
  cut in half), `bad_utf8()`: raw bytes of a cut UTF-8 sequence;
- `garbage()`: its response line is cut off mid-JSON (never valid), later ones are fine;
- `nested(depth)`: answers a JSON-RPC error whose `data` holds lists nested `depth` deep;
- `freeze()`: answers, then the server stops answering anything (the process lives on);
- `exit_leaving_child(pidfile)`: starts a child (same process group) that inherits stdout
  and sleeps, writes its pid to `pidfile`, answers, then exits: its stdout never ends;
- `local_ref(n, opts)`, `allof_ref(flag)`: inputSchemas using local `$ref`/`$defs` and
  `allOf: [{$ref}]`, as pydantic and FastMCP emit them; `dangling_ref(x)`: a `$ref` to
  nothing; `remote_ref(x)` (with `--remote-ref URL`): a `$ref` to a remote URL. Each
  answers with the arguments it received, as JSON.

Wire options:
- `--discover`: what to do with `server/discover` (`answer`: answer it, the
  2026-07-28 era; `error`: -32601; `odd`: a result that is no DiscoverResult; `never`:
  drop it; `old-sdk`: what a server on the Python SDK 1.x does, a root-logger warning on
  stderr quoting pydantic's 31 validation errors for `ClientRequest`, then -32602 "Invalid
  request parameters"). Anything but `answer` makes this a legacy (2025-11-25) server.
  With `old-sdk`, `hello from the server` is written to stderr before and after.
- `--id-last`: write `id` as the last key of a response (as the TypeScript SDK does).
- `--storm`: announce `notifications/tools/list_changed` after every tools/list answer.
- `--log-requests PATH`: append the method of every request received, one per line.
- `--refuse MESSAGE`: answer `server/discover` and `initialize` with the JSON-RPC error
  MESSAGE (-32603), as a server whose library's error text spans lines.
- `--setsid-child PIDFILE`: start a child that moves to its own session (`setsid`).
- `--orphan-child PIDFILE`: start a child that starts a `setsid` grandchild and exits,
  so the grandchild is orphaned (reparented away from this server).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

HALF_EMOJI = "@@HALF_EMOJI@@"
BAD_UTF8 = "@@BAD_UTF8@@"
GARBAGE = "@@GARBAGE@@"
BAD_SHAPE = "@@BAD-SHAPE@@"
HANDSHAKE = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
SLEEPER = "import os, sys, time\nos.setsid()\nopen(sys.argv[1], 'w').write(str(os.getpid()))\ntime.sleep(3600)\n"


def spawn_setsid_child(pidfile: str) -> None:
    subprocess.Popen([sys.executable, "-c", SLEEPER, pidfile], stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def spawn_orphan(pidfile: str) -> None:
    # The middle process exits at once: its setsid child is reparented (to a subreaper or init).
    middle = ("import subprocess, sys\nsubprocess.Popen([sys.executable, '-c', sys.argv[1], sys.argv[2]], "
              "stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n")
    subprocess.run([sys.executable, "-c", middle, SLEEPER, pidfile], check=True)


def tool_defs(remote_ref: str | None) -> list[dict[str, Any]]:
    obj = {"type": "object"}
    tools = [
        {"name": "echo", "inputSchema": {**obj, "properties": {"text": {"type": "string"}}, "required": ["text"]}},
        {"name": "pid", "inputSchema": obj},
        {"name": "big", "inputSchema": {**obj, "properties": {"mib": {"type": "number"}}, "required": ["mib"]}},
        {"name": "emoji_cut", "inputSchema": obj},
        {"name": "bad_utf8", "inputSchema": obj},
        {"name": "garbage", "inputSchema": obj},
        {"name": "nested", "inputSchema": {**obj, "properties": {"depth": {"type": "integer"}}, "required": ["depth"]}},
        {"name": "freeze", "inputSchema": obj},
        {"name": "exit_leaving_child", "inputSchema": {**obj, "properties": {"pidfile": {"type": "string"}}}},
        # The shape pydantic gives `def local_ref(n: Count, opts: Opts)`.
        {"name": "local_ref", "inputSchema": {
            **obj, "$defs": {"Count": {"type": "integer", "minimum": 0},
                             "Opts": {"type": "object", "properties": {"deep": {"type": "boolean"}}}},
            "properties": {"n": {"$ref": "#/$defs/Count"}, "opts": {"$ref": "#/$defs/Opts"}},
            "required": ["n"]}},
        {"name": "allof_ref", "inputSchema": {
            **obj, "definitions": {"Flag": {"type": "boolean"}},
            "properties": {"flag": {"allOf": [{"$ref": "#/definitions/Flag"}], "description": "a flag"}},
            "required": ["flag"]}},
        {"name": "dangling_ref", "inputSchema": {
            **obj, "properties": {"x": {"$ref": "#/$defs/Missing"}}, "required": ["x"]}},
    ]
    if remote_ref:
        tools.append({"name": "remote_ref", "inputSchema": {
            **obj, "properties": {"x": {"$ref": remote_ref}}, "required": ["x"]}})
    return tools


# The request types of the Python SDK 1.x's `ClientRequest` union: pydantic reports one
# literal error per member for a method none of them has.
_OLD_REQUESTS = ("PingRequest", "InitializeRequest", "CompleteRequest", "SetLevelRequest", "GetPromptRequest",
                 "ListPromptsRequest", "ListResourcesRequest", "ListResourceTemplatesRequest", "ReadResourceRequest",
                 "SubscribeRequest", "UnsubscribeRequest", "CallToolRequest", "ListToolsRequest")


def old_sdk_warning(method: str) -> str:
    """The stderr text SDK 1.x's `BaseSession` writes (`logging.warning(f"Failed to validate
    request: {e}")`, the root logger's default format) for a request of unknown `method`."""
    blocks = []
    for name in _OLD_REQUESTS:
        blocks.append(f"{name}.method\n  Input should be '{name[:-7].lower()}' [type=literal_error, "
                      f"input_value='{method}', input_type=str]\n    For further information visit "
                      f"https://errors.pydantic.dev/2.11/v/literal_error")
    blocks += [f"{name}.params.x\n  Field required [type=missing, input_value={{}}, input_type=dict]"
               for name in (_OLD_REQUESTS * 2)[:18]]  # 13 + 18: the 31 a real one reports
    n = len(blocks)
    return f"WARNING:root:Failed to validate request: {n} validation errors for ClientRequest\n" + \
        "\n".join(blocks) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--discover", choices=("answer", "error", "odd", "never", "old-sdk"), default="answer")
    ap.add_argument("--id-last", action="store_true")
    ap.add_argument("--storm", action="store_true")
    ap.add_argument("--log-requests", default=None)
    ap.add_argument("--setsid-child", default=None)
    ap.add_argument("--orphan-child", default=None)
    ap.add_argument("--remote-ref", default=None)
    ap.add_argument("--refuse", default=None, metavar="MESSAGE")
    args = ap.parse_args()
    if args.discover == "old-sdk":
        print("hello from the server: starting", file=sys.stderr, flush=True)
    if args.setsid_child:
        spawn_setsid_child(args.setsid_child)
    if args.orphan_child:
        spawn_orphan(args.orphan_child)

    info = {"name": "wirefaultserver", "version": "1.0"}
    capabilities = {"resources": {"listChanged": False, "subscribe": False}, "tools": {"listChanged": False}}
    tools = tool_defs(args.remote_ref)
    log = open(args.log_requests, "a", buffering=1) if args.log_requests else None  # noqa: SIM115
    stdout = os.fdopen(1, "wb", buffering=0)
    frozen = False

    def write_line(data: bytes) -> None:
        stdout.write(data)

    def encode(data: dict[str, Any]) -> bytes:
        if BAD_SHAPE in json.dumps(data.get("result") or {}):
            data["result"]["contents"] = "not a list"  # a shape resources/read does not define
        if args.id_last and "id" in data:
            data["id"] = data.pop("id")
        line = json.dumps(data, separators=(",", ":"))
        if GARBAGE in line:
            return line[:line.index(GARBAGE)].encode() + b"\n"
        line = line.replace(HALF_EMOJI, "\\ud83d")
        return line.encode().replace(BAD_UTF8.encode(), b"\xf0\x9f") + b"\n"

    def error(rid: Any, code: int, message: str, **data: Any) -> bytes:
        return json.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message, **data}}).encode() \
            + b"\n"

    def call_tool(name: str, arguments: dict[str, Any]) -> str:
        nonlocal frozen
        if name == "echo":
            return str(arguments.get("text", ""))
        if name == "pid":
            return str(os.getpid())
        if name == "big":
            return "x" * int(float(arguments["mib"]) * 1024 * 1024)
        if name == "emoji_cut":
            return f"cut {HALF_EMOJI} here"
        if name == "bad_utf8":
            return f"cut {BAD_UTF8} here"
        if name == "garbage":
            return f"{GARBAGE} and the rest"
        if name == "freeze":
            frozen = True
            return "frozen from now on"
        if name == "exit_leaving_child":
            child = subprocess.Popen(["sleep", "300"], stdin=subprocess.DEVNULL)  # stdout: ours
            Path(str(arguments["pidfile"])).write_text(str(child.pid))
            threading.Timer(0.3, os._exit, (3,)).start()
            return f"exiting, child {child.pid} keeps stdout"
        return json.dumps(arguments, sort_keys=True)

    # As the SDK's lowlevel `Server` answers: the result's fields in order, `_meta` last; a
    # request carrying the 2026-07-28 `_meta` is of that era (its results say their type and
    # server; listings and reads their cache hints), any other of the handshake's.
    for raw in sys.stdin.buffer:
        try:
            message = json.loads(raw)
        except ValueError:
            continue
        if frozen:
            continue  # wedged: alive, reading, answering nothing
        if not isinstance(message, dict) or "method" not in message or "id" not in message:
            continue  # a notification (initialized, cancelled): nothing to answer
        method, rid, params = message["method"], message["id"], message.get("params") or {}
        if log is not None:
            log.write(method + "\n")
        if args.refuse is not None and method in ("server/discover", "initialize"):
            write_line(error(rid, -32603, args.refuse))
            continue
        if method == "server/discover" and args.discover != "answer":
            if args.discover == "error":
                write_line(error(rid, -32601, "Method not found"))
            elif args.discover == "old-sdk":
                sys.stderr.write(old_sdk_warning(method))
                sys.stderr.flush()
                write_line(error(rid, -32602, "Invalid request parameters", data=""))
                sys.stderr.write("hello from the server: serving\n")
                sys.stderr.flush()
            elif args.discover == "odd":
                write_line(json.dumps({"jsonrpc": "2.0", "id": rid, "result": {"hello": "world"}}).encode() + b"\n")
            continue  # never: no answer at all
        modern = method == "server/discover" or "io.modelcontextprotocol/protocolVersion" in (params.get("_meta") or {})
        cache = {"cacheScope": "private", "ttlMs": 0} if modern else {}
        result: dict[str, Any]
        if method == "server/discover":
            result = {"capabilities": capabilities, "supportedVersions": ["2026-07-28"], **cache}
        elif method == "initialize":
            asked = params.get("protocolVersion")
            result = {"capabilities": capabilities, "serverInfo": info,
                      "protocolVersion": asked if asked in HANDSHAKE else HANDSHAKE[0]}
        elif method == "tools/list":
            result = {"tools": [{"inputSchema": t["inputSchema"], "name": t["name"]} for t in tools], **cache}
        elif method == "tools/call":
            text = call_tool(str(params.get("name")), params.get("arguments") or {})
            result = {"content": [{"text": text, "type": "text"}], "isError": False}
            if params.get("name") == "nested":  # written by hand: json.dumps stops at ~1000 levels
                depth = int((params.get("arguments") or {})["depth"])
                write_line(f'{{"jsonrpc":"2.0","id":{json.dumps(rid)},"error":{{"code":-32603,'
                           f'"message":"nested too deep to say","data":{{"deep":{"[" * depth}{"]" * depth}}}}}}}\n'
                           .encode())
                continue
        elif method == "resources/list":
            result = {"resources": [{"name": "fine", "uri": "wild://fine"},
                                    {"name": "bad-shape", "uri": "wild://bad-shape"}], **cache}
        elif method == "resources/read":
            uri = str(params.get("uri"))
            result = {"contents": [{"text": BAD_SHAPE if uri == "wild://bad-shape" else "fine", "uri": uri}], **cache}
        elif method == "ping" and not modern:
            result = {}
        else:
            write_line(encode({"jsonrpc": "2.0", "id": rid,
                               "error": {"code": -32601, "message": "Method not found", "data": method}}))
            continue
        if modern:
            result.update(resultType="complete")
        result = dict(sorted(result.items()))
        if modern:
            result["_meta"] = {"io.modelcontextprotocol/serverInfo": info}
        write_line(encode({"jsonrpc": "2.0", "id": rid, "result": result}))
        if args.storm and method == "tools/list":
            write_line(b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n')

if __name__ == "__main__":
    main()
