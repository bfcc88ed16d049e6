// A Task card (MCP tasks extension, SEP-2663; docs/tasks.md): one long-running tool call,
// whoever started it (this page, `monad mcp call --detach`, the gateway). Status, progress
// message, elapsed time, Stop (`tasks/cancel` through the supervisor: the card and
// `monad tasks show` then say cancelled), the `input_required` forms answered in the card,
// and once completed the tool's own result with the Task id in its `_meta`.

import { api } from "./api.js";
import { enc, h, replaceChildren, setText } from "./dom.js";
import { renderResult } from "./results.js";
import { SchemaForm } from "./schema_form.js";

export const OPEN = new Set(["queued", "submitting", "working", "input_required"]);

export function taskTitle(row) {
  const c = row.correlation || {};
  return c.exposed || `${row.server}__${row.tool}`;
}

function elapsed(row) {
  const end = row.terminalAt || Date.now() / 1000;
  const s = Math.max(0, Math.round(end - row.createdAt));
  return s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`;
}

export class TaskCard {
  constructor(row, notify) {
    this.notify = notify;
    this.row = null;
    this.inputKey = null;
    this.state = h("span", { class: "badge" });
    this.message = h("p", { class: "task-message" });
    this.clock = h("span", { class: "hint task-elapsed" });
    this.stop = h("button", { type: "button", class: "small danger", onclick: () => this.cancel() }, "Stop");
    this.input = h("div", { class: "task-input" });
    this.outcome = h("div", { class: "task-outcome" });
    this.pending = h("p", { class: "hint", hidden: true });
    this.title = h("h3", {});
    this.ids = h("p", { class: "hint task-ids" });
    this.element = h("article", { class: "task", dataset: { id: row.id } },
      h("div", { class: "task-head" }, this.title, this.state, this.clock, this.stop),
      this.ids, this.message, this.pending, this.input, this.outcome);
    this.update(row);
  }

  get open() {
    return OPEN.has(this.row.state);
  }

  update(row) {
    if (this.row && this.row.updatedAt > row.updatedAt) return; // an older answer than the one shown
    this.row = row;
    const title = taskTitle(row);
    this.element.setAttribute("aria-label", `Task ${title}`);
    setText(this.title, title);
    setText(this.state, row.state);
    this.state.className = `badge task-state state-${row.state}`;
    this.element.dataset.state = row.state;
    setText(this.ids, `monad ${row.id.slice(0, 12)}${row.taskId ? ` · task ${row.taskId}` : ""}`
                      + (row.correlation && row.correlation.via ? ` · from ${row.correlation.via}` : ""));
    // The server's word on a working Task; once it ended, the state and the outcome say it
    // (a last "step 3 of 4" left under "completed" reads as still going).
    setText(this.message, this.open ? row.statusMessage || "" : "");
    this.message.hidden = !this.open || !row.statusMessage;
    this.stop.hidden = !this.open;
    this.stop.setAttribute("aria-label", `Stop task ${title}`);
    this.pending.hidden = !row.deliveryPending;
    setText(this.pending, row.deliveryPending
      ? `Not yet delivered (${row.pendingKind || "result"}): monad tasks show ${row.id.slice(0, 12)} reads it.` : "");
    this.tick();
    this.renderInput();
    if (row.state === "completed" && row.result) replaceChildren(this.outcome, renderResult(row.result));
    else if (row.state === "failed") {
      replaceChildren(this.outcome, h("p", { class: "error" }, (row.error && row.error.message) || row.statusMessage
                                                                 || "failed"));
    } else replaceChildren(this.outcome);
  }

  tick() {
    setText(this.clock, `elapsed ${elapsed(this.row)}`);
  }

  renderInput() {
    const requests = this.row.state === "input_required" ? this.row.inputRequests || {} : {};
    const key = Object.keys(requests).sort()[0] || null;
    if (key === this.inputKey) return; // keep what the person is typing
    this.inputKey = key;
    if (!key) {
      replaceChildren(this.input);
      return;
    }
    // The supervisor's description of the request (tasks/forms.py describe_request): a form,
    // a URL to open, or one monad will not show (with why).
    const info = (this.row.inputs || []).find((i) => i.key === key)
      || { mode: "unsupported", problem: "the server's input request is not described" };
    const error = h("p", { class: "field-error", hidden: true });
    const send = async (answer) => {
      try {
        await api("POST", `/v1/tasks/${enc(this.row.id)}/input`, { responses: { [key]: answer } });
        this.notify(`answered ${taskTitle(this.row)}`);
      } catch (err) {
        setText(error, err.message);
        error.hidden = false;
      }
    };
    const name = `Input for ${taskTitle(this.row)}`;
    if (info.mode === "url") {
      replaceChildren(this.input, this.urlInput(info, name, error, send));
      return;
    }
    if (info.mode !== "form") {
      replaceChildren(this.input, h("div", { class: "task-form", role: "group", "aria-label": name },
        h("p", { class: "hint" }, `The page cannot show this input request: ${info.problem || "not supported"}.`),
        error,
        info.declinable ? h("div", { class: "buttons" },
          h("button", { type: "button", onclick: () => send({ action: "decline" }) }, "Decline")) : null));
      return;
    }
    const params = requests[key].params || {};
    const form = new SchemaForm(params.requestedSchema || {}, `task-${this.row.id.slice(0, 8)}-${key}`);
    const accept = () => {
      const got = form.collect();
      if (got.ok) send({ action: "accept", content: got.value });
    };
    replaceChildren(this.input,
      h("form", { class: "task-form", "aria-label": name, novalidate: true,
                  onsubmit: (e) => { e.preventDefault(); accept(); } },
        h("p", {}, info.message || "The server asks:"), form.element, error,
        h("div", { class: "buttons" },
          h("button", { type: "submit", class: "primary" }, "Send answer"),
          h("button", { type: "button", onclick: () => send({ action: "decline" }) }, "Decline"))));
  }

  /** A URL-mode request (MCP 2025-11-25 client/elicitation "Safe URL Handling"): the whole
   *  URL and its host are shown; the page never opens or fetches it, the person may follow
   *  the link (a new tab, no opener, no referrer) and then says so. The answer is the action
   *  alone. */
  urlInput(info, name, error, send) {
    return h("form", { class: "task-form", "aria-label": name, novalidate: true,
                       onsubmit: (e) => { e.preventDefault(); send({ action: "accept" }); } },
      h("p", {}, info.message || "The server asks you to open a URL:"),
      h("p", {}, "on ", h("strong", { class: "task-url-host" }, info.host || "?")),
      h("p", {}, h("a", { class: "url task-url", href: info.url, target: "_blank",
                          rel: "noopener noreferrer" }, info.url)),
      error,
      h("div", { class: "buttons" },
        h("button", { type: "submit", class: "primary" }, "I opened it"),
        h("button", { type: "button", onclick: () => send({ action: "decline" }) }, "Decline"),
        h("button", { type: "button", onclick: () => send({ action: "cancel" }) }, "Cancel")));
  }

  async cancel() {
    this.stop.disabled = true;
    try {
      this.update(await api("POST", `/v1/tasks/${enc(this.row.id)}/cancel`));
    } catch (err) {
      this.notify(err.message, true);
    } finally {
      this.stop.disabled = false;
    }
  }
}
