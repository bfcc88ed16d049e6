// The Studio page: the live stream, the views (MCP servers, Tools, Transcript, Registry,
// Agents, Variables), the approvals waiting above whichever is shown, and the little messages
// after an action.
// Every view hears every event, shown or not, so switching views never needs a reload.

import { api } from "./api.js";
import { ApprovalsPanel } from "./approvals.js";
import { cancelOpenDialogs } from "./dialogs.js";
import { h, replaceChildren, setText, withCode } from "./dom.js";
import { LiveStream } from "./events.js";
import { SERVERS_HASH, ServersView } from "./servers.js";

// Tools and Transcript (and the MCP Apps host behind Tools) load after the first render, so
// the servers table never waits for modules it does not need.
const later = Promise.all([import("./tools.js"), import("./transcript.js"), import("./registry.js"),
                           import("./agents.js"), import("./variables.js")]);

const STATUS_TEXT = {
  connecting: "Connecting…",
  live: "Live",
  reconnecting: "Live updates interrupted: reconnecting…",
  unreachable: "The supervisor is not answering (stopped? monad daemon start): the states shown are the last known",
  "signed-out": "Signed out: run monad studio in a terminal for a new login URL",
};
const ROUTES = {
  "#/capabilities/mcp-servers": { view: "servers", crumbs: ["Capabilities", "MCP servers"] },
  "#/tools": { view: "tools", crumbs: ["Capabilities", "Tools"] },
  "#/transcript": { view: "transcript", crumbs: ["Transcript"] },
  "#/registry": { view: "registry", crumbs: ["Capabilities", "Registry"] },
  "#/agents": { view: "agents", crumbs: ["Agents"] },
  "#/variables": { view: "variables", crumbs: ["Settings", "Variables"] },
};

const live = document.getElementById("live");
const toasts = h("div", { class: "toasts", role: "status", "aria-live": "polite" });
document.body.append(toasts);

function showStatus(state) {
  live.dataset.state = state;
  setText(live, STATUS_TEXT[state] || state);
  document.body.dataset.live = state;
  signOut.hidden = state === "signed-out";
}

// Sign out: every session of this Studio ends (`monad studio --sign-out` does the same); the
// event stream then ends and the page says "Signed out".
const signOut = document.getElementById("sign-out");
signOut.addEventListener("click", async () => {
  try {
    await api("POST", "/v1/studio/sign-out", {});
  } catch (err) {
    if (err.status !== 401) {
      notify(`sign out: ${err.message}`, true);
      return;
    }
  }
  showStatus("signed-out");
});

// Messages after an action: in a corner that covers no control (clicks go through), long
// enough to read (8 s, errors 15 s, or until dismissed with their button; `sticky`: only
// then, for a message that says what to do next).
function notify(message, isError = false, { sticky = false } = {}) {
  const toast = h("p", { class: isError ? "toast error" : "toast" }, h("span", {}, withCode(message)),
    h("button", { type: "button", class: "small", "aria-label": "Dismiss message", onclick: () => toast.remove() }, "×"));
  toasts.append(toast);
  while (toasts.children.length > 3) toasts.firstChild.remove();
  if (!sticky) setTimeout(() => toast.remove(), isError ? 15000 : 8000);
}

function readData(id) {
  try {
    return JSON.parse(document.getElementById(id).textContent);
  } catch {
    return null;
  }
}

const host = readData("studio-host") || {};
const servers = new ServersView(document.getElementById("view"), notify);
const approvals = new ApprovalsPanel(document.getElementById("approvals"), notify);
let tools = null;
let transcript = null;
let registry = null;
let agents = null;
let variables = null;
const roots = { servers: "view", tools: "tools-view", transcript: "transcript-view", registry: "registry-view",
                agents: "agents-view", variables: "variables-view" };

function route() {
  const hash = location.hash;
  const serverPrefix = `${SERVERS_HASH}/`;
  const opened = hash.startsWith(serverPrefix) ? decodeURIComponent(hash.slice(serverPrefix.length)) : null;
  const current = ROUTES[opened !== null ? SERVERS_HASH : hash] || ROUTES[SERVERS_HASH];
  if (current.view === "servers") servers.route(opened, routed);
  routed = true;
  for (const [view, id] of Object.entries(roots)) document.getElementById(id).hidden = view !== current.view;
  for (const link of document.querySelectorAll(".sections a")) {
    if (link.dataset.view === current.view) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  const crumbs = current.crumbs;
  replaceChildren(document.getElementById("crumbs"),
    crumbs.map((c, i) => h("li", i === crumbs.length - 1 ? { "aria-current": "page" } : {}, c)));
  document.title = `${crumbs[crumbs.length - 1]} · monad Studio`;
  if (current.view === "tools" && tools) tools.shown();
  if (current.view === "registry" && registry) registry.shown();
  if (current.view === "agents" && agents) agents.shown();
  if (current.view === "variables" && variables) variables.shown();
}
let routed = false; // the first route (a reload) opens the pane without taking focus
// A new view by its URL (typed, a link, back/forward) closes a dialog left open, without its action.
window.addEventListener("hashchange", () => { cancelOpenDialogs(); route(); });
route();

// The page came with a snapshot (the same data the stream starts with): render it now, before
// the stream is open; the stream's own snapshot replaces it a moment later.
const inline = readData("studio-snapshot");
if (inline) {
  servers.applySnapshot(inline);
  approvals.apply(inline.approvals || []);
  approvals.applyAuthorizations(inline.authorizations || []);
}

const [{ ToolsView }, { TranscriptView }, { RegistryView }, { AgentsView }, { VariablesView }] = await later;
tools = new ToolsView(document.getElementById("tools-view"), { notify, host,
  onTools: (list) => servers.setTools(list), onFilter: (text) => servers.setFilter(text) });
servers.onFilter = (text) => tools.setFilter(text); // one filter, both views
transcript = new TranscriptView(document.getElementById("transcript-view"), { notify });
registry = new RegistryView(document.getElementById("registry-view"), { notify });
agents = new AgentsView(document.getElementById("agents-view"), { notify });
variables = new VariablesView(document.getElementById("variables-view"), { notify });
route();

new LiveStream(showStatus)
  .on("snapshot", (data) => {
    servers.applySnapshot(data);
    approvals.apply(data.approvals || []);
    approvals.applyAuthorizations(data.authorizations || []);
    tools.refresh();
    transcript.reload(); // nothing is replayed after a reconnect: read the rows again
  })
  .on("config", (data) => {
    servers.applySnapshot(data);
    tools.refreshSoon();
    variables.refreshSoon(); // a definition may reference a new name, or the env file changed
  })
  .on("server.state", (data) => {
    servers.applyServer(data.server);
    tools.refreshSoon();
  })
  .on("authorize", (data) => servers.applyAuthorize(data))
  .on("call", (data) => {
    transcript.applyCall(data.call);
    tools.applyCall(data.call);
  })
  .on("call.progress", (data) => {
    transcript.applyProgress(data);
    tools.applyProgress(data);
  })
  .on("approval.pending", (data) => approvals.add(data.approval))
  .on("approval.closed", (data) => {
    approvals.remove(data.id);
    tools.refreshSoon(); // a session/always grant shows on the tool's row
  })
  .on("authorization.pending", (data) => approvals.addAuthorization(data))
  .on("authorization.closed", (data) => approvals.remove(data.id))
  .on("task", (data) => {
    transcript.applyTask(data.task);
    tools.applyTask(data.task);
  })
  .start();
