// Elements from data, never from HTML strings: names, reasons, descriptions and stderr come
// from servers and files, so text only ever goes in as text (no innerHTML in the Studio).

/** h("button", {class: "x", onclick: fn, "aria-label": "Edit time"}, "Edit") → an element. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === false || value === null || value === undefined) continue;
    if (key === "class") el.className = value;
    else if (key === "text") el.textContent = value;
    else if (key === "value") el.value = value;
    else if (key === "checked") el.checked = Boolean(value);
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

/** Set text only when it changed (keeps live updates cheap and screen readers quiet). */
export function setText(el, text) {
  const value = text === null || text === undefined ? "" : String(text);
  if (el.textContent !== value) el.textContent = value;
}

/** A message as nodes: what monad writes in backticks (`monad mcp get time`, a file, a name)
 *  becomes <code>, the rest stays text. The CLI's messages are the page's messages. */
export function withCode(message) {
  return String(message).split(/`([^`\n]+)`/).flatMap((part, i) => (i % 2 ? [codeOf(part)] : withHashes(part)));
}

// A SHA-256 digest as monad writes it (a tool set's pin): 64 hex digits, maybe `sha256:` first.
// Whole: not the end of a longer run of hex digits.
const HASH = /(?<![0-9a-f])((?:sha256:)?[0-9a-f]{64})(?![0-9a-f])/;

function codeOf(text) {
  const m = text.match(HASH);
  return m && m[0] === text ? hashCode(text) : h("code", {}, text);
}

/** Text with each digest in it as a one-line <code class="hash"> (cut with `…` by the CSS, whole
 *  in the DOM and its title): a 71-character hash wrapped mid-hash over many lines reads as noise. */
function withHashes(text) {
  return String(text).split(new RegExp(HASH.source, "g")).map((part, i) => (i % 2 ? hashCode(part) : part))
    .filter((part) => part !== "");
}

function hashCode(hash) {
  return h("code", { class: "hash", title: hash }, hash);
}

/** A tool's name with a line-break opportunity (<wbr>) after each run of `_`, so a narrow
 *  column breaks `time__get_current_time` between its words, not inside one. */
export function breakAfterUnderscores(name) {
  return String(name).split(/(?<=_)(?!_)/).flatMap((part, i) => (i ? [h("wbr"), part] : [part]));
}

/** A comparator of names as a person reads them: regardless of case (`alpha`, `Beta`, `gamma`),
 *  then by the exact name, so the order is total. The CLI's order too (`core/order.py`). */
export function byName(a, b) {
  const la = String(a).toLowerCase();
  const lb = String(b).toLowerCase();
  if (la !== lb) return la < lb ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

export function replaceChildren(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

export function when(epochSeconds) {
  if (!epochSeconds) return "–";
  const d = new Date(epochSeconds * 1000);
  const pad = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

export const enc = encodeURIComponent;

/** Close and remove a modal `dialog`, and give the focus back to `back` (what opened it) if it
 *  is still on the page. */
export function dismiss(dialog, back) {
  if (dialog.open) dialog.close();
  dialog.remove();
  if (back && back.isConnected && typeof back.focus === "function") back.focus();
}

/** `url` when it is an http(s) URL (its normalized href), else null: a page links to nothing else. */
export function httpUrl(url) {
  try {
    const parsed = new URL(url);
    return parsed.protocol === "https:" || parsed.protocol === "http:" ? parsed.href : null;
  } catch {
    return null;
  }
}

/** The row a list's arrow key moves to from row `i` of `n`: ArrowDown/ArrowUp by one (held
 *  at the ends), End the last, Home (and anything else) the first. */
export function listIndex(key, i, n) {
  if (key === "ArrowDown") return Math.min(n - 1, i + 1);
  if (key === "ArrowUp") return Math.max(0, i - 1);
  if (key === "End") return n - 1;
  return 0;
}
