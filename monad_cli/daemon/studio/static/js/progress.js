// A running call's progress (MCP spec, basic/utilities/progress): the server's
// notifications/progress, which reach the page as `call.progress` events {id, progress, total,
// message} while the call runs, and go when it ends. A bar (with a total) or a busy bar (without
// one), and the words: "2 of 5 · copying files".

import { h, setText } from "./dom.js";

function count(n) {
  return Number.isInteger(n) ? String(n) : String(Math.round(n * 100) / 100);
}

/** The words for one notification: "2 of 5 · message", "2 · message" (no total), "message". */
export function progressText(p) {
  const done = typeof p.progress === "number" ? p.progress : null;
  const total = typeof p.total === "number" && p.total > 0 ? p.total : null;
  const amount = done === null ? "" : total !== null ? `${count(done)} of ${count(total)}` : count(done);
  return [amount, p.message || ""].filter(Boolean).join(" · ");
}

export class ProgressView {
  /** `label`: the bar's accessible name ("Progress of time__slow"); `live`: announce changes
   *  (the call the person started; a table of everyone's calls stays quiet). */
  constructor(label, { live = false } = {}) {
    // The live region stays in place while empty: a region that appears with its text is
    // not announced by every screen reader.
    this.bar = h("progress", { "aria-label": label, hidden: true });
    // aria-live, not role=status: the call's own status line is the panel's status.
    this.words = h("span", live ? { class: "progress-text", "aria-live": "polite" } : { class: "progress-text" });
    this.element = h("div", { class: "call-progress" }, this.bar, this.words);
  }

  show(p) {
    const total = typeof p.total === "number" && p.total > 0 ? p.total : null;
    if (total !== null && typeof p.progress === "number") {
      this.bar.max = total;
      this.bar.value = Math.min(p.progress, total);
    } else {
      this.bar.removeAttribute("value"); // indeterminate: the server gave no total
    }
    this.bar.hidden = false;
    setText(this.words, progressText(p));
  }

  clear() {
    this.bar.hidden = true;
    this.bar.removeAttribute("value");
    setText(this.words, "");
  }
}
