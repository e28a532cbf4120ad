// The raw-text viewer: a document's text (the raw-text endpoint's
// segments, with page headings for paged formats) scrolled to a cited
// span, exactly `text[char_start..char_end]` inside `<mark>`, for a
// PDF the page itself with the cited boxes drawn by the server, and for a
// spreadsheet the cited rows as a table under the sheet's header row. A
// Markdown or HTML document reads as its author structured it (the
// reading view, `ui/reading.js`), the cited span marked inside it; a
// spreadsheet opened from the list as its sheets' tables. A button in the
// viewer's head switches to the raw text and back.

import { spanPieces, splitSegment, reflowed, fullLineWraps, paragraphCount } from "./spans.js";
import { sheetTable, wholeSheets, columnName } from "./sheet.js";
import { drawReading } from "./reading.js";
import { $, el } from "./dom.js";
import { t, tr, errorArg, onLanguageChange } from "./i18n.js";
import { state, updateHash, docName, isSlides, isSheets, hasPages, hasReadingView } from "./state.js";

function setTitle(documentId) {
  const title = $("viewer-title");
  if (state.docs.has(documentId)) {
    delete title.dataset.i18n;
    title.textContent = docName(documentId);
  } else {
    tr(title, "docs.deleted");
  }
}

// A phone (drawer.js's width): the viewer is a full-screen sheet.
const PHONE = window.matchMedia("(max-width: 480px)");

// Each opening of the viewer (and each closing) takes the next number: a
// result that comes back for an earlier opening (document A's raw text,
// arriving after B was opened) is dropped rather than drawn under B.
let opening = 0;

/**
 * Opens `documentId`'s raw text with chars start..end marked. `revision`:
 * the revision a citation quoted (an earlier answer's, after the document
 * changed); null reads the one search reads now.
 */
