// A CallToolResult as the model gets it (MCP spec, server/tools "Tool Result"): each content
// block in order — text, an image, audio (a player), a resource link, an embedded resource —
// then structuredContent as JSON, then _meta (a Task's id lives there: the related-task key).
// `isError: true` is marked as an error. Media come as data: URLs of the block's own bytes
// (the page's CSP allows data: images and audio and nothing from the network).

import { h } from "./dom.js";

// Text and JSON boxes scroll past a height (studio.css): each is a tab stop, so a keyboard
// reaches what is below the fold (axe: scrollable-region-focusable).

const RELATED_TASK = "io.modelcontextprotocol/related-task";
const MEDIA = /^[a-z]+\/[a-z0-9.+-]+$/i;

function dataUrl(mime, data) {
  return typeof data === "string" && /^[A-Za-z0-9+/=\s]*$/.test(data) && MEDIA.test(mime || "")
    ? `data:${mime};base64,${data.replace(/\s/g, "")}` : null;
}

function httpLink(uri, text) {
  try {
    const url = new URL(uri);
    if (url.protocol === "https:" || url.protocol === "http:") {
      return h("a", { href: url.href, target: "_blank", rel: "noopener noreferrer" }, text);
    }
  } catch {
    // not a URL: shown as text
  }
  return h("code", {}, text);
}

function bytesOf(base64) {
  const text = atob(base64.replace(/\s/g, ""));
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i += 1) bytes[i] = text.charCodeAt(i);
  return bytes;
}

/** A name to save a resource under: its URI's last segment, made of harmless characters. */
function fileName(uri) {
  const last = String(uri || "").split(/[/?#]/).filter(Boolean).pop() || "resource";
  return last.replace(/[^A-Za-z0-9._-]/g, "_").replace(/^\.+/, "").slice(0, 100) || "resource";
}

/** Save a blob's bytes as a file. Saved as application/octet-stream whatever the server says
 *  it is: the browser keeps it a download (an HTML blob never becomes a page). */
function download(resource) {
  const url = URL.createObjectURL(new Blob([bytesOf(resource.blob)], { type: "application/octet-stream" }));
  const a = h("a", { href: url, download: fileName(resource.uri), hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

/** A resource's contents (MCP spec, server/resources "Resource Contents"): its text as text
 *  (HTML included: never rendered), an image blob shown from a data: URL, any other blob as its
 *  size and type and a Download button. */
export function resourceBody(resource) {
  if (typeof resource.text === "string") return h("pre", { class: "text", tabindex: "0" }, resource.text);
  const mime = resource.mimeType || "";
  if (mime.startsWith("image/")) {
    const src = dataUrl(mime, resource.blob);
    if (src) return h("img", { src, alt: `image ${resource.uri || ""} (${mime})` });
  }
  const readable = typeof resource.blob === "string" && /^[A-Za-z0-9+/=\s]*$/.test(resource.blob);
  const size = readable ? Math.floor((resource.blob.replace(/[\s=]/g, "").length * 3) / 4) : 0;
  return h("p", { class: "blob" }, h("span", { class: "hint" }, `${size} bytes of ${mime || "binary data"} `),
    readable ? h("button", { type: "button", class: "small", "aria-label": `Download ${fileName(resource.uri)}`,
                             onclick: () => download(resource) }, "Download") : null);
}

/** One content block (a tool result's, a prompt message's) as the model gets it. */
export function contentBlock(item) {
  const type = item && item.type;
  if (type === "text") return h("pre", { class: "content text", tabindex: "0" }, item.text || "");
  if (type === "image") {
    const src = dataUrl(item.mimeType, item.data);
    return src ? h("figure", { class: "content image" }, h("img", { src, alt: `image (${item.mimeType})` }))
               : h("p", { class: "hint" }, `an image the page cannot show (${item.mimeType})`);
  }
  if (type === "audio") {
    const src = dataUrl(item.mimeType, item.data);
    return src ? h("figure", { class: "content audio" },
      h("audio", { controls: true, src, "aria-label": `audio (${item.mimeType})` }),
      h("figcaption", { class: "hint" }, `audio (${item.mimeType})`))
      : h("p", { class: "hint" }, `audio the page cannot play (${item.mimeType})`);
  }
  if (type === "resource_link") {
    return h("div", { class: "content link" }, "Resource link: ", httpLink(item.uri, item.title || item.name || item.uri),
      h("span", { class: "hint" }, ` ${item.uri}${item.mimeType ? ` (${item.mimeType})` : ""}`),
      item.description ? h("p", { class: "hint" }, item.description) : null);
  }
  if (type === "resource" && item.resource) {
    const r = item.resource;
    return h("div", { class: "content resource" },
      h("p", {}, "Embedded resource ", h("code", {}, r.uri || ""), r.mimeType ? h("span", { class: "hint" }, ` (${r.mimeType})`) : null),
      resourceBody(r));
  }
  return h("pre", { class: "content json", tabindex: "0" }, JSON.stringify(item, null, 2));
}

/** The element for one result (wire JSON); `extra` keys monad added are not shown. */
export function renderResult(result) {
  const r = result || {};
  const isError = Boolean(r.isError);
  const meta = r._meta && typeof r._meta === "object" ? r._meta : null;
  const task = meta && meta[RELATED_TASK] ? meta[RELATED_TASK].taskId : null;
  return h("div", { class: isError ? "result is-error" : "result", "aria-label": isError ? "Tool error" : "Tool result",
                    role: "group" },
    isError ? h("p", { class: "error-mark", role: "alert" }, "Tool error (isError: true)") : null,
    (r.content || []).map(contentBlock),
    r.structuredContent !== undefined ? h("section", { class: "structured" },
      h("h4", {}, "structuredContent"), h("pre", { class: "json", tabindex: "0" }, JSON.stringify(r.structuredContent, null, 2))) : null,
    meta ? h("section", { class: "meta" },
      h("h4", {}, "_meta"), task ? h("p", {}, "Task ", h("code", { class: "task-id" }, task)) : null,
      h("pre", { class: "json", tabindex: "0" }, JSON.stringify(meta, null, 2))) : null);
}
