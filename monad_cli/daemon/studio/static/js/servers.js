// Capabilities → MCP servers: one row per server (atoms, agents.json, presets) with its live
// state, and the actions on it. Rows are keyed by name and updated in place from the event
// stream: `snapshot`/`config` carry every row, `server.state` one.

import { api } from "./api.js";
import { AuthorizeDialog, confirmDialog } from "./dialogs.js";
import { enc, h, replaceChildren, setText, when } from "./dom.js";
import { ServerForm } from "./form.js";

const PRESETS = "features/presets.toml";
const COLUMNS = ["Name", "Transport", "State", "Reason", "Tools", "Protocol", "Source", "Actions"];
// Every state monad has (monad_cli/core/states.py), each with its own look.
export const STATES = ["connected", "connecting", "idle", "degraded", "needs-auth", "backoff", "failed", "disabled",
                       "filtered", "stopped"];

function dash(value) {
  return value === null || value === undefined || value === "" ? "–" : String(value);
}

function reasonOf(row) {
  // A running server whose file went bad keeps its last good definition: say so (as the CLI does).
  if (row.configError) return `runs its last good definition; config error: ${row.configError}`;
  // An on-demand server at rest: its tools come from lists this old (as the CLI's table says).
  if (row.state === "idle") {
    return `${row.reason || "on demand"} (stopped ${when(row.stoppedAt)}, lists from ${when(row.listedAt)})`;
  }
  return row.reason || "";
}

export class ServersView {
  constructor(root, notify) {
    this.root = root;
    this.notify = notify;
    this.rows = new Map(); // name → {tr, cells, data}
    this.definitions = new Map(); // name → {source, definition}
    this.openName = null;
    this.form = new ServerForm((message) => notify(message));
    this.authorizer = new AuthorizeDialog();
    this.rendered = false;
    this.build();
  }

  build() {
    this.problems = h("ul", { class: "problems", "aria-label": "Configuration problems", hidden: true });
    this.tbody = h("tbody");
    this.empty = h("p", { class: "empty", hidden: true },
      "No servers yet: add one with Add server, or `monad mcp add NAME -- COMMAND` in a terminal.");
    this.details = h("section", { class: "details", id: "details", hidden: true, "aria-live": "polite" });
    replaceChildren(this.root,
      h("div", { class: "toolbar" },
        h("h1", { id: "view-title" }, "MCP servers"),
        h("button", { type: "button", class: "primary", onclick: () => this.form.open({ mode: "add" }) },
          "Add server")),
      this.problems,
      h("table", { class: "servers", "aria-labelledby": "view-title" },
        h("thead", {}, h("tr", {}, COLUMNS.map((c) => h("th", { scope: "col" }, c)))),
        this.tbody),
      this.empty,
      this.details);
  }

  // -- events ---------------------------------------------------------------------------------
  applySnapshot(data) {
    this.definitions = new Map((data.definitions || []).map((d) => [d.name, d]));
    const seen = new Set();
    for (const row of data.servers || []) {
      seen.add(row.name);
      this.upsert(row);
    }
    for (const name of [...this.rows.keys()]) if (!seen.has(name)) this.drop(name);
    this.order();
    this.showProblems(data.problems || []);
    this.empty.hidden = this.rows.size > 0;
    if (!this.rendered) {
      this.rendered = true;
      performance.mark("studio:first-render"); // User Timing: what bench/bench_studio.py reads
    }
    if (this.openName && this.rows.has(this.openName)) this.refreshDetails();
    else if (this.openName) this.closeDetails();
  }

  applyServer(row) {
    const isNew = !this.rows.has(row.name);
    this.upsert(row);
    if (isNew) this.order();
    this.empty.hidden = true;
    if (row.name === this.openName) this.refreshDetails();
  }

  applyAuthorize(run) {
    this.authorizer.update(run);
  }

  // -- rows -----------------------------------------------------------------------------------
  upsert(row) {
    let entry = this.rows.get(row.name);
    if (!entry) {
      const cells = COLUMNS.map(() => h("td"));
      const badge = h("span", { class: "badge" });
      cells[2].append(badge);
      const tr = h("tr", { dataset: { name: row.name } }, cells);
      entry = { tr, cells, badge, data: null, actionsKey: null };
      this.rows.set(row.name, entry);
    }
    entry.data = row;
    const [name, transport, , reason, tools, protocol, source] = entry.cells;
    setText(name, row.name);
    setText(transport, dash(row.transport));
    setText(entry.badge, row.state);
    entry.badge.className = `badge state-${row.state}`;
    entry.tr.dataset.state = row.state;
    setText(reason, reasonOf(row));
    setText(tools, row.toolsRefused ? "refused" : dash(row.tools)); // a pin mismatch registers none
    setText(protocol, dash(row.protocolVersion));
    setText(source, dash(row.source));
    this.actions(entry);
  }