export async function openViewer(documentId, start, end, bubble = null, revision = null) {
  const gen = state.gen;
  const token = ++opening;
  const current = () => gen === state.gen && token === opening;
  const viewer = $("viewer");
  viewer.hidden = false;
  document.body.classList.add("viewing");
  state.activeCite?.classList.remove("active");
  state.activeCite = bubble;
  bubble?.classList.add("active");
  // The cited text's tip is not left over the document.
  const tip = $("cite-tip");
  if (tip) tip.hidden = true;
  // On a phone the document is a sheet over the answer: the focus goes
  // into it (Esc or its close button bring it back to the bubble).
  if (bubble && PHONE.matches) viewer.focus({ preventScroll: true });
  setTitle(documentId);
  const status = $("viewer-status");
  tr(status, "viewer.loading");
  const text = $("viewer-text");
  text.replaceChildren();
  dropPageImage();
  dropSheetTable();
  dropPageList();
  dropAlternate();
  // A citation's revision, even the first: the document may have changed since.
  const rev = revision ? Number(revision) : null;
  updateHash({ doc: documentId, span: start !== null && end !== null ? `${start}-${end}` : null, rev });
  dropRevisionNote();
  // Cached per revision: the one search reads moves when the document
  // changes, so it is keyed by the revision the list last showed.
  const key = `${documentId}@${rev ?? state.docs.get(documentId)?.revision ?? "shown"}`;
  let raw = state.rawCache.get(key);
  // The reading view comes beside the raw text (both before anything is
  // drawn, so the raw text does not flash first); without it (an older
  // document, a failure) the raw text is shown.
  const readingWanted = hasReadingView(documentId);
  const readingCached = state.readingCache.get(key);
  const readingOnItsWay = readingWanted && !readingCached ? state.ws.reading(documentId, rev).catch(() => null) : null;
  try {
    if (!raw) {
      raw = await state.ws.rawText(documentId, rev);
      if (!current()) return;
      state.rawCache.set(key, raw);
    }
  } catch (err) {
    if (!current()) return;
    const why = {
      not_parsed: "viewer.notParsed",
      document_failed: "viewer.documentFailed",
      not_found: "viewer.notFound",
      revision_removed: "viewer.revisionRemoved",
    }[err.code];
    if (why) tr(status, why);
    else tr(status, "viewer.loadFailed", { err: errorArg(err) });
    return;
  }
  const reading = readingCached ?? (await readingOnItsWay);
  if (!current()) return;
  if (reading) state.readingCache.set(key, reading);
  if (raw.newer_revision) showRevisionNote(documentId, raw.revision, raw.newer_revision);
  const segments = raw.segments;
  const pieces = start !== null && end !== null ? spanPieces(segments, start, end) : [];
  const bySegment = new Map();
  for (const p of pieces) bySegment.set(p.segment, [...(bySegment.get(p.segment) ?? []), p]);
  const doc = state.docs.get(documentId);
  const paged = hasPages(documentId);
  const slide = isSlides(documentId);
  // A PDF, DOCX or OCR'd page reads as its author's paragraphs: a line
  // break that only wraps is shown as a space (in the DOM it stays the
  // newline it is, so offsets and the highlight's text stay exact); where
  // the page's line boxes say a line was full, also before a capital.
  const flows = FLOWING.test(doc?.content_type ?? "");
  const wraps = flows ? fullLineWraps(raw) : null;
  const shown = flows ? reflowed(segments.map((s) => s.text), wraps) : null;
  text.classList.toggle("flow", flows);
  const nodes = [];
  let page = null;
  segments.forEach((seg, i) => {
    if (paged && seg.page_idx !== page) {
      page = seg.page_idx;
      nodes.push(el("div", { class: "page-break", dataset: { page: page + 1 }, t: ["viewer.page", { n: page + 1, slide, sheet: seg.cells?.sheet ?? null }] }));
    }
    const parts = splitSegment(seg.text, bySegment.get(i) ?? []);
    const shownParts = shown ? splitSegment(shown[i], bySegment.get(i) ?? []) : null;
    const body = (p, j) => (shownParts ? softened(p.text, shownParts[j].text) : [p.text]);
    nodes.push(
      el(
        "span",
        { class: "segment", dataset: { segment: seg.segment_index, page: seg.page_idx + 1 } },
        ...parts.map((p, j) => (p.marked ? el("mark", { class: "cited" }, ...body(p, j)) : body(p, j))),
      ),
    );
  });
  text.replaceChildren(...nodes);
  const range = showSheetTable(segments, start, end);
  showPageImage(raw, documentId, pieces, segments, start, end, current, rev);
  if (start === null || end === null) showPageList(raw, documentId, current);
  if (reading) showReading(reading, start, end, pieces.length > 0);
  else if (!pieces.length && isSheets(documentId)) showWholeSheets(segments);
  const pages = [...new Set(pieces.map((p) => segments[p.segment].page_idx + 1))];
  // Where the passage is, in words for people (a page, a sheet's rows, or
  // the paragraph of a text without pages); the character offsets are a
  // tooltip. The Esc hint only where there is a keyboard.
  const esc = window.matchMedia?.("(pointer: fine)").matches ?? true;
  if (pieces.length) {
    tr(status, "viewer.cited", { pages: paged ? pages : null, slide, range, para: segments[pieces[0].segment].segment_index + 1, esc });
    status.title = t("viewer.offsets", { start, end });
  } else status.removeAttribute("title");
  // Opened from the list: how long it is, in what a reader counts (its
  // pages, or the paragraphs shown for a text without pages).
  if (!pieces.length) {
    tr(status, "viewer.summary", paged && doc?.page_count
      ? { pages: doc.page_count, slide, sheet: isSheets(documentId) }
      : { paragraphs: paragraphCount(segments.map((s) => s.text), flows, wraps) });
  }
  const shownBox = text.hidden ? $("viewer-reading") ?? text : text;
  const first = shownBox.querySelector("mark.cited");
  if (first) centerIn(shownBox, first);
}

// What the viewer's head button switches the raw text with: the pages
// (a PDF's, an image's), the reading view (Markdown, HTML) or the sheets'
// tables (a spreadsheet from the list); its labels each way.
const ALTERNATES = {
  pages: { id: "viewer-pages", toText: "viewer.showText", back: "viewer.showPages" },
  reading: { id: "viewer-reading", toText: "viewer.showRaw", back: "viewer.showReading" },
  sheets: { id: "viewer-sheets", toText: "viewer.showText", back: "viewer.showTable" },
};

/** `box` is shown instead of the raw text, the head's button switching back. */
function showAlternate(kind, box) {
  const text = $("viewer-text");
  text.before(box);
  text.hidden = true;
  const mode = $("viewer-mode");
  mode.dataset.alternate = kind;
  tr(mode, ALTERNATES[kind].toText);
  mode.hidden = false;
}

function dropAlternate() {
  document.querySelectorAll("#viewer-reading, #viewer-sheets").forEach((n) => n.remove());
  $("viewer-text").hidden = false;
  $("viewer-mode").hidden = true;
}

