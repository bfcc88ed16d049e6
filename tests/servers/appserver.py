"""An MCP Apps test server (extension `io.modelcontextprotocol/ui`) on the SDK's `mcp.server.apps`.

    python appserver.py [--declared ORIGIN] [--undeclared ORIGIN] [--link URL] [--name NAME]

Its app (`ui://probe/app.html`) is a probe: a page that reports, as text in its own DOM,
what it saw — its origin, every message the host sent it in order, a fetch to `--declared`
(listed in its `_meta.ui.csp.connectDomains`) and one to `--undeclared` (not listed), and
the answers to the requests its buttons make (`tools/call` of each tool below, `ui/open-link`
of `--link` and of a `javascript:` URL, a malformed message).

Tools:
- `show(text, seconds=0)`: renders with the app (visibility: model and app); waits
  `seconds`, then answers `text` and whether the client advertised MCP Apps;
- `app_only(n)`: visibility ["app"]: for the app, never for an agent;
- `model_only()`: visibility ["model"]: an app may not call it;
- `gated()`: visibility ["model", "app"], meant to be left out of autoApproveTools;
- `kinds()` (no app): one result with every content kind (text, image, audio, a resource
  link, an embedded resource) and structuredContent; `broken()`: a tool error (isError);
- `form(name, size, count=3, ratio=0.5, loud=False, tags=None, where=None)`: echoes its
  arguments as JSON; pydantic puts `size` (an enum) and `where` (an object) behind local
  `$ref`s into `$defs`, as servers in the wild do.
"""

from __future__ import annotations

import gc

if __name__ == "__main__":  # a server process: no cyclic collection while the SDK is imported
    gc.disable()

import argparse
import json
from enum import StrEnum

import anyio
import mcp_types as types
from mcp.server import MCPServer
from mcp.server.apps import Apps, ResourceCsp, client_supports_apps
from mcp.server.mcpserver import Context
from pydantic import BaseModel

APP_URI = "ui://probe/app.html"


class Size(StrEnum):
    small = "small"
    large = "large"


class Point(BaseModel):
    x: int
    y: int

# 1x1 PNG and a 4-sample 8 kHz mono WAV: the smallest real image and audio.
PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")
WAV = "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQQAAACAgICA"

