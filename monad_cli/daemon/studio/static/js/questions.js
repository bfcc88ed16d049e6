// A server's question during a call made from Try (MCP spec, client/elicitation), asked in a
// modal dialog: a form's typed fields (elicitation form mode, the fields from its
// requestedSchema), or a URL shown whole with its host in bold (URL mode, "Safe URL
// Handling": the page never opens or fetches it; the person follows the link, a new tab with
// no opener and no referrer, and says so). The answer goes back through
// `POST /v1/tools/call/answer`. Sampling and roots are refused by the supervisor before they
// reach the page (docs/studio.md "Questions during a call").

import { dismiss, h, httpUrl, replaceChildren } from "./dom.js";
import { SchemaForm } from "./schema_form.js";

/** `https://<strong>host</strong>/path…`: the URL whole, its host the part to check. */
export function urlWithHost(url) {
  let parsed = null;
  try {
    parsed = new URL(url);
  } catch {
    return h("span", { class: "url" }, url);
  }
  const at = url.indexOf(parsed.host);
  if (at < 0) return h("span", { class: "url" }, url);
  return h("span", { class: "url url-host" }, url.slice(0, at), h("strong", {}, parsed.host),
    url.slice(at + parsed.host.length));
}

let counter = 0;

/** Ask `question` (a `question` line of the call's answer: {id, name, request, input}) in a
 *  dialog; resolves with the answer ({action, content?}). `signal` (the call's) closes it. */
export function askQuestion(question, signal) {
  return new Promise((resolve) => {
    counter += 1;
    const info = question.input || { mode: "unsupported", problem: "the question is not described" };
    const params = (question.request && question.request.params) || {};
    const titleId = `question-title-${counter}`;
    const opener = document.activeElement;
    const dialog = h("dialog", { class: "modal question", "aria-labelledby": titleId });
    let answered = false;
    const done = (answer) => {
      if (answered) return;
      answered = true;
      dismiss(dialog, opener);
      resolve(answer);
    };
    if (signal) signal.addEventListener("abort", () => done({ action: "cancel" }));
    const server = (question.name || "").split("__")[0];
    const body = h("div", { class: "question-body" });
    const buttons = h("div", { class: "buttons" });
    const decline = h("button", { type: "button", onclick: () => done({ action: "decline" }) }, "Decline");
    const cancel = h("button", { type: "button", onclick: () => done({ action: "cancel" }) }, "Cancel");
    let first = null;
    const url = info.mode === "url" ? httpUrl(info.url || "") : null;
    if (info.mode === "url" && url) {
      const link = h("a", { href: url, target: "_blank", rel: "noopener noreferrer" }, "Open the page");
      replaceChildren(body,
        h("p", {}, info.message || "The server asks you to open a page:"),
        h("p", { class: "question-url" }, urlWithHost(info.url)),
        h("p", {}, link, " (a new tab), then say you opened it."));
      const opened = h("button", { type: "button", class: "primary", onclick: () => done({ action: "accept" }) },
        "I opened it");
      buttons.append(opened, decline, cancel);
      first = link;
    } else if (info.mode === "form") {
      const form = new SchemaForm(params.requestedSchema || {}, `question-${counter}`);
      const send = h("button", { type: "submit", class: "primary" }, "Send answer");
      const element = h("form", { novalidate: true, "aria-label": `Answer to ${server}`,
                                  onsubmit: (e) => {
                                    e.preventDefault();
                                    const got = form.collect();
                                    if (got.ok) done({ action: "accept", content: got.value });
                                  } },
        h("p", {}, info.message || "The server asks:"), form.element, h("div", { class: "buttons" }, send, decline, cancel));
      replaceChildren(body, element);
      first = element.querySelector("input, select, textarea") || send;
    } else {
      replaceChildren(body, h("p", {}, `The page cannot show this question: ${info.problem || "not supported"}.`));
      buttons.append(decline);
      first = decline;
    }
    dialog.append(h("h2", { id: titleId }, `${server} asks (during ${question.name})`), body,
      buttons.childElementCount ? buttons : null);
    dialog.addEventListener("cancel", (e) => { e.preventDefault(); done({ action: "cancel" }); }); // Escape
    document.body.append(dialog);
    dialog.showModal();
    if (first) first.focus();
  });
}