// A Markdown or HTML document as its author structured it: headings,
// lists, emphasis, links and tables, the cited characters marked. A span
// the view cannot show (only Markdown syntax, text the view does not
// place) opens on the raw text, where it is marked, the view a tap away.
function showReading(reading, start, end, cited) {
  const box = el("article", { id: "viewer-reading", class: "reading", tabindex: "0" });
  box.append(...drawReading(reading.blocks, start, end));
  showAlternate("reading", box);
  if (cited && !box.querySelector("mark.cited")) {
    box.hidden = true;
    $("viewer-text").hidden = false;
    tr($("viewer-mode"), ALTERNATES.reading.back);
  }
}

// A spreadsheet opened from the list: each sheet as a table under its
// header row (the first 500 rows of a long one, and how many more).
function showWholeSheets(segments) {
  const sheets = wholeSheets(segments, 500);
  if (!sheets.length) return;
  const box = el("div", { id: "viewer-sheets", class: "sheet-list", tabindex: "0" });
  for (const sheet of sheets) {
    const width = Math.max(1, sheet.cols.length);
    const head = sheet.header
      ? el("tr", { dataset: { row: sheet.header.n } }, rowHead(sheet.header),
          ...(sheet.header.cells
            ? sheet.header.cells.map((c) => sheetCell("th", c.text ? c : { ...c, text: columnName(c.col) }, { scope: "col" }))
            : [el("th", { scope: "col", colspan: width }, sheet.header.text)]))
      : el("tr", {}, el("th", { class: "row-n" }), ...sheet.cols.map((col) => el("th", { scope: "col", class: "letter" }, columnName(col))));
    const body = sheet.rows.map((row) =>
      el("tr", { dataset: { row: row.n } }, rowHead(row),
        ...(row.cells ? row.cells.map((c) => sheetCell("td", c)) : [el("td", { colspan: width }, row.text)])));
    box.append(el("figure", { class: "sheet-table whole", dataset: { page: sheet.page + 1 } },
      el("table", {},
        el("caption", {}, el("span", { class: "sheet-range", text: sheet.sheet }),
          sheet.more ? [" ", el("span", { class: "muted", t: ["viewer.sheetMore", { shown: sheet.rows.length, more: sheet.more }] })] : null),
        el("thead", {}, head),
        el("tbody", {}, ...body))));
  }
  showAlternate("sheets", box);
}

// The text shown is an earlier revision (an earlier answer quoted it): a
// line above it says so, with a link to the text search reads now.
function showRevisionNote(documentId, revision, newer) {
  const note = el(
    "p",
    { id: "viewer-revision", class: "revision-note", role: "note" },
    el("span", { t: ["viewer.olderRevision", { revision, newer }] }),
    " ",
    el("button", { type: "button", class: "link-button", t: ["viewer.openNewest", {}], onclick: () => openViewer(documentId, null, null) }),
  );
  $("viewer-status").after(note);
}

function dropRevisionNote() {
  $("viewer-revision")?.remove();
}

// Formats whose line breaks are where a line was full, not the author's:
// text-layer PDFs, DOCX, pictures read by OCR.
const FLOWING = /^(application\/pdf|application\/vnd\.openxmlformats-officedocument\.wordprocessingml\.document|image\/)/;

/**
 * `raw` as nodes, each of its line breaks that `shown` (the same text,
 * reflowed) turned into a space kept as a newline in a `.soft` span,
 * which CSS shows as a space.
 */
function softened(raw, shown) {
  const out = [];
  let from = 0;
  for (let k = 0; k < raw.length; k++) {
    if (raw[k] === "\n" && shown[k] === " ") {
      if (k > from) out.push(raw.slice(from, k));
      out.push(el("span", { class: "soft", text: "\n" }));
      from = k + 1;
    }
  }
  if (from < raw.length) out.push(raw.slice(from));
  return out;
}

/**
 * Scrolls `box`, and only it, so `node` sits in its middle: opening a
 * citation never moves the window (scrollIntoView scrolls every scrolling
 * ancestor, the page's too, hiding the top bar).
 */
function centerIn(box, node) {
  const b = box.getBoundingClientRect();
  const n = node.getBoundingClientRect();
  box.scrollTop += n.top - b.top - (box.clientHeight - n.height) / 2;
}