APP = """<!doctype html>
<html><head><meta charset="utf-8"><title>probe</title>
<style>body{font:14px system-ui;margin:8px} dd{margin:0 0 4px 12px;font-family:monospace}</style></head>
<body>
<h1>Probe app</h1>
<dl>
  <dt>origin</dt><dd id="origin"></dd>
  <dt>handshake</dt><dd id="handshake"></dd>
  <dt>tool input</dt><dd id="input"></dd>
  <dt>tool result</dt><dd id="result"></dd>
  <dt>cancelled</dt><dd id="cancelled"></dd>
  <dt>host</dt><dd id="host"></dd>
  <dt>declared fetch</dt><dd id="declared"></dd>
  <dt>undeclared fetch</dt><dd id="undeclared"></dd>
  <dt>csp violations</dt><dd id="violations"></dd>
  <dt>answers</dt><dd id="answers"></dd>
</dl>
<button id="app_only">Call app_only</button>
<button id="model_only">Call model_only</button>
<button id="gated">Call gated</button>
<button id="link">Open link</button>
<button id="badlink">Open bad link</button>
<button id="malformed">Send malformed</button>
<script>
"use strict";
const CONFIG = __CONFIG__;
const seen = [];
const pending = new Map();
let nextId = 1;
let initialized = false;
const show = (id, text) => { document.getElementById(id).textContent = text; };
const note = (what) => { seen.push(what); show("handshake", seen.join(" > ")); };
const answers = [];
const answer = (what) => { answers.push(what); show("answers", answers.join(" | ")); };
show("origin", String(window.origin));

function request(method, params) {
  const id = nextId++;
  window.parent.postMessage({ jsonrpc: "2.0", id, method, params }, "*");
  return new Promise((resolve) => pending.set(id, resolve));
}
function notify(method, params) {
  window.parent.postMessage({ jsonrpc: "2.0", method, params: params || {} }, "*");
}
function outcome(message) {
  if (message.error) return `error ${message.error.code}: ${message.error.message}`;
  const text = ((message.result || {}).content || []).map((c) => c.text || "").join(" ");
  return "ok" + (text ? `: ${text}` : "");
}

document.addEventListener("securitypolicyviolation", (e) => {
  const el = document.getElementById("violations");
  el.textContent += `${e.violatedDirective} ${e.blockedURI}; `;
});

window.addEventListener("message", (event) => {
  const m = event.data;
  if (!m || typeof m !== "object") return;
  if (m.id !== undefined && !m.method) {
    const resolve = pending.get(m.id);
    if (resolve) { pending.delete(m.id); resolve(m); }
    else answer(`answer to ${m.id}: ${outcome(m)}`);
    return;
  }
  if (!initialized) note("BEFORE-INITIALIZED:" + m.method);
  if (m.method === "ui/notifications/tool-input") {
    note("tool-input");
    show("input", JSON.stringify(m.params.arguments));
  } else if (m.method === "ui/notifications/tool-result") {
    note("tool-result");
    const text = (m.params.content || []).map((c) => c.text || "").join(" ");
    show("result", text + (m.params.isError ? " (isError)" : ""));
  } else if (m.method === "ui/notifications/tool-cancelled") {
    note("tool-cancelled");
    show("cancelled", m.params.reason || "");
  } else if (m.method === "ui/resource-teardown") {
    note("teardown");
    notify("notifications/message", { level: "info", data: "teardown received: " + m.params.reason });
    window.parent.postMessage({ jsonrpc: "2.0", id: m.id, result: {} }, "*");
  } else if (m.method) {
    note(m.method);
  }
});

async function fetchOne(id, url) {
  if (!url) { show(id, "not asked"); return; }
  try {
    const response = await fetch(url, { mode: "cors", cache: "no-store" });
    show(id, `ok ${response.status}: ${await response.text()}`);
  } catch (e) {
    show(id, `failed: ${e.name}`);
  }
}

async function start() {
  const init = await request("ui/initialize", {
    protocolVersion: "2026-01-26",
    appInfo: { name: "probe", version: "1" },
    appCapabilities: { availableDisplayModes: ["inline"] },
  });
  if (init.error) { note("initialize-error"); return; }
  note("initialize-result");
  const r = init.result;
  show("host", `${r.hostInfo.name} ${r.protocolVersion} tool=${(r.hostContext.toolInfo || {}).tool?.name} ` +
       `openLinks=${"openLinks" in r.hostCapabilities} csp=${JSON.stringify(r.hostCapabilities.sandbox.csp)}`);
  initialized = true;
  notify("ui/notifications/initialized");
  note("sent-initialized");
  notify("ui/notifications/size-changed", { width: 600, height: document.body.scrollHeight + 20 });
  await fetchOne("declared", CONFIG.declared && CONFIG.declared + "/declared.txt");
  await fetchOne("undeclared", CONFIG.undeclared && CONFIG.undeclared + "/undeclared.txt");
}

const call = (name, args) => async () =>
  answer(`${name}: ${outcome(await request("tools/call", { name, arguments: args }))}`);
document.getElementById("app_only").onclick = call("app_only", { n: 2 });
document.getElementById("model_only").onclick = call("model_only", {});
document.getElementById("gated").onclick = call("gated", {});
document.getElementById("link").onclick = async () =>
  answer(`link: ${outcome(await request("ui/open-link", { url: CONFIG.link }))}`);
document.getElementById("badlink").onclick = async () =>
  answer(`badlink: ${outcome(await request("ui/open-link", { url: "javascript:alert(1)" }))}`);
document.getElementById("malformed").onclick = () => {
  window.parent.postMessage({ jsonrpc: "1.0", id: 99, method: 5 }, "*");
};
start();
</script>
</body></html>
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", default="appserver")
    ap.add_argument("--declared", default=None, help="an origin listed in the app's connectDomains")
    ap.add_argument("--undeclared", default=None, help="an origin the app tries but did not declare")
    ap.add_argument("--link", default="https://example.com/docs")
    args = ap.parse_args()

    apps = Apps()
    config = json.dumps({"declared": args.declared, "undeclared": args.undeclared, "link": args.link})

    @apps.tool(resource_uri=APP_URI, description="Show text in the probe app.", structured_output=False)
    async def show(ctx: Context, text: str, seconds: float = 0.0) -> str:
        await anyio.sleep(seconds)
        return f"{text} (apps: {'yes' if client_supports_apps(ctx) else 'no'})"

    @apps.tool(resource_uri=APP_URI, visibility=["app"], description="For the app only.", structured_output=False)
    def app_only(n: int) -> str:
        return f"app_only {n}"

    @apps.tool(resource_uri=APP_URI, visibility=["model"], description="For agents only.", structured_output=False)
    def model_only() -> str:
        return "model_only"

    @apps.tool(resource_uri=APP_URI, description="Needs an approval.", structured_output=False)
    def gated() -> str:
        return "gated ran"

    csp = ResourceCsp(connect_domains=[args.declared]) if args.declared else None
    apps.add_html_resource(APP_URI, APP.replace("__CONFIG__", config), name="probe", csp=csp)
    mcp = MCPServer(args.name, extensions=[apps])  # built after registering: it consumes the extension

    def kinds() -> types.CallToolResult:
        """Every content kind at once, with structuredContent."""
        return types.CallToolResult(content=[
            types.TextContent(type="text", text="plain text"),
            types.ImageContent(type="image", data=PNG, mime_type="image/png"),
            types.AudioContent(type="audio", data=WAV, mime_type="audio/wav"),
            types.ResourceLink(type="resource_link", uri="https://example.com/report", name="report",
                               mime_type="text/html"),
            types.EmbeddedResource(type="resource", resource=types.TextResourceContents(
                uri="file:///notes/embedded.txt", mime_type="text/plain", text="embedded note")),
        ], structured_content={"answer": 42, "items": ["a", "b"]})

    def broken() -> types.CallToolResult:
        """Always a tool error."""
        return types.CallToolResult(content=[types.TextContent(type="text", text="it broke")], is_error=True)

    def form(name: str, size: Size, count: int = 3, ratio: float = 0.5, loud: bool = False,
             tags: list[str] | None = None, where: Point | None = None) -> str:
        """Echo the arguments as JSON (an enum and an object behind local `$ref`s, defaults)."""
        return json.dumps({"name": name, "size": size, "count": count, "ratio": ratio, "loud": loud, "tags": tags,
                           "where": where.model_dump() if where else None}, sort_keys=True)

    for fn in (kinds, broken, form):
        mcp.add_tool(fn, structured_output=False)
    mcp.run()


if __name__ == "__main__":
    # The SDK's import made ~1e5 lasting objects (pydantic models): kept out of every later
    # collection (`gc.freeze`), ~0.3 s of CPU less at each of hundreds of server starts a run.
    gc.freeze()
    gc.enable()
    main()
