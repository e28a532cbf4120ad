// The rag-engine page: sign in, pick a workspace, upload documents and
// watch them through the pipeline, ask questions, and open each citation
// on the document's raw text with exactly the cited span highlighted.
//
// State belongs to one workspace at a time. Switching workspace bumps
// `state.gen`; every asynchronous result checks the generation it was
// started in and is dropped if the user has moved on, so nothing from one
// workspace is rendered in (or requested for) another.

import { Api, ApiError, pageConfig, devSignIn } from "./api.js";
import { streamEvents } from "./sse.js";
import { spanPieces, splitSegment, preview } from "./spans.js";

const $ = (id) => document.getElementById(id);
const TOKEN_KEY = "rag-engine.token";
const TERMINAL = new Set(["ingested", "failed", "deleted"]);
const STATUS_LABEL = {
  uploaded: "uploaded",
  parsed: "parsed",
  chunked: "chunked",
  ingested: "ingested",
  failed: "failed",
};

const chatHint = $("chat-hint");

const state = {
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
  stream: null, // AbortController of the open event stream
  docTimer: null,
  docStream: null, // AbortController of the workspace's document status stream
  rawCache: new Map(), // document id -> raw text (this workspace only)
  pageImageUrl: null, // object URL of the page image shown in the viewer
  activeCite: null,
};

// ---------- small helpers ----------

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
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
function toast(message, isError = false) {
  const t = $("toast");
  t.textContent = message;
  t.classList.toggle("error", isError);
  t.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => (t.hidden = true), 5000);
}

function describeError(err) {
  if (err instanceof ApiError) return `${err.message} (${err.code})`;
  return String(err?.message ?? err);
}

function hashParams() {
  return new URLSearchParams(location.hash.replace(/^#/, ""));
}

function setHash(params) {
  const h = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) h.set(k, v);
  const next = h.toString();
  if (next !== location.hash.replace(/^#/, "")) history.replaceState(null, "", next ? `#${next}` : location.pathname);
}

function currentHash() {
  const p = hashParams();
  return Object.fromEntries(p.entries());
}

function updateHash(changes) {
  setHash({ ...currentHash(), ...changes });
}

/** The `sub` claim of a JWT, for display only (the server verifies it). */
function tokenUser(token) {
  try {
    const payload = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    const json = decodeURIComponent(
      Array.from(atob(payload), (c) => "%" + c.charCodeAt(0).toString(16).padStart(2, "0")).join(""),
    );
    return JSON.parse(json).sub ?? "?";
  } catch {
    return null;
  }
}

/** `START-END` of a link, or nulls (the whole document, nothing marked). */
function parseSpan(span) {
  const m = /^(\d+)-(\d+)$/.exec(span ?? "");
  return m ? [Number(m[1]), Number(m[2])] : [null, null];
}

function docName(id) {
  const d = state.docs.get(id);
  return d ? d.filename || id : "a deleted document";
}

// ---------- sign in ----------

async function start() {
  const params = hashParams();
  // A link may carry a token (`scripts/demo` prints one): taken out of the
  // address bar at once, and kept for this tab only once the person agrees.
  // Without asking, anyone could send a link that signs the reader into
  // the sender's account, where what they then upload or ask is the
  // sender's to read.
  const linked = params.get("token");
  if (linked) {
    params.delete("token");
    history.replaceState(null, "", params.toString() ? `#${params}` : location.pathname);
    const current = sessionStorage.getItem(TOKEN_KEY);
    const who = tokenUser(linked) ?? "an unknown user";
    const now = current ? tokenUser(current) : null;
    if (now !== who) {
      const question = now
        ? `This link signs you in as "${who}" instead of "${now}". Continue?`
        : `This link signs you in as "${who}". Continue?`;
      if (window.confirm(question)) sessionStorage.setItem(TOKEN_KEY, linked);
    }
  }
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) return signedIn(token);
  showSignIn();
}

async function showSignIn(message = "") {
  $("app").hidden = true;
  $("workspace-bar").hidden = true;
  $("user-bar").hidden = true;
  $("sign-in").hidden = false;
  $("sign-in-error").textContent = message;
  const config = await pageConfig();
  $("dev-form").hidden = !config.dev_sign_in;
}

function signOut(message = "") {
  sessionStorage.removeItem(TOKEN_KEY);
  leaveWorkspace();
  state.api = null;
  state.workspaces = [];
  showSignIn(message);
}

async function signedIn(token) {
  const user = tokenUser(token);
  if (!user) return signOut("That is not a JWT (three base64url parts separated by dots).");
  state.api = new Api(token, () => signOut("The server refused the token (expired or not valid). Sign in again."));
  try {
    state.workspaces = await state.api.listWorkspaces();
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return; // signOut already ran
    return showSignIn(`Could not reach the server: ${describeError(err)}`);
  }
  sessionStorage.setItem(TOKEN_KEY, token);
  state.user = user;
  $("sign-in").hidden = true;
  $("app").hidden = false;
  $("workspace-bar").hidden = false;
  $("user-bar").hidden = false;
  $("user-name").textContent = user;
  renderWorkspaceSelect();
  route();
}

/** Shows what the address's fragment names (`#ws=..&c=..&doc=..&span=S-E`). */
function route() {
  const wanted = hashParams().get("ws");
  if (wanted && !state.workspaces.some((w) => w.id === wanted)) {
    // Someone else's workspace, or none at all: the same answer, and no
    // request is made with its id.
    leaveWorkspace();
    $("workspace-select").value = "";
    showWorkspaceError("Workspace not found: it does not exist or belongs to another user.");
    return;
  }
  const first = wanted || state.workspaces[0]?.id;
  if (first) selectWorkspace(first, { keepHash: true });
  else showWorkspaceError("You have no workspace yet: create one above.");
}

// A link opened in the same tab (a shared citation, say) changes only the
// fragment: follow it without a reload.
window.addEventListener("hashchange", () => {
  if (!state.api) return;
  const h = currentHash();
  if ((h.ws ?? null) !== (state.ws?.id ?? null)) return route();
  if (h.c && h.c !== state.conversationId) openConversation(h.c);
  if (h.doc) {
    const [s, e] = parseSpan(h.span);
    openViewer(h.doc, s, e);
  } else if (!$("viewer").hidden) {
    closeViewer(false);
  }
});

$("token-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const token = $("token-input").value.trim().replace(/^Bearer\s+/i, "");
  $("token-input").value = "";
  signedIn(token);
});

$("dev-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  try {
    const { token } = await devSignIn($("dev-user").value.trim());
    signedIn(token);
  } catch (err) {
    $("sign-in-error").textContent = describeError(err);
  }
});

