// What the Node clients (mcp_node.mjs, openai_node.mjs) share: their
// settings, the packages scripts/client-test installed, the documents' raw
// text, and the sources list a chat reply's content ends with, parsed and
// checked against that raw text (tests/clients/sources_list.py does the same
// for the Python clients).

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

export const BASE = required("RAG_BASE").replace(/\/+$/, "");
export const KEY = required("RAG_API_KEY");
export const MODEL = required("RAG_MODEL");
/** The workspace's id, for the REST API (RAG_MODEL may be its name). */
export const WORKSPACE_ID = process.env.RAG_WORKSPACE_ID || MODEL;
export const QUESTION = process.env.RAG_QUESTION || "Doanh thu năm 2023 là bao nhiêu?";
export const STREAMED = process.env.RAG_STREAMED_QUESTION || "Lợi nhuận sau thuế năm 2023 là bao nhiêu?";

function required(name) {
  const value = process.env[name];
  if (!value) fail(`${name} is not set`);
  return value;
}

/** `require` of the packages installed in RAG_NODE_DIR (scripts/client-test). */
export const NODE_MODULES = join(required("RAG_NODE_DIR"), "node_modules");
export const nodeRequire = createRequire(NODE_MODULES + "/");

/** The version of an installed package. */
export const packageVersion = (name) => JSON.parse(readFileSync(join(NODE_MODULES, name, "package.json"), "utf8")).version;

export class CheckFailed extends Error {}

/** Fails the check with a message that says what was expected. */
export function check(condition, message) {
  if (!condition) throw new CheckFailed(typeof message === "function" ? message() : message);
}

export function fail(message) {
  console.error(`FAILED: ${message}`);
  process.exit(1);
}

/** Runs a client's checks: a failed check is one line, anything else its stack. */
export async function run(name, main) {
  try {
    await main();
  } catch (e) {
    if (e instanceof CheckFailed) fail(`${name}: ${e.message}`);
    fail(`${name}: ${e?.stack || e}${e?.cause ? `\n  cause: ${e.cause?.stack || e.cause}` : ""}`);
  }
}

export const seconds = (ms) => `${(ms / 1000).toFixed(2)} s`;

const rawTexts = new Map();

/** A document's raw text, as the API gives it (its segments joined). */
export async function rawText(workspace, document) {
  const key = `${workspace}/${document}`;
  if (!rawTexts.has(key)) {
    const url = `${BASE}/v1/workspaces/${encodeURIComponent(workspace)}/documents/${encodeURIComponent(document)}/raw-text`;
    const resp = await fetch(url, { headers: { Authorization: `Bearer ${KEY}` } });
    check(resp.ok, () => `GET ${url}: HTTP ${resp.status}`);
    const body = await resp.json();
    rawTexts.set(key, body.segments.map((s) => s.text).join(""));
  }
  return rawTexts.get(key);
}

/** The raw text at a range of characters (Unicode code points, as the API counts). */
export async function rawSlice(workspace, document, start, end) {
  return Array.from(await rawText(workspace, document)).slice(start, end).join("");
}

// Rust's char::is_whitespace (Unicode White_Space), which the server uses to
// show a quote's whitespace runs as one space.
const WHITESPACE = /[\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+/u;
export const collapse = (text) => text.split(WHITESPACE).filter(Boolean).join(" ");

/** The list's heading, and the word of its links, in each language. */
const HEADINGS = { "**Sources**": "open", "**Nguồn**": "mở" };
const ENTRY = /^- \[(\d+)\] (.+?): \u201c(.*)\u201d \(\[([^\]]+)\]\((\S+)\)\)$/u;

/**
 * A reply's content split into the answer and its sources list: `{answer,
 * heading, block, entries: [{n, label, name, place, quote, word, url, ws,
 * doc, start, end}]}`; no list, `heading` null. A list that is not in the
 * contract's shape fails with the line that is not.
 */
