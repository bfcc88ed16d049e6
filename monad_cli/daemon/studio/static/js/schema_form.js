// A form from a JSON Schema object (a tool's inputSchema with its local $refs already
// resolved by the supervisor, trust/schema_refs.py, or a task's requestedSchema): one
// labelled input per property, the <label> being the property's name; typed inputs for
// strings, numbers, integers and booleans, a list for enums, a JSON text area for arrays,
// objects and anything else; required marks; the schema's defaults filled in.
// `collect()` gives the arguments object, or the problems next to their fields.

import { h, setText } from "./dom.js";

const NOT_SET = "";

function nonNull(branches) {
  return (Array.isArray(branches) ? branches : []).filter((b) => b && typeof b === "object" && b.type !== "null");
}

/** What input a property gets: {kind, prop} with prop the branch that describes it. */
export function kindOf(prop) {
  let p = prop && typeof prop === "object" ? prop : {};
  for (const key of ["anyOf", "oneOf"]) {
    const branches = nonNull(p[key]);
    if (branches.length === 1) {
      const { [key]: _drop, ...rest } = p;
      p = { ...branches[0], ...rest }; // Optional[X]: X, with the property's own title and default
    }
  }
  if (Array.isArray(p.enum) && p.enum.length && p.enum.every((v) => ["string", "number", "boolean"].includes(typeof v))) {
    return { kind: "enum", prop: p };
  }
  let type = p.type;
  if (Array.isArray(type)) {
    const types = type.filter((t) => t !== "null");
    type = types.length === 1 ? types[0] : null;
  }
  if (["string", "integer", "number", "boolean"].includes(type)) return { kind: type, prop: p };
  return { kind: "json", prop: p };
}

const HINTS = { string: "text", integer: "an integer", number: "a number", boolean: "true or false",
                enum: "one of the listed values", json: "JSON" };

function jsonHint(prop) {
  if (prop.type === "array") return "a JSON array";
  if (prop.type === "object") return "a JSON object";
  return "a JSON value";
}

export class SchemaForm {
  /** `schema`: an object schema; `prefix`: makes the element ids unique on the page. */
  constructor(schema, prefix) {
    this.schema = schema && typeof schema === "object" ? schema : {};
    this.prefix = prefix;
    this.fields = [];
    const props = this.schema.properties && typeof this.schema.properties === "object" ? this.schema.properties : {};
    const required = new Set(Array.isArray(this.schema.required) ? this.schema.required : []);
    this.element = h("div", { class: "schema-form" });
    const names = Object.keys(props);
    if (!names.length) this.element.append(h("p", { class: "hint" }, "No arguments."));
    names.forEach((name, i) => this.addField(name, props[name], required.has(name), i));
  }

