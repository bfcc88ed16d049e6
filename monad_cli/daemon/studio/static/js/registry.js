// Registry: find servers in the registries monad asks (settings.toml, or MONAD_REGISTRY_URL),
// read one's details, and install it with a form for the values it asks for. Install is
// `monad mcp add NAME` (POST /v1/registry/install runs the same installer): the exact
// version goes into the atom and its tools are pinned when it first connects. A secret goes
// in a password input, is sent once, and is never shown back (the answer carries no value).

import { api } from "./api.js";
import { append, h, listIndex, replaceChildren, setText, withCode } from "./dom.js";
import { serverHash } from "./servers.js";

const COLUMNS = ["Name", "Version", "Runs", "Description"];

/** The atom name `monad mcp add NAME` picks (registry/serverjson.py atom_name). */
function atomName(serverName) {
  const base = serverName.split("/").pop();
  const name = base.replace(/[^A-Za-z0-9_-]+/g, "-").replace(/^-+|-+$/g, "").replace(/_{2,}/g, "_")
    .slice(0, 64).replace(/-+$/, "");
  return name || "server";
}

export class RegistryView {
  constructor(root, { notify }) {
    this.root = root;
    this.notify = notify;
    this.cursor = null;
    this.text = "";
    this.searched = false;
    this.open = null; // the details shown: {name, version, data}
    this.searchInput = h("input", { type: "search", class: "filter", id: "registry-search", autocomplete: "off",
                                    spellcheck: "false", placeholder: "Search server names",
                                    "aria-label": "Search the registries" });
    this.tbody = h("tbody", { onkeydown: (e) => this.listKeys(e) });
    this.table = h("table", { class: "registry-list", "aria-label": "Registry servers" },
      h("thead", {}, h("tr", {}, COLUMNS.map((c, i) => h("th", { scope: "col", class: `col-${i}` }, c)))),
      this.tbody);
    this.status = h("p", { class: "hint count", role: "status" });
    this.problems = h("ul", { class: "problems", "aria-label": "Registry problems", hidden: true });
    this.moreButton = h("button", { type: "button", hidden: true, onclick: () => this.more() }, "More servers");
    this.pane = h("section", { class: "details pane", id: "registry-details", hidden: true,
                               "aria-labelledby": "registry-pane-title",
                               onkeydown: (e) => { if (e.key === "Escape") this.closePane(); } });
    replaceChildren(root,
      h("div", { class: "toolbar" },
        h("h1", { id: "registry-title" }, "Registry"),
        h("form", { class: "registry-search", role: "search", "aria-label": "Registry search",
                    onsubmit: (e) => { e.preventDefault(); this.search(this.searchInput.value); } },
          this.searchInput, h("button", { type: "submit" }, "Search"))),
      this.problems,
      h("div", { class: "split" },
        h("div", { class: "list" }, this.table, this.status, h("div", { class: "buttons" }, this.moreButton)),
        this.pane));
  }

  /** The view became visible: the first time, list what the registries have. */
  shown() {
    if (!this.searched) this.search("");
  }

  async search(text) {
    this.searched = true;
    this.generation = (this.generation || 0) + 1;  // an earlier search's answer, arriving late, is dropped
    this.text = text.trim();
    this.cursor = null;
    this.tbody.replaceChildren();
    await this.page();
  }

  async more() {
    await this.page();
    const links = this.tbody.querySelectorAll(".server-link");
    if (this.firstNew !== undefined && links[this.firstNew]) links[this.firstNew].focus();
  }