$("sign-out").addEventListener("click", () => {
  setHash({});
  signOut();
});

// ---------- workspaces ----------

function renderWorkspaceSelect() {
  const select = $("workspace-select");
  select.replaceChildren(
    ...state.workspaces.map((w) => el("option", { value: w.id, text: w.name }, )),
  );
  select.disabled = state.workspaces.length === 0;
  if (state.ws) select.value = state.ws.id;
}

function showWorkspaceError(message) {
  const e = $("workspace-error");
  e.textContent = message;
  e.hidden = !message;
  $("ask-form").hidden = !!message;
  $("documents-panel").hidden = !!message;
  $("conversations-panel").hidden = !!message;
}

/** Forgets everything of the current workspace: timers, streams, caches, DOM. */
function leaveWorkspace() {
  state.gen += 1;
  state.stream?.abort();
  state.stream = null;
  state.docStream?.abort();
  state.docStream = null;
  clearTimeout(state.docTimer);
  state.ws = null;
  state.docs = new Map();
  state.rawCache = new Map();
  state.conversations = [];
  state.conversationId = null;
  state.messages = [];
  state.activeCite = null;
  $("documents").replaceChildren();
  $("uploads").replaceChildren();
  $("conversations").replaceChildren();
  renderMessages();
  closeViewer(false);
}

