// Conversations and answers: the question shows at once and the answer
// as pending, its text streams in as the model writes it, and each
// section ends with citation bubbles that open the cited span.

import { ApiError } from "./api.js";
import { streamEvents } from "./sse.js";
import { preview } from "./spans.js";
import { $, el, toast } from "./dom.js";
import { t, tr, num, date, errorArg, errorDetail, onLanguageChange, translateTree } from "./i18n.js";
import { state, updateHash, docName, isSlides, hasPages, hasReadingView } from "./state.js";
import { asRead } from "./reading.js";
import { openViewer } from "./viewer.js";

/**
 * The title of a conversation a question opens, by the server's one rule
 * (`rag_store::messages::title_from_question`): the question trimmed, its
 * first 200 characters (code points), trimmed again.
 */
export function titleOf(question) {
  return Array.from(String(question).trim()).slice(0, 200).join("").trimEnd();
}

const chatHint = $("chat-hint");
// Beside the hint while the workspace has no document (documents.js).
const hintUpload = $("hint-upload");
// Out of the page while messages are shown, so translated here on a switch.
onLanguageChange(() => {
  translateTree(chatHint);
  translateTree(hintUpload);
});
// Arrow keys and Shift+Enter mean nothing without a keyboard: a phone's
// hint and question box say less.
if (!(window.matchMedia?.("(pointer: fine)").matches ?? true)) {
  tr(chatHint.querySelector("[data-i18n=\"chat.hintAfter\"]"), "chat.hintAfterTouch");
  $("question").setAttribute("data-i18n-placeholder", "ask.placeholderTouch");
}

// ---------- conversations ----------

// The conversation last chosen in each workspace, in this browser: a
// later visit goes back to it; a first visit (nothing chosen yet) starts
// a new conversation, where the short "how to" hint is shown, rather than
// dropping the visitor into the last conversation.
const chosenKey = () => `rag-engine.conversation.${state.user ?? ""}.${state.ws?.id ?? ""}`;
function chosen() {
  try {
    return localStorage.getItem(chosenKey());
  } catch {
    return null; // storage disabled: every visit is a first one
  }
}
function choose(id) {
  try {
    if (state.ws) localStorage.setItem(chosenKey(), id ?? "");
  } catch {
    /* storage disabled */
  }
}

/** Lists the workspace's conversations; opens `open` (a link's) or the one chosen before, if any. */
export async function loadConversations(gen, open) {
  try {
    const list = await state.ws.conversations();
    if (gen !== state.gen) return;
    state.conversations = list;
    renderConversations();
    const wanted = open || chosen();
    if (wanted && list.some((c) => c.id === wanted)) openConversation(wanted);
  } catch (err) {
    if (gen === state.gen && !(err instanceof ApiError && err.status === 404)) {
      toast("conv.listFailed", { err: errorArg(err) }, true);
    }
  }
}

