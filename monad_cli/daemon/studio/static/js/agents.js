// Agents: the MCP clients on this machine (Claude Code, Cursor, Codex, …), whether each is
// connected to monad, and Connect / Disconnect: what `monad mcp connect CLIENT [--remove]`
// does, through the same code (POST /v1/clients/NAME/connect). Before anything changes, a
// dialog names the file and shows the entry that goes into it; Cancel is the safe default.

import { api } from "./api.js";
import { dismiss, h, listIndex, replaceChildren, setText, withCode } from "./dom.js";

const COLUMNS = ["Agent", "File", "Status", "Action"];
const STATUS = {
  connected: "Connected",
  outdated: "An older monad entry",
  "not-connected": "Not connected",
  "not-installed": "Not found on this machine",
  unreadable: "Cannot read its file",
};

/** What `monad mcp connect --replace` warns of (`differing`): the client's own entries it left
 *  because monad's server of that name is another one (taking them out would lose them), and
 *  what to do; "" when there are none. */
function differing(c, result) {
  const kept = result.differing || [];
  if (!kept.length) return "";
  const one = kept.length === 1;
  const list = kept.map((n) => `\`${n}\``).join(", ");
  return `. ${c.title}'s own ${list} ${one ? "stays" : "stay"} in \`${result.file}\`: monad's ${list} `
    + `${one ? "is" : "are"} defined differently, so taking ${one ? "it" : "them"} out would lose ${one ? "it" : "them"}; `
    + `\`monad mcp import ${c.name} --force\` makes monad's the same as ${c.title}'s, then `
    + `\`monad mcp connect ${c.name} --replace\` takes ${one ? "it" : "them"} out`;
}

/** What `monad mcp connect --replace` warns of (`partial`): the client's own entries it left
 *  because monad holds them without some of their fields (a `command` beside the `url` import
 *  kept), so they are not the same definitions, and what to do; "" when there are none. */
function partial(c, result) {
  const kept = result.partial || [];
  if (!kept.length) return "";
  const one = kept.length === 1;
  const list = kept.map((p) => `\`${p.name}\``).join(", ");
  const fields = kept.map((p) => `\`${p.name}\`: ${p.leftOut.map((f) => `\`${f}\``).join(", ")}`).join("; ");
  return `. ${c.title}'s own ${list} ${one ? "stays" : "stay"} in \`${result.file}\`: monad's ${list} `
    + `${one ? "holds it" : "hold them"} without some of ${one ? "its" : "their"} fields (${fields}), so `
    + `${one ? "it is not the same definition" : "they are not the same definitions"} and Connect leaves `
    + `${one ? "it" : "them"}; take those fields out of \`${result.file}\` if ${c.title} does not need them, `
    + `and \`monad mcp connect ${c.name} --replace\` takes ${one ? "it" : "them"} out`;
}

export class AgentsView {
  constructor(root, { notify }) {
    this.root = root;
    this.notify = notify;
    this.loaded = false;
    this.tbody = h("tbody", { onkeydown: (e) => this.listKeys(e) });
    this.status = h("p", { class: "hint count", role: "status" });
    replaceChildren(root,
      h("div", { class: "toolbar" }, h("h1", { id: "agents-title" }, "Agents")),
      h("p", { class: "hint" }, "Connect an agent to monad: it then sees every monad server through the approval gate. ",
        "Connect writes one entry named ", h("code", {}, "monad"), " into the agent’s own config file, as ",
        h("code", {}, "monad mcp connect CLIENT"), " does; everything else in the file stays. Restart the agent ",
        "afterwards."),
      h("table", { class: "agents-list", "aria-label": "Agents", "data-focus-fallback": true, tabindex: "-1" },
        h("thead", {}, h("tr", {}, COLUMNS.map((c, i) => h("th", { scope: "col", class: `col-${i}` }, c)))),
        this.tbody),
      this.status);
  }

  /** The view became visible: read the agents' files again (a person may have edited one). */
  shown() {
    this.load();
  }

  async load() {
    if (!this.loaded) setText(this.status, "Looking for agents…");
    let answer;
    try {
      answer = await api("GET", "/v1/clients");
    } catch (err) {
      replaceChildren(this.status, "Could not list the agents: ", withCode(err.message));
      return;
    }
    this.loaded = true;
    const focused = document.activeElement && this.tbody.contains(document.activeElement)
      ? document.activeElement.dataset.client : null;
    this.clients = answer.clients;
    this.tbody.replaceChildren(...answer.clients.map((c) => this.row(c)));
    const connected = answer.clients.filter((c) => c.state === "connected").length;
    setText(this.status, `${connected} of ${answer.clients.length} agents connected to monad.`);
    if (focused) this.focusAction(focused);
  }

