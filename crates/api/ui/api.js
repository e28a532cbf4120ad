// The HTTP API as the page uses it. Every workspace-scoped call goes
// through `WorkspaceApi`, which is bound to one workspace id at creation:
// the page drops it (and everything fetched through it) when the user
// switches workspace, so no request carries another workspace's ids.

/** An error answer of the API (`{"error": {code, message}}`) or a network failure. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

async function errorOf(res) {
  let code = "http_" + res.status;
  let message = `${res.status} ${res.statusText}`;
  try {
    const body = await res.json();
    if (body?.error) ({ code, message } = body.error);
  } catch {
    /* not JSON: keep the status line */
  }
  return new ApiError(res.status, code, message);
}

export class Api {
  constructor(token, onUnauthorized) {
    this.token = token;
    this.onUnauthorized = onUnauthorized;
  }

  headers(extra = {}) {
    return { Authorization: `Bearer ${this.token}`, ...extra };
  }

  async request(method, path, body) {
    let res;
    try {
      res = await fetch(path, {
        method,
        headers: this.headers(body === undefined ? {} : { "Content-Type": "application/json" }),
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (err) {
      throw new ApiError(0, "network", `the server did not answer (${err.message})`);
    }
    if (res.status === 401) this.onUnauthorized?.();
    if (!res.ok) throw await errorOf(res);
    return res.status === 204 ? null : res.json();
  }

  /** Every item of a paged list: follows `next_cursor` page by page. */
  async all(path, key) {
    const items = [];
    let cursor = null;
    do {
      const sep = path.includes("?") ? "&" : "?";
      const page = await this.request("GET", cursor ? `${path}${sep}cursor=${encodeURIComponent(cursor)}` : path);
      items.push(...page[key]);
      cursor = page.next_cursor ?? null;
    } while (cursor);
    return items;
  }

  listWorkspaces() {
    return this.all("/v1/workspaces", "workspaces");
  }

  createWorkspace(name) {
    return this.request("POST", "/v1/workspaces", { name });
  }

  workspace(id) {
    return new WorkspaceApi(this, id);
  }
}

export class WorkspaceApi {
  constructor(api, id) {
    this.api = api;
    this.id = id;
    this.base = `/v1/workspaces/${encodeURIComponent(id)}`;
  }

  documents() {
    return this.api.all(`${this.base}/documents`, "documents");
  }

  /** A document's raw text: of `revision` (a citation names the one it
   * quoted), else the one search reads. */
  rawText(documentId, revision = null) {
    const rev = revision ? `?revision=${encodeURIComponent(revision)}` : "";
    return this.api.request("GET", `${this.base}/documents/${encodeURIComponent(documentId)}/raw-text${rev}`);
  }

  /** A Markdown or HTML document's reading view (its structure, each
   * text placed in the raw text); 409 `no_reading_view` for other formats. */
  reading(documentId, revision = null) {
    const rev = revision ? `?revision=${encodeURIComponent(revision)}` : "";
    return this.api.request("GET", `${this.base}/documents/${encodeURIComponent(documentId)}/reading${rev}`);
  }

  /** Page `page` (1-based) of a PDF or image as a PNG Blob, characters
   * start..end highlighted (none without them). An <img> cannot send the
   * Authorization header, so the page fetches the image and shows it
   * through an object URL. */
  async pageImage(documentId, page, start = null, end = null, revision = null) {
    const query = new URLSearchParams();
    if (start !== null && end !== null) query.set("highlight", `${start}-${end}`);
    if (revision) query.set("revision", revision);
    const q = query.toString() ? `?${query}` : "";
    const path = `${this.base}/documents/${encodeURIComponent(documentId)}/pages/${page}/image${q}`;
    let res;
    try {
      res = await fetch(path, { headers: this.api.headers() });
    } catch (err) {
      throw new ApiError(0, "network", `the server did not answer (${err.message})`);
    }
    if (res.status === 401) this.api.onUnauthorized?.();
    if (!res.ok) throw await errorOf(res);
    return res.blob();
  }

  conversations() {
    return this.api.all(`${this.base}/conversations`, "conversations");
  }

  createConversation(title) {
    return this.api.request("POST", `${this.base}/conversations`, { title });
  }

  conversation(id) {
    return this.api.request("GET", `${this.base}/conversations/${encodeURIComponent(id)}`);
  }

  message(conversationId, messageId) {
    return this.api.request(
      "GET",
      `${this.base}/conversations/${encodeURIComponent(conversationId)}/messages/${encodeURIComponent(messageId)}`,
    );
  }

  ask(conversationId, content) {
    return this.api.request("POST", `${this.base}/conversations/${encodeURIComponent(conversationId)}/messages`, {
      content,
    });
  }

  /** The workspace's document status stream (`ready`, then `document.status_updated`). */
  documentEventsUrl() {
    return `${this.base}/documents/events`;
  }

  eventsUrl(conversationId) {
    return `${this.base}/conversations/${encodeURIComponent(conversationId)}/events`;
  }

  /**
   * Uploads one file with progress: `onProgress(fraction)` while the bytes
   * go up (fetch cannot report upload progress; XMLHttpRequest can).
   * Resolves with the 202 body, rejects with an ApiError.
   */
  upload(file, onProgress) {
    return new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest();
      xhr.open("POST", `${this.base}/documents`);
      xhr.setRequestHeader("Authorization", `Bearer ${this.api.token}`);
      xhr.responseType = "json";
      xhr.upload.onprogress = (e) => {
        if (e.lengthComputable) onProgress(e.loaded / e.total);
      };
      xhr.onload = () => {
        if (xhr.status === 401) this.api.onUnauthorized?.();
        if (xhr.status >= 200 && xhr.status < 300) return resolve(xhr.response);
        const err = xhr.response?.error;
        reject(new ApiError(xhr.status, err?.code ?? `http_${xhr.status}`, err?.message ?? `upload answered ${xhr.status}`));
      };
      xhr.onerror = () => reject(new ApiError(0, "network", "the upload was interrupted (network error)"));
      const form = new FormData();
      form.append("file", file, file.name);
      xhr.send(form);
    });
  }
}

/** `GET /ui/config.json` (no token needed). */
export async function pageConfig() {
  try {
    const res = await fetch("/ui/config.json");
    return res.ok ? await res.json() : { dev_sign_in: false };
  } catch {
    return { dev_sign_in: false };
  }
}

/** The development sign-in (`POST /dev/sign-in`), when the server enables it. */
export async function devSignIn(user) {
  const res = await fetch("/dev/sign-in", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ user }),
  });
  if (!res.ok) throw await errorOf(res);
  return res.json();
}
