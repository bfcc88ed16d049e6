// Capabilities → MCP servers: one row per server (atoms, agents.json, presets) with its live
// state, and the actions on it. Rows are keyed by name and updated in place from the event
// stream: `snapshot`/`config` carry every row, `server.state` one.

import { api } from "./api.js";
import { AuthorizeDialog, confirmDialog } from "./dialogs.js";
import { breakAfterUnderscores, byName, enc, h, listIndex, replaceChildren, setText, when, withCode } from "./dom.js";
import { ServerForm } from "./form.js";

const PRESETS = "features/presets.toml";
const COLUMNS = ["Name", "State", "Reason", "Tools", "Actions"];
// Every state monad has (monad_cli/core/states.py), each with its own look.
export const STATES = ["connected", "connecting", "idle", "degraded", "needs-auth", "backoff", "failed", "disabled",
                       "filtered", "stopped"];
export const SERVERS_HASH = "#/capabilities/mcp-servers";

function dash(value) {
  return value === null || value === undefined || value === "" ? "–" : String(value);
}

function reasonOf(row) {
  // A server whose file went bad keeps its last good definition: say so (as the CLI does),
  // or, when it has failed, why, as nothing runs.
  if (row.configError) {
    const ran = row.state === "failed" ? row.reason || "failed" : "runs its last good definition";
    return `${ran}; config error: ${row.configError}`;
  }
  // An on-demand server at rest: its tools come from lists this old (as the CLI's table says).
  if (row.state === "idle") {
    return `${row.reason || "on demand"} (stopped ${when(row.stoppedAt)}, lists from ${when(row.listedAt)})`;
  }
  return row.reason || "";
}

/** The list's Reason cell: the reason, then the name collisions the server is in, counted as
 *  `monad mcp status` counts them (the pane names each, as `monad mcp status NAME` does). */
function rowReasonOf(row) {
  const why = reasonOf(row);
  const collisions = row.collisions || [];
  if (!collisions.length) return why;
  const what = collisions.length === 1 ? "a name collision" : `${collisions.length} name collisions`;
  return `${why ? `${why}; ` : ""}${what} (see Details)`;
}

/** The hash that opens `name` in the pane (reload and back keep it). */
export function serverHash(name) {
  return `${SERVERS_HASH}/${enc(name)}`;
}

export class ServersView {
  constructor(root, notify) {
    this.root = root;
    this.notify = notify;
    this.rows = new Map(); // name → {tr, cells, data}
    this.definitions = new Map(); // name → {source, definition}
    this.toolNames = new Map(); // server → [exposed tool names] (for the filter)
    this.openName = null;
    this.wanted = null; // a server the URL names before its row exists
    this.filterText = "";
    this.form = new ServerForm((message) => notify(message));
    this.authorizer = new AuthorizeDialog();
    this.rendered = false;
    this.build();
    document.addEventListener("click", (e) => {
      if (this.menu && !this.menu.wrap.contains(e.target)) this.closeMenu(false);
    });
  }

  build() {
    this.problems = h("ul", { class: "problems", "aria-label": "Configuration problems", hidden: true });
    this.tbody = h("tbody", { onkeydown: (e) => this.listKeys(e) });
    this.empty = h("p", { class: "empty", hidden: true },
      "No servers yet: add one with Add server, or ", h("code", {}, "monad mcp add NAME -- COMMAND"),
      " in a terminal.");
    this.noMatch = h("p", { class: "empty", hidden: true }, "No server matches the filter.");
    this.filter = h("input", { type: "search", class: "filter", id: "server-filter", autocomplete: "off",
                               spellcheck: "false", placeholder: "Filter by name, state or tool",
                               "aria-label": "Filter servers by name, state or tool",
                               oninput: () => this.setFilter(this.filter.value, true) });
    this.details = h("section", { class: "details pane", id: "details", hidden: true, "aria-labelledby": "pane-title",
                                  onkeydown: (e) => { if (e.key === "Escape" && !this.menu) this.closePane(); } });
    this.count = h("p", { class: "hint count", role: "status" });
    this.table = h("table", { class: "servers", "aria-labelledby": "view-title", "data-focus-fallback": true,
                              tabindex: "-1" },
      h("thead", {}, h("tr", {}, COLUMNS.map((c, i) => h("th", { scope: "col", class: `col-${i}` }, c)))),
      this.tbody);
    replaceChildren(this.root,
      h("div", { class: "toolbar" },
        h("h1", { id: "view-title" }, "MCP servers"),
        this.filter,
        h("button", { type: "button", class: "primary", onclick: () => this.form.open({ mode: "add" }) },
          "Add server")),
      this.problems,
      h("div", { class: "split" },
        h("div", { class: "list" }, this.table, this.empty, this.noMatch, this.count),
        this.details));
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
    this.applyFilter();
    if (!this.rendered) {
      this.rendered = true;
      performance.mark("studio:first-render"); // User Timing: what bench/bench_studio.py reads
    }
    if (this.wanted && this.rows.has(this.wanted)) this.openPane(this.wanted, false); // a reload: focus stays
    else if (this.openName && this.rows.has(this.openName)) this.refreshDetails();
    else if (this.openName) this.closePane(false);
  }

