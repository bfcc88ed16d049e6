// A tool set refused by its pin, reviewed before it is accepted (docs/tools.md "Reviewing a
// refused set"): the server pane shows what changed since the pin, tool by tool, old and new
// side by side, and its Accept button shows the same change again in the dialog that asks.
// The review is `GET /v1/tools/sets/NAME`'s `review` (scrubbed by the supervisor); accepting
// posts its `hash` to `POST /v1/tools/sets/NAME/pin`, which pins only that set.

import { api } from "./api.js";
import { dismiss, enc, h, withCode } from "./dom.js";

// What the CLI writes as `\u001b`-style escapes (cli/render.py `terminal_text`): C0 but tab and
// newline, DEL, C1, and the bidi overrides, which reorder what follows them on the page too.
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/** `text` with every character that acts instead of showing written as `\uXXXX`. */
export function visible(text) {
  return String(text).replace(UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

function shown(value) {
  if (value === null || value === undefined) return "(none)";
  return visible(typeof value === "string" ? value : JSON.stringify(value, null, 2));
}

function block(value, side, label) {
  // A tab stop: a long schema scrolls (axe: scrollable-region-focusable).
  return h("pre", { class: `pin-${side}`, tabindex: "0", "aria-label": label }, shown(value));
}

function fieldDiff(tool, f) {
  return h("div", { class: "pin-field" },
    h("p", { class: "pin-field-name" }, h("code", {}, f.field)),
    h("div", { class: "pin-sides" },
      h("figure", {}, h("figcaption", {}, "Pinned"), block(f.old, "old", `${tool} ${f.field}, pinned`)),
      h("figure", {}, h("figcaption", {}, "Now"), block(f.new, "new", `${tool} ${f.field}, now`))));
}

function wholeTool(tool, side) {
  const label = side === "new" ? "now" : "pinned";
  return Object.entries(tool).filter(([k]) => k !== "name").map(([field, value]) =>
    h("div", { class: "pin-field" }, h("p", { class: "pin-field-name" }, h("code", {}, field)),
      block(value, side, `${visible(tool.name)} ${field}, ${label}`)));
}

/** The change of a review as elements: added, removed and changed tools, each field's two sides. */
export function changeView(review, scrolls = false) {
  const c = review.change;
  const items = [];
  if (!c.pinnedKnown) {
    items.push(h("p", { class: "hint" }, "The pinned tool set is unknown to this journal (pinned by hand or in "
      + "another MONAD_HOME): every tool the server advertises now is shown as added."));
  }
  // Changed tools first: a rewritten description is the usual rug pull.
  for (const t of c.changed) {
    items.push(h("li", {}, h("p", { class: "pin-tool" }, "Changed: ", h("code", {}, visible(t.name)),
      ` (${t.fields.map((f) => f.field).join(", ")})`), t.fields.map((f) => fieldDiff(visible(t.name), f))));
  }
  for (const t of c.added) {
    items.push(h("li", {}, h("p", { class: "pin-tool" }, "Added: ", h("code", {}, visible(t.name))), wholeTool(t, "new")));
  }
  for (const t of c.removed) {
    items.push(h("li", {}, h("p", { class: "pin-tool" }, "Removed: ", h("code", {}, visible(t.name))), wholeTool(t, "old")));
  }
  // In the dialog the change scrolls between its question and its buttons: a tab stop
  // (axe: scrollable-region-focusable), named for what it holds.
  return h("div", scrolls ? { class: "pin-review scrolls", tabindex: "0", "aria-label": "The change to accept" }
    : { class: "pin-review" },
    h("p", {}, withCode(`Pinned \`${review.pinned}\`, now \`${review.hash}\`.`)),
    h("ul", { class: "pin-changes", "aria-label": "Changes since the pin" }, items));
}

/** The pane's Tools part for a server whose pin refuses its tool set: why none is listed, the
 *  change, and the button that accepts it after showing it once more. */
export function refusedPart(name, review, notify) {
  const accept = h("button", { type: "button", class: "primary", onclick: () => acceptDialog(name, review, notify) },
    "Accept tool set…");
  return h("section", { class: "refused" },
    h("h3", {}, `Tools (${review.tools.length}, refused by the pin)`),
    h("p", {}, "The server is connected, but its tool set changed since it was pinned, so none of its tools is "
      + "registered and calls to them are refused. Review the change before you accept it."),
    changeView(review),
    h("div", { class: "buttons" }, accept));
}

/** Ask, showing the change again; Accept pins exactly the reviewed set (409: it changed again). */
function acceptDialog(name, review, notify) {
  const opener = document.activeElement;
  const dialog = h("dialog", { class: "modal pin-dialog", "aria-labelledby": "pin-title", "aria-describedby": "pin-text" },
    h("h2", { id: "pin-title" }, `Accept the new tool set of ${name}?`),
    h("p", { id: "pin-text" }, "Its tools register with this text, and agents are told it. Only the set shown "
      + "here is accepted: if the server changed it again meanwhile, nothing is pinned."),
    changeView(review, true));
  const status = h("p", { role: "status", class: "error" });
  const done = () => dismiss(dialog, opener);
  const cancel = h("button", { type: "button", autofocus: true, onclick: done }, "Cancel");
  const confirm = h("button", { type: "button", class: "danger", onclick: async () => {
    confirm.disabled = true;
    try {
      const r = await api("POST", `/v1/tools/sets/${enc(name)}/pin`, { hash: review.hash });
      done();
      notify(`Pinned ${name} to ${r.pinnedToolHash}: its ${r.tools} tools are registered.`);
    } catch (err) {
      confirm.disabled = false;
      status.textContent = err.message;
    }
  } }, "Accept and pin");
  dialog.append(status, h("div", { class: "buttons" }, cancel, confirm));
  dialog.addEventListener("cancel", (e) => { e.preventDefault(); done(); });
  document.body.append(dialog);
  dialog.showModal();
  cancel.focus();
}
