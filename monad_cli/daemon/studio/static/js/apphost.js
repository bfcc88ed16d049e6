// The MCP Apps host (extension io.modelcontextprotocol/ui, ext-apps spec 2026-01-26), the
// page's side. An app renders inside two frames:
//
//   this page (127.0.0.1:PORT) ─ sandbox proxy (127.0.0.1:SANDBOX, studio/sandbox.py)
//                                 └─ the app: sandbox="allow-scripts", opaque origin, its HTML
//                                    behind the CSP the supervisor built from _meta.ui.csp
//
// and speaks JSON-RPC over postMessage. The page answers nothing itself: every request of the
// app goes to the supervisor (`POST /v1/studio/apps/request`: validated, answered, journaled)
// — `ui/open-link` after the person confirmed the URL in a dialog here. The page sends the app
// nothing before `ui/notifications/initialized`; then `tool-input` (the arguments, once) and
// `tool-result`, or `tool-cancelled`; and `ui/resource-teardown` (waiting for the answer, at
// most TEARDOWN_MS) before the frame is removed.

import { api } from "./api.js";
import { dismiss, h, setText } from "./dom.js";

const SANDBOX = "ui/notifications/sandbox-";
const TEARDOWN_MS = 2000;
const MAX_IN_FLIGHT = 16;
const MAX_PER_SECOND = 20; // beyond this an app's requests are refused here, unjournaled (a flood)
const MAX_HEIGHT = 900;

