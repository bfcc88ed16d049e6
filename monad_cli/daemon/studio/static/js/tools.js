// Capabilities → Tools: one row per tool agents see (the exposed name `server__tool` first),
// and **Try**: a form from the tool's inputSchema, **Call** through the same approval gate as
// every other caller (`POST /v1/tools/call`, journaled `via: studio`), the result as the model
// gets it, the call's Task card when the server made it a Task, and the tool's MCP App when it
// has one (apphost.js).

import { api } from "./api.js";
import { AppFrame, appLog } from "./apphost.js";
import { breakAfterUnderscores, byName, h, replaceChildren, setText } from "./dom.js";
import { ProgressView } from "./progress.js";
import { askQuestion } from "./questions.js";
import { renderResult } from "./results.js";
import { SchemaForm } from "./schema_form.js";
import { renamedNames } from "./servers.js";
import { TaskCard } from "./tasks.js";
import { ToolSearchBox } from "./tools_search.js";

const APPROVAL_WAIT_S = 600; // the page waits as long as the person may take to decide

function newRef() {
  const bytes = new Uint8Array(12);
  crypto.getRandomValues(bytes);
  return `studio-${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

class TryPanel {
  constructor(tool, { notify, host, onClose }) {
    this.tool = tool;
    this.notify = notify;
    this.host = host;
    this.onClose = onClose;
    this.ref = null;
    this.callId = null; // the running call's id, from its `call` event (it carries our ref)
    this.controller = null;
    this.task = null;
    this.app = null;
    const titleId = "try-title";
    this.form = new SchemaForm(tool.formSchema || tool.inputSchema || {}, "try");
    this.callButton = h("button", { type: "submit", class: "primary" }, "Call");
    this.stopButton = h("button", { type: "button", class: "danger", hidden: true, onclick: () => this.stop() }, "Stop");
    this.status = h("p", { class: "call-status", role: "status" });
    this.progress = new ProgressView(`Progress of ${tool.name}`, { live: true });
    this.taskArea = h("div", { class: "try-task" });
    this.appArea = h("div", { class: "try-app" });
    this.resultArea = h("div", { class: "try-result", role: "region", tabindex: "-1", "aria-label": `Result of ${tool.name}` });
    this.element = h("section", { class: "try", "aria-labelledby": titleId,
                                  onkeydown: (e) => { if (e.key === "Escape" && !this.controller) this.close("the person closed it"); } },
      h("div", { class: "details-head" },
        h("h2", { id: titleId }, `Try ${tool.name}`),
        h("button", { type: "button", class: "small", onclick: () => this.close("the person closed it") }, "Close")),
      tool.description ? h("p", { class: "hint" }, tool.description) : null,
      h("form", { class: "try-form", "aria-label": `Arguments of ${tool.name}`, novalidate: true,
                  onsubmit: (e) => { e.preventDefault(); this.call(); } },
        this.form.element,
        h("div", { class: "buttons" }, this.callButton, this.stopButton)),
      this.status, this.progress.element, this.taskArea, this.appArea, this.resultArea);
  }

  /** Focus the first field (or Call, for a tool without arguments). */
  focusFirst() {
    const first = this.element.querySelector("form input, form select, form textarea") || this.callButton;
    first.focus();
  }

  async call() {
    const got = this.form.collect();
    if (!got.ok) return;
    await this.closeApp("another call of the tool started");
    this.ref = newRef();
    this.callId = null;
    this.progress.clear();
    this.task = null;
    replaceChildren(this.taskArea);
    replaceChildren(this.resultArea);
    this.callButton.disabled = true;
    this.stopButton.hidden = false;
    this.status.classList.remove("error");
    setText(this.status, "Calling… (if the call needs an approval, answer it in the banner at the top)");
    this.controller = new AbortController();
    if (this.tool.ui) this.startApp(got.value);
    let result = null;
    let failure = null;
    try {
      result = await callTool(this.tool.name, got.value, this.ref, this.controller.signal);
    } catch (err) {
      failure = err;
    }
    this.controller = null;
    this.progress.clear(); // a finished call shows its outcome, not its last step
    this.callButton.disabled = false;
    this.stopButton.hidden = true;
    if (result) {
      setText(this.status, `${result.isError ? "Tool error" : "Done"} · approved by ${result.decidedBy}`);
      replaceChildren(this.resultArea, renderResult(result));
      if (this.app) this.app.toolResult(result);
      this.showResult();
    } else {
      const why = failure.name === "AbortError" ? "stopped (notifications/cancelled sent to the server)" : failure.message;
      setText(this.status, `Not done: ${why}`);
      this.status.classList.add("error");
      if (this.app) this.app.toolCancelled(failure.name === "AbortError" ? "stopped by the person" : why);
      this.showResult();
    }
  }

  /** The outcome scrolls into view and takes focus (an approval answered in the banner may
   * have left focus anywhere). */
  showResult() {
    const target = this.resultArea.childElementCount ? this.resultArea : this.status;
    if (target === this.status) this.status.setAttribute("tabindex", "-1");
    target.scrollIntoView({ block: "nearest" });
    target.focus({ preventScroll: true });
  }

  startApp(args) {
    const log = appLog();
    this.app = new AppFrame({ name: this.tool.name, host: this.host, onLog: log.add });
    const app = this.app;
    replaceChildren(this.appArea,
      h("div", { class: "details-head" }, h("h3", {}, `MCP App: ${this.tool.ui.resourceUri}`),
        h("button", { type: "button", class: "small", onclick: () => this.closeApp("the person closed it") }, "Close app")),
      app.element, h("h4", {}, "App log"), log.element);
    app.toolInput(args); // held until the app says initialized
    app.open().catch((err) => {
      log.add(`not shown: ${err.message}`);
      app.close(err.message);
    });
  }

  async closeApp(reason) {
    const app = this.app;
    this.app = null;
    if (app) await app.close(reason);
  }

  /** A `call` event: this panel's own call when it carries this call's ref; its end clears
   *  the progress even before the answer is read. */
  applyCall(call) {
    if (this.ref && call.ref === this.ref && call.outcome === "running" && this.controller) {
      this.callId = call.id; // past the gate: the server has it
      setText(this.status, "Running… (Stop cancels it)");
    }
    if (call.id === this.callId && call.outcome && call.outcome !== "running") this.progress.clear();
  }

  /** A `call.progress` event of this panel's running call. */
  applyProgress(p) {
    if (this.controller && p.id === this.callId) this.progress.show(p);
  }

  /** A Task row: this panel's own when its correlation carries this call's ref. */
  applyTask(row) {
    if (!this.ref || !row.correlation || row.correlation.ref !== this.ref) return;
    if (!this.task) {
      this.task = new TaskCard(row, this.notify);
      replaceChildren(this.taskArea, this.task.element);
    } else this.task.update(row);
  }

  async stop() {
    if (this.task && this.task.open) {
      setText(this.status, "Stopping the Task (tasks/cancel)…");
      await this.task.cancel(); // the waiting call ends with the Task
      return;
    }
    if (this.controller) this.controller.abort();
  }

  async close(reason) {
    if (this.controller) this.controller.abort();
    await this.closeApp(reason);
    this.element.remove();
    this.onClose(this);
  }

  tick() {
    if (this.task) this.task.tick();
  }
}

function callError(data, status) {
  const err = new Error((data && data.error && data.error.message) || `HTTP ${status}`);
  err.code = data && data.error && data.error.code;
  return err;
}

/** `POST /v1/tools/call` that an AbortSignal can cut (the supervisor cancels the call then),
 *  with `progress` and `questions`: the answer is NDJSON (daemon/api/progress.py), and a
 *  server's question during the call is asked in a dialog (questions.js) and answered.
 *  `progress` makes the supervisor ask the server for progress (a progressToken); the page
 *  shows it from the event stream, as it does every other caller's. */
async function callTool(name, args, ref, signal) {
  const response = await fetch("/v1/tools/call", {
    method: "POST", credentials: "same-origin", signal,
    headers: { Accept: "application/x-ndjson, application/json", "Content-Type": "application/json" },
    body: JSON.stringify({ name, arguments: args, ref, via: "studio", progress: true, questions: true,
                           approval: { mode: "wait", timeout: APPROVAL_WAIT_S } }),
  });
  if (!response.ok) throw callError(await response.json().catch(() => null), response.status);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffered = "";
  let last = null;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffered += value;
    let newline;
    while ((newline = buffered.indexOf("\n")) >= 0) {
      const line = buffered.slice(0, newline).trim();
      buffered = buffered.slice(newline + 1);
      if (!line) continue;
      const item = JSON.parse(line);
      if (item.question) {
        const question = item.question;
        askQuestion(question, signal).then((answer) => api("POST", "/v1/tools/call/answer",
                                                         { id: question.id, answer }).catch(() => {}));
      } else if (!item.progress) last = item; // progress: shown from the event stream (`call.progress`)
    }
  }
  if (!last) throw new Error("the supervisor ended the call without an answer");
  if (last.error) throw callError(last, last.status);
  return last.result || last;
}

export class ToolsView {
  constructor(root, { notify, host, onTools = () => {}, onFilter = () => {} }) {
    this.root = root;
    this.notify = notify;
    this.host = host;
    this.onTools = onTools;
    this.onFilter = onFilter;
    this.filterText = "";
    this.tools = [];
    this.panel = null;
    this.table = h("table", { class: "tools-list", "aria-labelledby": "tools-title" },
      h("thead", {}, h("tr", {}, ["Exposed name", "Description", "Actions"]
        .map((c, i) => h("th", { scope: "col", class: `col-${i}` }, c)))));
    this.empty = h("p", { class: "empty", hidden: true }, "No tools: no server is connected, or none lists tools.");
    this.noMatch = h("p", { class: "empty", hidden: true }, "No tool matches the filter.");
    this.slot = h("div", { class: "try-slot pane", hidden: true });
    this.filter = h("input", { type: "search", class: "filter", autocomplete: "off", spellcheck: "false",
                               placeholder: "Filter by server, name or description",
                               "aria-label": "Filter tools by server, name or description",
                               oninput: () => { this.setFilter(this.filter.value, true); } });
    this.search = new ToolSearchBox({ notify, open: (name) => this.open(name) });
    replaceChildren(root,
      h("div", { class: "toolbar" }, h("h1", { id: "tools-title" }, "Tools"), this.search.input, this.filter),
      this.search.list, this.search.none,
      h("p", { class: "hint" }, "Every tool agents see through monad, under its exposed name, grouped by server. Try "
                                + "calls it through the same approval gate as the CLI and the gateway."),
      h("div", { class: "split" }, h("div", { class: "list" }, this.table, this.empty, this.noMatch), this.slot));
    setInterval(() => this.panel && this.panel.tick(), 1000);
  }

  shown() {
    if (!this.loaded) this.refresh();
  }

  refreshSoon() {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.refresh(), 300);
  }

  async refresh() {
    try {
      const answer = await api("GET", "/v1/studio/tools");
      this.loaded = true;
      this.render(answer.tools || [], answer.collisions || []);
    } catch (err) {
      if (err.code !== "unreachable" && err.status !== 401) this.notify(`tools: ${err.message}`, true);
    }
  }

  setFilter(text, fromInput = false) {
    this.filterText = text;
    if (!fromInput && this.filter.value !== text) this.filter.value = text;
    this.applyFilter();
    if (fromInput) this.onFilter(text);
  }

  applyFilter() {
    const q = this.filterText.trim().toLowerCase();
    let shown = 0;
    for (const group of this.table.tBodies) {
      const serverHit = !q || group.dataset.server.toLowerCase().includes(q)
        || (group.dataset.state || "").includes(q);
      let inGroup = 0;
      const rows = group.querySelectorAll("tr[data-name]");
      for (const tr of rows) {
        const ok = serverHit || tr.dataset.name.toLowerCase().includes(q)
          || (tr.dataset.description || "").toLowerCase().includes(q);
        tr.hidden = !ok;
        if (ok) inGroup += 1;
      }
      shown += inGroup;
      group.hidden = inGroup === 0;
      // The count says what is shown: "· 1 of 2" under a filter that hides some, "· 2" otherwise.
      const count = group.querySelector(".group-count");
      if (count) count.textContent = inGroup < rows.length ? ` · ${inGroup} of ${rows.length}` : ` · ${rows.length}`;
    }
    this.noMatch.hidden = this.tools.length === 0 || shown > 0;
  }

  render(tools, collisions = []) {
    this.onTools(tools);
    const renamed = renamedNames(collisions);
    const key = JSON.stringify([tools.map((t) => [t.name, t.description, t.ui, t.server, t.approval]), [...renamed]]);
    if (key === this.key) return;
    this.key = key;
    this.tools = tools;
    const groups = new Map();
    for (const t of tools) {
      if (!groups.has(t.server)) groups.set(t.server, []);
      groups.get(t.server).push(t);
    }
    // A new tool list rebuilds the table: focus stays on the same Try button.
    const focused = this.table.contains(document.activeElement) ? document.activeElement.getAttribute("aria-label") : null;
    for (const body of [...this.table.tBodies]) body.remove();
    for (const server of [...groups.keys()].sort(byName)) {
      const list = groups.get(server);
      this.table.append(h("tbody", { dataset: { server } },
        h("tr", { class: "group" }, h("th", { scope: "rowgroup", colspan: "3" },
          h("span", { class: "group-name", title: server }, server), h("span", { class: "hint group-count" }, ` · ${list.length}`))),
        list.map((t) => h("tr", { dataset: { name: t.name, description: t.description || "" } },
          h("td", { class: "col-0" }, h("code", { title: t.name }, breakAfterUnderscores(t.name))),
          h("td", { class: "col-1" }, h("span", { class: "desc", title: t.description || null }, t.description || ""),
            t.ui ? h("span", { class: "badge tag" }, "MCP App") : null,
            // Its name has monad's hash suffix: as `monad mcp tools` says (the server's Details name both sides).
            renamed.has(t.name) ? h("span", { class: "badge tag" }, "renamed: a name collision") : null,
            t.autoApproved ? h("span", { class: "badge tag" }, "auto-approved") : null,
            t.approval ? h("span", { class: "badge tag" }, `approved (${t.approval})`) : null,
            // A standing approval is taken back here too (`monad approvals revoke`): the next call asks.
            t.approval ? h("button", { type: "button", class: "small", "aria-label": `Revoke approval of ${t.name}`,
                                       onclick: () => this.revoke(t.name) }, "Revoke") : null),
          h("td", { class: "col-2" }, h("button", { type: "button", class: "small", "aria-label": `Try ${t.name}`,
                                                    onclick: () => this.open(t.name) }, "Try"))))));
    }
    this.empty.hidden = tools.length > 0;
    this.applyFilter();
    const again = focused && this.tryButton(focused);
    if (again) again.focus();
  }

  async revoke(name) {
    try {
      await api("POST", "/v1/approvals/revoke", { name });
      this.notify(`${name}: approval revoked; its next call asks again`);
    } catch (err) {
      this.notify(`revoke ${name}: ${err.message}`, true);
    }
    this.refresh();
  }

  tryButton(label) {
    return [...this.table.querySelectorAll("button[aria-label]")].find((b) => b.getAttribute("aria-label") === label);
  }

  async open(name) {
    const tool = this.tools.find((t) => t.name === name);
    if (!tool) return;
    const opener = document.activeElement;
    const openerLabel = opener && opener.getAttribute && opener.getAttribute("aria-label");
    if (this.panel) await this.panel.close("another tool was opened");
    this.panel = new TryPanel(tool, { notify: this.notify, host: this.host,
                                      onClose: (p) => {
                                        if (this.panel !== p) return;
                                        this.panel = null;
                                        this.slot.hidden = true;
                                        document.body.classList.remove("try-open");
                                        // The button that opened it, or the same one after a rebuild.
                                        const back = opener && opener.isConnected ? opener
                                          : openerLabel && this.tryButton(openerLabel);
                                        if (back) back.focus();
                                      } });
    this.slot.hidden = false;
    document.body.classList.add("try-open");
    this.slot.append(this.panel.element);
    this.panel.element.scrollIntoView({ block: "nearest" });
    this.panel.focusFirst();
  }

  applyTask(row) {
    if (this.panel) this.panel.applyTask(row);
  }

  applyCall(call) {
    if (this.panel) this.panel.applyCall(call);
  }

  applyProgress(p) {
    if (this.panel) this.panel.applyProgress(p);
  }
}