function selectWorkspace(id, { keepHash = false } = {}) {
  // Read before leaving: leaving the old workspace clears the viewer's part.
  const hash = keepHash ? currentHash() : {};
  leaveWorkspace();
  showWorkspaceError("");
  state.ws = state.api.workspace(id);
  $("workspace-select").value = id;
  setHash({ ws: id, c: hash.c, doc: hash.doc, span: hash.span });
  const gen = state.gen;
  let first = true;
  watchDocuments(gen, () =>
    pollDocuments(gen).then(() => {
      // A deep link to a cited span (`#ws=..&doc=..&span=START-END`), once.
      if (gen !== state.gen || !hash.doc || !first) return;
      first = false;
      const [s, e] = parseSpan(hash.span);
      openViewer(hash.doc, s, e);
    }),
  );
  loadConversations(gen, hash.c);
}

$("workspace-select").addEventListener("change", (e) => selectWorkspace(e.target.value));

$("new-workspace-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const name = $("new-workspace-name").value.trim();
  if (!name) return;
  try {
    const ws = await state.api.createWorkspace(name);
    state.workspaces.unshift(ws);
    $("new-workspace-name").value = "";
    renderWorkspaceSelect();
    selectWorkspace(ws.id);
  } catch (err) {
    toast(`Could not create the workspace: ${describeError(err)}`, true);
  }
});

// ---------- documents ----------

/**
 * The workspace's document status stream: each status change is pushed
 * (`document.status_updated`), so the list follows the pipeline without
 * polling. `onReady` runs when the stream starts (`ready`): the list read
 * after it misses nothing the stream will not bring. Reconnects resume
 * with Last-Event-ID (sse.js).
 */
function watchDocuments(gen, onReady) {
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

async function pollDocuments(gen) {
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
      showWorkspaceError("Workspace not found: it does not exist or belongs to another user.");
      return;
    }
    toast(`Could not list documents: ${describeError(err)}`, true);
  }
  // A second path beside the stream (a proxy may hold events back): a slow
  // poll, quicker while something is in flight.
  if (gen === state.gen) state.docTimer = setTimeout(() => pollDocuments(gen), busy ? 5000 : 30000);
}

function renderDocuments(before) {
  const list = $("documents");
  const items = [...state.docs.values()].map((d) => {
    const changed = before.has(d.id) && before.get(d.id).status !== d.status;
    const facts = [];
    if (d.page_count) facts.push(`${d.page_count} page${d.page_count === 1 ? "" : "s"}`);
    if (d.chunk_count) facts.push(`${d.chunk_count} chunk${d.chunk_count === 1 ? "" : "s"}`);
    return el(
      "li",
      { class: `document status-${d.status}${changed ? " changed" : ""}`, dataset: { id: d.id, status: d.status } },
      el(
        "button",
        { type: "button", class: "doc-open", title: "Open the raw text", onclick: () => openViewer(d.id, null, null) },
        d.filename || d.id,
      ),
      el("span", { class: `badge status-${d.status}`, text: STATUS_LABEL[d.status] ?? d.status }),
      facts.length ? el("small", { class: "muted", text: facts.join(" · ") }) : null,
      d.status === "failed"
        ? el("p", { class: "failure", text: `${d.failure_reason ?? "failed"}${d.failure_code ? ` (${d.failure_code})` : ""}` })
        : null,
    );
  });
  list.replaceChildren(...items);
  $("documents-empty").hidden = state.docs.size > 0 || $("uploads").children.length > 0;
}

function uploadFiles(files) {
  if (!state.ws) return toast("Pick or create a workspace first.", true);
  const ws = state.ws;
  const gen = state.gen;
  for (const file of files) {
    const bar = el("progress", { max: 1, value: 0 });
    const status = el("span", { class: "upload-status", text: "uploading…" });
    const row = el("li", { class: "upload", dataset: { name: file.name } }, el("span", { class: "upload-name", text: file.name }), bar, status);
    $("uploads").append(row);
    $("documents-empty").hidden = true;
    ws.upload(file, (f) => (bar.value = f))
      .then(() => {
        if (gen !== state.gen) return;
        bar.value = 1;
        row.classList.add("done");
        status.textContent = "uploaded";
        setTimeout(() => row.remove(), 1500);
        pollDocuments(gen);
      })
      .catch((err) => {
        if (gen !== state.gen) return;
        row.classList.add("error");
        row.dataset.code = err.code ?? "";
        bar.remove();
        status.textContent = `refused: ${describeError(err)}`;
        row.append(el("button", { type: "button", class: "small", text: "Dismiss", onclick: () => row.remove() }));
      });
  }
}

