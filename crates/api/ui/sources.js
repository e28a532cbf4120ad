// Sources: the folders and S3 prefixes a workspace follows (docs/sources.md),
// in a panel behind "Sources" by the documents' heading. Each source says
// its last sync in words (files added, changed, removed, refused), syncs on
// demand, and lists the files it refused with the reason in the reader's
// language; the server's sentence, with its figures, is the tooltip.

import { $, el, toast } from "./dom.js";
import { t, date, errorArg } from "./i18n.js";
import { state } from "./state.js";

const base = () => `/v1/workspaces/${encodeURIComponent(state.ws.id)}/sources`;

/** A source's last sync, in words: its catalogue key and arguments (so the
 * line follows a switch of language). */
function syncLine(s) {
  if (s.syncing) return ["sources.syncing", {}];
  if (s.last_error) return ["sources.stopped", { err: s.last_error }];
  if (!s.sync_completed_at) return ["sources.never", {}];
  return [
    "sources.synced",
    {
      at: date(s.sync_completed_at),
      seen: s.files_seen,
      added: s.files_added,
      changed: s.files_changed,
      removed: s.files_removed,
      failed: s.files_failed,
    },
  ];
}

/** The files a source refused, each with its reason. */
async function refusedFiles(source, into) {
  try {
    const { files } = await state.api.request("GET", `${base()}/${encodeURIComponent(source.id)}/files`);
    const refused = files.filter((f) => f.state === "failed");
    if (!refused.length) return;
    into.append(
      el(
        "ul",
        { class: "refused-files", "data-testid": "source-refused" },
        ...refused.map((f) =>
          el(
            "li",
            { title: f.failure ?? "" },
            el("code", { text: f.key }),
            " — ",
            el("span", { t: [`sources.why.${f.failure_code ?? "unreadable"}`, {}] }),
          ),
        ),
      ),
    );
  } catch (err) {
    into.append(el("p", { class: "error", t: ["sources.loadFailed", { err: errorArg(err) }] }));
  }
}

let refreshing = null;

/** The panel's list, from `GET …/sources`; again every 2 s while one syncs. */
async function renderSources() {
  clearTimeout(refreshing);
  const list = $("sources-list");
  if (!state.ws) return;
  let sources;
  try {
    sources = (await state.api.request("GET", base())).sources;
  } catch (err) {
    list.replaceChildren(el("li", { class: "error", t: ["sources.loadFailed", { err: errorArg(err) }] }));
    return;
  }
  $("sources-empty").hidden = sources.length > 0;
  const rows = [];
  for (const s of sources) {
    const actions = el(
      "div",
      { class: "source-actions" },
      el("button", {
        type: "button",
        class: "small",
        t: "sources.syncNow",
        "data-testid": "source-sync",
        disabled: s.syncing,
        onclick: async () => {
          try {
            await state.api.request("POST", `${base()}/${encodeURIComponent(s.id)}/sync`, {});
          } catch (err) {
            toast("sources.syncFailed", { err: errorArg(err) }, true);
          }
          renderSources();
        },
      }),
      el("button", {
        type: "button",
        class: "small",
        t: "sources.remove",
        onclick: async () => {
          if (!window.confirm(t("sources.removeConfirm", { location: s.location }))) return;
          try {
            await state.api.request("DELETE", `${base()}/${encodeURIComponent(s.id)}`);
          } catch (err) {
            toast("sources.removeFailed", { err: errorArg(err) }, true);
          }
          renderSources();
        },
      }),
    );
    const row = el(
      "li",
      { class: "key source", "data-testid": "source-row" },
      el("div", {}, el("strong", { t: [s.kind === "s3" ? "sources.kindShortS3" : "sources.kindShortFolder", {}] }), " ", el("code", { text: s.location })),
      el("div", { class: "muted", "data-testid": "source-sync-line", t: syncLine(s) }),
      actions,
    );
    rows.push(row);
    await refusedFiles(s, row);
  }
  list.replaceChildren(...rows);
  if (sources.some((s) => s.syncing) && $("sources-dialog").open) refreshing = setTimeout(renderSources, 2000);
}

async function addSource(event) {
  event.preventDefault();
  const kind = $("source-kind").value;
  const location = $("source-location").value.trim();
  try {
    const made = await state.api.request("POST", base(), kind === "s3" ? { s3: location } : { folder: location });
    $("source-location").value = "";
    // Its first sync at once: the files appear in the documents' list as they come.
    await state.api.request("POST", `${base()}/${encodeURIComponent(made.id)}/sync`, {});
  } catch (err) {
    toast("sources.addFailed", { err: errorArg(err) }, true);
  }
  renderSources();
}

export function setupSources() {
  const dialog = $("sources-dialog");
  $("sources-open").addEventListener("click", () => {
    if (!state.ws) return;
    dialog.showModal();
    renderSources();
  });
  $("sources-close").addEventListener("click", () => dialog.close());
  dialog.addEventListener("close", () => clearTimeout(refreshing));
  $("source-form").addEventListener("submit", addSource);
  $("source-kind").addEventListener("change", () => {
    $("source-location").placeholder = $("source-kind").value === "s3" ? "s3://team-docs/hr/" : "/srv/shared/nhan-su";
  });
}
