// Variables: what `$VAR` and `${VAR}` in server definitions expand from (docs/atoms.md
// "Variables"), as `monad env` shows them: each name, where it is set (MONAD_HOME/env, the
// supervisor's environment, or nowhere) and the servers that use it. Set or replace a value
// (`PUT /v1/env/NAME`), remove one from MONAD_HOME/env (`DELETE`). A value is typed into a
// password input, sent, and the input emptied: the page never holds a stored value, and the
// API never answers one (`GET /v1/env` gives names and sources only).

import { api } from "./api.js";
import { confirmDialog } from "./dialogs.js";
import { enc, h, replaceChildren, setText } from "./dom.js";
import { serverHash } from "./servers.js";

const SOURCES = { "env-file": "MONAD_HOME/env", environment: "the supervisor's environment" };
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/; // config/envfile.py check_name

/** Where a variable is set, in words that break after a `/` in a narrow column. */
function where(source) {
  return String(SOURCES[source] || source).split("/").flatMap((part, i) => (i ? ["/", h("wbr"), part] : [part]));
}

export class VariablesView {
  constructor(root, { notify }) {
    this.root = root;
    this.notify = notify;
    this.loaded = false;
    this.name = h("input", { id: "var-name", autocomplete: "off", spellcheck: "false", "aria-describedby": "var-name-error" });
    this.value = h("input", { id: "var-value", type: "password", autocomplete: "new-password", spellcheck: "false",
                              "aria-describedby": "var-value-hint var-value-error" });
    this.nameError = h("p", { class: "field-error", id: "var-name-error", hidden: true });
    this.valueError = h("p", { class: "field-error", id: "var-value-error", hidden: true });
    this.save = h("button", { type: "submit", class: "primary" }, "Save variable");
    this.problems = h("ul", { class: "problems", "aria-label": "Problems of MONAD_HOME/env", hidden: true });
    this.tbody = h("tbody");
    this.table = h("table", { class: "variables", "aria-label": "Variables", "data-focus-fallback": true, tabindex: "-1" },
      h("thead", {}, h("tr", {}, ["Name", "Set in", "Used by", "Actions"]
        .map((c, i) => h("th", { scope: "col", class: `col-${i}` }, c)))),
      this.tbody);
    this.empty = h("p", { class: "empty", hidden: true }, "No variables: MONAD_HOME/env sets none and no definition "
      + "references one.");
    replaceChildren(root,
      h("h1", { id: "variables-title" }, "Variables"),
      h("p", { class: "hint" }, "What ", h("code", {}, "$VAR"), " and ", h("code", {}, "${VAR}"), " in server "
        + "definitions expand from: MONAD_HOME/env first, then the supervisor's environment (as ",
      h("code", {}, "monad env"), "). A value is never shown once saved; servers that use a variable reconnect "
        + "when it changes."),
      this.problems,
      this.table, this.empty,
      h("form", { class: "variable-form", novalidate: true, "aria-labelledby": "var-form-title",
                  onsubmit: (e) => { e.preventDefault(); this.submit(); } },
        h("h2", { id: "var-form-title" }, "Set a variable"),
        h("div", { class: "variable-fields" },
          h("div", { class: "field" }, h("label", { for: "var-name" }, "Name"), this.name, this.nameError),
          h("div", { class: "field" }, h("label", { for: "var-value" }, "Value"), this.value,
            h("p", { class: "hint", id: "var-value-hint" }, "Saved to MONAD_HOME/env (0600); replaces the value "
              + "there, if any."), this.valueError)),
        h("div", { class: "buttons" }, this.save)));
  }

  shown() {
    if (!this.loaded) this.refresh();
  }