// A cited span of a PDF or an image is also shown where it is on the page:
// the server renders the page (or shows the image itself, as a PNG) with
// the span's boxes drawn (GET .../pages/N/image).
async function showPageImage(raw, documentId, pieces, segments, start, end, current, revision = null) {
  dropPageImage();
  if (!pieces.length) return;
  const pageIdx = segments[pieces[0].segment].page_idx;
  const page = (raw.pages ?? []).find((p) => p.page_idx === pageIdx);
  const isImage = (state.docs.get(documentId)?.content_type ?? "").startsWith("image/");
  if (!page || !(page.unit === "pt" || (isImage && page.unit === "px"))) return;
  const n = pageIdx + 1;
  const figure = el("figure", { class: "page-image" }, el("figcaption", { class: "muted", t: ["viewer.imageLoading", { n }] }));
  $("viewer-text").before(figure);
  try {
    const blob = await state.ws.pageImage(documentId, n, start, end, revision);
    if (!current() || !figure.isConnected) return;
    state.pageImageUrl = URL.createObjectURL(blob);
    const img = el("img", { alt: t("viewer.imageAlt", { n, doc: docName(documentId) }), dataset: { n } });
    // Scroll the page to the first cited line.
    const line = segments[pieces[0].segment].boxes?.find((b) => b.char_end > start);
    img.addEventListener("load", () => {
      if (line) figure.scrollTop = Math.max(0, (line.y0 / page.height) * img.clientHeight - 40);
      // The picture took room above the text: the highlight is centred again.
      const mark = $("viewer-text").querySelector("mark.cited");
      if (mark) centerIn($("viewer-text"), mark);
    });
    img.src = state.pageImageUrl;
    figure.replaceChildren(img, el("figcaption", { class: "muted", t: ["viewer.imageCaption", { n }] }));
  } catch (err) {
    if (current() && figure.isConnected) figure.replaceChildren(el("figcaption", { class: "muted", t: ["viewer.noImage", { err: errorArg(err) }] }));
  }
}

// A document opened from the list (no cited span) shows its pages as
// pictures where the server draws them (a PDF's pages, an image): a page
// reads best as its author laid it out. Its text otherwise (a
// presentation's slides, Word, text, a spreadsheet). A button in the
// viewer's head switches to the text and back (a phone may read the text
// better). Pages are drawn as they come into view, one at a time, so a
// long PDF costs the server only the pages looked at.
let pageList = null; // { urls, observer } of the pages shown

function showPageList(raw, documentId, current) {
  dropPageList();
  const isImage = (state.docs.get(documentId)?.content_type ?? "").startsWith("image/");
  const pages = (raw.pages ?? []).filter((p) => p.unit === "pt" || (isImage && p.unit === "px"));
  if (!pages.length) return;
  const slide = isSlides(documentId);
  const box = el("div", { class: "page-list", id: "viewer-pages", tabindex: "0" });
  const shown = { urls: [], observer: null };
  pageList = shown;
  const wanted = [];
  let loading = false;
  const pump = async () => {
    if (loading) return;
    loading = true;
    while (wanted.length && pageList === shown) {
      const figure = wanted.shift();
      const n = Number(figure.dataset.page);
      const slot = figure.querySelector(".doc-page-slot");
      try {
        const blob = await state.ws.pageImage(documentId, n);
        if (!current() || pageList !== shown) break;
        const url = URL.createObjectURL(blob);
        shown.urls.push(url);
        slot.replaceChildren(el("img", { src: url, alt: t("viewer.pageAlt", { n, doc: docName(documentId), slide }), dataset: { n } }));
      } catch (err) {
        if (pageList !== shown) break;
        slot.replaceChildren(el("span", { class: "muted", t: ["viewer.noImage", { err: errorArg(err) }] }));
      }
    }
    loading = false;
  };
  shown.observer = new IntersectionObserver(
    (entries) => {
      for (const e of entries) {
        if (!e.isIntersecting) continue;
        shown.observer.unobserve(e.target);
        wanted.push(e.target);
      }
      wanted.sort((a, b) => a.dataset.page - b.dataset.page);
      pump();
    },
    { root: box, rootMargin: "50% 0px" },
  );
  for (const p of pages) {
    const n = p.page_idx + 1;
    const slot = el("div", { class: "doc-page-slot" });
    // The page's shape before its picture comes, so nothing jumps.
    if (p.width > 0 && p.height > 0) slot.style.aspectRatio = `${p.width} / ${p.height}`;
    const figure = el("figure", { class: "doc-page", dataset: { page: n } }, slot, el("figcaption", { class: "muted", t: ["viewer.page", { n, slide }] }));
    box.append(figure);
    shown.observer.observe(figure);
  }
  showAlternate("pages", box);
}

$("viewer-mode").addEventListener("click", () => {
  const mode = $("viewer-mode");
  const alternate = ALTERNATES[mode.dataset.alternate];
  const box = alternate && $(alternate.id);
  if (!box) return;
  const text = $("viewer-text");
  const toText = text.hidden;
  text.hidden = !toText;
  box.hidden = toText;
  tr(mode, toText ? alternate.back : alternate.toText);
  // The highlight stays in view whichever way the text is shown.
  const shown = toText ? text : box;
  const mark = shown.querySelector("mark.cited");
  if (mark) centerIn(shown, mark);
});

