// Modal dialogs (<dialog>, role=dialog): the confirmation before a removal, and the
// authorization of a remote server.

import { api } from "./api.js";
import { dismiss, enc, h, httpUrl, replaceChildren, setText } from "./dom.js";

/**
 * Close every open modal dialog as Escape does: its own `cancel` handling gives the safe answer
 * (a removal not done, a form not saved), then it closes. For a change of view (the URL's hash,
 * back/forward): a dialog belongs to the view that opened it.
 */
export function cancelOpenDialogs() {
  for (const dialog of document.querySelectorAll("dialog[open]")) {
    const escape = new Event("cancel", { cancelable: true });
    if (dialog.dispatchEvent(escape) && dialog.open) dialog.close();
  }
}

/** Ask before doing something that cannot be undone; resolves true only on the confirm button. */
export function confirmDialog({ title, text, confirm }) {
  return new Promise((resolve) => {
    const titleId = "confirm-title";
    const opener = document.activeElement;
    const dialog = h("dialog", { class: "modal", "aria-labelledby": titleId, "aria-describedby": "confirm-text" },
      h("h2", { id: titleId }, title),
      h("p", { id: "confirm-text" }, text));
    let answered = false;
    const done = (answer) => {
      if (answered) return;
      answered = true;
      // Back to what opened it (a removed row's button is gone: then the list itself).
      dismiss(dialog, opener && opener.isConnected ? opener : document.querySelector("[data-focus-fallback]"));
      resolve(answer);
    };
    // The safe answer first, and focused: Enter, Enter must never destroy anything.
    const cancel = h("button", { type: "button", autofocus: true, onclick: () => done(false) }, "Cancel");
    dialog.append(h("div", { class: "buttons" }, cancel,
      h("button", { type: "button", class: "danger", onclick: () => done(true) }, confirm)));
    dialog.addEventListener("cancel", (e) => { e.preventDefault(); done(false); }); // Escape
    dialog.addEventListener("close", () => done(false));
    document.body.append(dialog);
    dialog.showModal();
    cancel.focus();
  });
}

/**
 * Authorize a remote server: the supervisor runs `monad mcp authorize`'s flow; the page
 * opens the authorization server in a new tab (loopback flow) or shows the device code.
 * Progress arrives as `authorize` events (`update`).
 */
export class AuthorizeDialog {
  constructor() {
    this.name = null;
    this.dialog = null;
  }

  async start(name, flow) {
    // The tab is opened now, inside the click, or the browser would block it as a pop-up;
    // it learns its URL when the supervisor knows it. It never gets a handle on this page.
    let tab = null;
    if (flow !== "device") {
      tab = window.open("", "_blank");
      if (tab) tab.opener = null;
    }
    this.show(name);
    try {
      const run = await api("POST", `/v1/mcp-servers/${enc(name)}/authorize`);
      const url = run.url && httpUrl(run.url);
      if (tab && url) tab.location.href = url;
      else if (tab) tab.close();
      this.update(run);
    } catch (err) {
      if (tab) tab.close();
      this.update({ name, phase: "failed", message: err.message });
    }
  }

  show(name) {
    this.close();
    this.opener = document.activeElement;
    this.name = name;
    this.finished = false;
    const titleId = "authorize-title";
    this.status = h("p", { role: "status", class: "auth-status" }, "Asking the authorization server…");
    this.detail = h("div", { class: "auth-detail" });
    this.cancelButton = h("button", { type: "button", onclick: () => this.cancel() }, "Cancel authorization");
    this.dialog = h("dialog", { class: "modal", "aria-labelledby": titleId },
      h("h2", { id: titleId }, `Authorize ${name}`),
      this.status, this.detail,
      h("div", { class: "buttons" }, this.cancelButton,
        h("button", { type: "button", onclick: () => this.close() }, "Close")));
    this.dialog.addEventListener("close", () => this.close());
    document.body.append(this.dialog);
    this.dialog.showModal();
  }

  /** A run as the API and the `authorize` events give it. */
  update(run) {
    if (!this.dialog || run.name !== this.name) return;
    const link = (url, text) => h("a", { href: url, target: "_blank", rel: "noopener noreferrer" }, text);
    const finished = ["done", "failed", "cancelled"].includes(run.phase);
    if (this.finished && !finished) return; // a late answer about an earlier step
    this.finished = finished;
    this.cancelButton.hidden = finished;
    if (run.phase === "url" && run.url && httpUrl(run.url)) {
      setText(this.status, "Finish in the new tab; this page updates by itself.");
      replaceChildren(this.detail, h("p", {}, "No tab opened? ", link(httpUrl(run.url), "Open the authorization server")),
        h("p", { class: "url" }, run.url));
    } else if (run.phase === "device") {
      setText(this.status, "On any device, open the address below and enter the code.");
      const verify = httpUrl(run.verificationUri || "");
      const complete = httpUrl(run.verificationUriComplete || "");
      replaceChildren(this.detail,
        h("p", {}, "Code: ", h("code", { class: "user-code" }, run.userCode || "")),
        verify ? h("p", {}, link(verify, verify)) : null,
        complete ? h("p", {}, "or ", link(complete, "open the address that carries the code")) : null,
        run.expiresIn ? h("p", { class: "hint" }, `The code expires in ${Math.round(run.expiresIn)} s.`) : null);
    } else if (run.phase === "done") {
      setText(this.status, `Authorized (scope: ${run.scope || "(none)"}); reconnecting ${run.name}.`);
      replaceChildren(this.detail);
    } else if (run.phase === "failed" || run.phase === "cancelled") {
      setText(this.status, run.message || run.phase);
      this.status.classList.add("error");
      replaceChildren(this.detail);
    }
  }

  async cancel() {
    if (!this.name) return;
    try {
      this.update(await api("DELETE", `/v1/mcp-servers/${enc(this.name)}/authorize`));
    } catch (err) {
      this.update({ name: this.name, phase: "failed", message: err.message });
    }
  }

  close() {
    const { dialog, opener } = this;
    this.dialog = null;
    this.opener = null;
    if (dialog) dismiss(dialog, opener);
  }
}
