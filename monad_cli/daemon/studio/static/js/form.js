// The server form (Add server / Edit): labelled inputs for name, transport, command,
// arguments, URL, environment and header rows, the values of the `$VAR`s they reference
// (saved to MONAD_HOME/env, never shown back), timeout, start (always or on demand) and
// idleStop, required, enabled.
//
// The page never holds a secret. Editing shows every env and header value as an empty input
// whose placeholder is `***`; left empty, the value is sent back as `***`, which the
// supervisor replaces with the stored secret (config/edits.py). Only fields that differ from
// what the form showed when it opened are sent, so an unchanged form changes nothing: a value
// the form has no control for (a hand-written `start = "ondemand"`) is shown as written, marked
// "(invalid)", with its error beside it, and is never rewritten unless it is changed. Errors
// come back as the CLI's one-line reasons with the field they concern, shown next to that field.

import { api } from "./api.js";
import { dismiss, enc, h, setText } from "./dom.js";

export const MASK = "***";

// The names `transport` (or `type`) may take, as the supervisor reads them (config/schema.py).
const TRANSPORTS = { stdio: "stdio", http: "http", "streamable-http": "http", streamableHttp: "http",
                     streamable_http: "http" };

/** `stdio` or `http`; a value the supervisor refuses (`htp`) as written. */
function inferTransport(def) {
  const written = def.transport ?? def.type;
  if (written === undefined || written === null) return def.url ? "http" : "stdio";
  return Object.hasOwn(TRANSPORTS, written) ? TRANSPORTS[written] : String(written);
}

/** Select `value` in `select`; one that is none of its options (a hand-written value the
 *  supervisor refuses) gets an option of its own, "VALUE (invalid)", so it is shown and kept. */
function choose(select, value) {
  const text = value === undefined || value === null ? "" : String(value);
  if (![...select.options].some((o) => o.value === text)) {
    select.append(h("option", { value: text }, `${text || '""'} (invalid)`));
  }
  select.value = text;
}

/** `message` said beside the field `name` it is about: without the file and server before the field
 *  ("`atoms/mcp/x.toml`: server `x`, field `timeout`: must be …"), nor the field when `own` (the
 *  place is that field's), which its place says already. */