  async page() {
    setText(this.status, "Searching…");
    this.moreButton.disabled = true;
    const query = new URLSearchParams({ search: this.text });
    if (this.cursor) query.set("cursor", this.cursor);
    const generation = this.generation;
    let answer;
    try {
      answer = await api("GET", `/v1/registry/servers?${query}`);
      if (generation !== this.generation) return;  // a newer search cleared the list meanwhile
    } catch (err) {
      if (generation !== this.generation) return;
      replaceChildren(this.status, "The registry search failed: ", withCode(err.message));
      this.moreButton.disabled = false;
      return;
    }
    this.firstNew = this.tbody.rows.length;
    for (const row of answer.servers) this.tbody.append(this.row(row));
    this.cursor = answer.nextCursor;
    this.moreButton.hidden = !this.cursor;
    this.moreButton.disabled = false;
    replaceChildren(this.problems, (answer.problems || []).map((p) => h("li", {}, p)));
    this.problems.hidden = !(answer.problems || []).length;
    const count = this.tbody.rows.length;
    const what = this.text ? `matching “${this.text}”` : "";
    setText(this.status, count ? `${count} servers ${what}${this.cursor ? " (more to load)" : ""}`.replace("  ", " ")
      : `No server ${what || "found"} in ${answer.registries.join(", ")}.`.replace("  ", " "));
  }

  row(data) {
    const link = h("a", { href: "#/registry", class: "server-link", title: data.name,
                          onclick: (e) => { e.preventDefault(); this.openPane(data.name); } }, data.name);
    return h("tr", { dataset: { name: data.name } },
      h("td", { class: "col-0" }, link),
      h("td", { class: "col-1" }, data.version),
      h("td", { class: "col-2" }, data.refused ? h("span", { class: "error" }, data.runs) : h("code", {}, data.runs)),
      h("td", { class: "col-3" }, h("span", { class: "desc" }, data.description || "")));
  }

  /** Arrow keys move between the rows' names (Home, End too); Enter opens one. */
  listKeys(e) {
    if (!["ArrowDown", "ArrowUp", "Home", "End"].includes(e.key)) return;
    const links = [...this.tbody.querySelectorAll(".server-link")];
    if (!links.length) return;
    const i = links.indexOf(e.target);
    links[listIndex(e.key, i, links.length)].focus();
    e.preventDefault();
  }

  // -- details --------------------------------------------------------------------------
  async openPane(name, version = null) {
    for (const link of this.tbody.querySelectorAll(".server-link")) {
      link.setAttribute("aria-current", link.textContent === name ? "true" : "false");
    }
    this.pane.hidden = false;
    replaceChildren(this.pane, this.head(name), h("p", { class: "hint" }, "Loading…"));
    this.pane.querySelector("h2").focus();
    const query = new URLSearchParams({ name });
    if (version) query.set("version", version);
    let server = null;
    let error = null;
    try {
      ({ server } = await api("GET", `/v1/registry/server?${query}`));
    } catch (err) {
      error = err;
    }
    // The pane is built anew: the focus it had (its heading, the version picker) stays in it.
    const focused = this.pane.contains(document.activeElement) ? document.activeElement.id : null;
    if (server) {
      this.open = { name, version, data: server };
      this.render(server);
    } else replaceChildren(this.pane, this.head(name), h("p", { class: "error", role: "alert" }, error.message));
    if (focused) (document.getElementById(focused) || this.pane.querySelector("h2")).focus();
  }

  head(name) {
    return h("div", { class: "pane-head" },
      h("div", { class: "details-head" },
        h("h2", { id: "registry-pane-title", tabindex: "-1", title: name }, name),
        h("button", { type: "button", class: "small", onclick: () => this.closePane(),
                      "aria-label": `Close details of ${name}` }, "Close")));
  }

  closePane() {
    const name = this.open && this.open.name;
    this.open = null;
    this.pane.hidden = true;
    this.pane.replaceChildren();
    const link = [...this.tbody.querySelectorAll(".server-link")].find((l) => l.textContent === name);
    if (link) {
      link.setAttribute("aria-current", "false");
      link.focus();
    }
  }

