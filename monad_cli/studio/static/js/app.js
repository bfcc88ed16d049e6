// The Studio page: the live stream, the views, and the little messages after an action.
// Views register here by route; the next ones (Tools, approvals, Task cards) add themselves
// beside "Capabilities → MCP servers" and their own event types on the same stream.

import { h, setText } from "./dom.js";
import { LiveStream } from "./events.js";
import { ServersView } from "./servers.js";

const STATUS_TEXT = {
  connecting: "Connecting…",
  live: "Live",
  reconnecting: "Live updates interrupted: reconnecting…",
  unreachable: "The supervisor is not answering (stopped?): retrying…",
  "signed-out": "Signed out: run `monad studio` in a terminal for a new login URL",
};

const live = document.getElementById("live");
const toasts = h("div", { class: "toasts", role: "status", "aria-live": "polite" });
document.body.append(toasts);

function showStatus(state) {
  live.dataset.state = state;
  setText(live, STATUS_TEXT[state] || state);
  document.body.dataset.live = state;
}

function notify(message, isError = false) {
  const toast = h("p", { class: isError ? "toast error" : "toast" }, message);
  toasts.append(toast);
  setTimeout(() => toast.remove(), isError ? 12000 : 4000);
}

const servers = new ServersView(document.getElementById("view"), notify);

// The page came with a snapshot (the same data the stream starts with): render it now, before
// the stream is open; the stream's own snapshot replaces it a moment later.
try {
  const inline = JSON.parse(document.getElementById("studio-snapshot").textContent);
  if (inline) servers.applySnapshot(inline);
} catch {
  // no snapshot in the page: the stream brings one
}

new LiveStream(showStatus)
  .on("snapshot", (data) => servers.applySnapshot(data))
  .on("config", (data) => servers.applySnapshot(data))
  .on("server.state", (data) => servers.applyServer(data.server))
  .on("authorize", (data) => servers.applyAuthorize(data))
  .start();
