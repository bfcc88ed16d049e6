// Transcript: what monad did, live. The Tasks (cards: from this page, `monad mcp call
// --detach`, the gateway), the results nobody has read yet (deliveryPending), and every tool
// call from the journal — this page's, the CLI's, the gateway's, MCP Apps' — newest first,
// with its arguments (kept in memory for calls since the supervisor started; older rows show
// the digest the journal keeps), the approval decision and who made it, the outcome and
// the duration. Rows are read once per stream (each snapshot), then kept current by
// `call` and `task` events. In a fleet (docs/fleet.md) a last column names each call's host.

import { api } from "./api.js";
import { h, replaceChildren, setText, when } from "./dom.js";
import { ProgressView } from "./progress.js";
import { OPEN, TaskCard, taskTitle } from "./tasks.js";

// Host last, shown only in a fleet, so the other columns keep their places either way.
const COLUMNS = ["Time", "Via", "Tool", "Arguments", "Decision", "Outcome", "Duration", "Host"];
const MAX_ROWS = 300;
const FINISHED_CARDS = 20;

function merge(old, update) {
  const out = { ...(old || {}) };
  for (const [k, v] of Object.entries(update || {})) if (v !== undefined) out[k] = v;
  // A late read of a running row never undoes an outcome an event already brought.
  if (old && old.outcome && old.outcome !== "running" && update.outcome === "running") out.outcome = old.outcome;
  if (old && old.durationMs !== null && old.durationMs !== undefined && update.durationMs === null) {
    out.durationMs = old.durationMs;
    out.decision = old.decision;
    out.decidedBy = old.decidedBy;
  }
  return out;
}

export class TranscriptView {
  constructor(root, { notify }) {
    this.root = root;
    this.notify = notify;
    this.calls = new Map(); // id → {row, tr}
    this.fleet = false;
    this.cards = new Map(); // task row id → TaskCard
    this.tbody = h("tbody");
    this.cardList = h("div", { class: "task-cards" });
    this.noTasks = h("p", { class: "hint" }, "No Tasks yet.");
    this.pendingList = h("ul", { class: "pending-list", "aria-label": "Delivery pending" });
    this.noPending = h("p", { class: "hint" }, "Nothing waiting to be read.");
    this.noCalls = h("p", { class: "hint" }, "No tool calls yet.");
    replaceChildren(root,
      h("h1", { id: "transcript-title" }, "Transcript"),
      h("section", { class: "tasks-section", "aria-labelledby": "tasks-title" },
        h("h2", { id: "tasks-title" }, "Tasks"), this.noTasks, this.cardList),
      h("section", { "aria-labelledby": "pending-title" },
        h("h2", { id: "pending-title" }, "Delivery pending"),
        h("p", { class: "hint" }, "Task results and input requests nobody has read yet (", h("code", {}, "monad tasks --state pending"), ")."),
        this.noPending, this.pendingList),
      h("section", { "aria-labelledby": "calls-title" },
        h("h2", { id: "calls-title" }, "Calls (newest first)"),
        h("table", { class: "journal calls", "aria-label": "Calls" },
          h("thead", {}, h("tr", {}, COLUMNS.map((c) => h("th", { scope: "col", hidden: c === "Host" }, c)))),
          this.tbody),
        this.noCalls));
    setInterval(() => { for (const card of this.cards.values()) if (card.open) card.tick(); }, 1000);
  }

  async reload() {
    const [calls, tasks] = await Promise.all([
      api("GET", "/v1/journal/calls?limit=200").catch((err) => ({ error: err.message })),
      api("GET", "/v1/tasks").catch((err) => ({ error: err.message })),
    ]);
    if (calls.error) this.notify(`calls: ${calls.error}`, true);
    else {
      this.showHosts(Boolean(calls.fleet));
      for (const row of calls.calls.slice().reverse()) this.applyCall(row);
    }
    if (tasks.error) this.notify(`tasks: ${tasks.error}`, true);
    else for (const row of tasks.tasks.slice(0, 100).reverse()) this.applyTask(row);
  }

  // -- calls ----------------------------------------------------------------------------
  applyCall(update) {
    if (!update || update.id === undefined) return;
    let entry = this.calls.get(update.id);
    if (!entry) {
      // Each cell names its column: in a narrow window a call is a card of labelled lines (studio.css).
      const cells = COLUMNS.map((c) => h("td", { class: `col-${c.toLowerCase()}`, dataset: { label: c } }));
      entry = { row: null, tr: h("tr", { dataset: { callId: String(update.id) } }, cells), cells };
      this.calls.set(update.id, entry);
      this.insert(entry, update.id);
    }
    entry.row = merge(entry.row, update);
    this.renderCall(entry);
    this.noCalls.hidden = true;
  }