function atField(message, name, own) {
  const mark = `field \`${name}\`: `;
  const at = message.indexOf(mark);
  if (at < 0) return message.replace(/^server name `[^`]*`: /, ""); // `check_name`'s
  return message.slice(own ? at + mark.length : at);
}

function field(id, label, input, hint) {
  return h("div", { class: "field", "data-field": id },
    h("label", { for: `f-${id}` }, label), input,
    hint ? h("p", { class: "hint", id: `hint-${id}` }, hint) : null,
    h("p", { class: "field-error", id: `err-${id}`, hidden: true }));
}

function check(id, label, checked) {
  return h("div", { class: "field check", "data-field": id },
    h("input", { type: "checkbox", id: `f-${id}`, checked }),
    h("label", { for: `f-${id}` }, label),
    h("p", { class: "field-error", id: `err-${id}`, hidden: true }));
}

/** Rows of name/value pairs (env, headers); a value kept from the stored definition is `***`. */
class PairRows {
  constructor(kind, nameLabel, valueLabel, noun) {
    this.kind = kind;
    this.nameLabel = nameLabel;
    this.valueLabel = valueLabel;
    this.noun = noun;
    this.list = h("div", { class: "pairs" });
    this.error = h("p", { class: "field-error", id: `err-${kind}`, hidden: true });
    this.element = h("fieldset", { class: "pairs-set", "data-field": kind },
      h("legend", {}, kind === "env" ? "Environment" : "Headers"),
      this.list,
      h("button", { type: "button", class: "small", onclick: () => this.add("", "", false).focus() }, `Add ${noun}`),
      this.error);
  }

  add(name, value, kept) {
    const nameInput = h("input", { class: "pair-name", value: name, autocomplete: "off", spellcheck: "false" });
    const valueInput = h("input", { class: "pair-value", value: kept ? "" : value, autocomplete: "off",
                                    spellcheck: "false", placeholder: kept ? MASK : "" });
    if (kept) valueInput.dataset.kept = "1";
    const row = h("div", { class: "pair" },
      h("label", {}, h("span", {}, this.nameLabel), nameInput),
      h("label", {}, h("span", {}, this.valueLabel), valueInput),
      h("button", { type: "button", class: "small", onclick: () => row.remove() }, `Remove ${this.noun}`),
      h("p", { class: "field-error", hidden: true }));
    this.list.append(row);
    return nameInput;
  }

  fill(map) {
    this.list.replaceChildren();
    for (const [name, value] of Object.entries(map || {})) this.add(name, value, value === MASK);
  }

  /** {name: value}; an untouched kept value is `***` (the supervisor keeps the secret). */
  value() {
    const out = {};
    for (const row of this.list.querySelectorAll(".pair")) {
      const name = row.querySelector(".pair-name").value.trim();
      const input = row.querySelector(".pair-value");
      if (!name && !input.value) continue;
      out[name] = input.dataset.kept && input.value === "" ? MASK : input.value;
    }
    return out;
  }

  errorFor(name) {
    for (const row of this.list.querySelectorAll(".pair")) {
      if (row.querySelector(".pair-name").value.trim() === name) return row.querySelector(".field-error");
    }
    return this.error;
  }
}

/**
 * The command's arguments, one input each, passed exactly as typed: an empty input is an
 * empty argument (`--flag ""`), which one textarea line per argument could not say apart
 * from a stray blank line. Add argument appends one; each has its Remove. Pasting several
 * lines into one makes one argument per line (the copy's last line break adds none).
 */
class ArgRows {
  constructor() {
    this.list = h("div", { class: "args" });
    this.error = h("p", { class: "field-error", id: "err-args", hidden: true });
    this.addButton = h("button", { type: "button", class: "small", onclick: () => this.add("").focus() },
      "Add argument");
    this.element = h("fieldset", { class: "pairs-set", "data-field": "args" },
      h("legend", {}, "Arguments"),
      h("p", { class: "hint", id: "hint-args" }, "One input per argument, passed as typed: an empty one is an empty ",
        "argument (\"\"). Pasting several lines makes one argument per line."),
      this.list, this.addButton, this.error);
  }

  /** A new argument input after `after` (else at the end), holding `value`. */
  add(value, after = null) {
    const input = h("input", { class: "arg-value", value, autocomplete: "off", spellcheck: "false",
                               placeholder: "(empty argument)", "aria-describedby": "hint-args" });
    input.addEventListener("paste", (event) => this.paste(event, input));
    const row = h("div", { class: "arg" }, input,
      h("button", { type: "button", class: "small", onclick: () => this.remove(row) }, "Remove"));
    if (after) after.after(row);
    else this.list.append(row);
    this.renumber();
    return input;
  }

  remove(row) {
    const next = row.nextElementSibling || row.previousElementSibling;
    row.remove();
    this.renumber();
    (next ? next.querySelector("input") : this.addButton).focus();
  }

  /** Labels say each argument's place: "Argument 2", "Remove argument 2". */
  renumber() {
    [...this.list.children].forEach((row, i) => {
      row.querySelector("input").setAttribute("aria-label", `Argument ${i + 1}`);
      row.querySelector("button").setAttribute("aria-label", `Remove argument ${i + 1}`);
    });
  }

  paste(event, input) {
    const text = event.clipboardData ? event.clipboardData.getData("text/plain") : "";
    if (!/[\r\n]/.test(text)) return; // one line: the browser pastes it as it is
    event.preventDefault();
    const lines = text.replace(/\r\n?/g, "\n").replace(/\n$/, "").split("\n");
    const before = input.value.slice(0, input.selectionStart);
    const rest = input.value.slice(input.selectionEnd);
    input.value = before + lines[0];
    let last = input;
    for (const line of lines.slice(1)) last = this.add(line, last.closest(".arg"));
    last.value += rest;
    last.focus();
  }

  fill(args) {
    this.list.replaceChildren();
    for (const arg of args || []) this.add(arg);
  }

  /** Every argument, empty ones included, in order. */
  value() {
    return [...this.list.querySelectorAll(".arg-value")].map((input) => input.value);
  }

  /** The input `args[N]` names (N from 0), else none. */
  input(index) {
    return this.list.querySelectorAll(".arg-value")[index] || null;
  }
}

// `$NAME` / `${NAME}` references, as the supervisor expands them (`$$` is a literal `$`).
const REFERENCE = /\$(?:\$|\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))/g;

/** The variable names `texts` reference, in order, each once. */
export function references(texts) {
  const out = [];
  for (const text of texts) {
    for (const m of String(text || "").matchAll(REFERENCE)) {
      const name = m[1] || m[2];
      if (name && !out.includes(name)) out.push(name);
    }
  }
  return out;
}

const SOURCES = { "env-file": "set in MONAD_HOME/env", environment: "set in the supervisor's environment" };

/**
 * One password input per `$VAR` the form references: a value typed there is written to
 * MONAD_HOME/env (`PUT /v1/env/NAME`) before the definition is saved, so the server can
 * connect at once. A value is never shown back: the input starts empty and says only where
 * the variable is set now (`GET /v1/env` answers names and sources, never values).
 */
class VariableValues {
  constructor() {
    this.rows = new Map();
    this.list = h("div", { class: "pairs" });
    this.error = h("p", { class: "field-error", id: "err-variables", hidden: true });
    this.element = h("fieldset", { class: "pairs-set", "data-field": "variables", hidden: true },
      h("legend", {}, "Variable values (MONAD_HOME/env)"),
      h("p", { class: "hint" }, "For the $VAR references above. A value typed here is saved to MONAD_HOME/env " +
        "and never shown again; leave it empty to keep what is set."),
      this.list, this.error);
  }

  /** Show a row for each of `names` (and only those); ask where each is set now. */
  async sync(names) {
    for (const [name, row] of this.rows) {
      if (!names.includes(name)) {
        row.element.remove();
        this.rows.delete(name);
      }
    }
    const fresh = names.filter((n) => !this.rows.has(n));
    for (const name of fresh) {
      const input = h("input", { type: "password", class: "variable-value", autocomplete: "new-password",
                                 spellcheck: "false", "aria-label": `Value of ${name}` });
      const status = h("span", { class: "hint" }, "");
      const element = h("div", { class: "pair", "data-variable": name },
        h("label", {}, h("span", {}, `Value of ${name}`), input), status);
      this.rows.set(name, { element, input, status });
      this.list.append(element);
    }
    this.element.hidden = this.rows.size === 0;
    if (!fresh.length) return;
    try {
      const query = fresh.map((n) => `name=${enc(n)}`).join("&");
      const answer = await api("GET", `/v1/env?${query}`);
      for (const v of answer.variables) {
        const row = this.rows.get(v.name);
        if (row) {
          setText(row.status, SOURCES[v.source] || "not set: type its value");
          row.input.placeholder = v.source ? "(kept)" : "";
        }
      }
    } catch (err) {
      setText(this.error, err.message);
      this.error.hidden = false;
    }
  }

  /** Write every typed value to MONAD_HOME/env; the inputs are emptied once sent. */
  async save() {
    for (const [name, row] of this.rows) {
      if (row.input.value === "") continue;
      await api("PUT", `/v1/env/${enc(name)}`, { value: row.input.value });
      row.input.value = "";
      row.input.placeholder = "(kept)";
      setText(row.status, SOURCES["env-file"]);
    }
  }
}

function same(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}

function emptyToNull(value) {
  if (value === undefined || value === null || value === "") return null;
  if (Array.isArray(value) && value.length === 0) return null;
  if (typeof value === "object" && !Array.isArray(value) && Object.keys(value).length === 0) return null;
  return value;
}

export class ServerForm {
  /** `onSaved(message)` after a successful save (the dialog closes itself). */
  constructor(onSaved) {
    this.onSaved = onSaved;
    this.dialog = null;
  }

  /** `errors`: the definition's problems as stored ([{field, message}], `GET …/{name}`),
   *  each shown next to its field at once. */
  open({ mode, name = "", definition = {}, source = null, errors = [] }) {
    this.close();
    this.opener = document.activeElement; // focus goes back there when the dialog closes
    this.mode = mode;
    this.name = name;
    this.stored = definition;
    this.args = new ArgRows();
    this.env = new PairRows("env", "Variable name", "Variable value", "variable");
    this.headers = new PairRows("headers", "Header name", "Header value", "header");
    this.variables = new VariableValues();
    const def = definition;
    const transport = inferTransport(def);
    const authMode = (def.auth && def.auth.mode) || "none";
    const authSelect = h("select", { id: "f-auth" },
      h("option", { value: "none" }, "none (or a header)"),
      h("option", { value: "oauth" }, "OAuth (then Authorize)"));
    if (!["none", "oauth"].includes(authMode)) {
      authSelect.append(h("option", { value: authMode }, `${authMode} (kept; edit ${source || "the file"} to change)`));
    }
    authSelect.value = authMode;
    const titleId = "form-title";
    this.formError = h("p", { class: "field-error form-error", id: "err-form", role: "alert", hidden: true });
    this.saveButton = h("button", { type: "submit", class: "primary" }, "Save");
    const nameInput = h("input", { id: "f-name", value: name, autocomplete: "off", spellcheck: "false",
                                   readonly: mode === "edit", "aria-describedby": "err-name" });
    const form = h("form", { novalidate: true },
      h("h2", { id: titleId }, mode === "add" ? "Add server" : `Edit ${name}`),
      source ? h("p", { class: "hint" }, "Defined in ", h("code", {}, source), "; Save writes only the fields you changed there.") : null,
      this.formError,
      field("name", "Name", nameInput, mode === "add" ? "Letters, digits, _ and -; at most 64." : null),
      field("transport", "Transport", h("select", { id: "f-transport", onchange: () => this.showTransport(),
                                                   "aria-describedby": "err-transport" },
        h("option", { value: "stdio" }, "stdio (a local command)"),
        h("option", { value: "http" }, "http (a remote URL)"))),
      h("div", { class: "for-stdio" },
        field("command", "Command", h("input", { id: "f-command", value: def.command || "", autocomplete: "off",
                                                 spellcheck: "false", "aria-describedby": "err-command" })),
        this.args.element,
        this.env.element),
      h("div", { class: "for-http" },
        field("url", "URL", h("input", { id: "f-url", type: "url", value: def.url || "", autocomplete: "off",
                                         spellcheck: "false", "aria-describedby": "err-url" })),
        this.headers.element,
        field("auth", "Authorization", authSelect)),
      this.variables.element,
      field("timeout", "Timeout (seconds to connect)",
            // Text, not a number input: a hand-written value it could not hold is shown as written.
            h("input", { id: "f-timeout", inputmode: "decimal", value: def.timeout ?? "", autocomplete: "off",
                         "aria-describedby": "err-timeout" })),
      field("start", "Start", h("select", { id: "f-start", "aria-describedby": "err-start" },
        h("option", { value: "" }, "the default (settings.toml, else always)"),
        h("option", { value: "always" }, "always (kept running)"),
        h("option", { value: "on-demand" }, "on demand (started by the first call, stopped when idle)"))),
      field("idleStop", "Stop when idle after",
            h("input", { id: "f-idleStop", value: def.idleStop ?? "", placeholder: "10m", autocomplete: "off",
                         spellcheck: "false", "aria-describedby": "err-idleStop hint-idleStop" }),
            "On demand only: a duration such as 30s, 10m or 1h."),
      check("required", ["Required (", h("code", {}, "monad daemon start"), " fails without it)"], def.required === true),
      check("enabled", "Enabled", def.enabled !== false),
      h("div", { class: "buttons" }, this.saveButton,
        h("button", { type: "button", onclick: () => this.close() }, "Cancel")));
    choose(form.querySelector("#f-transport"), transport);
    choose(form.querySelector("#f-start"), def.start);
    this.args.fill(Array.isArray(def.args) ? def.args : []);
    this.env.fill(def.env);
    this.headers.fill(def.headers);
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.save();
    });
    // A `$VAR` typed anywhere (command, arguments, env or header values, URL) gets its value row.
    form.addEventListener("change", (event) => {
      if (!event.target.classList.contains("variable-value")) this.syncVariables();
    });
    this.form = form;
    this.shown = this.read(); // what Save compares with: only what the user changed is sent
    this.dialog = h("dialog", { class: "modal wide", "aria-labelledby": titleId }, form);
    this.dialog.addEventListener("close", () => this.close());
    document.body.append(this.dialog);
    this.showTransport();
    this.dialog.showModal();
    for (const err of errors) this.showError(err);
    (mode === "add" ? nameInput : form.querySelector(this.isHttp() ? "#f-url" : "#f-command")).focus();
  }

  /** The http fields are shown (and read): `http` chosen, or a transport the supervisor
   *  refuses on a definition with a `url`. */
  isHttp() {
    const transport = this.form.querySelector("#f-transport").value;
    return transport === "http" || (transport !== "stdio" && this.stored.url !== undefined);
  }

  /** The `$VAR`s the form references now (a stored value that is only a reference, such as
   *  `Bearer ${TOKEN}`, is shown as written; a literal secret shows as `***`). */
  syncVariables() {
    const f = (id) => this.form.querySelector(`#f-${id}`).value;
    const stdio = !this.isHttp();
    const pairs = (rows) => Object.entries(rows.value()).flat();
    const texts = stdio ? [f("command"), ...this.args.value(), ...pairs(this.env)] : [f("url"), ...pairs(this.headers)];
    return this.variables.sync(references(texts));
  }

  showTransport() {
    const http = this.isHttp();
    this.form.querySelector(".for-stdio").hidden = http;
    this.form.querySelector(".for-http").hidden = !http;
    if (this.variables) this.syncVariables();
  }

  /** The definition as the form says it, every field present (null: not set). */
  read() {
    const f = (id) => this.form.querySelector(`#f-${id}`);
    const transport = f("transport").value;
    const stdio = !this.isHttp();
    const timeout = f("timeout").value.trim();
    const seconds = Number(timeout);
    const args = this.args.value(); // an empty argument stays: it is one
    const auth = f("auth").value;
    return {
      transport,
      command: stdio ? emptyToNull(f("command").value.trim()) : null,
      args: stdio ? emptyToNull(args) : null,
      env: stdio ? emptyToNull(this.env.value()) : null,
      url: stdio ? null : emptyToNull(f("url").value.trim()),
      headers: stdio ? null : emptyToNull(this.headers.value()),
      auth: stdio || auth === "none" ? null : { mode: auth },
      // Not a number: sent as typed, so the supervisor's reason quotes it.
      timeout: timeout === "" ? null : Number.isFinite(seconds) ? seconds : timeout,
      start: emptyToNull(f("start").value),
      idleStop: emptyToNull(f("idleStop").value.trim()),
      required: f("required").checked ? true : null,
      enabled: f("enabled").checked ? null : false,
    };
  }

  /** What to send: the whole definition to add; only what changed to edit. */
  payload() {
    const now = this.read();
    if (this.mode === "add") {
      const definition = {};
      for (const [key, value] of Object.entries(now)) if (value !== null) definition[key] = value;
      return { name: this.form.querySelector("#f-name").value.trim(), definition };
    }
    // Compared with what the form showed, not with the stored definition: a stored value the
    // form shows otherwise (`timeout = "30"`, `type = "streamable-http"`) is not rewritten.
    const before = this.shown;
    const changes = {};
    for (const [key, value] of Object.entries(now)) {
      if (key === "auth") {
        const mode = (v) => (v ? v.mode : null);
        if (mode(value) !== mode(before.auth)) changes.auth = value; // a new mode starts afresh
        continue;
      }
      if (!same(value, before[key])) changes[key] = value;
    }
    if (changes.enabled === null && this.stored.enabled === false) changes.enabled = true; // as `monad mcp enable`
    return changes;
  }

  /** The fields left empty that the server needs, each with its reason: [{field, message}], said
   * in these words. The supervisor checks everything again, and answers every problem it finds
   * at once too (the envelope's `errors`). */
  missing() {
    const value = (id) => this.form.querySelector(`#f-${id}`).value.trim();
    const stdio = !this.isHttp();
    const wanted = [
      ["name", this.mode === "add", "the server's name is empty: give it one"],
      ["command", stdio, "the command is empty: the program that starts the server, such as npx"],
      ["url", !stdio, "the URL is empty: the server's http(s) address"],
    ];
    return wanted.filter(([id, needed]) => needed && !value(id)).map(([field, , message]) => ({ field, message }));
  }

  async save() {
    this.clearErrors();
    // An empty required field is still sent: the supervisor refuses the definition for it (and
    // writes nothing), so its answer says the form's other problems too, from this one Save.
    const missing = this.missing();
    const body = this.payload();
    this.saveButton.disabled = true;
    try {
      // First: the saved server connects with its values in place (none while one is missing).
      if (!missing.length) await this.variables.save();
      if (this.mode === "add") {
        await api("POST", "/v1/settings/mcp-servers", body);
        this.onSaved(`added ${body.name}`);
      } else {
        await api("PATCH", `/v1/settings/mcp-servers/${enc(this.name)}`, body);
        this.onSaved(`saved ${this.name}`);
      }
      this.close();
    } catch (err) {
      // Each field problem next to its field; an older supervisor names only the first.
      const each = err.errors && err.errors.length ? err.errors : [err];
      for (const e of missing) this.showError(e);
      // With one missing, only the other fields' problems (not its own, or one naming no field).
      const others = (e) => !missing.length || (e.field && !missing.some((m) => m.field === e.field));
      for (const e of each.filter(others)) this.showError({ status: err.status, field: e.field, message: e.message });
      // The keyboard goes where the first problem is (the browser-side check does the same).
      const first = this.form.querySelector('[aria-invalid="true"]');
      if (first) first.focus();
    } finally {
      this.saveButton.disabled = false;
    }
  }

  clearErrors() {
    for (const el of this.form.querySelectorAll(".field-error")) {
      el.hidden = true;
      el.textContent = "";
    }
    for (const el of this.form.querySelectorAll("[aria-invalid]")) el.removeAttribute("aria-invalid");
  }

  /** The reason goes next to the field it names (`name`, `headers.X-Key`, `args[2]`, ...), said
   * there without the place it names (the summary at the top keeps the whole line). */
  showError(err) {
    const fieldName = err.field || "";
    let target = this.formError;
    let own = false; // the place is this field's alone
    const top = fieldName.split(/[.[]/)[0];
    if (top === "variables") {
      target = this.variables.error;
    } else if (top === "args") {
      target = this.args.error;
      const input = this.args.input(Number((fieldName.match(/^args\[(\d+)\]/) || [])[1]));
      if (input) input.setAttribute("aria-invalid", "true");
    } else if (top === "env" || top === "headers") {
      target = this[top].errorFor(fieldName.slice(top.length + 1));
      own = target !== this[top].error;
    } else if (["name", "transport", "command", "url", "timeout", "start", "idleStop", "required", "enabled",
                "auth"].includes(top)) {
      target = this.form.querySelector(`#err-${top}`);
      own = fieldName === top;
      const input = this.form.querySelector(`#f-${top}`);
      if (input) input.setAttribute("aria-invalid", "true");
    }
    let message = target === this.formError ? err.message : atField(err.message, fieldName, own);
    const name = this.form.querySelector("#f-name");
    if (err.status === 409 && this.mode === "add" && message.startsWith(`server \`${name.value.trim()}\` `)) {
      // The name is taken (an atom, agents.json, another server's but for case): said at Name.
      target = this.form.querySelector("#err-name");
      name.setAttribute("aria-invalid", "true");
      // The CLI's way out (`--force`) has no control here: say what the page offers instead.
      if (message.includes("--force")) {
        message = `a server named ${name.value} exists already: choose another name, `
                  + "or Cancel and use Edit on that server";
      }
    }
    // Two problems at one place (two arguments, two without a field of their own): both, a line each.
    setText(target, target.hidden || !target.textContent ? message : `${target.textContent}\n${message}`);
    target.hidden = false;
    target.setAttribute("role", "alert");
  }

  close() {
    const { dialog, opener } = this;
    this.dialog = null;
    this.opener = null;
    if (dialog) dismiss(dialog, opener);
  }
}