  applyServer(row) {
    const isNew = !this.rows.has(row.name);
    this.upsert(row);
    if (isNew) this.order();
    this.applyFilter();
    if (row.name === this.openName) this.refreshDetails();
    if (this.wanted === row.name) this.openPane(row.name, false);
  }

  applyAuthorize(run) {
    this.authorizer.update(run);
  }

  /** Tool names by server, from the Tools view: the filter matches them too. */
  setTools(tools) {
    this.toolNames = new Map();
    for (const t of tools) {
      if (!this.toolNames.has(t.server)) this.toolNames.set(t.server, []);
      this.toolNames.get(t.server).push(t.name.toLowerCase());
    }
    this.applyFilter();
  }

  setFilter(text, fromInput = false) {
    this.filterText = text;
    if (!fromInput && this.filter.value !== text) this.filter.value = text;
    this.applyFilter();
    if (fromInput && this.onFilter) this.onFilter(text);
  }

  matches(row) {
    const q = this.filterText.trim().toLowerCase();
    if (!q) return true;
    return row.name.toLowerCase().includes(q) || String(row.state).toLowerCase().includes(q)
      || (this.toolNames.get(row.name) || []).some((t) => t.includes(q));
  }

  applyFilter() {
    let shown = 0;
    for (const entry of this.rows.values()) {
      const ok = this.matches(entry.data);
      entry.tr.hidden = !ok;
      if (ok) shown += 1;
    }
    this.empty.hidden = this.rows.size > 0;
    this.noMatch.hidden = this.rows.size === 0 || shown > 0;
    this.table.hidden = this.rows.size === 0;
    setText(this.count, this.filterText.trim() ? `${shown} of ${this.rows.size} servers` : "");
  }

  // -- rows -----------------------------------------------------------------------------------
  upsert(row) {
    let entry = this.rows.get(row.name);
    if (!entry) {
      const cells = COLUMNS.map((_, i) => h("td", { class: `col-${i}` }));
      const badge = h("span", { class: "badge" });
      cells[1].append(badge);
      const link = h("a", { href: serverHash(row.name), class: "server-link", title: row.name });
      cells[0].append(link);
      const tr = h("tr", { dataset: { name: row.name } }, cells);
      entry = { tr, cells, badge, link, data: null, actionsKey: null, why: null };
      this.rows.set(row.name, entry);
    }
    entry.data = row;
    const [, , reason, tools] = entry.cells;
    setText(entry.link, row.name);
    setText(entry.badge, row.state);
    entry.badge.className = `badge state-${row.state}`;
    entry.tr.dataset.state = row.state;
    const why = rowReasonOf(row);
    // monad's backticked names as code, as toasts show them; rebuilt only when the text changed.
    if (entry.why !== why) replaceChildren(reason, withCode(why));
    entry.why = why;
    if (reason.title !== why) reason.title = why; // the whole reason on hover; the pane has it too
    setText(tools, row.toolsRefused ? "refused" : dash(row.tools)); // a pin mismatch registers none
    entry.link.setAttribute("aria-current", this.openName === row.name ? "true" : "false");
    this.actions(entry);
  }

  drop(name) {
    const entry = this.rows.get(name);
    if (entry) entry.tr.remove();
    this.rows.delete(name);
    if (name === this.openName) this.closePane(false);
  }

  order() {
    const names = [...this.rows.keys()].sort(byName);
    const frag = document.createDocumentFragment();
    for (const name of names) frag.append(this.rows.get(name).tr);
    this.tbody.append(frag);
  }

  definitionOf(name) {
    const d = this.definitions.get(name);
    return d ? d.definition || {} : {};
  }

