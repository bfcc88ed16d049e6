// The Tools page's "Find a tool for a task" box: the gateway's tool search (`find_tool`'s
// index, `GET /v1/tools/search`), ranked best first, each hit with its Try button.
import { api } from "./api.js";
import { breakAfterUnderscores, h, replaceChildren } from "./dom.js";

export class ToolSearchBox {
  constructor({ notify, open }) {
    this.notify = notify;
    this.open = open; // (name) => opens the Try panel
    this.asked = 0;
    this.list = h("ol", { class: "search-hits", "aria-label": "Tools found for the task", hidden: true });
    // No hit is a sentence of its own, not item 1 of the ranked list (read as "1 item").
    this.none = h("p", { class: "empty search-none", role: "status", hidden: true }, "No tool matches the task.");
    this.input = h("input", { type: "search", class: "filter", autocomplete: "off", spellcheck: "false",
                              placeholder: "Find a tool for a task",
                              "aria-label": "Find a tool for a task, in plain words",
                              oninput: () => { clearTimeout(this.timer); this.timer = setTimeout(() => this.run(), 250); } });
  }

  async run() {
    const q = this.input.value.trim();
    const mine = ++this.asked;
    if (!q) { this.list.hidden = true; this.none.hidden = true; replaceChildren(this.list); return; }
    try {
      const answer = await api("GET", `/v1/tools/search?q=${encodeURIComponent(q)}&limit=10`);
      if (mine !== this.asked) return; // a later question was asked meanwhile
      const hits = answer.tools || [];
      replaceChildren(this.list, hits.map((t) => h("li", {},
        h("code", { title: t.name }, breakAfterUnderscores(t.name)), " ",
        h("span", { class: "desc", title: t.description || null }, t.description || ""), " ",
        h("button", { type: "button", class: "small", "aria-label": `Try ${t.name} (found)`,
                      onclick: () => this.open(t.name) }, "Try"))));
      this.list.hidden = hits.length === 0;
      this.none.hidden = hits.length !== 0;
    } catch (err) {
      if (err.code !== "unreachable" && err.status !== 401) this.notify(`search: ${err.message}`, true);
    }
  }
}
