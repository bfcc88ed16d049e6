// A server's resources, resource templates and prompts, in its pane (MCP spec,
// server/resources and server/prompts): open a resource and read its text or a preview of
// its blob, fill a template's variables and read what they name, fill a prompt's arguments
// and read its messages. Every request goes through the supervisor's one path for agents'
// resources/read and prompts/get (daemon/api/features.py: journaled, scrubbed, an idle
// on-demand server started for it). What the server sent is shown as text, never as markup.

import { api } from "./api.js";
import { enc, h, replaceChildren, setText } from "./dom.js";
import { contentBlock, resourceBody } from "./results.js";
import { SchemaForm } from "./schema_form.js";

const MAX_SHOWN = 200; // items of one list shown; the rest are counted

// -- RFC 6570 URI templates (levels 1-4, string values) -------------------------------------
const OPERATORS = {
  "": { first: "", sep: ",", named: false, empty: "", reserved: false },
  "+": { first: "", sep: ",", named: false, empty: "", reserved: true },
  "#": { first: "#", sep: ",", named: false, empty: "", reserved: true },
  ".": { first: ".", sep: ".", named: false, empty: "", reserved: false },
  "/": { first: "/", sep: "/", named: false, empty: "", reserved: false },
  ";": { first: ";", sep: ";", named: true, empty: "", reserved: false },
  "?": { first: "?", sep: "&", named: true, empty: "=", reserved: false },
  "&": { first: "&", sep: "&", named: true, empty: "=", reserved: false },
};
const EXPRESSION = /\{([+#./;?&]?)([^}]*)\}/g;

function specs(list) {
  return list.split(",").map((s) => s.trim()).filter(Boolean).map((s) => {
    const [name, prefix] = s.replace(/\*$/, "").split(":");
    return { name, prefix: prefix ? Number(prefix) : null };
  });
}

/** The variable names of a template, in order, each once. */
export function templateVariables(template) {
  const names = [];
  for (const m of template.matchAll(EXPRESSION)) {
    for (const { name } of specs(m[2])) if (name && !names.includes(name)) names.push(name);
  }
  return names;
}

function encode(value, reserved) {
  const strict = (s) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return reserved ? encodeURI(value).replace(/%25([0-9A-Fa-f]{2})/g, "%$1") : strict(value);
}

/** `template` expanded with `values` (name → string; a missing name is undefined, and left out). */
export function expandTemplate(template, values) {
  return template.replace(EXPRESSION, (_, op, list) => {
    const o = OPERATORS[op];
    const parts = [];
    for (const { name, prefix } of specs(list)) {
      const raw = values[name];
      if (raw === undefined || raw === null) continue;
      const value = encode(prefix ? String(raw).slice(0, prefix) : String(raw), o.reserved);
      parts.push(o.named ? (value ? `${name}=${value}` : `${name}${o.empty}`) : value);
    }
    return parts.length ? o.first + parts.join(o.sep) : "";
  });
}

// -- the view ---------------------------------------------------------------------------------
function stringSchema(entries) {
  // A form of strings: prompt arguments (MCP: always strings) and template variables.
  const properties = {};
  const required = [];
  for (const e of entries) {
    properties[e.name] = { type: "string", description: e.description || undefined };
    if (e.required) required.push(e.name);
  }
  return { type: "object", properties, required };
}

function countNote(total) {
  return total > MAX_SHOWN ? h("p", { class: "hint" }, `${total - MAX_SHOWN} more not shown.`) : null;
}

let serial = 0; // ids unique on the page, across panes

export class ServerFeatures {
  constructor(server, notify) {
    this.server = server;
    this.notify = notify;
    this.id = `feat-${(serial += 1)}`;
    this.state = null;
    this.resources = h("div", { class: "feature-list" }, h("p", { class: "hint" }, "Loading…"));
    this.prompts = h("div", { class: "feature-list" }, h("p", { class: "hint" }, "Loading…"));
    this.reader = h("div", { class: "feature-output", role: "region", tabindex: "-1",
                             "aria-label": `Resource read from ${server}`, hidden: true });
    this.messages = h("div", { class: "feature-output", role: "region", tabindex: "-1",
                               "aria-label": `Prompt messages from ${server}`, hidden: true });
    this.resourceCount = h("span", {});
    this.promptCount = h("span", {});
    this.element = h("div", { class: "features" },
      h("section", { "aria-labelledby": `${this.id}-res` },
        h("div", { class: "details-head" }, h("h3", { id: `${this.id}-res` }, "Resources", this.resourceCount),
          h("button", { type: "button", class: "small", "aria-label": `Reload resources and prompts of ${server}`,
                        onclick: () => { this.key = null; this.load(); } }, "Reload")),
        this.resources, this.reader),
      h("section", { "aria-labelledby": `${this.id}-prompts` },
        h("h3", { id: `${this.id}-prompts` }, "Prompts", this.promptCount),
        this.prompts, this.messages));
  }

  /** The server's row changed: read the lists again when its state did (a server that just
   *  connected lists what it offers). */
  update(row) {
    const state = row && row.state;
    if (state === this.state) return;
    this.state = state;
    this.load();
  }

  async load() {
    const base = `/v1/mcp-servers/${enc(this.server)}`;
    const get = (path) => api("GET", path).catch((err) => ({ error: err.message }));
    const [resources, prompts] = await Promise.all([get(`${base}/resources`), get(`${base}/prompts`)]);
    // Drawn again only when they changed: what is typed in a form stays, and so does focus.
    const key = JSON.stringify([resources, prompts]);
    if (key === this.key) return;
    this.key = key;
    const focused = this.element.contains(document.activeElement) ? document.activeElement : null;
    const label = focused && (focused.getAttribute("aria-label") || focused.id);
    this.showResources(resources);
    this.showPrompts(prompts);
    if (label && !focused.isConnected) {
      const again = [...this.element.querySelectorAll("[aria-label], [id]")]
        .find((el) => (el.getAttribute("aria-label") || el.id) === label);
      if (again) again.focus();
    }
  }

  // -- resources ------------------------------------------------------------------------------
  showResources(answer) {
    const list = answer.resources || [];
    const templates = answer.templates || [];
    setText(this.resourceCount, answer.error ? "" : ` (${list.length}${templates.length ? ` + ${templates.length} templates` : ""})`);
    if (answer.error) {
      replaceChildren(this.resources, h("p", { class: "error" }, answer.error));
      return;
    }
    const offered = answer.offers ? answer.offers.resources : null;
    replaceChildren(this.resources,
      !list.length && !templates.length ? h("p", { class: "hint" }, offered === false
        ? "This server offers no resources." : offered === null
          ? "None known: the server is not connected (an on-demand server lists what it offered last)."
          : "The server lists no resources.") : null,
      list.length ? h("ul", { class: "resources", "aria-label": `Resources of ${this.server}` },
        list.slice(0, MAX_SHOWN).map((r) => h("li", {},
          h("button", { type: "button", class: "small", "aria-label": `Open ${r.uri}`,
                        onclick: () => this.read(r.uri) }, "Open"),
          " ", h("span", { class: "feature-name" }, r.title || r.name || r.uri),
          " ", h("code", { class: "feature-uri" }, r.uri),
          r.mimeType ? h("span", { class: "hint" }, ` ${r.mimeType}`) : null,
          r.description ? h("p", { class: "hint" }, r.description) : null))) : null,
      countNote(list.length),
      templates.length ? [h("h4", {}, "Resource templates"),
        templates.slice(0, MAX_SHOWN).map((t, i) => this.templateForm(t, i))] : null,
      countNote(templates.length));
  }

  templateForm(template, index) {
    const uriTemplate = String(template.uriTemplate || "");
    const names = templateVariables(uriTemplate);
    const form = new SchemaForm(stringSchema(names.map((name) => ({ name, required: true }))),
                                `${this.id}-t${index}`);
    const target = h("code", { class: "feature-uri" }, uriTemplate);
    const preview = () => {
      const values = {};
      for (const f of form.fields) if (f.input.value !== "") values[f.name] = f.input.value;
      setText(target, expandTemplate(uriTemplate, values));
    };
    const label = template.title || template.name || uriTemplate;
    return h("form", { class: "template-form", novalidate: true, "aria-label": `Template ${label}`,
                       oninput: preview,
                       onsubmit: (e) => {
                         e.preventDefault();
                         const got = form.collect();
                         if (got.ok) this.read(expandTemplate(uriTemplate, got.value));
                       } },
      h("p", {}, h("span", { class: "feature-name" }, label), " ", h("code", { class: "feature-uri" }, uriTemplate),
        template.mimeType ? h("span", { class: "hint" }, ` ${template.mimeType}`) : null),
      template.description ? h("p", { class: "hint" }, template.description) : null,
      form.element,
      h("p", { class: "hint" }, "Reads ", target),
      h("div", { class: "buttons" }, h("button", { type: "submit", "aria-label": `Read from template ${label}` },
                                       "Read")));
  }

  async read(uri) {
    const opener = document.activeElement;
    this.reader.hidden = false;
    replaceChildren(this.reader, h("h4", {}, "Reading ", h("code", {}, uri), "…"));
    let body;
    try {
      const result = await api("POST", `/v1/mcp-servers/${enc(this.server)}/resources/read`, { uri });
      const contents = (result && result.contents) || [];
      body = [h("div", { class: "details-head" }, h("h4", {}, "Read ", h("code", { class: "feature-uri" }, uri)),
                    this.closeButton(this.reader, opener, `Close the resource ${uri}`)),
        contents.length ? contents.map((c) => h("div", { class: "content resource" },
          contents.length > 1 || c.uri !== uri ? h("p", {}, h("code", { class: "feature-uri" }, c.uri || "")) : null,
          h("p", { class: "hint" }, c.mimeType || "no MIME type given"),
          resourceBody(c))) : h("p", { class: "hint" }, "The server sent no contents.")];
    } catch (err) {
      body = [h("div", { class: "details-head" }, h("h4", {}, "Not read: ", h("code", { class: "feature-uri" }, uri)),
                    this.closeButton(this.reader, opener, `Close the resource ${uri}`)),
        h("p", { class: "error" }, err.message)];
    }
    replaceChildren(this.reader, body);
    this.show(this.reader);
  }

  // -- prompts --------------------------------------------------------------------------------
  showPrompts(answer) {
    const list = answer.prompts || [];
    setText(this.promptCount, answer.error ? "" : ` (${list.length})`);
    if (answer.error) {
      replaceChildren(this.prompts, h("p", { class: "error" }, answer.error));
      return;
    }
    const offered = answer.offers ? answer.offers.prompts : null;
    replaceChildren(this.prompts,
      list.length ? list.slice(0, MAX_SHOWN).map((p, i) => this.promptForm(p, i))
        : h("p", { class: "hint" }, offered === false ? "This server offers no prompts." : offered === null
          ? "None known: the server is not connected." : "The server lists no prompts."),
      countNote(list.length));
  }

  promptForm(prompt, index) {
    const args = Array.isArray(prompt.arguments) ? prompt.arguments : [];
    const form = new SchemaForm(stringSchema(args), `${this.id}-p${index}`);
    const label = prompt.title || prompt.name;
    return h("form", { class: "prompt-form", novalidate: true, "aria-label": `Prompt ${prompt.name}`,
                       onsubmit: (e) => {
                         e.preventDefault();
                         const got = form.collect();
                         if (got.ok) this.get(prompt.name, got.value);
                       } },
      h("p", {}, h("span", { class: "feature-name" }, label),
        label !== prompt.name ? [" ", h("code", {}, prompt.name)] : null),
      prompt.description ? h("p", { class: "hint" }, prompt.description) : null,
      args.length ? form.element : null,
      h("div", { class: "buttons" }, h("button", { type: "submit", "aria-label": `Get prompt ${prompt.name}` },
                                       "Get prompt")));
  }

  async get(name, args) {
    const opener = document.activeElement;
    this.messages.hidden = false;
    replaceChildren(this.messages, h("h4", {}, "Getting ", h("code", {}, name), "…"));
    let body;
    try {
      const result = await api("POST", `/v1/mcp-servers/${enc(this.server)}/prompts/get`, { name, arguments: args });
      const messages = (result && result.messages) || [];
      body = [h("div", { class: "details-head" }, h("h4", {}, "Messages of ", h("code", {}, name)),
                    this.closeButton(this.messages, opener, `Close the messages of ${name}`)),
        result && result.description ? h("p", { class: "hint" }, result.description) : null,
        messages.length ? h("ol", { class: "messages", "aria-label": `Messages of ${name}` },
          messages.map((m) => h("li", { class: "message" }, h("p", { class: "message-role" }, m.role || "?"),
            contentBlock(m.content)))) : h("p", { class: "hint" }, "The server sent no messages.")];
    } catch (err) {
      body = [h("div", { class: "details-head" }, h("h4", {}, "Not got: ", h("code", {}, name)),
                    this.closeButton(this.messages, opener, `Close the messages of ${name}`)),
        h("p", { class: "error" }, err.message)];
    }
    replaceChildren(this.messages, body);
    this.show(this.messages);
  }

  // -- both -----------------------------------------------------------------------------------
  closeButton(area, opener, label) {
    return h("button", { type: "button", class: "small", "aria-label": label, onclick: () => {
      area.hidden = true;
      replaceChildren(area);
      if (opener && opener.isConnected) opener.focus();
    } }, "Close");
  }

  /** What was read takes focus and comes into view, as a tool's result does. */
  show(area) {
    area.scrollIntoView({ block: "nearest" });
    area.focus({ preventScroll: true });
  }
}
