"""The Studio: the web page for MCP servers, served by the supervisor on 127.0.0.1 (docs/studio.md).

- `daemon/api/studio.py` (not here): what the control API gains for it, on the unix socket and
  the Studio's port alike (`POST /v1/studio` mints a one-time login URL);
- `service`: the listener on 127.0.0.1:PORT, serving the control API's own Starlette app behind
  the locks, plus the event stream and the page;
- `locks`: the listener's locks (Host, one-time token → cookie, Origin, CSP);
- `events`: the event bus and `GET /v1/events` (server-sent events);
- `authorize`: `monad mcp authorize`'s flow run by the supervisor for the page;
- `transcript`: calls, approvals and Tasks as events, and the calls' arguments kept in memory;
- `apps`, `csp`, `sandbox`: the MCP Apps host's supervisor side, an app's policy, and the
  sandbox proxy's port (`sandbox/proxy.html`);
- `scrub`: every JSON answer and event the page gets passes the redaction function;
- `static/`: the page (HTML, CSS, ES modules; no build step, nothing from a CDN).

The CLI's `monad studio` only talks to `POST /v1/studio`; the default port is in `core/studio.py`.
"""
