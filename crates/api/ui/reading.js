// The reading view of a Markdown or HTML document (GET …/reading): the
// server's tree of whitelisted elements and placed texts drawn with
// createElement and text nodes only (nothing of the document can run or
// fetch: no innerHTML, no attribute but a checked link's href and a
// list's start), with a citation's characters `[start, end)` of the raw
// text inside `<mark class="cited">` wherever a text shows them.

import { codePoints } from "./spans.js";

// The server's tags; anything else (a newer server's) is drawn as a span.
const TAGS = new Set([
  "h1", "h2", "h3", "h4", "h5", "h6", "p", "div", "ul", "ol", "li", "blockquote", "pre", "code", "em", "strong",
  "del", "a", "table", "thead", "tbody", "tr", "th", "td", "hr", "br", "span",
]);
const SAFE_LINK = /^(https?|mailto):/i;

/**
 * A text `{text, at}` split around the span `[start, end)` of the raw
 * text: `[{text, marked}]` in order (one part, unmarked, when it shows
 * none of the span or is not placed). Pure: tested in node.
 */
export function markText(node, start, end) {
  const at = node.at;
  if (at === undefined || at === null || !(end > start)) return [{ text: node.text, marked: false }];
  const cps = codePoints(node.text);
  const from = Math.max(0, Math.min(cps.length, start - at));
  const to = Math.max(0, Math.min(cps.length, end - at));
  if (to <= from) return [{ text: node.text, marked: false }];
  return [
    { text: cps.slice(0, from).join(""), marked: false },
    { text: cps.slice(from, to).join(""), marked: true },
    { text: cps.slice(to).join(""), marked: false },
  ].filter((p) => p.text);
}

/**
 * A quote of a Markdown or HTML document's raw text as its reader sees
 * the document (the answer's sources, a bubble's tip): a table row's
 * cells rather than its pipes ("| Lợi nhuận gộp | 312,5 |" and the HTML
 * parser's "Họp lớn | 3" read "Lợi nhuận gộp · 312,5"), a heading
 * without its #, bold without its asterisks. For the eye only: offsets
 * and highlights use the raw text. Pure: tested in node.
 */
export function asRead(text) {
  return String(text ?? "")
    .split("\n")
    .map((line) => {
      let l = line.replace(/^\s{0,3}#{1,6}\s+/, "").replace(/\*\*(?=\S)(.+?)\*\*/g, "$1");
      // A Markdown table's rule line says nothing to a reader.
      if (/^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$/.test(l)) return null;
      if (/^\s*\|.*\|\s*$/.test(l) || / \| /.test(l)) {
        l = l.trim().replace(/^\|/, "").replace(/\|$/, "").split("|").map((c) => c.trim()).filter(Boolean).join(" · ");
      }
      return l;
    })
    .filter((l) => l !== null)
    .join("\n");
}

/** The view's nodes as DOM nodes, the span marked. */
export function drawReading(nodes, start, end) {
  const out = [];
  for (const node of nodes ?? []) {
    if (typeof node.text === "string") {
      for (const part of markText(node, start, end)) {
        if (!part.marked) out.push(document.createTextNode(part.text));
        else {
          const mark = document.createElement("mark");
          mark.className = "cited";
          mark.textContent = part.text;
          out.push(mark);
        }
      }
      continue;
    }
    const tag = TAGS.has(node.tag) ? node.tag : "span";
    const element = document.createElement(tag);
    if (tag === "a" && typeof node.href === "string" && SAFE_LINK.test(node.href)) {
      element.href = node.href;
      element.target = "_blank";
      element.rel = "noopener noreferrer nofollow";
    }
    if (tag === "ol" && Number.isInteger(node.start)) element.start = node.start;
    element.append(...drawReading(node.children, start, end));
    out.push(element);
  }
  return out;
}
