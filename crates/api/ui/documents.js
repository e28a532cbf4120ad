// The documents panel: uploads with progress, and each document's status
// as the pipeline moves it (pushed by the workspace's status stream, with
// a slow poll as a second path).

import { ApiError } from "./api.js";
import { streamEvents } from "./sse.js";
import { $, el, toast, showWorkspaceError } from "./dom.js";
import { t, tr, bytes, errorArg, errorText, errorDetail } from "./i18n.js";
import { state, isSlides, isSheets, hasPages } from "./state.js";
import { openViewer } from "./viewer.js";

const TERMINAL = new Set(["ingested", "failed", "deleted"]);

/**
 * The workspace's document status stream: each status change is pushed
 * (`document.status_updated`), so the list follows the pipeline without
 * polling. `onReady` runs when the stream starts (`ready`): the list read
 * after it misses nothing the stream will not bring. Reconnects resume
 * with Last-Event-ID (sse.js).
 */
export function watchDocuments(gen, onReady) {
  state.docStream?.abort();
  const abort = new AbortController();
  state.docStream = abort;
  streamEvents(
    state.ws.documentEventsUrl(),
    state.api.headers(),
    abort.signal,
    ({ event, data }) => {
      if (gen !== state.gen) return;
      if (event === "ready") return onReady();
      if (event !== "document.status_updated") return;
      try {
        const d = JSON.parse(data);
        const before = new Map(state.docs);
        if (d.status === "deleted") state.docs.delete(d.id);
        else state.docs.set(d.id, { ...(state.docs.get(d.id) ?? {}), ...d });
        renderDocuments(before);
      } catch {
        /* a malformed event: the slow poll still brings the list */
      }
    },
    (e) => {
      // The stream is down: the list is polled until it is back.
      if (gen === state.gen && e?.fatal) pollDocuments(gen);
    },
  );
}

export async function pollDocuments(gen) {
  clearTimeout(state.docTimer);
  let busy = true;
  try {
    const docs = await state.ws.documents();
    if (gen !== state.gen) return;
    const before = state.docs;
    state.docs = new Map(docs.map((d) => [d.id, d]));
    renderDocuments(before);
    busy = docs.some((d) => !TERMINAL.has(d.status)) || $("uploads").children.length > 0;
  } catch (err) {
    if (gen !== state.gen) return;
    if (err instanceof ApiError && err.status === 404) {
      showWorkspaceError("ws.notFound");
      return;
    }
    toast("docs.listFailed", { err: errorArg(err) }, true);
  }
  // A second path beside the stream (a proxy may hold events back): a slow
  // poll, quicker while something is in flight.
  if (gen === state.gen) state.docTimer = setTimeout(() => pollDocuments(gen), busy ? 5000 : 30000);
}

/** The list, from `state.docs`; a status that changed since `before` flashes. */
export function renderDocuments(before = state.docs) {
  const items = [...state.docs.values()].map((d) => {
    const changed = before.has(d.id) && before.get(d.id).status !== d.status;
    const facts = [];
    if (d.size_bytes) facts.push(bytes(d.size_bytes));
    if (d.page_count && hasPages(d.id)) facts.push(t("docs.pages", { n: d.page_count, slide: isSlides(d.id), sheet: isSheets(d.id) }));
    const failure = { code: d.failure_code ?? "", message: d.failure_reason ?? "" };
    return el(
      "li",
      {
        class: `document status-${d.status}${changed ? " changed" : ""}`,
        dataset: { id: d.id, status: d.status, pageCount: d.page_count ?? "" },
      },
      el(
        "button",
        { type: "button", class: "doc-open", title: t("docs.open"), onclick: () => openViewer(d.id, null, null) },
        d.filename || d.id,
      ),
      el("span", { class: `badge status-${d.status}`, text: t(`status.${d.status}`) }),
      // Sentences written to the model, kept out of every answer: said so.
      d.instructions_found > 0
        ? el("span", { class: "badge instructions", title: t("docs.instructionsHelp"), text: t("docs.instructions", { n: d.instructions_found }) })
        : null,
      facts.length
        ? el("small", { class: "muted facts", title: d.uploaded_at ? t("docs.uploadedAt", { at: d.uploaded_at }) : null, text: facts.join(" · ") })
        : null,
      d.status === "failed"
        ? el("p", {
            class: "failure",
            dataset: { code: failure.code },
            // The translated reason; the server's own words (with details
            // such as limits) and the code on hover.
            title: errorDetail(failure),
            text: failure.code || failure.message ? errorText(failure) : t("docs.failed"),
          })
        : null,
    );
  });
  $("documents").replaceChildren(...items);
  // An upload whose document the list now shows (the status stream can
  // bring it before the upload's own answer): the list's row takes over,
  // so a file is never listed twice.
  for (const row of [...$("uploads").children]) {
    if (row.known && [...state.docs.values()].some((d) => d.filename === row.dataset.name && !row.known.has(d.id))) row.remove();
  }
  showEmpty(state.docs.size === 0 && $("uploads").children.length === 0);
}

