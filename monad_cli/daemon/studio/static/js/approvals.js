// Approvals waiting, above every view: each tool call the gate holds (from this page, the
// CLI, the gateway or an MCP App) with the server, the tool, the exact command or URL and
// the full arguments, and the four answers. Deciding here ends the waiting call wherever it
// came from. "Always allow" is not offered for a `hostEscape` server (the gate refuses it
// too). Cards come and go with `approval.pending` / `approval.closed` events.
//
// Beside them, Authorize cards: a call to a server whose OAuth grant lapsed waits for its
// authorization (docs/gateway.md "Authorization on demand"). The card shows the
// authorization server's URL with its host in bold and opens it in a new tab; the call goes
// on by itself once the tokens arrive (`authorization.pending` / `authorization.closed`).

import { api } from "./api.js";
import { enc, h, replaceChildren, setText } from "./dom.js";
import { urlWithHost } from "./questions.js";

const CALLERS = { cli: "monad mcp call", gateway: "an agent, through the gateway", studio: "this page",
                  app: "an MCP App" };

export class ApprovalsPanel {
  constructor(root, notify) {
    this.root = root;
    this.notify = notify;
    this.cards = new Map(); // id → element
    this.authIds = new Set(); // the cards that are Authorize cards
    this.list = h("div", { class: "approval-list" });
    this.title = h("h2", { id: "approvals-title" }, "Approvals waiting");
    // Announced wherever the person is; the banner itself stays in view (sticky).
    this.announce = h("p", { class: "announce", role: "status", "aria-live": "polite" });
    replaceChildren(root, this.title, this.announce, this.list);
    setInterval(() => this.tick(), 1000);
    // Where the person was before reaching the banner: answering goes back there.
    this.lastOutside = null;
    document.addEventListener("focusin", (e) => {
      if (!root.contains(e.target) && e.target !== document.body) this.lastOutside = e.target;
    });
  }

  apply(pending) {
    const ids = new Set(pending.map((a) => a.id));
    for (const id of [...this.cards.keys()]) if (!ids.has(id) && !this.authIds.has(id)) this.remove(id);
    for (const a of pending) this.add(a, false);
  }

  /** The calls waiting for authorization, from a snapshot. */
  applyAuthorizations(waiting) {
    const ids = new Set(waiting.map((w) => w.id));
    for (const id of [...this.authIds]) if (!ids.has(id)) this.remove(id);
    for (const w of waiting) this.addAuthorization(w, false);
  }

  /** A call waits for its server's authorization: the Authorize card. */
  addAuthorization(w, live = true) {
    if (this.cards.has(w.id)) return;
    const expires = h("span", { class: "hint", dataset: { expires: String(w.expires || 0), what: "authorized" } });
    const open = h("a", { class: "button small primary", href: w.url, target: "_blank", rel: "noopener noreferrer" },
      `Authorize ${w.server}`);
    const card = h("article", { class: "approval authorization", "aria-label": `Authorization for ${w.exposed}`,
                                dataset: { id: w.id } },
      h("h3", {}, w.exposed, " ", expires),
      h("dl", { class: "facts" },
        h("dt", {}, "Asked by"), h("dd", {}, CALLERS[w.via] || w.via),
        h("dt", {}, "Server"), h("dd", {}, w.server, " needs authorization"),
        h("dt", {}, "Authorization server"), h("dd", {}, urlWithHost(w.url)),
        w.userCode ? h("dt", {}, "Code") : null, w.userCode ? h("dd", {}, h("code", {}, w.userCode)) : null),
      h("div", { class: "buttons" }, open,
        h("button", { type: "button", class: "small", onclick: () => this.cancelAuthorization(w) },
          "Cancel authorization")),
      h("p", { class: "hint" }, "Approve in the new tab; the call goes on by itself once the tokens arrive."));
    this.cards.set(w.id, card);
    this.authIds.add(w.id);
    this.list.append(card);
    this.root.hidden = false;
    const at = document.activeElement;
    const inTry = at && at.closest && at.closest(".try");
    if (live && w.via === "studio" && (!at || at === document.body || inTry) && !this.root.contains(at)) {
      this.returnTo = inTry ? at : null;
      open.focus();
      card.scrollIntoView({ block: "nearest" });
    }
    setText(this.announce, `${w.exposed} (${CALLERS[w.via] || w.via}) waits for the authorization of ${w.server}`);
    this.tick();
  }