function dropPageList() {
  if (pageList) {
    pageList.observer?.disconnect();
    for (const url of pageList.urls) URL.revokeObjectURL(url);
  }
  pageList = null;
  document.querySelectorAll("#viewer .page-list").forEach((f) => f.remove());
  $("viewer-text").hidden = false;
  $("viewer-mode").hidden = true;
}

const numeric = (v) => /^[-+−]?[\d.,\s]*\d[\d.,\s]*%?$/.test(v);

/** A cell of a sheet's table: a number right-aligned, a cited one marked. */
function sheetCell(tag, c, attrs = {}) {
  return el(tag, { ...attrs, class: [c.cited ? "cited" : "", numeric(c.text) ? "num" : ""].join(" ").trim() || null, dataset: { col: c.col } },
    c.cited ? el("mark", { class: "cell", text: c.text }) : c.text);
}

/** A row's number, as the sheet shows it. */
function rowHead(row) {
  return el("th", { class: "row-n", scope: "row" }, String(row.n));
}

// A cited span of a spreadsheet is also shown as a table: the sheet's
// header row, the cited rows with their cited cells marked, two rows each
// side dimmed, the sheet and range as the caption. Returns the range, or
// null when the span is not in a spreadsheet.
function showSheetTable(segments, start, end) {
  dropSheetTable();
  const table = start !== null && end !== null ? sheetTable(segments, start, end) : null;
  if (!table) return null;
  const width = Math.max(1, table.cols.length);
  const cell = sheetCell;
  const head = table.header
    ? el("tr", { class: table.header.cited ? "cited" : null, dataset: { row: table.header.n } },
        rowHead(table.header),
        ...(table.header.cells
          ? table.header.cells.map((c) => cell("th", c.text ? c : { ...c, text: columnName(c.col) }, { scope: "col" }))
          : [el("th", { scope: "col", colspan: width }, table.header.text)]))
    : el("tr", {}, el("th", { class: "row-n" }), ...table.cols.map((col) => el("th", { scope: "col", class: "letter" }, columnName(col))));
  const body = table.rows.map((row) =>
    el("tr", { class: row.cited ? "cited" : "context", dataset: { row: row.n } },
      rowHead(row),
      ...(row.cells ? row.cells.map((c) => cell("td", c)) : [el("td", { colspan: width }, row.text)])));
  const figure = el("figure", { class: "sheet-table" },
    el("table", {},
      el("caption", {}, el("span", { class: "sheet-range", text: table.label }), " ", el("span", { class: "muted", t: ["viewer.sheetNote", { rows: table.rows.filter((r) => r.cited).length + (table.header?.cited ? 1 : 0) }] })),
      el("thead", {}, head),
      el("tbody", {}, ...body)));
  $("viewer-text").before(figure);
  return table.label;
}

function dropSheetTable() {
  document.querySelectorAll("#viewer .sheet-table").forEach((f) => f.remove());
}

// The image's text alternative follows a switch of language too.
onLanguageChange(() => {
  const img = document.querySelector("#viewer .page-image img");
  const doc = new URLSearchParams(location.hash.replace(/^#/, "")).get("doc");
  if (img) img.alt = t("viewer.imageAlt", { n: Number(img.dataset.n), doc: docName(doc) });
  for (const page of document.querySelectorAll("#viewer .doc-page img")) {
    page.alt = t("viewer.pageAlt", { n: Number(page.dataset.n), doc: docName(doc), slide: isSlides(doc) });
  }
});

function dropPageImage() {
  document.querySelectorAll("#viewer .page-image").forEach((f) => f.remove());
  if (state.pageImageUrl) URL.revokeObjectURL(state.pageImageUrl);
  state.pageImageUrl = null;
}

export function closeViewer(restoreFocus = true) {
  opening += 1; // what is still loading for it is dropped
  dropPageImage();
  dropSheetTable();
  dropPageList();
  dropAlternate();
  $("viewer").hidden = true;
  document.body.classList.remove("viewing");
  $("viewer-text").replaceChildren();
  if (state.api) updateHash({ doc: null, span: null, rev: null });
  if (restoreFocus) state.activeCite?.focus();
  state.activeCite?.classList.remove("active");
}

$("viewer-close").addEventListener("click", () => closeViewer());
document.addEventListener("keydown", (e) => {
  // Not when Esc closes a dialog over it (the API keys).
  if (e.key === "Escape" && !$("viewer").hidden && !document.querySelector("dialog[open]")) closeViewer();
});