$("file-input").addEventListener("change", (e) => {
  uploadFiles([...e.target.files]);
  e.target.value = "";
});
const drop = $("drop-zone");
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

// ---------- conversations ----------

async function loadConversations(gen, open) {
  try {
    const list = await state.ws.conversations();
    if (gen !== state.gen) return;
    state.conversations = list;
    renderConversations();
    if (open && list.some((c) => c.id === open)) openConversation(open);
  } catch (err) {
    if (gen === state.gen && !(err instanceof ApiError && err.status === 404)) {
      toast(`Could not list conversations: ${describeError(err)}`, true);
    }
  }
}

function renderConversations() {
  $("conversations").replaceChildren(
    ...state.conversations.map((c) =>
      el(
        "li",
        { class: c.id === state.conversationId ? "active" : "" },
        el(
          "button",
          { type: "button", onclick: () => openConversation(c.id), "aria-current": c.id === state.conversationId ? "true" : null },
          c.title || "Untitled conversation",
          el("small", { class: "muted", text: new Date(c.created_at).toLocaleString() }),
        ),
      ),
    ),
  );
}

function newConversation() {
  state.stream?.abort();
  state.stream = null;
  state.conversationId = null;
  state.messages = [];
  updateHash({ c: null });
  renderConversations();
  renderMessages();
  $("question").focus();
}
$("new-conversation").addEventListener("click", newConversation);

async function openConversation(id) {
  const gen = state.gen;
  state.stream?.abort();
  state.conversationId = id;
  state.messages = [];
  updateHash({ c: id });
  renderConversations();
  renderMessages();
  try {
    const conv = await state.ws.conversation(id);
    if (gen !== state.gen || state.conversationId !== id) return;
    state.messages = conv.messages;
    renderMessages();
    listen(id, gen);
    for (const m of conv.messages) if (m.status === "pending") watchPending(id, m.id, gen);
  } catch (err) {
    if (gen === state.gen) toast(`Could not open the conversation: ${describeError(err)}`, true);
  }
}

/**
 * Applies a `message.delta`: the answer's text so far, from section `from`
 * on (each delta holds the whole text: replace, never append).
 */
function applyDelta(d) {
  const before = state.partials.get(d.message_id) ?? [];
  state.partials.set(d.message_id, [...before.slice(0, d.from), ...d.sections]);
  const shown = state.messages.find((m) => m.id === d.message_id);
  if (shown && shown.status === "pending") renderMessages();
}

/**
 * The conversation's event stream: answers arrive as `message.status_updated`,
 * their text as it is written as `message.delta`.
 */
function listen(conversationId, gen) {
  state.stream?.abort();
  const abort = new AbortController();
  state.stream = abort;
  streamEvents(
    state.ws.eventsUrl(conversationId),
    state.api.headers(),
    abort.signal,
    ({ event, data }) => {
      if (gen !== state.gen || state.conversationId !== conversationId) return;
      try {
        if (event === "message.status_updated") upsertMessage(JSON.parse(data));
        else if (event === "message.delta") applyDelta(JSON.parse(data));
      } catch {
        /* a malformed event: the pending poll still delivers the answer */
      }
    },
    () => {},
  );
}

/** Polls a pending answer too, in case the stream is down when it lands. */
async function watchPending(conversationId, messageId, gen) {
  for (let i = 0; i < 600; i++) {
    await new Promise((r) => setTimeout(r, i < 5 ? 1000 : 2000));
    if (gen !== state.gen || state.conversationId !== conversationId) return;
    const shown = state.messages.find((m) => m.id === messageId);
    if (shown && shown.status !== "pending") return;
    try {
      const m = await state.ws.message(conversationId, messageId);
      if (gen !== state.gen || state.conversationId !== conversationId) return;
      if (m.status !== "pending") return upsertMessage(m);
    } catch {
      /* keep waiting; the stream may still deliver it */
    }
  }
}

function upsertMessage(m) {
  if (m.status !== "pending") state.partials.delete(m.id);
  const i = state.messages.findIndex((x) => x.id === m.id);
  if (i >= 0) state.messages[i] = m;
  else state.messages.push(m);
  renderMessages();
}

