// The page's state (one workspace at a time) and the address's fragment.
//
// Switching workspace bumps `state.gen`; every asynchronous result checks
// the generation it was started in and is dropped if the user has moved
// on, so nothing from one workspace is rendered in (or requested for)
// another.

import { t } from "./i18n.js";

export const state = {
  api: null,
  user: null,
  workspaces: [],
  ws: null, // WorkspaceApi of the selected workspace
  gen: 0,
  docs: new Map(), // id -> document
  conversations: [],
  conversationId: null,
  messages: [],
  partials: new Map(), // assistant message id -> sections written so far (message.delta)
  reading: new Map(), // assistant message id -> the documents the model is reading (message.delta sources)
  restarted: new Set(), // assistant message ids whose text was taken back and is being written again
  seqs: new Map(), // assistant message id -> the last delta's seq
  stream: null, // AbortController of the open event stream
  docTimer: null,
  docStream: null, // AbortController of the workspace's document status stream
  rawCache: new Map(), // document id -> raw text (this workspace only)
  readingCache: new Map(), // document id -> reading view (Markdown, HTML; this workspace only)
  pageImageUrl: null, // object URL of the page image shown in the viewer
  activeCite: null,
};

export function hashParams() {
  return new URLSearchParams(location.hash.replace(/^#/, ""));
}

export function setHash(params) {
  const h = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) h.set(k, v);
  const next = h.toString();
  if (next !== location.hash.replace(/^#/, "")) history.replaceState(null, "", next ? `#${next}` : location.pathname);
}

export function currentHash() {
  return Object.fromEntries(hashParams().entries());
}

export function updateHash(changes) {
  setHash({ ...currentHash(), ...changes });
}

/** `START-END` of a link, or nulls (the whole document, nothing marked). */
export function parseSpan(span) {
  const m = /^(\d+)-(\d+)$/.exec(span ?? "");
  return m ? [Number(m[1]), Number(m[2])] : [null, null];
}

// Presentations (PPTX, ODP): their pages are slides, and the page says
// "slide N" where it says "page N" of other documents.
const SLIDE_TYPES = new Set([
  "application/vnd.openxmlformats-officedocument.presentationml.presentation",
  "application/vnd.oasis.opendocument.presentation",
]);

/** Whether the document's pages are slides. */
export function isSlides(id) {
  return SLIDE_TYPES.has(state.docs.get(id)?.content_type ?? "");
}

// Spreadsheets (XLSX, XLS, ODS, CSV, TSV): their pages are sheets.
const SHEET_TYPES = new Set([
  "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  "application/vnd.ms-excel",
  "application/vnd.oasis.opendocument.spreadsheet",
  "text/csv",
  "text/tab-separated-values",
]);

/** Whether the document's pages are the sheets of a spreadsheet. */
export function isSheets(id) {
  return SHEET_TYPES.has(state.docs.get(id)?.content_type ?? "");
}

// Text, Markdown and web pages have no pages of their own: their one
// "page" is never named ("bao-cao.md", not "bao-cao.md, page 1").
const PAGELESS_TYPES = new Set(["text/plain", "text/markdown", "text/html"]);

/** Whether the document's pages (or slides, or sheets) are worth naming. */
export function hasPages(id) {
  const d = state.docs.get(id);
  return !!d && !PAGELESS_TYPES.has(d.content_type ?? "") && (d.page_count ?? 0) > 0;
}

// Markdown and web pages read as their authors structured them (the
// reading view: headings, lists, tables), not as their raw text.
const READING_TYPES = new Set(["text/markdown", "text/html"]);

/** Whether the document has a reading view (GET …/reading). */
export function hasReadingView(id) {
  return READING_TYPES.has(state.docs.get(id)?.content_type ?? "");
}

/** A document's name as shown (its file name, or its id). */
export function docName(id) {
  const d = state.docs.get(id);
  return d ? d.filename || id : t("docs.deleted");
}
