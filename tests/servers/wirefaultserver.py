"""A stdio MCP server with faults on its wire and in its processes, as servers in the wild have
(issue 17): cut and oversize lines, bad UTF-8, freezes, children that outlive it, odd eras.

The SDK's lowlevel `Server` does the MCP part; this file owns only the stdio wire, so it
can bend what crosses it the way the public bug reports describe:

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
- `freeze()`: answers, then the server stops answering anything (the process lives on);
- `exit_leaving_child(pidfile)`: starts a child (same process group) that inherits stdout
  and sleeps, writes its pid to `pidfile`, answers, then exits: its stdout never ends;
- `local_ref(n, opts)`, `allof_ref(flag)`: inputSchemas using local `$ref`/`$defs` and
  `allOf: [{$ref}]`, as pydantic and FastMCP emit them; `dangling_ref(x)`: a `$ref` to
  nothing; `remote_ref(x)` (with `--remote-ref URL`): a `$ref` to a remote URL. Each
  answers with the arguments it received, as JSON.

Wire options:
- `--discover`: what to do with `server/discover` (`answer`: let the SDK answer, the
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
import gc
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

HALF_EMOJI = "@@HALF_EMOJI@@"
BAD_UTF8 = "@@BAD_UTF8@@"
GARBAGE = "@@GARBAGE@@"
BAD_SHAPE = "@@BAD-SHAPE@@"
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

    gc.disable()  # no cyclic collection while the SDK is imported (~0.3 s of CPU a start)
    import anyio
    import mcp_types as types
    from mcp.server import Server
    from mcp.shared.message import SessionMessage
    gc.freeze()  # the SDK's import made ~1e5 lasting objects: out of every later collection
    gc.enable()

    tools = [types.Tool.model_validate(t) for t in tool_defs(args.remote_ref)]

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    state = {"frozen": False}

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        name, arguments = params.name, params.arguments or {}
        text: str
        if name == "echo":
            text = str(arguments.get("text", ""))
        elif name == "pid":
            text = str(os.getpid())
        elif name == "big":
            text = "x" * int(float(arguments["mib"]) * 1024 * 1024)
        elif name == "emoji_cut":
            text = f"cut {HALF_EMOJI} here"
        elif name == "bad_utf8":
            text = f"cut {BAD_UTF8} here"
        elif name == "garbage":
            text = f"{GARBAGE} and the rest"
        elif name == "freeze":
            state["frozen"] = True
            text = "frozen from now on"
        elif name == "exit_leaving_child":
            child = subprocess.Popen(["sleep", "300"], stdin=subprocess.DEVNULL)  # stdout: ours
            Path(str(arguments["pidfile"])).write_text(str(child.pid))
            threading.Timer(0.3, os._exit, (3,)).start()
            text = f"exiting, child {child.pid} keeps stdout"
        else:
            text = json.dumps(arguments, sort_keys=True)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[types.Resource(uri="wild://fine", name="fine"),
                                                    types.Resource(uri="wild://bad-shape", name="bad-shape")])

    async def read_resource(ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        text = BAD_SHAPE if str(params.uri) == "wild://bad-shape" else "fine"
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=str(params.uri), text=text)])

    server = Server("wirefaultserver", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool,
                    on_list_resources=list_resources, on_read_resource=read_resource)
    log = open(args.log_requests, "a", buffering=1) if args.log_requests else None  # noqa: SIM115
    methods: dict[Any, str] = {}

    def encode(message: Any) -> bytes:
        data = message.model_dump(by_alias=True, exclude_unset=True, mode="json")
        if BAD_SHAPE in json.dumps(data.get("result") or {}):
            data["result"]["contents"] = "not a list"  # a shape resources/read does not define
        if args.id_last and "id" in data:
            data["id"] = data.pop("id")
        line = json.dumps(data, separators=(",", ":"))
        if GARBAGE in line:
            return line[:line.index(GARBAGE)].encode() + b"\n"
        line = line.replace(HALF_EMOJI, "\\ud83d")
        return line.encode().replace(BAD_UTF8.encode(), b"\xf0\x9f") + b"\n"

    async def serve() -> None:
        to_server, server_reads = anyio.create_memory_object_stream[SessionMessage | Exception](16)
        server_writes, from_server = anyio.create_memory_object_stream[SessionMessage](16)
        stdout = anyio.wrap_file(os.fdopen(1, "wb", buffering=0))

        async def write_line(data: bytes) -> None:
            await stdout.write(data)

        async def read_stdin() -> None:
            stdin = anyio.wrap_file(os.fdopen(0, "rb"))
            async with to_server:
                async for raw in stdin:
                    try:
                        message = types.jsonrpc_message_adapter.validate_json(raw, by_name=False)
                    except ValueError:
                        continue
                    if state["frozen"]:
                        continue  # wedged: alive, reading, answering nothing
                    if isinstance(message, types.JSONRPCRequest):
                        if log is not None:
                            log.write(message.method + "\n")
                        methods[message.id] = message.method
                        if args.refuse is not None and message.method in ("server/discover", "initialize"):
                            await write_line(json.dumps({"jsonrpc": "2.0", "id": message.id, "error": {
                                "code": -32603, "message": args.refuse}}).encode() + b"\n")
                            continue
                        if message.method == "server/discover" and args.discover != "answer":
                            if args.discover == "error":
                                await write_line(json.dumps({"jsonrpc": "2.0", "id": message.id, "error": {
                                    "code": -32601, "message": "Method not found"}}).encode() + b"\n")
                            elif args.discover == "old-sdk":
                                sys.stderr.write(old_sdk_warning(message.method))
                                sys.stderr.flush()
                                await write_line(json.dumps({"jsonrpc": "2.0", "id": message.id, "error": {
                                    "code": -32602, "message": "Invalid request parameters", "data": ""}}).encode()
                                                 + b"\n")
                                sys.stderr.write("hello from the server: serving\n")
                                sys.stderr.flush()
                            elif args.discover == "odd":
                                await write_line(json.dumps({"jsonrpc": "2.0", "id": message.id,
                                                             "result": {"hello": "world"}}).encode() + b"\n")
                            continue  # never: no answer at all
                    await to_server.send(SessionMessage(message))

        async def write_stdout() -> None:
            async with from_server:
                async for item in from_server:
                    message = item.message
                    await write_line(encode(message))
                    answered = getattr(message, "id", None)
                    if args.storm and methods.pop(answered, None) == "tools/list" and "result" in \
                            message.model_dump(by_alias=True, exclude_unset=True):
                        await write_line(b'{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}\n')

        async with anyio.create_task_group() as tg:
            tg.start_soon(read_stdin)
            tg.start_soon(write_stdout)
            await server.run(server_reads, server_writes, server.create_initialization_options())
            tg.cancel_scope.cancel()

    anyio.run(serve)
    time.sleep(0)


if __name__ == "__main__":
    main()
