// The page's languages: Vietnamese and English. The strings live in two
// catalogues (i18n-vi.js, i18n-en.js); this module picks the language
// (the visitor's earlier choice in localStorage, else the browser's
// `navigator.languages`: Vietnamese for `vi`, English otherwise), formats
// numbers, sizes and dates for it with `Intl`, and translates the API's
// stable error codes, falling back to the server's text for a code it does
// not know.
//
// Static text of index.html carries `data-i18n` (its text),
// `data-i18n-placeholder`, `data-i18n-aria-label` or `data-i18n-title`
// (attributes); text set from code goes through `tr(node, key, args)`,
// which records the key and arguments on the node, so that switching the
// language re-translates everything already shown.

import en from "./i18n-en.js";
import vi from "./i18n-vi.js";

export const CATALOGUES = { vi, en };
const LANG_KEY = "rag-engine.lang";
const listeners = [];
let lang = "en";

/** The language to start in: a stored choice, else the browser's. */
export function detectLanguage(stored, languages) {
  if (stored && CATALOGUES[stored]) return stored;
  for (const l of languages ?? []) {
    const primary = String(l).toLowerCase().split("-")[0];
    if (primary === "vi") return "vi";
    if (primary === "en") return "en";
  }
  return "en";
}

export function language() {
  return lang;
}

function storedLanguage() {
  try {
    return localStorage.getItem(LANG_KEY);
  } catch {
    return null; // storage disabled: the browser's language each visit
  }
}

// ---------- formatting ----------

const cache = new Map();
function formatter(kind, options) {
  const key = `${lang}|${kind}|${JSON.stringify(options)}`;
  if (!cache.has(key)) {
    cache.set(key, kind === "date" ? new Intl.DateTimeFormat(lang, options) : new Intl.NumberFormat(lang, options));
  }
  return cache.get(key);
}

/** A number as the language writes it (1,245.6 / 1.245,6). */
export function num(n) {
  return formatter("number", {}).format(Number(n));
}

/** A size in bytes, in the largest unit that keeps it at 1 or more. */
export function bytes(n) {
  const units = ["byte", "kilobyte", "megabyte", "gigabyte"];
  let v = Number(n) || 0;
  let i = 0;
  while (v >= 1000 && i < units.length - 1) {
    v /= 1000;
    i += 1;
  }
  // "31 bytes" / "31 byte" (the short form of a byte is "byte" in English too), "16.4 kB" / "16,4 kB".
  const display = i ? "short" : "long";
  return formatter("number", { style: "unit", unit: units[i], unitDisplay: display, maximumFractionDigits: i ? 1 : 0 }).format(v);
}

/** A timestamp (ISO 8601) as the language writes a short date and time. */
export function date(iso) {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso ?? "") : formatter("date", { dateStyle: "short", timeStyle: "short" }).format(d);
}

/**
 * An error's reason in the chosen language: `{code, message}` of the API
 * (or an ApiError). A known code is translated, an unknown one shows the
 * server's text (or `fallback`). The code itself is no word for people: it
 * goes in the tooltip (`errorDetail`), not in the text.
 */
export function errorText(err, fallback = "") {
  if (!err) return fallback;
  const code = err.code ?? "";
  const known = code ? lookup(`error.${code}`) : undefined;
  // An answer that was not the API's JSON (a proxy's 502, say): its status.
  const status = /^http_(\d+)$/.exec(code)?.[1];
  if (known === undefined && status) return t("error.http", { status });
  return String(known ?? (err.message || fallback || code));
}

/**
 * An error's details for a tooltip (a `title`): the server's own words
 * (which carry details such as limits) and the stable code, for whoever
 * reports the problem ("file is empty (empty_file)"); null when there are none.
 */
export function errorDetail(err) {
  if (!err) return null;
  const { code = "", message = "" } = err;
  if (message && code) return `${message} (${code})`;
  return message || code || null;
}

/** `err` as plain data, so it can be kept in a node's arguments. */
export function errorArg(err) {
  if (err && typeof err === "object" && ("code" in err || "message" in err)) {
    return { code: err.code ?? "", message: String(err.message ?? "") };
  }
  return { code: "", message: String(err?.message ?? err ?? "") };
}

const FORMATTERS = { num, bytes, date, err: errorText };

// ---------- translation ----------

function lookup(key) {
  return CATALOGUES[lang][key] ?? CATALOGUES.en[key];
}

/** The string `key` in the chosen language, with its arguments. */
export function t(key, args = {}) {
  const entry = lookup(key);
  if (entry === undefined) return key;
  if (typeof entry === "function") return entry(args, FORMATTERS);
  return entry.replace(/\{(\w+)\}/g, (m, name) => {
    const v = args[name];
    if (v === undefined) return m;
    return typeof v === "number" ? num(v) : String(v);
  });
}

/** Sets `node`'s text to `key` translated, and keeps the key for a switch. */
export function tr(node, key, args = {}) {
  node.dataset.i18n = key;
  if (Object.keys(args).length) node.dataset.i18nArgs = JSON.stringify(args);
  else delete node.dataset.i18nArgs;
  node.textContent = t(key, args);
  return node;
}

const ATTRIBUTES = ["placeholder", "aria-label", "title"];

/** Translates every marked node under `root` (index.html's and tr's). */
export function translateTree(root = document) {
  for (const node of root.querySelectorAll("[data-i18n]")) {
    let args = {};
    try {
      args = node.dataset.i18nArgs ? JSON.parse(node.dataset.i18nArgs) : {};
    } catch {
      /* keep no arguments */
    }
    node.textContent = t(node.dataset.i18n, args);
  }
  for (const attr of ATTRIBUTES) {
    for (const node of root.querySelectorAll(`[data-i18n-${attr}]`)) {
      node.setAttribute(attr, t(node.getAttribute(`data-i18n-${attr}`)));
    }
  }
}

/** Calls `fn` after every switch of language (to re-render what is shown). */
export function onLanguageChange(fn) {
  listeners.push(fn);
}

/** Switches to `next`, keeps the choice for later visits, re-translates. */
export function setLanguage(next, { remember = true } = {}) {
  if (!CATALOGUES[next]) return;
  lang = next;
  if (remember) {
    try {
      localStorage.setItem(LANG_KEY, next);
    } catch {
      /* storage disabled: the choice lasts for this page only */
    }
  }
  document.documentElement.lang = next;
  translateTree(document);
  for (const fn of listeners) fn(next);
}

/** Starts in the stored or the browser's language. */
export function initLanguage() {
  setLanguage(detectLanguage(storedLanguage(), navigator.languages?.length ? navigator.languages : [navigator.language]), {
    remember: false,
  });
}
