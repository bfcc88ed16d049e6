"""The Studio: the web page for MCP servers, served by the supervisor on 127.0.0.1 (docs/studio.md).

- `daemon/api/studio.py` (not here): what the control API gains (`POST /v1/studio` mints a one-time login URL,
  `GET /v1/journal`, `…/{name}/authorize`, the Tools view, the transcript's calls, MCP
  Apps), on the unix socket and the Studio's port alike;
- `service`: the Studio itself: the listener on 127.0.0.1:PORT, which serves the control
  API's own Starlette app (same routes, same JSON) behind the locks, plus the event stream
  and the page;
- `locks`: the listener's locks (Host, one-time token → cookie, Origin, CSP);
- `events`: the event bus and `GET /v1/events` (server-sent events);
- `authorize`: `monad mcp authorize`'s flow run by the supervisor for the page;
- `transcript`: calls, approvals and Tasks as events, and the calls' arguments kept in memory;
- `apps`: the MCP Apps host's supervisor side (the app's resource, its requests, the client
  extension monad advertises); `csp`: the policy an app runs under; `sandbox`: the sandbox
  proxy's port and its locks (`sandbox/proxy.html`);
- `scrub`: every JSON answer and event the page gets passes the redaction function;
- `static/`: the page (HTML, CSS, ES modules; no build step, nothing from a CDN).

Everything here runs in the supervisor; the CLI's `monad studio` only talks to `POST /v1/studio`.
The default port both programs agree on is in `core/studio.py`.
"""
