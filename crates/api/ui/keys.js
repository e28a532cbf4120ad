// API keys: the small settings panel behind "API keys" in the top bar.
// A key lets a tool the user already works in (an OpenAI-compatible chat
// client, an MCP agent) ask their workspaces (docs/integrations.md). The
// secret is shown once, right after it is made; the list shows each key's
// prefix, reach, expiry and last use, and revokes.

import { $, el, toast } from "./dom.js";
import { t, date, errorArg } from "./i18n.js";
import { state } from "./state.js";

/** The settings panel's list, refreshed from `GET /v1/keys`. */
async function renderKeys() {
  const list = $("keys-list");
  list.replaceChildren();
  let keys;
  try {
    keys = (await state.api.request("GET", "/v1/keys")).keys;
  } catch (err) {
    list.append(el("li", { class: "error", t: ["keys.loadFailed", { err: errorArg(err) }] }));
    return;
  }
  $("keys-empty").hidden = keys.length > 0;
  const names = new Map(state.workspaces.map((w) => [w.id, w.name]));
  for (const k of keys) {
    const reach = k.workspace_id ? t("keys.oneWorkspace", { name: names.get(k.workspace_id) ?? k.workspace_id }) : t("keys.allWorkspaces");
    const life = k.revoked_at
      ? t("keys.revokedAt", { at: date(k.revoked_at) })
      : k.expires_at
        ? t("keys.expiresAt", { at: date(k.expires_at) })
        : t("keys.noExpiry");
    const used = k.last_used_at ? t("keys.lastUsed", { at: date(k.last_used_at) }) : t("keys.neverUsed");
    const revoke = k.revoked_at
      ? null
      : el("button", {
          type: "button",
          class: "small",
          t: "keys.revoke",
          "data-testid": "key-revoke",
          onclick: async () => {
            if (!window.confirm(t("keys.revokeConfirm", { name: k.name }))) return;
            try {
              await state.api.request("DELETE", `/v1/keys/${encodeURIComponent(k.id)}`);
              toast("keys.revoked", { name: k.name });
            } catch (err) {
              toast("keys.revokeFailed", { err: errorArg(err) }, true);
            }
            renderKeys();
          },
        });
    list.append(
      el(
        "li",
        { class: k.revoked_at ? "key revoked" : "key", "data-testid": "key-row" },
        el("div", {}, el("strong", { text: k.name }), " ", el("code", { text: `${k.prefix}…` })),
        el("div", { class: "muted", text: `${reach} · ${life} · ${used}` }),
        revoke,
      ),
    );
  }
}

async function createKey(event) {
  event.preventDefault();
  const name = $("key-name").value.trim();
  const body = { name };
  if ($("key-scope").value === "workspace" && state.ws) body.workspace_id = state.ws.id;
  const days = Number($("key-days").value);
  if (days > 0) body.expires_in_days = days;
  try {
    const made = await state.api.request("POST", "/v1/keys", body);
    $("key-secret").value = made.secret;
    $("key-made").hidden = false;
    $("key-name").value = "";
  } catch (err) {
    toast("keys.createFailed", { err: errorArg(err) }, true);
  }
  renderKeys();
}

export function setupKeys() {
  const dialog = $("keys-dialog");
  $("keys-open").addEventListener("click", () => {
    $("key-made").hidden = true;
    $("key-secret").value = "";
    const option = $("key-scope").querySelector('option[value="workspace"]');
    option.disabled = !state.ws;
    option.textContent = state.ws
      ? t("keys.scopeThis", { name: state.workspaces.find((w) => w.id === state.ws.id)?.name ?? state.ws.id })
      : t("keys.scopeThisNone");
    if (!state.ws) $("key-scope").value = "all";
    dialog.showModal();
    renderKeys();
  });
  $("keys-close").addEventListener("click", () => dialog.close());
  $("key-form").addEventListener("submit", createKey);
  $("key-copy").addEventListener("click", async () => {
    try {
      await navigator.clipboard.writeText($("key-secret").value);
      toast("keys.copied");
    } catch {
      $("key-secret").select();
    }
  });
  // Leaving the panel forgets the secret: it is shown once.
  dialog.addEventListener("close", () => {
    $("key-secret").value = "";
    $("key-made").hidden = true;
  });
}