  addField(name, raw, isRequired, index) {
    const { kind, prop } = kindOf(raw);
    const id = `${this.prefix}-${index}`;
    const hasDefault = Object.prototype.hasOwnProperty.call(prop, "default") ||
                       Object.prototype.hasOwnProperty.call(raw || {}, "default");
    const fallback = Object.prototype.hasOwnProperty.call(raw || {}, "default") ? raw.default : prop.default;
    const described = [];
    const errorEl = h("p", { class: "field-error", id: `${id}-error`, hidden: true });
    let input;
    if (kind === "boolean" && (isRequired || hasDefault)) {
      input = h("input", { type: "checkbox", id, checked: hasDefault ? Boolean(fallback) : false });
    } else if (kind === "boolean" || kind === "enum") {
      const values = kind === "boolean" ? [true, false] : prop.enum;
      input = h("select", { id },
        isRequired && !hasDefault ? null : h("option", { value: NOT_SET }, "(not set)"),
        values.map((v, i) => h("option", { value: String(i), selected: hasDefault && v === fallback }, String(v))));
      if (isRequired && !hasDefault && kind === "enum") input.prepend(h("option", { value: NOT_SET, selected: true },
                                                                        "(choose)"));
    } else if (kind === "json") {
      input = h("textarea", { id, rows: 3, spellcheck: "false",
                              placeholder: prop.type === "array" ? "[ ]" : prop.type === "object" ? "{ }" : "" });
      if (hasDefault && fallback !== null) input.value = JSON.stringify(fallback); // null: left empty, not sent
    } else {
      const type = kind === "string" ? "text" : "number";
      input = h("input", { type, id, step: kind === "integer" ? "1" : kind === "number" ? "any" : null,
                           autocomplete: "off" });
      if (hasDefault && fallback !== null && fallback !== undefined) input.value = String(fallback);
    }
    if (isRequired) {
      input.required = true;
      input.setAttribute("aria-required", "true");
    }
    const descId = `${id}-desc`;
    const hint = [HINTS[kind] === "JSON" ? jsonHint(prop) : HINTS[kind],
                  hasDefault ? `default ${JSON.stringify(fallback)}` : null,
                  (raw && raw.description) || prop.description || null].filter(Boolean).join(" · ");
    described.push(descId, `${id}-error`);
    input.setAttribute("aria-describedby", described.join(" "));
    const label = h("label", { for: id }, name);
    const mark = isRequired ? h("span", { class: "required-mark", title: "required" }, "required") : null;
    const wrap = kind === "boolean" && input.type === "checkbox"
      ? h("div", { class: "field check" }, input, label, mark, h("span", { class: "hint", id: descId }, hint), errorEl)
      : h("div", { class: "field" }, h("div", { class: "label-line" }, label, mark), input,
          h("p", { class: "hint", id: descId }, hint), errorEl);
    this.element.append(wrap);
    this.fields.push({ name, kind, prop, input, errorEl, isRequired });
  }

  /** {ok: true, value} or {ok: false} with the problems shown next to their fields. */
  collect() {
    const value = {};
    let ok = true;
    for (const f of this.fields) {
      setText(f.errorEl, "");
      f.errorEl.hidden = true;
      f.input.removeAttribute("aria-invalid");
      const fail = (message) => {
        ok = false;
        setText(f.errorEl, message);
        f.errorEl.hidden = false;
        f.input.setAttribute("aria-invalid", "true");
      };
      if (f.input.type === "checkbox") {
        value[f.name] = f.input.checked;
        continue;
      }
      const raw = f.input.value;
      if (f.input.validity && f.input.validity.badInput) { // `1e400`: the browser cannot read it as a number
        fail(`is not a number the page can read (${f.kind === "integer" ? "an integer" : "a number"} `
             + "of at most 15 digits, say 42 or 1.5e3)");
        continue;
      }
      if (raw === NOT_SET || (f.kind !== "string" && raw.trim() === "")) {
        if (f.isRequired) fail("required");
        continue; // left empty: not sent, so the tool's own default applies
      }
      if (f.kind === "enum") value[f.name] = f.prop.enum[Number(raw)];
      else if (f.kind === "boolean") value[f.name] = [true, false][Number(raw)];
      else if (f.kind === "integer") {
        const n = Number(raw);
        if (!Number.isInteger(n)) fail("must be an integer");
        // Past 2^53 a page's number is not the integer typed (9007199254740993 → …992): never
        // send another value than the one typed (`monad mcp call --arg` sends it exactly).
        else if (!Number.isSafeInteger(n)) fail("is larger than the page can send exactly (at most 9007199254740991); "
                                                + "`monad mcp call --arg` sends it as typed");
        else value[f.name] = n;
      } else if (f.kind === "number") {
        const n = Number(raw);
        if (!Number.isFinite(n)) fail("must be a number");
        else value[f.name] = n;
      } else if (f.kind === "json") {
        try {
          const parsed = JSON.parse(raw);
          if (f.prop.type === "array" && !Array.isArray(parsed)) fail("must be a JSON array");
          else if (f.prop.type === "object" && (parsed === null || typeof parsed !== "object" || Array.isArray(parsed))) {
            fail("must be a JSON object");
          } else value[f.name] = parsed;
        } catch (err) {
          fail(`not valid JSON (${err.message})`);
        }
      } else value[f.name] = raw;
    }
    return ok ? { ok, value } : { ok };
  }
}