export function renderConversations() {
  $("conversations").replaceChildren(
    ...state.conversations.map((c) =>
      el(
        "li",
        { class: c.id === state.conversationId ? "active" : "" },
        el(
          "button",
          { type: "button", onclick: () => openConversation(c.id), "aria-current": c.id === state.conversationId ? "true" : null },
          c.title || t("conv.untitled"),
          el("small", { class: "muted", text: date(c.created_at) }),
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
  choose(null);
  updateHash({ c: null });
  renderConversations();
  renderMessages();
  $("question").focus();
}
$("new-conversation").addEventListener("click", newConversation);

export async function openConversation(id) {
  const gen = state.gen;
  state.stream?.abort();
  state.conversationId = id;
  state.messages = [];
  choose(id);
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
    if (gen === state.gen) toast("conv.openFailed", { err: errorArg(err) }, true);
  }
}

/**
 * Applies a `message.delta`: the answer's text so far, from section `from`
 * on (each delta holds the whole text: replace, never append).
 */
function applyDelta(d) {
  // Sources before words: which documents the model is reading. A delta
  // that carries only them leaves the text so far as it is.
  if (d.sources?.length) state.reading.set(d.message_id, d.sources);
  const before = state.partials.get(d.message_id) ?? [];
  if (d.sections.length || !d.sources?.length) {
    const next = [...before.slice(0, d.from), ...d.sections];
    // The words shown were taken back (the check held the answer back and
    // it is written again, or a restarted answerer begins anew): said so,
    // rather than the answer falling back to an empty spinner.
    if (restarted(before, d)) state.restarted.add(d.message_id);
    state.partials.set(d.message_id, next);
  }
  if (Number.isFinite(d.seq)) state.seqs.set(d.message_id, d.seq);
  const shown = state.messages.find((m) => m.id === d.message_id);
  if (shown && shown.status === "pending") renderMessages();
}

/**
 * Whether this delta starts the answer's text again: the answerer says so
 * (`restart`: the check held the part being written back, or the model was
 * asked again), or `seq` went back (a restarted answerer begins anew). A
 * later part of a question that asks several things begins after the
 * earlier parts' final text, which may differ from the words streamed:
 * that is no restart, and only the answerer can tell the two apart.
 */
function restarted(before, d) {
  if (!before.some((s) => s?.text)) return false;
  if (d.restart) return true;
  return Number.isFinite(d.seq) && d.seq < (state.seqs.get(d.message_id) ?? -1);
}

/**
 * The conversation's event stream: answers arrive as `message.status_updated`,
 * their text as it is written as `message.delta`. Resolves once the server
 * has accepted the stream, or has refused it for good.
 */
function listen(conversationId, gen) {
  state.stream?.abort();
  const abort = new AbortController();
  state.stream = abort;
  let opened;
  const open = new Promise((r) => (opened = r));
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
    (err) => {
      if (err?.fatal) opened();
    },
    () => opened(),
  ).finally(() => opened());
  return open;
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
  // The stream opens by replaying every answer so far: one already shown
  // as it is is not drawn again, so nothing scrolls or is replaced under a
  // finger about to tap a citation.
  const shown = state.messages.find((x) => x.id === m.id);
  if (shown && JSON.stringify(shown) === JSON.stringify(m)) return;
  if (m.status !== "pending") {
    state.partials.delete(m.id);
    state.reading.delete(m.id);
    state.restarted.delete(m.id);
    state.seqs.delete(m.id);
  }
  const i = state.messages.findIndex((x) => x.id === m.id);
  if (i >= 0) state.messages[i] = m;
  else state.messages.push(m);
  renderMessages();
}

async function ask(content) {
  const ws = state.ws;
  const gen = state.gen;
  if (!ws) return toast("ws.pickFirst", {}, true);
  // The question shows at once, the answer as pending, before any request.
  const local = { id: `local-${Date.now()}`, role: "user", content, status: "sending" };
  const pending = { id: `local-${Date.now()}-a`, role: "assistant", content: "", status: "pending" };
  state.messages.push(local, pending);
  renderMessages();
  try {
    let conversationId = state.conversationId;
    if (!conversationId) {
      const conv = await ws.createConversation(titleOf(content));
      if (gen !== state.gen) return;
      conversationId = conv.id;
      state.conversationId = conv.id;
      choose(conv.id);
      state.conversations.unshift(conv);
      updateHash({ c: conv.id });
      renderConversations();
      // Deltas are not replayed to a stream that opens late: the question
      // goes once the stream is open, so the documents being read (sent
      // before the first words) reach the page. A stream slow to open
      // delays the question by at most a few seconds; the answer itself
      // comes from the replayed updates or the poll anyway.
      await Promise.race([listen(conv.id, gen), new Promise((r) => setTimeout(r, 5000))]);
      if (gen !== state.gen) return;
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
    local.error = errorArg(err);
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

export function renderMessages() {
  const box = $("messages");
  const nodes = state.messages.map(renderMessage);
  if (!nodes.length) nodes.push(chatHint, hintUpload);
  box.replaceChildren(...nodes);
  box.scrollTop = box.scrollHeight;
  // The open citation's bubble, drawn again (a switch of language): the
  // new one is the active one, and the one Escape returns to.
  const active = state.activeCite;
  if (active && !active.isConnected) {
    const { n, doc, start, end } = active.dataset;
    const again = [...box.querySelectorAll(".cite")].find(
      (b) => b.dataset.n === n && b.dataset.doc === doc && b.dataset.start === start && b.dataset.end === end,
    );
    if (again) {
      again.classList.add("active");
      state.activeCite = again;
    }
  }
}

function renderMessage(m) {
  if (m.role === "user") {
    return el(
      "article",
      { class: `message user status-${m.status}`, dataset: { id: m.id } },
      el("p", { text: m.content }),
      m.status === "failed" ? el("p", { class: "failure", text: t("chat.notSent", { err: m.error }) }) : null,
    );
  }
  const partial = m.status === "pending" ? (state.partials.get(m.id) ?? []).filter((s) => s.text) : [];
  const again = m.status === "pending" && state.restarted.has(m.id);
  if (partial.length) {
    // The answer as the model writes it: a closed section's bubbles come
    // with it (numbered as the final answer numbers them).
    let n = 0;
    return el(
      "article",
      { class: `message assistant pending streaming${again ? " restarted" : ""}`, dataset: { id: m.id }, "aria-busy": "true" },
      ...partial.map((s, i) =>
        el(
          "p",
          { class: `section${s.closed ? "" : " open"}` },
          ...withBubbles(s.text, (s.closed ? (s.citations ?? []) : []).map((c) => citationBubble(++n, c))),
          i === partial.length - 1 && !s.closed ? el("span", { class: "caret", "aria-hidden": "true" }) : null,
        ),
      ),
      again
        ? el("p", { class: "muted again" }, el("span", { class: "spinner", "aria-hidden": "true" }), t("chat.checkingAgain"))
        : el("small", { class: "muted", text: t("chat.writing") }),
    );
  }
  if (m.status === "pending") {
    const reading = state.reading.get(m.id) ?? [];
    const waiting = again ? "chat.checkingAgain" : reading.length ? "chat.readingNow" : "chat.pending";
    return el(
      "article",
      { class: `message assistant pending${again ? " restarted" : ""}`, dataset: { id: m.id }, "aria-busy": "true" },
      el("p", { class: `muted${again ? " again" : ""}` }, el("span", { class: "spinner", "aria-hidden": "true" }), t(waiting)),
      reading.length
        ? el(
            "ul",
            { class: "reading" },
            ...reading.map((r) =>
              el("li", { text: t("chat.readingSource", { doc: r.filename || docName(r.document_id), pages: hasPages(r.document_id) ? r.pages ?? [] : [], slide: isSlides(r.document_id) }) }),
            ),
          )
        : null,
    );
  }
  if (m.status === "failed") {
    const f = m.metadata?.failure ?? {};
    return el(
      "article",
      { class: "message assistant failed", dataset: { id: m.id, code: f.code ?? "" } },
      el("p", { class: "failure", title: errorDetail(f), text: t("chat.noAnswer", { err: f.code || f.message ? f : null }) }),
    );
  }
  if (m.abstained ?? m.metadata?.abstained) {
    return el(
      "article",
      { class: "message assistant done abstained", dataset: { id: m.id } },
      el("p", { class: "abstention", text: m.content }),
      el("small", { class: "muted", text: t("chat.abstained") }),
      withdrawnNote(m),
    );
  }
  const sections = m.metadata?.sections ?? [];
  let n = 0;
  const sources = [];
  const body = sections.map((s) =>
    el(
      "p",
      { class: "section" },
      ...withBubbles(
        s.text,
        (s.citations ?? []).map((c) => {
          n += 1;
          sources.push([n, c]);
          return citationBubble(n, c);
        }),
      ),
    ),
  );
  if (!sections.length && m.content) body.push(el("p", { text: m.content }));
  // Parts of the question the documents do not answer: said after the
  // answered ones, never a section (a section always cites).
  const unanswered = m.metadata?.retrieval?.unanswered_parts ?? [];
  if (unanswered.length) body.push(el("p", { class: "unanswered muted", text: t("chat.unanswered", { parts: unanswered.join(" ") }) }));
  return el(
    "article",
    { class: "message assistant done", dataset: { id: m.id } },
    ...body,
    sources.length
      ? el(
          "ol",
          { class: "sources" },
          ...sources.map(([i, c]) =>
            el(
              "li",
              { value: i },
              t("chat.source", { doc: docName(c.document_id), page: hasPages(c.document_id) ? Number(c.page_idx) + 1 : null, slide: isSlides(c.document_id), range: c.cell_range ?? null }),
              el("q", { text: preview(quoted(c), 120) }),
            ),
          ),
        )
      : null,
    withdrawnNote(m),
    m.metadata?.mode ? el("small", { class: "muted", text: t(m.metadata.mode === "llm" ? "chat.modeLlm" : "chat.modeExtractive") }) : null,
  );
}

/**
 * What the checks took back of the text streamed while answering (a
 * section that said what its citations do not, an answer they do not
 * support), struck through under the answer: the words a reader saw stream
 * are never left to be read as the answer. Null when nothing was.
 */
function withdrawnNote(m) {
  const report = m.metadata?.retrieval?.citation_report ?? {};
  const taken = [...(report.unfaithful_sections ?? []), ...(report.rejected_sections ?? [])].map((s) =>
    String(s).replace(/ \(not in its citations: [^)]*\)$/, ""),
  );
  if (!taken.length) return null;
  return el(
    "div",
    { class: "withdrawn muted" },
    el("small", { text: t("chat.withdrawn") }),
    ...taken.map((s) => el("p", {}, el("del", { text: s }))),
  );
}

/**
 * A section's text and its bubbles, its last word kept on the bubbles'
 * line: a bubble never wraps onto a line of its own. (Not a long last
 * word, a link say: unbreakable, it would run past a phone's edge.)
 */
function withBubbles(text, bubbles) {
  if (!bubbles.length) return [text];
  const source = text ?? "";
  const last = /(^|\s)(\S{1,30}\s*)$/.exec(source);
  if (!last) return [source, el("span", { class: "cite-tail" }, ...bubbles)];
  const at = last.index + last[1].length;
  return [source.slice(0, at), el("span", { class: "cite-tail" }, source.slice(at), ...bubbles)];
}

/** A citation's text as its document reads (a Markdown table's row as its cells). */
function quoted(c) {
  const text = c.text ?? c.snippet_preview;
  return hasReadingView(c.document_id) ? asRead(text) : text;
}

function citationBubble(n, c) {
  return el(
    "button",
    {
      type: "button",
      class: "cite",
      "aria-label": t("cite.label", { n, doc: docName(c.document_id), page: hasPages(c.document_id) ? Number(c.page_idx) + 1 : null, slide: isSlides(c.document_id), range: c.cell_range ?? null }),
      dataset: { n, doc: c.document_id, start: c.char_start, end: c.char_end, snippet: `“${preview(quoted(c), 280)}”` },
      onclick: (e) => openViewer(c.document_id, Number(c.char_start), Number(c.char_end), e.currentTarget, c.revision ?? null),
    },
    num(n),
  );
}

// One floating tooltip with the cited text, placed by the bubble under the
// pointer or the focus and kept inside the window (a tooltip inside the
// scrolling chat would be cut at its edges).
const tip = el("div", { id: "cite-tip", class: "cite-tip", role: "tooltip", hidden: true });
document.body.append(tip);
function showTip(bubble) {
  // Not over an open document (a phone's sheet covers the answer).
  if (document.body.classList.contains("viewing") && !$("viewer").contains(bubble) && phoneSheet.matches) return;
  tip.textContent = bubble.dataset.snippet;
  tip.hidden = false;
  bubble.setAttribute("aria-describedby", "cite-tip");
  const r = bubble.getBoundingClientRect();
  const left = Math.max(8, Math.min(r.left + r.width / 2 - tip.offsetWidth / 2, innerWidth - tip.offsetWidth - 8));
  // Under the bubble, over the rest of the answer (above it, the tip hid
  // the question just asked); above only where there is no room under.
  const below = r.bottom + 8;
  const above = r.top - tip.offsetHeight - 8;
  tip.style.left = `${left}px`;
  tip.style.top = `${below + tip.offsetHeight <= innerHeight - 8 || above < 8 ? below : above}px`;
}
function hideTip() {
  tip.hidden = true;
}
// A phone shows a document as a sheet over the whole answer.
const phoneSheet = window.matchMedia("(max-width: 480px)");
$("messages").addEventListener("mouseover", (e) => e.target.closest?.(".cite") && showTip(e.target.closest(".cite")));
$("messages").addEventListener("mouseout", (e) => e.target.closest?.(".cite") && hideTip());
// The keyboard's focus shows the cited text; a tap's does not (the tap
// opens the document, and the tip would stay over it, then over the
// answer when the focus comes back to the bubble).
$("messages").addEventListener("focusin", (e) => e.target.classList?.contains("cite") && e.target.matches(":focus-visible") && showTip(e.target));
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