// A workspace with nothing in it says so in the list, and the chat offers
// the upload itself (on a phone the list is in the drawer, out of sight).
const hintUpload = $("hint-upload"); // out of the page while a conversation is shown
/** Whether the workspace shown is empty: said in the list, the upload offered in the chat. */
export function showEmpty(empty) {
  $("documents-empty").hidden = !empty;
  hintUpload.hidden = !empty;
}

function uploadFiles(files) {
  if (!state.ws) return toast("ws.pickFirst", {}, true);
  const ws = state.ws;
  const gen = state.gen;
  for (const file of files) {
    const bar = el("progress", { max: 1, value: 0 });
    const status = el("span", { class: "upload-status", t: ["upload.sending", { size: file.size }] });
    const row = el("li", { class: "upload", dataset: { name: file.name } }, el("span", { class: "upload-name", text: file.name }), bar, status);
    // The documents of that name listed before: a new one is this upload's.
    row.known = new Set([...state.docs.values()].filter((d) => d.filename === file.name).map((d) => d.id));
    $("uploads").append(row);
    showEmpty(false);
    ws.upload(file, (f) => (bar.value = f))
      .then((accepted) => {
        if (gen !== state.gen) return;
        // Accepted: the upload becomes its row of the list at once (one
        // row, its status moving on), unless the stream brought it first.
        row.remove();
        const id = accepted?.document_id;
        if (id && !state.docs.has(id)) {
          state.docs.set(id, {
            id,
            filename: accepted.filename ?? file.name,
            content_type: accepted.content_type,
            size_bytes: accepted.size_bytes ?? file.size,
            status: accepted.status ?? "uploaded",
          });
        }
        renderDocuments();
        pollDocuments(gen);
      })
      .catch((err) => {
        if (gen !== state.gen) return;
        row.known = null;
        if (!row.isConnected) $("uploads").append(row);
        row.classList.add("error");
        row.dataset.code = err.code ?? "";
        bar.remove();
        const why = errorArg(err);
        status.replaceWith(el("span", { class: "upload-status", title: errorDetail(why), t: ["upload.refused", { err: why }] }));
        row.append(el("button", { type: "button", class: "small", t: "upload.dismiss", onclick: () => row.remove() }));
      });
  }
}

$("file-input").addEventListener("change", (e) => {
  uploadFiles([...e.target.files]);
  e.target.value = "";
});
const drop = $("drop-zone");
// Nothing is dropped without a mouse (a phone): the zone says a tap chooses.
hintUpload.querySelector("button").addEventListener("click", () => $("file-input").click());
if (!(window.matchMedia?.("(pointer: fine)").matches ?? true)) tr(drop.querySelector('[data-i18n="docs.drop"]'), "docs.dropTouch");
for (const ev of ["dragenter", "dragover"]) {
  drop.addEventListener(ev, (e) => {
    e.preventDefault();
    drop.classList.add("over");
  });
}
for (const ev of ["dragleave", "drop"]) drop.addEventListener(ev, () => drop.classList.remove("over"));
drop.addEventListener("drop", (e) => {
  e.preventDefault();
  uploadFiles([...(e.dataTransfer?.files ?? [])]);
});
// A file dropped anywhere else must not make the browser navigate away.
window.addEventListener("dragover", (e) => e.preventDefault());
window.addEventListener("drop", (e) => e.preventDefault());
