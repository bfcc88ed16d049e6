"""An SDK server (`MCPServer`, both eras) with resources, a template, a prompt and
completions, and tools that change them and say so: for the gateway's tests and bench.

    python resourceserver.py [--prefix P] [--log FILE] [--extra-file PATH] [--many N]

Resources: `note://P/alpha` and `note://P/beta` (text), the template `note://P/{name}` (any
name reads `note <name>`). Prompt `greet(name)`; completion of `name` offers `Ada`, `Alan`.
Tools: `echo(text)`; `say(text)` logs `text` at info (logger `notes`) during the call;
`touch(uri)` changes a note and publishes `ResourceUpdated` (2026-07-28 listen
streams) and `notifications/resources/updated` on a legacy session; `add_note(name)` adds a
resource and announces the list change.
`--log FILE`: every start appends `start PID` to FILE and every exit `exit PID` (as
spawnlog_server.py: a test counts spawns without asking monad). `--extra-file PATH`: a JSON
list of more note names read at start (a resource list that changes while monad has the
server stopped).
`--many N`: N more resources `note://P/many/<i>` and N more prompts `p<i>` (listings longer
than a page).
`--media`: three more resources, for the Studio's previews: `note://P/logo.png` (a 6×4 PNG
as a base64 blob), `note://P/data.bin` (1000 bytes of application/octet-stream) and
`note://P/page.html` (text/html whose markup would run script if rendered), and
`note://P/env` (text: the server's `NOTE_SECRET` variable, for redaction tests).
`--inert-extension`: declare an extension (`example.com/inert`, which adds nothing): monad
keeps every request to a server with extensions on the SDK's session, never its stdio
direct lane (daemon/sessions/direct.py), so a test can hold both paths to the same answers.
"""

from __future__ import annotations

import gc

if __name__ == "__main__":  # a server process: no cyclic collection while the SDK is imported
    gc.disable()

import argparse
import atexit
import json
import os
import struct
import warnings
import zlib

from mcp.server.extension import Extension
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts import Prompt
from mcp.server.mcpserver.resources import TextResource
from mcp_types import Completion, PromptReference

ap = argparse.ArgumentParser()
ap.add_argument("--prefix", default="r")
ap.add_argument("--log", default=None)
ap.add_argument("--extra-file", default=None)
ap.add_argument("--many", type=int, default=0)
ap.add_argument("--inert-extension", action="store_true")
ap.add_argument("--media", action="store_true")
args = ap.parse_args()
P = args.prefix


def _note_pid(what: str) -> None:
    with open(args.log, "a") as f:
        f.write(f"{what} {os.getpid()}\n")


if args.log:
    _note_pid("start")
    atexit.register(_note_pid, "exit")


class Inert(Extension):
    """Declared, adds nothing (`--inert-extension`)."""

    identifier = "example.com/inert"


app = MCPServer("resourceserver", instructions=f"Notes under note://{P}/.",
                extensions=[Inert()] if args.inert_extension else None)
notes = {"alpha": "the first note", "beta": "the second note"}
if args.extra_file and os.path.exists(args.extra_file):
    with open(args.extra_file) as f:
        notes.update({str(n): f"note {n}" for n in json.load(f)})
touched: dict[str, int] = {}


def _register(name: str) -> None:
    @app.resource(f"note://{P}/{name}", name=name, mime_type="text/plain")
    def read() -> str:
        return f"{notes[name]} (version {touched.get(name, 0)})"


for _name in list(notes):
    _register(_name)


for _i in range(args.many):
    app.add_resource(TextResource(uri=f"note://{P}/many/{_i:04d}", name=f"many{_i:04d}", text=f"many {_i}"))
    app.add_prompt(Prompt.from_function(lambda: "many", name=f"p{_i:04d}"))


def _png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A one-colour PNG (RFC 2083), built without an imaging library."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\0" + bytes(rgb) * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


if args.media:
    @app.resource(f"note://{P}/logo.png", name="logo", mime_type="image/png")
    def logo() -> bytes:
        return _png(6, 4, (200, 30, 30))

    @app.resource(f"note://{P}/data.bin", name="data", mime_type="application/octet-stream")
    def data() -> bytes:
        return bytes(range(256)) * 3 + bytes(232)

    @app.resource(f"note://{P}/page.html", name="page", mime_type="text/html")
    def page() -> str:
        return "<h1>Notes</h1><img src=x onerror=\"window.pwned=1\"><script>window.pwned=2</script>"

    @app.resource(f"note://{P}/env", name="env", mime_type="text/plain")
    def env() -> str:
        return f"NOTE_SECRET={os.environ.get('NOTE_SECRET', '')}"


@app.resource(f"note://{P}/dynamic/{{name}}", name="dynamic", mime_type="text/plain")
def dynamic(name: str) -> str:
    return f"note {name}"


@app.prompt()
def greet(name: str) -> str:
    """Greets someone by name."""
    return f"Hello, {name}!"


@app.completion()
async def complete(ref: object, argument: object, context: object) -> Completion | None:
    if isinstance(ref, PromptReference) and ref.name == "greet":
        value = getattr(argument, "value", "")
        return Completion(values=[n for n in ("Ada", "Alan") if n.startswith(value)])
    return None


@app.tool()
def echo(text: str) -> str:
    """Answer with the text (the bench's reference call)."""
    return text


@app.tool()
async def say(text: str, ctx: Context) -> str:
    """Send `text` as an info log message during the call, then answer."""
    with warnings.catch_warnings():  # logging is deprecated at 2026-07-28 (SEP-2577), still served
        warnings.simplefilter("ignore")
        await ctx.info(text, logger_name="notes")
    return "said"


@app.tool()
async def touch(uri: str, ctx: Context) -> str:
    """Change a note and tell its subscribers."""
    name = uri.rsplit("/", 1)[-1]
    touched[name] = touched.get(name, 0) + 1
    await ctx.notify_resource_updated(uri)
    return f"touched {uri}"


@app.tool()
async def add_note(name: str, ctx: Context) -> str:
    """Add a note resource and announce the list change."""
    notes[name] = f"note {name}"
    _register(name)
    await ctx.notify_resources_changed()
    return f"added {name}"


if __name__ == "__main__":
    # The SDK's import made ~1e5 lasting objects (pydantic models): kept out of every later
    # collection (`gc.freeze`), ~0.3 s of CPU less at each of hundreds of server starts a run.
    gc.freeze()
    gc.enable()
    app.run()