async function ask(content) {
  const ws = state.ws;
  const gen = state.gen;
  if (!ws) return toast("Pick or create a workspace first.", true);
  // The question shows at once, the answer as pending, before any request.
  const local = { id: `local-${Date.now()}`, role: "user", content, status: "sending" };
  const pending = { id: `local-${Date.now()}-a`, role: "assistant", content: "", status: "pending" };
  state.messages.push(local, pending);
  renderMessages();
  try {
    let conversationId = state.conversationId;
    if (!conversationId) {
      const conv = await ws.createConversation(preview(content, 80));
      if (gen !== state.gen) return;
      conversationId = conv.id;
      state.conversationId = conv.id;
      state.conversations.unshift(conv);
      updateHash({ c: conv.id });
      renderConversations();
      listen(conv.id, gen);
    }
    const accepted = await ws.ask(conversationId, content);
    if (gen !== state.gen || state.conversationId !== conversationId) return;
    state.messages = state.messages.filter((m) => m !== local && m !== pending);
    for (const m of [accepted.user_message, accepted.assistant_message]) {
      if (!state.messages.some((x) => x.id === m.id)) state.messages.push(m);
    }
    renderMessages();
    watchPending(conversationId, accepted.assistant_message.id, gen);
  } catch (err) {
    if (gen !== state.gen) return;
    local.status = "failed";
    local.error = describeError(err);
    state.messages = state.messages.filter((m) => m !== pending);
    renderMessages();
  }
}

$("ask-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const q = $("question").value.trim();
  if (!q) return;
  $("question").value = "";
  ask(q);
});
$("question").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    $("ask-form").requestSubmit();
  }
});

// ---------- answers and citations ----------

function renderMessages() {
  const box = $("messages");
  const nodes = state.messages.map(renderMessage);
  if (!nodes.length) nodes.push(chatHint);
  box.replaceChildren(...nodes);
  box.scrollTop = box.scrollHeight;
}

function renderMessage(m) {
  if (m.role === "user") {
    return el(
      "article",
      { class: `message user status-${m.status}`, dataset: { id: m.id } },
      el("p", { text: m.content }),
      m.status === "failed" ? el("p", { class: "failure", text: `Not sent: ${m.error ?? "failed"}` }) : null,
    );
  }
  const partial = m.status === "pending" ? (state.partials.get(m.id) ?? []).filter((s) => s.text) : [];
  if (partial.length) {
    // The answer as the model writes it: a closed section's bubbles come
    // with it (numbered as the final answer numbers them).
    let n = 0;
    return el(
      "article",
      { class: "message assistant pending streaming", dataset: { id: m.id }, "aria-busy": "true" },
      ...partial.map((s, i) =>
        el(
          "p",
          { class: `section${s.closed ? "" : " open"}` },
          s.text,
          ...(s.closed ? (s.citations ?? []) : []).map((c) => citationBubble(++n, c)),
          i === partial.length - 1 && !s.closed ? el("span", { class: "caret", "aria-hidden": "true" }) : null,
        ),
      ),
      el("small", { class: "muted", text: "Writing the answer…" }),
    );
  }
  if (m.status === "pending") {
    return el(
      "article",
      { class: "message assistant pending", dataset: { id: m.id }, "aria-busy": "true" },
      el("p", { class: "muted" }, el("span", { class: "spinner", "aria-hidden": "true" }), "Answering: retrieving passages and citing them…"),
    );
  }
  if (m.status === "failed") {
    const f = m.metadata?.failure ?? {};
    return el(
      "article",
      { class: "message assistant failed", dataset: { id: m.id } },
      el("p", { class: "failure", text: `No answer: ${f.message ?? "the question could not be answered"}${f.code ? ` (${f.code})` : ""}` }),
    );
  }
  if (m.abstained ?? m.metadata?.abstained) {
    return el(
      "article",
      { class: "message assistant done abstained", dataset: { id: m.id } },
      el("p", { class: "abstention", text: m.content }),
      el("small", { class: "muted", text: "No passage of your documents answers this question." }),
    );
  }
  const sections = m.metadata?.sections ?? [];
  let n = 0;
  const sources = [];
  const body = sections.map((s) =>
    el(
      "p",
      { class: "section" },
      s.text,
      ...(s.citations ?? []).map((c) => {
        n += 1;
        sources.push([n, c]);
        return citationBubble(n, c);
      }),
    ),
  );
  if (!sections.length && m.content) body.push(el("p", { text: m.content }));
  return el(
    "article",
    { class: "message assistant done", dataset: { id: m.id } },
    ...body,
    sources.length
      ? el(
          "ol",
          { class: "sources" },
          ...sources.map(([i, c]) =>
            el("li", { value: i }, `${docName(c.document_id)}, page ${Number(c.page_idx) + 1}: `, el("q", { text: preview(c.text ?? c.snippet_preview, 120) })),
          ),
        )
      : null,
    m.metadata?.mode ? el("small", { class: "muted", text: m.metadata.mode === "llm" ? "answered by the LLM" : "extractive answer" }) : null,
  );
}