  /** Read the names again (a reload applied: a definition may reference new ones). */
  refreshSoon() {
    if (!this.loaded) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.refresh(), 300);
  }

  async refresh() {
    try {
      const answer = await api("GET", "/v1/env");
      this.loaded = true;
      this.render(answer.variables || [], answer.problems || []);
    } catch (err) {
      if (err.code !== "unreachable" && err.status !== 401) this.notify(`variables: ${err.message}`, true);
    }
  }

  render(variables, problems) {
    // The same answer again (a reload elsewhere): nothing rebuilt, so focus and an open
    // dialog's way back stay where they are.
    const key = JSON.stringify([variables, problems]);
    if (key === this.key) return;
    this.key = key;
    replaceChildren(this.problems, problems.map((p) => h("li", {}, p)));
    this.problems.hidden = problems.length === 0;
    const focused = this.table.contains(document.activeElement) ? document.activeElement.getAttribute("aria-label") : null;
    replaceChildren(this.tbody, variables.map((v) => h("tr", { dataset: { name: v.name } },
      h("td", { class: "col-0" }, h("code", {}, v.name)),
      h("td", { class: v.source ? "col-1" : "col-1 unset" },
        v.source ? where(v.source) : h("span", { class: "error" }, "not set")),
      h("td", { class: "col-2" }, v.servers.length ? v.servers.map((s, i) => [i ? ", " : "",
        h("a", { href: serverHash(s) }, s)]) : h("span", { class: "hint" }, "no server")),
      h("td", { class: "col-3" }, h("div", { class: "actions" },
        h("button", { type: "button", class: "small", "aria-label": `${v.source === "env-file" ? "Replace" : "Set"} ${v.name}`,
                      onclick: () => this.edit(v.name) }, v.source === "env-file" ? "Replace" : "Set"),
        v.source === "env-file" ? h("button", { type: "button", class: "small danger", "aria-label": `Remove ${v.name}`,
                                                onclick: () => this.remove(v) }, "Remove") : null)))));
    this.table.hidden = variables.length === 0;
    this.empty.hidden = variables.length > 0;
    const again = focused && [...this.table.querySelectorAll("button")].find((b) => b.getAttribute("aria-label") === focused);
    if (again) again.focus();
    else if (focused) this.table.focus(); // its row went (removed): the list, not the page's top
  }

  /** A row's Set or Replace: its name in the form, focus on the value. */
  edit(name) {
    this.name.value = name;
    this.clearErrors();
    this.value.focus();
    this.value.scrollIntoView({ block: "nearest" });
  }

  clearErrors() {
    for (const [input, error] of [[this.name, this.nameError], [this.value, this.valueError]]) {
      input.removeAttribute("aria-invalid");
      error.hidden = true;
      setText(error, "");
    }
  }

  fail(input, error, message) {
    input.setAttribute("aria-invalid", "true");
    setText(error, message);
    error.hidden = false;
    input.focus();
  }

  async submit() {
    this.clearErrors();
    const name = this.name.value.trim();
    if (!NAME.test(name)) {
      const why = !name ? "required" : name.includes("=") ? "the name only: its value goes in Value"
        : "letters, digits and _ only, not starting with a digit";
      this.fail(this.name, this.nameError, why);
      return;
    }
    if (!this.value.value) { // as `monad env set`: an empty value replaces a secret with nothing
      this.fail(this.value, this.valueError, "type its value (Remove takes a variable out)");
      return;
    }
    this.save.disabled = true;
    try {
      const answer = await api("PUT", `/v1/env/${enc(name)}`, { value: this.value.value });
      this.value.value = ""; // sent: the page keeps no copy
      this.name.value = "";
      const users = answer.servers && answer.servers.length ? `; ${answer.servers.join(", ")} reconnect` : "";
      this.notify(`${answer.created ? "set" : "replaced"} \`${name}\` in MONAD_HOME/env${users}`);
      await this.refresh();
      this.name.focus();
    } catch (err) {
      this.fail(this.name, this.nameError, err.message);
    } finally {
      this.save.disabled = false;
    }
  }

  async remove(variable) {
    const users = variable.servers.length ? ` ${variable.servers.join(", ")} use it and reconnect without it.` : "";
    const label = `Remove ${variable.name}`;
    const ok = await confirmDialog({ title: `Remove ${variable.name}?`,
                                     text: `This deletes it from MONAD_HOME/env.${users}`, confirm: "Remove" });
    if (!ok) {
      // The list may have been drawn again while the dialog was open: back to the same button.
      const again = [...this.table.querySelectorAll("button")].find((b) => b.getAttribute("aria-label") === label);
      if (again && !this.table.contains(document.activeElement)) again.focus();
      return;
    }
    try {
      await api("DELETE", `/v1/env/${enc(variable.name)}`);
      this.notify(`removed \`${variable.name}\` from MONAD_HOME/env`);
    } catch (err) {
      this.notify(err.message, true);
    }
    await this.refresh();
  }
}