  render(s) {
    const versions = h("select", { id: "registry-version", "aria-label": `Version of ${s.name}`,
                                   onchange: (e) => this.openPane(s.name, e.target.value) },
      (s.versions.length ? s.versions : [{ version: s.version, status: s.status }]).map((v) =>
        h("option", { value: v.version, selected: v.version === s.version },
          `${v.version}${v.isLatest ? " (latest)" : ""}${v.status && v.status !== "active" ? ` — ${v.status}` : ""}`)));
    // Only an http(s) URL becomes a link (the API already leaves others out): never `javascript:`.
    const link = (url) => (/^https?:\/\//i.test(url)
      ? h("a", { href: url, target: "_blank", rel: "noopener noreferrer" }, url) : null);
    const repo = s.repository;
    const facts = [
      ["Title", s.title],
      ["Version", versions],
      ["Status", s.status !== "active" ? h("span", { class: "badge state-degraded" }, s.status) : "active"],
      ["Repository", repo && link(repo.url) ? [link(repo.url), repo.subfolder ? ` (${repo.subfolder})` : ""] : null],
      ["Website", s.websiteUrl ? link(s.websiteUrl) : null],
      ["Registry", s.registry],
    ].filter(([, v]) => v !== null && v !== undefined);
    // Each way to run it with the exact command line it runs as (what `monad mcp search` shows).
    const ways = h("ul", { class: "params", "aria-label": "Packages and remotes" }, s.options.map((o) => h("li", {},
      h("code", {}, o.where), ` ${o.label}${o.kind === "package" ? ` (${o.transport})` : ""}`,
      o.refused || o.kind === "remote" ? null : h("div", {}, h("code", { class: "command-line" }, o.runs)),
      o.problem ? h("span", { class: "error" }, ` — ${o.problem}`) : null)));
    replaceChildren(this.pane, this.head(s.name),
      s.description ? h("p", {}, s.description) : null,
      h("dl", { class: "facts" }, facts.map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
      h("h3", {}, "How it runs"),
      s.options.length ? ways : h("p", { class: "hint" }, "Its server.json lists no package and no remote."),
      this.installForm(s));
  }

  installForm(s) {
    const runnable = s.options.filter((o) => !o.problem);
    const form = h("form", { class: "install-form", "aria-labelledby": "install-title", novalidate: true,
                             onsubmit: (e) => { e.preventDefault(); this.install(s, form); } });
    const title = h("h3", { id: "install-title" }, `Install ${s.name}`);
    if (!runnable.length) {
      return h("section", { class: "install", "aria-labelledby": "install-title" }, title,
        h("p", { class: "hint" }, "Nothing in its server.json can run on this machine, or monad refuses it (see above)."));
    }
    const fields = h("div", { class: "install-fields" });
    const choice = h("select", { id: "install-option", name: "option",
                                 onchange: () => this.fillFields(fields, runnable[choice.selectedIndex]) },
      runnable.map((o) => h("option", { value: o.where }, `${o.where}: ${o.label}`)));
    const name = h("input", { id: "install-name", name: "as", value: atomName(s.name), autocomplete: "off",
                              spellcheck: "false", required: true });
    this.error = h("p", { class: "error", role: "alert" });
    this.result = h("p", { class: "call-status", role: "status" });
    append(form, [
      h("div", { class: "field" }, h("label", { for: "install-option" }, "Run with"), choice),
      h("div", { class: "field" }, h("label", { for: "install-name" }, "Server name"), name,
        h("p", { class: "hint" }, "The atom’s name: atoms/mcp/NAME.toml, its tools NAME__tool.")),
      fields, this.error,
      h("div", { class: "buttons" }, h("button", { type: "submit", class: "primary" }, "Install")),
      this.result]);
    this.fillFields(fields, runnable[0]);
    return h("section", { class: "install", "aria-labelledby": "install-title" }, title,
      h("p", { class: "hint" }, "Installs this exact version, as ", h("code", {}, `monad mcp add ${s.name}@${s.version}`),
        " does; its tools are pinned when it first connects."), form);
  }

  fillFields(fields, option) {
    this.option = option;
    if (option.bundle) {
      replaceChildren(fields, h("p", { class: "hint" }, "An MCP bundle: its settings are in its manifest, read at install. ",
        "A required one is named in the error; give it with ", h("code", {}, "monad mcp add NAME --arg KEY=…"), "."));
      return;
    }
    if (!option.variables.length) {
      replaceChildren(fields, h("p", { class: "hint" }, "It asks for no values."));
      return;
    }
    replaceChildren(fields, h("fieldset", { class: "pairs-set" }, h("legend", {}, "Values it asks for"),
      option.variables.map((v, i) => this.variableField(v, i))));
  }

  variableField(v, i) {
    const id = `install-var-${i}`;
    const hintId = `${id}-hint`;
    const attrs = { id, name: `${v.kind}:${v.key}`, autocomplete: "off", spellcheck: "false",
                    "aria-describedby": hintId, required: v.isRequired, dataset: { kind: v.kind, key: v.key } };
    let input;
    if (v.choices.length || v.format === "boolean") {
      const choices = v.choices.length ? v.choices : ["true", "false"];
      input = h("select", attrs,
        v.isRequired && v.default === null ? h("option", { value: "" }, "— choose —")
          : h("option", { value: "" }, v.default !== null ? `default (${v.default})` : "(not set)"),
        choices.map((c) => h("option", { value: c }, c)));
    } else {
      input = h("input", { ...attrs, type: v.isSecret ? "password" : v.format === "number" ? "number" : "text",
                           placeholder: v.default !== null && !v.isSecret ? v.default : null });
    }
    const sentence = (t) => (t && !/[.!?]$/.test(t) ? `${t}.` : t);
    const bits = [sentence(v.description),
      v.default !== null ? `Default: ${v.isSecret ? "set" : v.default}.` : null,
      v.format !== "string" ? `A ${v.format}.` : null,
      v.isSecret ? "A secret: stored like every secret, never shown back." : null,
      `(${v.kind === "env" ? "environment variable" : v.kind === "header" ? "HTTP header" : "argument"})`]
      .filter(Boolean);
    return h("div", { class: "field" },
      h("div", { class: "label-line" }, h("label", { for: id }, v.key),
        v.isRequired ? h("span", { class: "required-mark" }, "required") : null),
      input, h("p", { class: "hint", id: hintId }, bits.join(" ")));
  }

  async install(s, form) {
    const values = { env: {}, header: {}, arg: {} };
    for (const el of form.querySelectorAll("[data-kind]")) {
      if (el.value !== "") values[el.dataset.kind][el.dataset.key] = el.value;
    }
    const as = form.querySelector("#install-name").value.trim();
    // Not `disabled` while it runs: a disabled button drops the focus out of the pane.
    if (form.getAttribute("aria-busy") === "true") return;
    form.setAttribute("aria-busy", "true");
    setText(this.error, "");
    setText(this.result, "Installing…");
    try {
      const answer = await api("POST", "/v1/registry/install", {
        name: s.name, version: s.version, as: as || undefined, option: this.option.where, values });
      // Sent once: the secret inputs are emptied, and the answer has no value of theirs.
      for (const el of form.querySelectorAll("input[type=password]")) el.value = "";
      replaceChildren(this.result, `Installed ${answer.server} ${answer.version} as `,
        h("a", { href: serverHash(answer.name) }, answer.name),
        `: it connects now, and its tools are pinned when it first does. `,
        answer.transport === "http" ? "It connects to " : "It runs ", h("code", { class: "command-line" }, answer.runs),
        ".");
      for (const w of answer.warnings || []) this.notify(`${answer.name}: ${w}`, true);
      if (answer.deprecated) this.notify(`${answer.server} is marked deprecated in its registry`, true);
      this.notify(`Installed ${answer.name} (${answer.package})`);
    } catch (err) {
      setText(this.result, "");
      setText(this.error, err.message);
    } finally {
      form.removeAttribute("aria-busy");
    }
  }
}