  drop(name) {
    const entry = this.rows.get(name);
    if (entry) entry.tr.remove();
    this.rows.delete(name);
    if (name === this.openName) this.closeDetails();
  }

  order() {
    const names = [...this.rows.keys()].sort();
    const frag = document.createDocumentFragment();
    for (const name of names) frag.append(this.rows.get(name).tr);
    this.tbody.append(frag);
  }

  definitionOf(name) {
    const d = this.definitions.get(name);
    return d ? d.definition || {} : {};
  }

  actions(entry) {
    const row = entry.data;
    const def = this.definitionOf(row.name);
    const preset = row.source === PRESETS;
    const transport = row.transport || def.transport || (def.url ? "http" : "stdio");
    const mode = def.auth && def.auth.mode;
    const canAuthorize = transport === "http" && (mode === "oauth" || (row.state === "needs-auth" && !mode));
    const enabled = def.enabled !== false;
    const open = this.openName === row.name;
    // Rebuild the buttons only when what they would be changes (focus stays put otherwise).
    const key = JSON.stringify([preset, canAuthorize, enabled, open]);
    if (key === entry.actionsKey) return;
    entry.actionsKey = key;
    const name = row.name;
    const button = (verb, onclick, extra = {}) =>
      h("button", { type: "button", class: "small", "aria-label": `${verb} ${name}`, onclick, ...extra }, verb);
    replaceChildren(entry.cells[7], h("div", { class: "actions" },
      button("Details", () => this.toggleDetails(name),
             { "aria-expanded": String(open), "aria-controls": "details",
               "aria-label": `${open ? "Hide" : "Show"} details of ${name}` }),
      preset ? null : button("Edit", () => this.edit(name)),
      preset ? null : (enabled ? button("Disable", () => this.setEnabled(name, false))
                               : button("Enable", () => this.setEnabled(name, true))),
      canAuthorize ? button("Authorize", () => this.authorizer.start(name, this.definitionOf(name).auth?.flow)) : null,
      button("Reconnect", () => this.reconnect(name)),
      preset ? null : button("Remove", () => this.remove(name), { class: "small danger" })));
  }

  showProblems(problems) {
    replaceChildren(this.problems, problems.map((p) => h("li", {}, p.message)));
    this.problems.hidden = problems.length === 0;
  }

  // -- actions --------------------------------------------------------------------------------
  async edit(name) {
    try {
      const answer = await api("GET", `/v1/settings/mcp-servers/${enc(name)}`);
      this.form.open({ mode: "edit", name, definition: answer.definition, source: answer.source });
    } catch (err) {
      this.notify(err.message, true);
    }
  }

  async setEnabled(name, enabled) {
    await this.act(() => api("PATCH", `/v1/settings/mcp-servers/${enc(name)}`, { enabled }),
                   `${enabled ? "enabled" : "disabled"} ${name}`);
  }

  async reconnect(name) {
    await this.act(() => api("POST", `/v1/mcp-servers/${enc(name)}/reconnect`), `reconnecting ${name}`);
  }

  async remove(name) {
    const source = this.rows.get(name)?.data.source || "its file";
    const ok = await confirmDialog({
      title: `Remove ${name}?`,
      text: `This deletes its definition from ${source}; the supervisor disconnects it.`,
      confirm: "Remove",
    });
    if (ok) await this.act(() => api("DELETE", `/v1/settings/mcp-servers/${enc(name)}`), `removed ${name}`);
  }

  async act(call, done) {
    try {
      await call();
      this.notify(done);
    } catch (err) {
      this.notify(err.message, true);
    }
  }

  // -- details --------------------------------------------------------------------------------
  toggleDetails(name) {
    if (this.openName === name) this.closeDetails();
    else {
      const previous = this.openName;
      this.openName = name;
      if (previous && this.rows.has(previous)) this.actions(this.rows.get(previous));
      this.actions(this.rows.get(name));
      this.details.hidden = false;
      replaceChildren(this.details, h("h2", {}, name), h("p", { class: "hint" }, "Loading…"));
      this.refreshDetails(true);
      this.details.scrollIntoView({ block: "nearest" });
    }
  }