  /** What can be done to a server: [{verb, run, danger?}], the primary one first. */
  verbs(row) {
    const name = row.name;
    const def = this.definitionOf(name);
    const preset = row.source === PRESETS;
    const transport = row.transport || def.transport || (def.url ? "http" : "stdio");
    const mode = def.auth && def.auth.mode;
    const canAuthorize = transport === "http" && (mode === "oauth" || (row.state === "needs-auth" && !mode));
    const enabled = def.enabled !== false;
    const authorize = { verb: "Authorize", run: () => this.authorizer.start(name, this.definitionOf(name).auth?.flow) };
    const enable = { verb: "Enable", run: () => this.setEnabled(name, true) };
    const disable = { verb: "Disable", run: () => this.setEnabled(name, false) };
    const reconnect = { verb: "Reconnect", run: () => this.reconnect(name) };
    const details = { verb: "Details", run: () => this.select(name) };
    // No valid definition (a config error): the supervisor refuses to reconnect it, so its
    // reason and file come first.
    const invalid = !preset && row.enabled === null;
    let primary = reconnect;
    if (canAuthorize && row.state === "needs-auth") primary = authorize;
    else if (!preset && !enabled) primary = enable;
    else if (invalid) primary = details;
    const all = [
      details,
      preset ? null : { verb: "Edit", run: () => this.edit(name) },
      preset ? null : (enabled ? disable : enable),
      canAuthorize ? authorize : null,
      reconnect,
      preset ? null : { verb: "Remove", run: () => this.remove(name), danger: true },
    ].filter(Boolean);
    return { primary, rest: all.filter((v) => v.verb !== primary.verb), all, key: JSON.stringify([preset, canAuthorize, enabled, row.state === "needs-auth", invalid]) };
  }

  actions(entry) {
    const row = entry.data;
    const { primary, rest, key } = this.verbs(row);
    // Rebuild the buttons only when what they would be changes (focus stays put otherwise).
    if (key === entry.actionsKey) return;
    entry.actionsKey = key;
    const name = row.name;
    const menuButton = h("button", { type: "button", class: "small menu-button", "aria-haspopup": "menu",
                                     "aria-expanded": "false", "aria-label": `More actions for ${name}`,
                                     title: `More actions for ${name}` }, "⋯");
    const wrap = h("div", { class: "actions" },
      h("button", { type: "button", class: "small", "aria-label": `${primary.verb} ${name}`,
                    onclick: () => primary.run() }, primary.verb),
      menuButton);
    menuButton.addEventListener("click", (e) => {
      e.stopPropagation();
      if (this.menu && this.menu.button === menuButton) this.closeMenu(true);
      else this.openMenu(wrap, menuButton, rest, name);
    });
    replaceChildren(entry.cells[4], wrap);
  }

  openMenu(wrap, button, verbs, name) {
    this.closeMenu(false);
    const items = verbs.map((v) => h("button", {
      type: "button", role: "menuitem", tabindex: "-1", class: v.danger ? "danger" : null,
      "aria-label": `${v.verb} ${name}`,
      onclick: () => { this.closeMenu(true); v.run(); }, // dialogs go back to the menu's button
    }, v.verb));
    const menu = h("div", { class: "menu", role: "menu", "aria-label": `Actions for ${name}` }, items);
    menu.addEventListener("keydown", (e) => {
      const i = items.indexOf(document.activeElement);
      if (e.key === "ArrowDown") items[(i + 1) % items.length].focus();
      else if (e.key === "ArrowUp") items[(i - 1 + items.length) % items.length].focus();
      else if (e.key === "Home") items[0].focus();
      else if (e.key === "End") items[items.length - 1].focus();
      else if (e.key === "Escape" || e.key === "Tab") this.closeMenu(e.key === "Escape");
      else return;
      e.preventDefault();
      e.stopPropagation();
    });
    wrap.append(menu);
    button.setAttribute("aria-expanded", "true");
    this.menu = { wrap, button, menu };
    items[0].focus();
  }

  closeMenu(refocus) {
    const m = this.menu;
    if (!m) return;
    this.menu = null;
    m.menu.remove();
    m.button.setAttribute("aria-expanded", "false");
    if (refocus && m.button.isConnected) m.button.focus();
  }

  /** Arrow keys move between the rows' names (Home, End too); Enter opens one. */
  listKeys(e) {
    if (!["ArrowDown", "ArrowUp", "Home", "End"].includes(e.key) || this.menu) return;
    const links = [...this.tbody.rows].filter((tr) => !tr.hidden).map((tr) => tr.querySelector(".server-link"));
    if (!links.length) return;
    const row = e.target.closest("tr");
    const i = links.findIndex((l) => l.closest("tr") === row);
    links[listIndex(e.key, i, links.length)].focus();
    e.preventDefault();
  }

  showProblems(problems) {
    replaceChildren(this.problems, problems.map((p) => h("li", {}, p.message)));
    this.problems.hidden = problems.length === 0;
  }