function citationBubble(n, c) {
  return el(
    "button",
    {
      type: "button",
      class: "cite",
      "aria-label": `Citation ${n}: ${docName(c.document_id)}, page ${Number(c.page_idx) + 1}`,
      dataset: { n, doc: c.document_id, start: c.char_start, end: c.char_end, snippet: `“${preview(c.text ?? c.snippet_preview, 280)}”` },
      onclick: (e) => openViewer(c.document_id, Number(c.char_start), Number(c.char_end), e.currentTarget),
    },
    String(n),
  );
}

// One floating tooltip with the cited text, placed by the bubble under the
// pointer or the focus and kept inside the window (a tooltip inside the
// scrolling chat would be cut at its edges).
const tip = el("div", { id: "cite-tip", class: "cite-tip", role: "tooltip", hidden: true });
document.body.append(tip);
function showTip(bubble) {
  tip.textContent = bubble.dataset.snippet;
  tip.hidden = false;
  bubble.setAttribute("aria-describedby", "cite-tip");
  const r = bubble.getBoundingClientRect();
  const left = Math.max(8, Math.min(r.left + r.width / 2 - tip.offsetWidth / 2, innerWidth - tip.offsetWidth - 8));
  const above = r.top - tip.offsetHeight - 8;
  tip.style.left = `${left}px`;
  tip.style.top = `${above >= 8 ? above : r.bottom + 8}px`;
}
function hideTip() {
  tip.hidden = true;
}
$("messages").addEventListener("mouseover", (e) => e.target.closest?.(".cite") && showTip(e.target.closest(".cite")));
$("messages").addEventListener("mouseout", (e) => e.target.closest?.(".cite") && hideTip());
$("messages").addEventListener("focusin", (e) => e.target.classList?.contains("cite") && showTip(e.target));
$("messages").addEventListener("focusout", hideTip);
$("messages").addEventListener("scroll", hideTip);

// Arrow keys move between citation bubbles; Enter or Space opens one.
$("messages").addEventListener("keydown", (e) => {
  if (!e.target.classList?.contains("cite")) return;
  const step = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 }[e.key];
  if (!step) return;
  const all = [...document.querySelectorAll("#messages .cite")];
  const next = all[all.indexOf(e.target) + step];
  if (next) {
    e.preventDefault();
    next.focus();
  }
});

// ---------- the raw-text viewer ----------