function isObject(v) {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

/** The reason an app's link is not offered (null: it may be, once the person confirms). */
export function linkProblem(url) {
  if (typeof url !== "string" || !url || url.length > 2048 || /[\s\x00-\x1f\x7f]/.test(url)) return "not a usable URL";
  let parsed;
  try {
    parsed = new URL(url);
  } catch {
    return "not a URL";
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return `${parsed.protocol} links are not opened`;
  if (!parsed.hostname) return "no host";
  if (parsed.username || parsed.password) return "a link with a user name or password is not opened";
  return null;
}

/** Ask the person before opening an app's link; resolves true only on "Open link". The tab is
 * opened inside that click (a browser blocks it otherwise), without a handle on this page. */
function confirmLink(appName, url) {
  return new Promise((resolve) => {
    const titleId = "link-title";
    const dialog = h("dialog", { class: "modal", "aria-labelledby": titleId },
      h("h2", { id: titleId }, "Open a link from an MCP App?"),
      h("p", {}, `The app of ${appName} asks to open:`),
      h("p", { class: "url link-url" }, url),
      h("p", { class: "hint" }, "It opens in a new tab. Only open addresses you expected."));
    const done = (answer) => {
      if (answer) {
        const tab = window.open(url, "_blank", "noopener,noreferrer");
        if (tab) tab.opener = null;
      }
      dismiss(dialog, null);
      resolve(answer);
    };
    dialog.append(h("div", { class: "buttons" },
      h("button", { type: "button", class: "primary", onclick: () => done(true) }, "Open link"),
      h("button", { type: "button", onclick: () => done(false) }, "Don't open")));
    dialog.addEventListener("cancel", (e) => {
      e.preventDefault();
      done(false);
    });
    document.body.append(dialog);
    dialog.showModal();
  });
}

export class AppFrame {
  /**
   * `name`: the exposed tool whose app this is; `host`: {sandboxPort, sandboxPath} from the
   * page; `onLog(text)`: what the person should see in the app's log.
   */
  constructor({ name, host, onLog }) {
    this.name = name;
    this.host = host;
    this.onLog = onLog;
    this.initialized = false;
    this.closed = false;
    this.queue = []; // to the app, held until it said initialized
    this.waiting = new Map(); // id → resolve, our requests to the app
    this.inFlight = 0;
    this.links = Promise.resolve(false);
    this.nextId = 1;
    this.resource = null;
    this.sandboxOrigin = `http://${location.hostname}:${host.sandboxPort}`;
    this.frame = h("iframe", { class: "app-frame", title: `MCP App of ${name}`,
                               sandbox: "allow-scripts allow-same-origin", referrerpolicy: "no-referrer" });
    this.element = h("div", { class: "app-box" }, this.frame);
    this.listener = (event) => this.receive(event);
  }

  /** Read the app through the supervisor and load the sandbox proxy. Throws an ApiError. */
  async open() {
    if (!this.host.sandboxPort) throw new Error("this Studio serves no MCP Apps sandbox");
    this.resource = await api("GET", `/v1/studio/apps/resource?name=${encodeURIComponent(this.name)}`);
    if (this.closed) return;
    this.onLog(`loaded ${this.resource.uri}; CSP: ${this.resource.policy}`);
    if (this.resource.dropped && this.resource.dropped.length) {
      this.onLog(`CSP sources not granted: ${this.resource.dropped.join(", ")}`);
    }
    window.addEventListener("message", this.listener);
    this.frame.src = `${this.sandboxOrigin}${this.host.sandboxPath}?host=${encodeURIComponent(location.origin)}`;
  }

  toolInput(args) {
    this.send({ jsonrpc: "2.0", method: "ui/notifications/tool-input", params: { arguments: args } });
  }

  toolResult(result) {
    const { callId, server, tool, name, decidedBy, ...plain } = result || {};
    this.send({ jsonrpc: "2.0", method: "ui/notifications/tool-result", params: plain });
  }

  toolCancelled(reason) {
    this.send({ jsonrpc: "2.0", method: "ui/notifications/tool-cancelled", params: { reason } });
  }

  send(message) {
    if (this.closed) return;
    if (!this.initialized) this.queue.push(message);
    else this.post(message);
  }

  post(message) {
    if (this.frame.contentWindow && !this.closed) this.frame.contentWindow.postMessage(message, this.sandboxOrigin);
  }

  receive(event) {
    if (event.source !== this.frame.contentWindow || event.origin !== this.sandboxOrigin || this.closed) return;
    const m = event.data;
    if (isObject(m) && m.method === SANDBOX + "proxy-ready") {
      this.post({ jsonrpc: "2.0", method: SANDBOX + "resource-ready",
                  params: { html: this.resource.html, sandbox: "allow-scripts", csp: this.resource.csp,
                            permissions: {} } });
      return;
    }
    if (isObject(m) && typeof m.method === "string" && m.id === undefined) {
      this.notification(m);
    } else if (isObject(m) && m.method === undefined && m.id !== undefined && ("result" in m || "error" in m)) {
      const resolve = this.waiting.get(m.id);
      if (resolve) {
        this.waiting.delete(m.id);
        resolve(m);
      }
    } else {
      this.request(m); // a request, or something malformed: the supervisor judges (and journals) it
    }
  }

  notification(m) {
    const params = isObject(m.params) ? m.params : {};
    if (m.method === "ui/notifications/initialized") {
      if (this.initialized) return;
      this.initialized = true;
      for (const queued of this.queue.splice(0)) this.post(queued);
    } else if (m.method === "ui/notifications/size-changed") {
      const height = Number(params.height);
      if (Number.isFinite(height) && height > 0) this.frame.style.height = `${Math.min(Math.max(height, 60), MAX_HEIGHT)}px`;
    } else if (m.method === "notifications/message") {
      this.onLog(`app: ${typeof params.data === "string" ? params.data : JSON.stringify(params.data)}`);
    }
  }

  async request(m) {
    const id = isObject(m) ? m.id : undefined;
    const answerable = (typeof id === "string" || typeof id === "number");
    const now = Date.now();
    this.recent = (this.recent || []).filter((t) => now - t < 1000);
    if (this.inFlight >= MAX_IN_FLIGHT || this.recent.length >= MAX_PER_SECOND) {
      if (answerable) this.post({ jsonrpc: "2.0", id, error: { code: -32000, message: "too many requests at once" } });
      return;
    }
    this.recent.push(now);
    this.inFlight += 1;
    try {
      const body = { name: this.name, message: m };
      if (isObject(m) && m.method === "ui/initialize") body.hostContext = this.hostContext();
      if (isObject(m) && m.method === "ui/open-link") {
        const url = isObject(m.params) ? m.params.url : null;
        if (linkProblem(url) === null) {
          // One dialog at a time: a second request waits for the person to answer the first.
          const asked = this.links.then(() => confirmLink(this.name, url));
          this.links = asked.catch(() => false);
          body.confirmed = await asked;
        }
        this.onLog(`link ${String(url).slice(0, 200)}: ${body.confirmed ? "opened" : "not opened"}`);
      }
      const answer = await api("POST", "/v1/studio/apps/request", body);
      if (answerable && isObject(answer) && answer.id === id) this.post(answer);
    } catch (err) {
      if (answerable) this.post({ jsonrpc: "2.0", id, error: { code: -32603, message: err.message } });
    } finally {
      this.inFlight -= 1;
    }
  }

  hostContext() {
    const dark = window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches;
    return { theme: dark ? "dark" : "light", displayMode: "inline", availableDisplayModes: ["inline"],
             containerDimensions: { maxHeight: MAX_HEIGHT }, locale: navigator.language,
             timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone, platform: "web", userAgent: "monad Studio" };
  }

  /** `ui/resource-teardown`, then the frame goes (after its answer, or TEARDOWN_MS). */
  async close(reason) {
    if (this.closed) return;
    if (this.initialized) {
      const id = `teardown-${this.nextId++}`;
      const answered = new Promise((resolve) => this.waiting.set(id, resolve));
      this.post({ jsonrpc: "2.0", id, method: "ui/resource-teardown", params: { reason } });
      const timeout = new Promise((resolve) => setTimeout(() => resolve(null), TEARDOWN_MS));
      const answer = await Promise.race([answered, timeout]);
      this.onLog(answer ? "closed (the app acknowledged the teardown)" : "closed (the app did not answer the teardown)");
    } else {
      this.onLog("closed");
    }
    this.closed = true;
    window.removeEventListener("message", this.listener);
    this.element.remove();
  }
}

export function appLog() {
  const list = h("ol", { class: "app-log", "aria-label": "App log" });
  return { element: list, add: (text) => list.append(h("li", {}, text)), clear: () => setText(list, "") };
}
