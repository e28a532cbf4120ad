// A phone (480 px wide or less): the top bar keeps the workspace picker,
// the language switch and a menu button; the documents, the conversations
// and the account (new workspace, API keys, sign out) are in a drawer the
// menu opens. A tap outside it, its close button or Esc closes it, and so
// does choosing a document or a conversation (what was chosen is then in
// view). The chat fills the rest, its question box at the bottom.
//
// Wider windows keep the desktop layout: the account's controls go back
// to the top bar when the window grows (one set of elements, moved, so
// every id stays unique and every handler stays attached).

import { $ } from "./dom.js";

const phone = window.matchMedia("(max-width: 480px)");
const menu = $("menu-open");
const sidebar = $("sidebar");
const backdrop = $("drawer-backdrop");

/** The account's controls: in the drawer on a phone, in the top bar otherwise. */
function place() {
  const form = $("new-workspace-form");
  const user = $("user-bar");
  if (phone.matches) {
    $("drawer-account").append(form, user);
  } else {
    $("workspace-bar").append(form);
    $("lang-switch").before(user);
    close(false);
  }
}

export function isOpen() {
  return document.body.classList.contains("drawer-open");
}

function open() {
  if (!phone.matches) return;
  document.body.classList.add("drawer-open");
  backdrop.hidden = false;
  menu.setAttribute("aria-expanded", "true");
  sidebar.setAttribute("role", "dialog");
  sidebar.setAttribute("aria-modal", "true");
  // What is under the drawer is out of reach until it closes.
  for (const id of ["chat", "viewer"]) $(id).inert = true;
  document.querySelector(".topbar").inert = true;
  $("menu-close").focus();
}

/** Closes the drawer; `refocus`: the focus goes back to the menu button. */
export function close(refocus = true) {
  if (!isOpen()) return;
  document.body.classList.remove("drawer-open");
  backdrop.hidden = true;
  menu.setAttribute("aria-expanded", "false");
  sidebar.removeAttribute("role");
  sidebar.removeAttribute("aria-modal");
  for (const id of ["chat", "viewer"]) $(id).inert = false;
  document.querySelector(".topbar").inert = false;
  if (refocus) menu.focus();
}

menu.addEventListener("click", () => (isOpen() ? close() : open()));
$("menu-close").addEventListener("click", () => close());
backdrop.addEventListener("click", () => close());
document.addEventListener("keydown", (e) => {
  // Esc in a dialog opened from the drawer (the API keys) closes that
  // dialog only: the drawer stays open under it.
  if (e.key === "Escape" && isOpen() && !document.querySelector("dialog[open]")) {
    e.stopImmediatePropagation();
    close();
  }
});
// Choosing something in the drawer shows it: the drawer steps aside.
// (In the capture phase: the drawer is gone before what was chosen takes
// the focus, which the page under an open drawer cannot.) The focus then
// goes to what was chosen, not left on a button the drawer took away: the
// document opened, the conversation chosen (its answers, to be read: the
// question box would bring a phone's keyboard up over them), the question
// box of a new conversation.
let focusAfter = null;
sidebar.addEventListener(
  "click",
  (e) => {
    const chosen = e.target.closest?.(".doc-open, .conversations button, #new-conversation, #sign-out");
    if (!isOpen() || !chosen) return;
    close(false);
    focusAfter = chosen.matches(".doc-open") ? "viewer" : chosen.matches(".conversations button") ? "messages" : null;
  },
  true,
);
// After what was chosen has been shown (the click's own handlers ran).
sidebar.addEventListener("click", () => {
  const id = focusAfter;
  focusAfter = null;
  if (id && !$(id).hidden) $(id).focus({ preventScroll: true });
});
// A new workspace made in the drawer is shown at once.
$("new-workspace-form").addEventListener("submit", () => close(false));

phone.addEventListener("change", place);
place();