async function openViewer(documentId, start, end, bubble = null) {
  const gen = state.gen;
  const viewer = $("viewer");
  viewer.hidden = false;
  document.body.classList.add("viewing");
  state.activeCite?.classList.remove("active");
  state.activeCite = bubble;
  bubble?.classList.add("active");
  $("viewer-title").textContent = docName(documentId);
  $("viewer-status").textContent = "Loading the raw text…";
  const text = $("viewer-text");
  text.replaceChildren();
  updateHash({ doc: documentId, span: start !== null && end !== null ? `${start}-${end}` : null });
  let raw = state.rawCache.get(documentId);
  try {
    if (!raw) {
      raw = await state.ws.rawText(documentId);
      if (gen !== state.gen) return;
      state.rawCache.set(documentId, raw);
    }
  } catch (err) {
    if (gen !== state.gen) return;
    const why = {
      not_parsed: "This document is not parsed yet; its text appears once it is.",
      document_failed: "This document could not be parsed.",
      not_found: "This document is not in this workspace (or was deleted).",
    }[err.code];
    $("viewer-status").textContent = why ?? `Could not load the text: ${describeError(err)}`;
    return;
  }
  const segments = raw.segments;
  const pieces = start !== null && end !== null ? spanPieces(segments, start, end) : [];
  const bySegment = new Map();
  for (const p of pieces) bySegment.set(p.segment, [...(bySegment.get(p.segment) ?? []), p]);
  const doc = state.docs.get(documentId);
  const paged = (doc?.page_count ?? 0) > 0;
  const nodes = [];
  let page = null;
  segments.forEach((seg, i) => {
    if (paged && seg.page_idx !== page) {
      page = seg.page_idx;
      nodes.push(el("div", { class: "page-break", dataset: { page: page + 1 }, text: `Page ${page + 1}` }));
    }
    const parts = splitSegment(seg.text, bySegment.get(i) ?? []);
    nodes.push(
      el(
        "span",
        { class: "segment", dataset: { segment: seg.segment_index, page: seg.page_idx + 1 } },
        ...parts.map((p) => (p.marked ? el("mark", { class: "cited", text: p.text }) : p.text)),
      ),
    );
  });
  text.replaceChildren(...nodes);
  showPageImage(raw, documentId, pieces, segments, start, end, gen);
  const pages = new Set(pieces.map((p) => segments[p.segment].page_idx + 1));
  $("viewer-status").textContent = pieces.length
    ? `Cited characters ${start}–${end}${paged ? `, page ${[...pages].join("–")}` : ""}. Esc closes.`
    : `${segments.length} segments${paged ? `, ${doc.page_count} pages` : ""}.`;
  const first = text.querySelector("mark.cited");
  first?.scrollIntoView({ block: "center" });
}

// A cited span of a PDF is also shown where it is on the page: the server
// renders the page with the span's boxes drawn (GET .../pages/N/image).
async function showPageImage(raw, documentId, pieces, segments, start, end, gen) {
  dropPageImage();
  if (!pieces.length) return;
  const pageIdx = segments[pieces[0].segment].page_idx;
  const page = (raw.pages ?? []).find((p) => p.page_idx === pageIdx);
  if (!page || page.unit !== "pt") return;
  const figure = el("figure", { class: "page-image" }, el("figcaption", { class: "muted", text: `Page ${pageIdx + 1}, loading…` }));
  $("viewer-text").before(figure);
  try {
    const blob = await state.ws.pageImage(documentId, pageIdx + 1, start, end);
    if (gen !== state.gen || !figure.isConnected) return;
    state.pageImageUrl = URL.createObjectURL(blob);
    const img = el("img", { alt: `Page ${pageIdx + 1} of ${docName(documentId)}, the cited text highlighted` });
    // Scroll the page to the first cited line.
    const line = segments[pieces[0].segment].boxes?.find((b) => b.char_end > start);
    img.addEventListener("load", () => {
      if (line) figure.scrollTop = Math.max(0, (line.y0 / page.height) * img.clientHeight - 40);
    });
    img.src = state.pageImageUrl;
    figure.replaceChildren(img, el("figcaption", { class: "muted", text: `Page ${pageIdx + 1}: the cited text is highlighted.` }));
  } catch (err) {
    if (figure.isConnected) figure.replaceChildren(el("figcaption", { class: "muted", text: `No page image: ${describeError(err)}` }));
  }
}

function dropPageImage() {
  document.querySelectorAll("#viewer .page-image").forEach((f) => f.remove());
  if (state.pageImageUrl) URL.revokeObjectURL(state.pageImageUrl);
  state.pageImageUrl = null;
}

function closeViewer(restoreFocus = true) {
  dropPageImage();
  $("viewer").hidden = true;
  document.body.classList.remove("viewing");
  $("viewer-text").replaceChildren();
  if (state.api) updateHash({ doc: null, span: null });
  if (restoreFocus) state.activeCite?.focus();
  state.activeCite?.classList.remove("active");
}

$("viewer-close").addEventListener("click", () => closeViewer());
document.addEventListener("keydown", (e) => {
  if (e.key === "Escape" && !$("viewer").hidden) closeViewer();
});

start();