  row(c) {
    const detail = c.state === "unreadable" ? h("span", { class: "reason" }, withCode(c.detail || ""))
      : c.perServer.length ? h("span", { class: "reason" }, "per-server entries: ", c.perServer.join(", ")) : null;
    let action = h("span", { class: "hint" }, "–");
    if (c.state === "connected") {
      action = this.button(c, "Disconnect", () => this.change(c, true));
    } else if (c.state === "not-connected" || c.state === "outdated") {
      action = this.button(c, c.state === "outdated" ? "Update" : "Connect", () => this.change(c, false), true);
    }
    return h("tr", { dataset: { client: c.name } },
      h("td", { class: "col-0" }, h("span", { class: "agent-title" }, c.title), " ", h("code", {}, c.name),
        h("code", { class: "path narrow" }, c.file)),
      h("td", { class: "col-1" }, h("code", { class: "path" }, c.file)),
      h("td", { class: "col-2" }, h("span", { class: `badge agent-${c.state}` }, STATUS[c.state] || c.state),
        detail ? " " : null, detail),
      h("td", { class: "col-3" }, action));
  }

  button(c, verb, onclick, primary = false) {
    return h("button", { type: "button", class: primary ? "small primary" : "small", onclick,
                         dataset: { client: c.name }, "aria-label": `${verb} ${c.title}` }, verb);
  }

  focusAction(name) {
    const button = this.tbody.querySelector(`button[data-client="${CSS.escape(name)}"]`);
    if (button) button.focus();
    else this.tbody.closest("table").focus();
  }

  /** Arrow keys move between the rows' buttons (Home, End too). */
  listKeys(e) {
    if (!["ArrowDown", "ArrowUp", "Home", "End"].includes(e.key)) return;
    const buttons = [...this.tbody.querySelectorAll("button")];
    if (!buttons.length) return;
    buttons[listIndex(e.key, buttons.indexOf(e.target), buttons.length)].focus();
    e.preventDefault();
  }

  /** Show what will change, and change it only on the dialog's own button. */
  async change(c, remove) {
    const answer = await this.ask(c, remove);
    if (!answer) return;
    try {
      const result = await api("POST", `/v1/clients/${encodeURIComponent(c.name)}/${remove ? "disconnect" : "connect"}`,
                               remove ? {} : { replace: answer.replace });
      const what = !result.changed ? `\`${result.file}\` already as it should be; nothing changed`
        : result.deleted ? `removed \`${result.file}\`: monad had created it, and nothing else was in it`
          : remove ? `took the \`monad\` entry out of \`${result.file}\`; restart ${c.title} to drop it`
            : `wrote the \`monad\` entry into \`${result.file}\`; restart ${c.title} to see every monad server`;
      const names = (list) => list.map((n) => `\`${n}\``).join(", ");
      const back = (result.restored || []).length  // what a Connect with "take out" had taken out
        ? `; put back ${c.title}'s own ${names(result.restored)}` : "";
      const it = (result.replaced || []).length === 1 ? "it" : "them";
      const took = (result.replaced || []).length
        ? `; took ${c.title}'s own ${names(result.replaced)} out (monad runs ${it}; Disconnect puts ${it} back)` : "";
      const left = differing(c, result) + partial(c, result);
      this.notify(what + back + took + left, false, { sticky: Boolean(left) }); // what to do: until dismissed
    } catch (err) {
      this.notify(err.message, true);
    }
    await this.load();
    this.focusAction(c.name);
  }

  ask(c, remove) {
    return new Promise((resolve) => {
      const opener = document.activeElement;
      const verb = remove ? "Disconnect" : c.state === "outdated" ? "Update" : "Connect";
      const replace = h("input", { type: "checkbox", id: "agent-replace" });
      const body = remove
        ? [h("p", {}, "monad will change ", h("code", { class: "path" }, c.file), ": it takes out the entry named ",
          h("code", {}, "monad"), ". Everything else in the file stays (a file monad created is deleted).")]
        : [h("p", {}, "monad will change ", h("code", { class: "path" }, c.file), ": ",
          c.state === "outdated" ? "it replaces the entry named " : "it adds an entry named ", h("code", {}, "monad"),
          ", and everything else in the file stays:"),
        // Focusable: at 400 px it scrolls, and a keyboard must reach all of it.
        // As the file spells it (TOML for Codex, YAML for Goose): what the person will find there.
        h("pre", { class: "json", tabindex: "0", "aria-label": `The monad entry for ${c.title}` }, c.entryText),
        c.duplicates.length ? h("div", { class: "field check" }, replace,
          h("label", { for: "agent-replace" }, `Also take out ${c.title}’s own entries for servers monad runs (`,
            c.duplicates.join(", "), "): else each runs twice")) : null];
      const dialog = h("dialog", { class: "modal wide", "aria-labelledby": "agent-dialog-title" },
        h("h2", { id: "agent-dialog-title" }, `${verb} ${c.title}`), ...body);
      let answered = false;
      const done = (ok) => {
        if (answered) return;
        answered = true;
        dismiss(dialog, opener);
        resolve(ok ? { replace: replace.checked } : null);
      };
      const cancel = h("button", { type: "button", onclick: () => done(false) }, "Cancel");
      dialog.append(h("div", { class: "buttons" }, cancel,
        h("button", { type: "button", class: remove ? "danger" : "primary", onclick: () => done(true) }, verb)));
      dialog.addEventListener("cancel", (e) => { e.preventDefault(); done(false); }); // Escape
      dialog.addEventListener("close", () => done(false));
      document.body.append(dialog);
      dialog.showModal();
      cancel.focus(); // Enter, Enter changes nothing
    });
  }
}
