// DOM helpers shared by the page's modules.

import { tr } from "./i18n.js";

export const $ = (id) => document.getElementById(id);

/**
 * `el("p", {class, text, onclick, dataset, t: [key, args]}, ...children)`:
 * an element; `t` sets its text to a translated string that follows a
 * switch of language (i18n.js `tr`).
 */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k === "t") (Array.isArray(v) ? tr(node, v[0], v[1]) : tr(node, v));
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(node.dataset, v);
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c !== null && c !== undefined) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

let toastTimer = null;
/** A passing message at the bottom: `key` and `args` of the catalogues. */
export function toast(key, args = {}, isError = false) {
  const node = $("toast");
  tr(node, key, args);
  node.classList.toggle("error", isError);
  node.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => (node.hidden = true), 5000);
}

/**
 * The workspace cannot be shown (`key` of the catalogues), or "" to clear.
 * `notice`: not an error (no workspace yet: the first thing a new user
 * reads), said in the page's ordinary tone and not announced as an alert.
 */
export function showWorkspaceError(key, notice = false) {
  const node = $("workspace-error");
  node.className = notice ? "notice" : "error";
  node.setAttribute("role", notice ? "status" : "alert");
  if (key) tr(node, key);
  else {
    node.textContent = "";
    delete node.dataset.i18n;
  }
  node.hidden = !key;
  $("ask-form").hidden = !!key;
  $("documents-panel").hidden = !!key;
  $("conversations-panel").hidden = !!key;
}