  closeDetails() {
    const name = this.openName;
    this.openName = null;
    this.details.hidden = true;
    this.details.replaceChildren();
    if (name && this.rows.has(name)) this.actions(this.rows.get(name));
  }

  refreshDetails(now = false) {
    // State changes come in bursts (connecting → connected): fetch once they settle.
    clearTimeout(this.detailsTimer);
    this.detailsTimer = setTimeout(() => this.loadDetails(this.openName), now ? 0 : 150);
  }

  async loadDetails(name) {
    if (!name) return;
    const get = (path) => api("GET", path).catch((err) => ({ error: err.message }));
    const [status, tools, journal] = await Promise.all([
      get(`/v1/settings/mcp-servers/${enc(name)}/status`),
      get(`/v1/tools?server=${enc(name)}`),
      get(`/v1/journal?server=${enc(name)}&limit=20`),
    ]);
    if (name !== this.openName) return;
    replaceChildren(this.details,
      h("div", { class: "details-head" },
        h("h2", {}, name),
        h("button", { type: "button", class: "small", onclick: () => this.closeDetails(),
                      "aria-label": `Hide details of ${name}` }, "Close")),
      statusPart(status),
      toolsPart(name, tools),
      stderrPart(status),
      journalPart(journal));
  }
}

function statusPart(status) {
  if (status.error) return h("p", { class: "error" }, status.error);
  const info = status.serverInfo;
  return h("dl", { class: "facts" },
    h("dt", {}, "State"), h("dd", {}, `${status.state}${status.reason ? ` — ${status.reason}` : ""}`),
    h("dt", {}, "Since"), h("dd", {}, when(status.since)),
    info ? [h("dt", {}, "Server"), h("dd", {}, `${info.name || "?"} ${info.version || ""}`)] : null,
    status.pid ? [h("dt", {}, "Process"), h("dd", {}, String(status.pid))] : null);
}

function parameters(schema) {
  const props = (schema && schema.properties) || {};
  const required = new Set((schema && schema.required) || []);
  const names = Object.keys(props);
  if (!names.length) return h("span", { class: "hint" }, "none");
  return h("ul", { class: "params" }, names.map((p) => {
    const prop = props[p] || {};
    const type = prop.type ? (Array.isArray(prop.type) ? prop.type.join(" | ") : prop.type) : (prop.enum ? "enum" : "any");
    return h("li", {}, h("code", {}, p), `: ${type}${required.has(p) ? " (required)" : ""}`,
             prop.description ? h("span", { class: "hint" }, ` — ${prop.description}`) : null);
  }));
}

function toolsPart(name, tools) {
  const list = (tools && tools.tools) || [];
  return h("section", {},
    h("h3", {}, `Tools (${list.length})`),
    tools.error ? h("p", { class: "error" }, tools.error) : null,
    list.length ? h("table", { class: "tools", "aria-label": `Tools of ${name}` },
      h("thead", {}, h("tr", {}, ["Exposed name", "Description", "Parameters"].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, list.map((t) => h("tr", {},
        h("td", {}, h("code", {}, t.name),
          t.hidden ? h("span", { class: "hint" }, ` hidden: ${t.hidden}`) : null),
        h("td", {}, t.description || ""),
        h("td", {}, parameters(t.inputSchema))))))
      : h("p", { class: "hint" }, "No tools listed (the server is not connected, or has none)."));
}

function stderrPart(status) {
  const lines = status.stderrTail || [];
  return h("section", {},
    h("h3", {}, "Stderr (last lines)"),
    lines.length ? h("pre", { class: "stderr" }, lines.join("\n")) : h("p", { class: "hint" }, "Nothing written."));
}

function journalPart(journal) {
  const rows = ((journal && journal.events) || []).slice().reverse();
  // A fleet's shared journal holds every supervisor's rows: say which host wrote each.
  const shared = Boolean(journal && journal.shared);
  const columns = shared ? ["Time", "Host", "Kind", "State", "Reason"] : ["Time", "Kind", "State", "Reason"];
  return h("section", {},
    h("h3", {}, shared ? "Journal, every host (newest first)" : "Journal (newest first)"),
    journal.error ? h("p", { class: "error" }, journal.error) : null,
    rows.length ? h("table", { class: "journal", "aria-label": "Journal rows" },
      h("thead", {}, h("tr", {}, columns.map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, rows.map((r) => h("tr", {},
        h("td", {}, when(r.ts)), shared ? h("td", {}, dash(r.host)) : null, h("td", {}, r.kind),
        h("td", {}, dash(r.state)), h("td", {}, r.reason || "")))))
      : h("p", { class: "hint" }, "No rows yet."));
}