export function splitSources(content) {
  let at = -1;
  let heading = null;
  for (const h of Object.keys(HEADINGS)) {
    const i = content.lastIndexOf(`\n\n${h}\n`);
    if (i > at) [at, heading] = [i, h];
  }
  if (at < 0) return { answer: content, heading: null, block: "", entries: [] };
  const block = content.slice(at);
  const lines = block.slice(2).split("\n");
  check(lines[1] === "" && lines.length > 2, () => `the sources list has no blank line after ${heading}, or no entry: ${JSON.stringify(block)}`);
  const entries = lines.slice(2).map((line) => {
    const m = ENTRY.exec(line);
    check(m, () => `not a sources entry (\`- [n] FILE[, PLACE]: “QUOTE” ([${HEADINGS[heading]}](URL))\`): ${JSON.stringify(line)}`);
    const [, n, label, quote, word, url] = m;
    const place = /, (p\. \d+|[^,]+![A-Z]+\d+(?::[A-Z]+\d+)?)$/u.exec(label);
    const hash = new URLSearchParams(new URL(url).hash.slice(1));
    const span = /^(\d+)-(\d+)$/.exec(hash.get("span") || "");
    check(hash.get("ws") && hash.get("doc") && span, () => `entry [${n}]: the link has no ws, doc or span: ${url}`);
    return {
      n: Number(n),
      label,
      name: place ? label.slice(0, place.index) : label,
      place: place ? place[1] : null,
      quote,
      word,
      url,
      ws: hash.get("ws"),
      doc: hash.get("doc"),
      start: Number(span[1]),
      end: Number(span[2]),
    };
  });
  return { answer: content.slice(0, at), heading, block, entries };
}

/**
 * Checks a reply's content: every `[n]` marker of its answer has an entry in
 * the sources list and every entry a marker, numbered 1.. in order; each
 * entry's quote is the raw text at its link's span, whitespace runs shown as
 * one space; its link opens the page of this server. With the structured
 * `citations` (a client that keeps them), each entry is its citation: file,
 * page or cells, text, url. Returns the split content.
 */
export async function checkSources(content, citations = null) {
  check(typeof content === "string" && content.length > 0, () => `empty content: ${JSON.stringify(content)}`);
  const split = splitSources(content);
  const markers = [...new Set([...split.answer.matchAll(/\[(\d+)\]/g)].map((m) => Number(m[1])))].sort((a, b) => a - b);
  if (markers.length > 0) {
    check(split.heading, () => `the answer cites [${markers.join("], [")}] but its content has no sources list (a "**Sources**" or "**Nguồn**" heading after a blank line): ${JSON.stringify(content.slice(-300))}`);
  }
  const numbers = split.entries.map((e) => e.n);
  check(numbers.every((n, i) => n === i + 1), () => `the sources are not numbered 1.. in order: ${numbers}`);
  for (const n of markers) check(numbers.includes(n), () => `marker [${n}] has no entry in the sources list`);
  for (const n of numbers) check(markers.includes(n), () => `source [${n}] has no marker in the answer`);
  for (const e of split.entries) {
    check(e.word === HEADINGS[split.heading], () => `entry [${e.n}]: link word "${e.word}" under ${split.heading}`);
    check(e.url.startsWith(`${BASE}/#`), () => `entry [${e.n}]: the link ${e.url} does not open ${BASE}/`);
    const raw = await rawSlice(e.ws, e.doc, e.start, e.end);
    check(raw.length === e.end - e.start, () => `entry [${e.n}]: span ${e.start}-${e.end} lies outside the document's raw text`);
    check(collapse(raw) === e.quote, () => `entry [${e.n}]: the quote is not the raw text at ${e.start}-${e.end}:\n  quote: ${JSON.stringify(e.quote)}\n  raw:   ${JSON.stringify(collapse(raw))}`);
  }
  if (citations) {
    check(citations.length === split.entries.length, () => `${citations.length} citation(s) but ${split.entries.length} source(s) listed`);
    citations.forEach((c, i) => {
      const e = split.entries[i];
      const place = c.cell_range ?? (c.page != null ? `p. ${c.page}` : null);
      check(e.url === c.url, () => `entry [${e.n}]: link ${e.url}, citation ${c.url}`);
      check(e.quote === collapse(c.text), () => `entry [${e.n}]: quote differs from the citation's text`);
      check(e.name === (c.filename ?? c.document_id) && e.place === place, () => `entry [${e.n}]: "${e.label}", citation ${c.filename}, ${place}`);
    });
  }
  return split;
}

/** Checks the structured citations themselves: numbered, marked, the raw text at their ranges. */
export async function checkCitations(answer, citations, workspace) {
  check(Array.isArray(citations), () => `no citations array: ${JSON.stringify(citations)}`);
  for (const [i, c] of citations.entries()) {
    check(c.index === i + 1, () => `citation ${i + 1} has index ${c.index}`);
    check(answer.includes(`[${c.index}]`), () => `citation [${c.index}] has no marker in the answer`);
    const raw = await rawSlice(workspace, c.document_id, c.char_start, c.char_end);
    check(raw === c.text, () => `citation [${c.index}]: text is not the raw text at ${c.char_start}-${c.char_end}:\n  text: ${JSON.stringify(c.text)}\n  raw:  ${JSON.stringify(raw)}`);
  }
  return citations.length;
}