  /** A running call's progress, in its outcome cell until the call ends. */
  applyProgress(p) {
    const entry = p && this.calls.get(p.id);
    if (!entry || entry.row.outcome !== "running") return;
    if (!entry.progress) {
      entry.progress = new ProgressView(`Progress of ${entry.row.exposed || "the call"}`);
      entry.cells[5].append(entry.progress.element);
    }
    entry.progress.show(p);
  }

  showHosts(fleet) {
    this.fleet = fleet;
    this.root.querySelectorAll("table.calls th:last-child, table.calls td:last-child")
      .forEach((cell) => { cell.hidden = !fleet; });
  }

  insert(entry, id) {
    // Newest first: before the first row with a smaller id.
    const next = [...this.tbody.children].find((tr) => Number(tr.dataset.callId) < id);
    this.tbody.insertBefore(entry.tr, next || null);
    while (this.tbody.children.length > MAX_ROWS) {
      const last = this.tbody.lastElementChild;
      this.calls.delete(Number(last.dataset.callId));
      last.remove();
    }
  }

  renderCall(entry) {
    const r = entry.row;
    const [time, via, tool, args, decision, outcome, duration, host] = entry.cells;
    setText(time, when(r.ts));
    setText(via, r.via || "");
    setText(tool, r.exposed || "");
    const shown = r.arguments !== undefined ? JSON.stringify(r.arguments) : r.argsDigest ? `digest ${r.argsDigest}` : "";
    setText(args, shown);
    args.classList.add("args");
    const decided = r.decision ? `${r.decision}${r.decidedBy ? ` (${r.decidedBy})` : ""}` : "";
    setText(decision, decided);
    const badge = outcome.firstChild || outcome.appendChild(h("span", { class: "badge" }));
    // A call that asked first (`monad mcp call` at a prompt) has its row before a person
    // answers: not sent yet, so not "running".
    const asking = r.outcome === "running" && !r.decision;
    setText(badge, asking ? "awaiting approval" : r.outcome || "");
    badge.className = `badge outcome-${asking ? "awaiting" : r.outcome || "none"}`;
    entry.tr.dataset.outcome = r.outcome || "";
    if (r.error) badge.title = r.error;
    if (entry.progress && r.outcome !== "running") { // ended: its outcome, not its last step
      entry.progress.element.remove();
      entry.progress = null;
    }
    setText(duration, typeof r.durationMs === "number" ? `${Math.round(r.durationMs)} ms` : "");
    setText(host, r.host || "");
    host.hidden = !this.fleet;
  }

  // -- tasks ----------------------------------------------------------------------------
  applyTask(row) {
    if (!row || !row.id) return;
    let card = this.cards.get(row.id);
    if (!card) {
      card = new TaskCard(row, this.notify);
      this.cards.set(row.id, card);
      this.cardList.prepend(card.element);
    } else card.update(row);
    this.noTasks.hidden = true;
    this.trim();
    this.renderPending();
  }

  trim() {
    const finished = [...this.cards.values()].filter((c) => !c.open)
      .sort((a, b) => (b.row.terminalAt || 0) - (a.row.terminalAt || 0));
    for (const card of finished.slice(FINISHED_CARDS)) {
      card.element.remove();
      this.cards.delete(card.row.id);
    }
    // Open tasks first, then the most recently finished.
    const order = [...this.cards.values()].sort((a, b) => (Number(b.open) - Number(a.open))
      || (b.row.createdAt - a.row.createdAt));
    // Moved only when out of place: moving a card's element takes the focus from a person
    // typing an answer into its input form.
    order.forEach((card, i) => {
      if (this.cardList.children[i] !== card.element) this.cardList.insertBefore(card.element, this.cardList.children[i] || null);
    });
  }

  renderPending() {
    const pending = [...this.cards.values()].filter((c) => c.row.deliveryPending);
    replaceChildren(this.pendingList, pending.map((c) => h("li", {},
      h("code", {}, taskTitle(c.row)), ` ${c.row.state}, ${c.row.pendingKind || "result"} waiting: `,
      h("code", {}, `monad tasks show ${c.row.id.slice(0, 12)}`),
      OPEN.has(c.row.state) ? null : h("span", { class: "hint" }, ` (ended ${when(c.row.terminalAt)})`))));
    this.noPending.hidden = pending.length > 0;
  }
}
