// The rag-engine page: sign in, pick a workspace, upload documents and
// watch them through the pipeline (documents.js), ask questions (chat.js),
// and open each citation on the document's raw text with exactly the
// cited span highlighted (viewer.js). In Vietnamese or English (i18n.js).
//
// State belongs to one workspace at a time (state.js): switching
// workspace bumps `state.gen`, and every asynchronous result started
// before is dropped.

import { Api, ApiError, pageConfig, devSignIn } from "./api.js";
import { $, el, toast, showWorkspaceError } from "./dom.js";
import { t, tr, errorArg, initLanguage, setLanguage, language, onLanguageChange } from "./i18n.js";
import { state, hashParams, setHash, currentHash, parseSpan } from "./state.js";
import { watchDocuments, pollDocuments, renderDocuments, showEmpty } from "./documents.js";
import { loadConversations, renderConversations, renderMessages, openConversation } from "./chat.js";
import { openViewer, closeViewer } from "./viewer.js";
import { setupKeys } from "./keys.js";
import { setupSources } from "./sources.js";
import { close as closeDrawer } from "./drawer.js";

const TOKEN_KEY = "rag-engine.token";

// ---------- language ----------

function showLanguage(lang) {
  for (const b of document.querySelectorAll("#lang-switch [data-lang]")) {
    b.setAttribute("aria-pressed", String(b.dataset.lang === lang));
  }
}
onLanguageChange((lang) => {
  showLanguage(lang);
  // What is drawn from state is drawn again in the new language (the
  // rest carries its key: i18n.js `tr`).
  if (state.ws) {
    renderDocuments();
    renderConversations();
    renderMessages();
  }
});
for (const b of document.querySelectorAll("#lang-switch [data-lang]")) {
  b.addEventListener("click", () => setLanguage(b.dataset.lang));
}
initLanguage();
showLanguage(language());

// ---------- sign in ----------

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
    const who = tokenUser(linked) ?? t("signIn.unknownUser");
    const now = current ? tokenUser(current) : null;
    if (now !== who) {
      const question = now ? t("signIn.linkInstead", { who, now }) : t("signIn.linkAs", { who });
      if (window.confirm(question)) sessionStorage.setItem(TOKEN_KEY, linked);
    }
  }
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) return signedIn(token);
  showSignIn();
}

/** The sign-in form; `key` and `args` of the catalogues say why, if anything. */
async function showSignIn(key = "", args = {}) {
  closeDrawer(false); // a phone's menu, had it been open when the token was refused
  $("app").hidden = true;
  $("workspace-bar").hidden = true;
  $("user-bar").hidden = true;
  $("sign-in").hidden = false;
  const error = $("sign-in-error");
  if (key) tr(error, key, args);
  else {
    error.textContent = "";
    delete error.dataset.i18n;
  }
  const config = await pageConfig();
  $("dev-form").hidden = !config.dev_sign_in;
}

function signOut(key = "") {
  sessionStorage.removeItem(TOKEN_KEY);
  leaveWorkspace();
  state.api = null;
  state.workspaces = [];
  showSignIn(key);
}

async function signedIn(token) {
  const user = tokenUser(token);
  if (!user) return signOut("signIn.notJwt");
  state.api = new Api(token, () => signOut("signIn.refused"));
  try {
    state.workspaces = await state.api.listWorkspaces();
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return; // signOut already ran
    return showSignIn("signIn.unreachable", { err: errorArg(err) });
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
    showWorkspaceError("ws.notFound");
    return;
  }
  const first = wanted || state.workspaces[0]?.id;
  if (first) selectWorkspace(first, { keepHash: true });
  else showWorkspaceError("ws.none", true);
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
    openViewer(h.doc, s, e, null, h.rev ?? null);
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
    tr($("sign-in-error"), "signIn.failed", { err: errorArg(err) });
  }
});

$("sign-out").addEventListener("click", () => {
  setHash({});
  signOut();
});
setupKeys();
setupSources();

// ---------- workspaces ----------

function renderWorkspaceSelect() {
  const select = $("workspace-select");
  select.replaceChildren(...state.workspaces.map((w) => el("option", { value: w.id, text: w.name })));
  select.disabled = state.workspaces.length === 0;
  if (state.ws) select.value = state.ws.id;
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
  state.readingCache = new Map();
  state.conversations = [];
  state.conversationId = null;
  state.messages = [];
  state.activeCite = null;
  $("documents").replaceChildren();
  $("uploads").replaceChildren();
  $("conversations").replaceChildren();
  // Not offered until the next workspace's list says it is empty.
  showEmpty(false);
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
  setHash({ ws: id, c: hash.c, doc: hash.doc, span: hash.span, rev: hash.rev });
  const gen = state.gen;
  let first = true;
  watchDocuments(gen, () =>
    pollDocuments(gen).then(() => {
      if (gen !== state.gen || !first) return;
      first = false;
      // A conversation drawn before the documents' names were known names
      // its sources now (not "a deleted document").
      if (state.messages.length && !state.messages.some((m) => m.status === "pending")) renderMessages();
      // A deep link to a cited span (`#ws=..&doc=..&span=START-END&rev=N`), once.
      if (!hash.doc) return;
      const [s, e] = parseSpan(hash.span);
      openViewer(hash.doc, s, e, null, hash.rev ?? null);
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
    toast("ws.createFailed", { err: errorArg(err) }, true);
  }
});

start();