  // -- actions --------------------------------------------------------------------------------
  async edit(name) {
    try {
      const answer = await api("GET", `/v1/settings/mcp-servers/${enc(name)}`);
      this.form.open({ mode: "edit", name, definition: answer.definition, source: answer.source,
                       errors: answer.errors || [] });
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

  // -- the pane -------------------------------------------------------------------------------
  /** Open a server in the pane through the URL, so reload and back keep it. */
  select(name) {
    if (location.hash === serverHash(name)) this.openPane(name, true);
    else location.hash = serverHash(name);
  }

  /** The route named `name` (null: no server open). `focus`: move focus into the pane. */
  route(name, focus = true) {
    if (name === null) {
      this.wanted = null;
      if (this.openName) this.closePane(false, true);
      return;
    }
    if (!this.rows.has(name)) {
      this.wanted = name; // not in the list yet (the first snapshot, or a server being added)
      return;
    }
    this.openPane(name, focus);
  }

  openPane(name, focus = true) {
    this.wanted = null;
    const previous = this.openName;
    this.openName = name;
    for (const [n, entry] of this.rows) entry.link.setAttribute("aria-current", n === name ? "true" : "false");
    document.body.classList.add("pane-open");
    this.details.hidden = false;
    if (previous !== name) {
      this.features = null; // made in loadDetails, with its module (loaded after the first render)
      replaceChildren(this.details, this.paneHead(name), h("p", { class: "hint" }, "Loading…"));
    }
    this.refreshDetails(true);
    if (focus) this.details.querySelector("h2").focus();
  }

  paneHead(name) {
    const entry = this.rows.get(name);
    const verbs = entry ? this.verbs(entry.data).all.filter((v) => v.verb !== "Details") : [];
    return h("div", { class: "pane-head" },
      h("div", { class: "details-head" },
        h("h2", { id: "pane-title", tabindex: "-1", title: name }, name),
        h("button", { type: "button", class: "small", onclick: () => this.closePane(),
                      "aria-label": `Close details of ${name}` }, "Close")),
      h("div", { class: "actions" }, verbs.map((v) => h("button", {
        type: "button", class: v.danger ? "small danger" : "small", "aria-label": `${v.verb} ${name}`,
        onclick: () => v.run() }, v.verb))));
  }

  closePane(refocus = true, fromRoute = false) {
    const name = this.openName;
    this.openName = null;
    this.details.hidden = true;
    this.details.replaceChildren();
    this.features = null;
    document.body.classList.remove("pane-open");
    if (name && this.rows.has(name)) this.rows.get(name).link.setAttribute("aria-current", "false");
    if (!fromRoute && location.hash !== SERVERS_HASH) history.pushState(null, "", SERVERS_HASH);
    if (refocus && name && this.rows.has(name)) this.rows.get(name).link.focus();
  }

  refreshDetails(now = false) {
    // State changes come in bursts (connecting → connected): fetch once they settle.
    clearTimeout(this.detailsTimer);
    this.detailsTimer = setTimeout(() => this.loadDetails(this.openName), now ? 0 : 150);
  }

  async loadDetails(name) {
    if (!name) return;
    const get = (path) => api("GET", path).catch((err) => ({ error: err.message }));
    // A pin refusing its tool set: the review (what changed) is asked for too.
    const refused = Boolean(this.rows.get(name)?.data?.toolsRefused);
    const [status, tools, journal, { ServerFeatures }, set, pinReview] = await Promise.all([
      get(`/v1/settings/mcp-servers/${enc(name)}/status`),
      get(`/v1/tools?server=${enc(name)}`),
      get(`/v1/journal?server=${enc(name)}&limit=20`),
      import("./features.js"),
      refused ? get(`/v1/tools/sets/${enc(name)}`) : null,
      refused ? import("./pin_review.js") : null,
    ]);
    if (name !== this.openName) return;
    if (!this.features || this.features.server !== name) this.features = new ServerFeatures(name, this.notify);
    const hadFocus = this.details.contains(document.activeElement) ? document.activeElement : null;
    const focusLabel = hadFocus && (hadFocus.getAttribute("aria-label") || hadFocus.id);
    const row = this.rows.get(name)?.data || {};
    const review = set && set.review;
    const before = [this.paneHead(name), statusPart(status, row),
                    review ? pinReview.refusedPart(name, review, this.notify) : toolsPart(name, tools, status)];
    const after = [stderrPart(status), journalPart(journal)];
    const features = this.features.element;
    if (features.parentNode === this.details) {
      // Rebuilt around the resources and prompts, never moved: what is typed or read there
      // stays, and keeps focus.
      while (this.details.firstChild !== features) this.details.firstChild.remove();
      while (features.nextSibling) features.nextSibling.remove();
      features.before(...before);
      features.after(...after);
    } else replaceChildren(this.details, before, features, after);
    this.features.update(row);
    if (focusLabel) { // a live update rebuilt the pane: focus stays on the same control
      const again = [...this.details.querySelectorAll("[aria-label], [id]")]
        .find((el) => (el.getAttribute("aria-label") || el.id) === focusLabel);
      if (again) again.focus();
    }
  }
}

function statusPart(status, row) {
  if (status.error) return h("p", { class: "error" }, status.error);
  const info = status.serverInfo;
  return h("dl", { class: "facts" },
    h("dt", {}, "State"), h("dd", {}, h("span", { class: `badge state-${status.state}` }, status.state),
                                      status.reason ? [" ", withCode(status.reason)] : ""),
    row.configError ? [h("dt", {}, "Config"), h("dd", {}, withCode(reasonOf(row)))] : null,
    // Each one line, as `monad mcp status NAME` shows them: both sides and the names given.
    (status.collisions || []).length ? [h("dt", {}, "Collisions"), h("dd", {}, h("ul", { class: "collisions" },
      status.collisions.map((line) => h("li", {}, withCode(line)))))] : null,
    h("dt", {}, "Since"), h("dd", {}, when(status.since)),
    h("dt", {}, "Transport"), h("dd", {}, dash(row.transport)),
    h("dt", {}, "Protocol"), h("dd", {}, dash(row.protocolVersion)),
    h("dt", {}, "Source"), h("dd", {}, dash(row.source)),
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

/** The exposed names a collision renamed (each side gets a hash suffix: core/tool_names.py). */
export function renamedNames(collisions) {
  return new Set((collisions || []).flatMap((c) => c.members.map((m) => m.exposed).filter(Boolean)));
}

function toolsPart(name, tools, status) {
  const list = (tools && tools.tools) || [];
  const renamed = renamedNames(tools && tools.collisions);
  return h("section", {},
    h("h3", {}, `Tools (${list.length})`),
    tools.error ? h("p", { class: "error" }, tools.error) : null,
    list.length ? h("table", { class: "tools", "aria-label": `Tools of ${name}` },
      h("thead", {}, h("tr", {}, ["Exposed name", "Description", "Parameters"].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, list.map((t) => h("tr", {},
        h("td", {}, h("code", {}, breakAfterUnderscores(t.name)),
          t.hidden ? h("span", { class: "hint" }, ` hidden: ${t.hidden}`) : null,
          // As `monad mcp tools` says it: the suffix is monad's, the pane's Collisions say why.
          renamed.has(t.name) ? h("span", { class: "hint" }, " renamed: a name collision") : null),
        h("td", {}, t.description || ""),
        h("td", {}, parameters(t.inputSchema))))))
      : h("p", { class: "hint" }, ["connected", "degraded", "idle"].includes(status && status.state)
        ? "The server lists no tools." : "No tools listed: the server is not connected."));
}

function stderrPart(status) {
  const lines = status.stderrTail || [];
  return h("section", {},
    h("h3", {}, "Stderr (last lines)"),
    // A tab stop: it scrolls past its height (axe: scrollable-region-focusable).
    lines.length ? h("pre", { class: "stderr", tabindex: "0", "aria-label": "Stderr (last lines)" }, lines.join("\n"))
      : h("p", { class: "hint" }, "Nothing written."));
}

function journalPart(journal) {
  const rows = ((journal && journal.events) || []).slice().reverse();
  // A fleet's shared journal holds every supervisor's rows: say which host wrote each.
  const shared = Boolean(journal && journal.shared);
  const columns = shared ? ["Time", "Host", "Kind", "State", "Reason"] : ["Time", "Kind", "State", "Reason"];
  const col = (c) => h("th", { scope: "col", class: `col-${c.toLowerCase()}` }, c);
  return h("section", {},
    h("h3", {}, shared ? "Journal, every host (newest first)" : "Journal (newest first)"),
    journal.error ? h("p", { class: "error" }, journal.error) : null,
    rows.length ? h("table", { class: "journal", "aria-label": "Journal rows" },
      h("thead", {}, h("tr", {}, columns.map(col))),
      h("tbody", {}, rows.map((r) => h("tr", {},
        h("td", {}, when(r.ts)), shared ? h("td", {}, dash(r.host)) : null, h("td", {}, r.kind),
        h("td", {}, dash(r.state)), h("td", {}, withCode(r.reason || ""))))))
      : h("p", { class: "hint" }, "No rows yet."));
}