  async cancelAuthorization(w) {
    try {
      await api("DELETE", `/v1/mcp-servers/${enc(w.server)}/authorize`);
      this.notify(`cancelled the authorization of ${w.server}`);
    } catch (err) {
      this.notify(err.message, true);
    }
  }

  /** `live`: it just arrived (an event). A call the person made from Try here gets focus on
   * its first answer; answering brings focus back (returnFocus). */
  add(a, live = true) {
    const known = this.cards.get(a.id);
    if (known) { // the same request again: its caller started waiting, maybe with a new deadline
      const clock = known.querySelector("[data-expires]");
      if (clock) clock.dataset.expires = String(a.expires || 0);
      this.tick();
      return;
    }
    const where = a.command ? h("code", {}, a.command.join(" ")) : a.url ? h("code", {}, a.url) : "–";
    const button = (label, decision, scope, extra = {}) =>
      h("button", { type: "button", class: "small", onclick: () => this.decide(a, decision, scope), ...extra }, label);
    const expires = h("span", { class: "hint", dataset: { expires: String(a.expires || 0) } });
    const card = h("article", { class: "approval", "aria-label": `Approval for ${a.exposed}`, dataset: { id: a.id } },
      h("h3", {}, a.exposed, " ", expires),
      h("dl", { class: "facts" },
        h("dt", {}, "Asked by"), h("dd", {}, CALLERS[a.via] || a.via),
        h("dt", {}, "Server"), h("dd", {}, a.server),
        h("dt", {}, a.command ? "Command" : "URL"), h("dd", {}, where),
        h("dt", {}, "Arguments"), h("dd", {}, h("pre", { class: "json" }, JSON.stringify(a.arguments, null, 2)))),
      h("div", { class: "buttons" },
        button("Allow once", "allow", "once", { class: "small primary" }),
        button("Allow for session", "allow", "session"),
        a.hostEscape ? null : button("Always allow", "allow", "always"),
        button("Deny", "deny", "once", { class: "small danger" })),
      a.hostEscape ? h("p", { class: "hint" }, "This server has trust.hostEscape: it can be allowed once or for the "
                                              + "session, never always.") : null);
    this.cards.set(a.id, card);
    this.list.append(card);
    this.root.hidden = false;
    const at = document.activeElement;
    const inTry = at && at.closest && at.closest(".try");
    if (live && a.via === "studio" && (!at || at === document.body || inTry) && !this.root.contains(at)) {
      this.returnTo = inTry ? at : null;
      card.querySelector("button").focus();
      card.scrollIntoView({ block: "nearest" });
    }
    setText(this.announce, `${a.exposed} (${CALLERS[a.via] || a.via}) waits for your answer`
                           + (this.cards.size > 1 ? `; ${this.cards.size} waiting` : ""));
    this.tick();
  }

  remove(id) {
    const card = this.cards.get(id);
    const hadFocus = card && card.contains(document.activeElement);
    if (card) card.remove();
    this.cards.delete(id);
    this.authIds.delete(id);
    this.root.hidden = this.cards.size === 0;
    if (this.cards.size === 0) setText(this.announce, "");
    if (hadFocus) this.returnFocus();
  }

  returnFocus() {
    const next = this.list.querySelector(".approval button:not([disabled]), .approval a.button");
    const back = [this.returnTo, this.lastOutside].find((el) => el && el.isConnected && !el.disabled);
    this.returnTo = null;
    if (next) next.focus(); // another one waits: its first answer
    else if (back) back.focus();
  }

  tick() {
    const now = Date.now() / 1000;
    for (const el of this.list.querySelectorAll("[data-expires]")) {
      const left = Math.max(0, Math.round(Number(el.dataset.expires) - now));
      setText(el, el.dataset.what === "authorized" ? `(fails in ${left} s unless authorized)`
                                                    : `(refused in ${left} s unless decided)`);
    }
  }

  async decide(a, decision, scope) {
    const card = this.cards.get(a.id);
    for (const b of card ? card.querySelectorAll("button") : []) b.disabled = true;
    try {
      await api("POST", `/v1/approvals/${enc(a.id)}`, { decision, scope });
      this.remove(a.id);
      const at = document.activeElement;
      if (!at || at === document.body || this.root.contains(at) || !at.isConnected) this.returnFocus();
      this.notify(decision === "allow" ? `allowed ${a.exposed} (${scope})` : `denied ${a.exposed}`);
    } catch (err) {
      for (const b of card ? card.querySelectorAll("button") : []) b.disabled = false;
      if (err.status === 404) this.remove(a.id); // decided elsewhere, or its caller left
      this.notify(err.message, true);
    }
  }
}
