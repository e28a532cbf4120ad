// Citation spans over the raw-text segments. Pure functions (no DOM), so
// they are tested with `node --test` (ui/spans.test.mjs).
//
// The server counts offsets in Unicode scalar values (Rust `char`s) of the
// document's full text; JavaScript strings count UTF-16 code units. A
// Vietnamese letter is one unit, but an emoji or a rare CJK ideograph is
// two, so every slice here goes through code points (`Array.from`).

/** The code points of `text`, as an array of strings. */
export function codePoints(text) {
  return Array.from(text ?? "");
}

/** `text[start..end]` in code points. */
export function sliceCodePoints(text, start, end) {
  return codePoints(text).slice(start, end).join("");
}

/**
 * Where the span `[start, end)` of the full text falls in each segment.
 * `segments` are the raw-text endpoint's segments (`char_start`,
 * `char_end`, `text`), tiling the full text in order. Returns one
 * `{segment, from, to}` per segment the span touches, with `from`/`to` in
 * code points of that segment's text: a span that crosses segments or
 * pages gives several pieces, whose texts joined equal the cited text.
 */
export function spanPieces(segments, start, end) {
  const pieces = [];
  if (!(end > start)) return pieces;
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i];
    const segStart = Number(seg.char_start);
    const segEnd = Number(seg.char_end);
    const from = Math.max(start, segStart);
    const to = Math.min(end, segEnd);
    if (to > from) pieces.push({ segment: i, from: from - segStart, to: to - segStart });
  }
  return pieces;
}

/** The full text's `[start, end)` as the segments hold it. */
export function spanText(segments, start, end) {
  return spanPieces(segments, start, end)
    .map((p) => sliceCodePoints(segments[p.segment].text, p.from, p.to))
    .join("");
}

/**
 * A segment's text split around its pieces:
 * `[{text, marked}]` in order, for rendering with `<mark>`.
 */
export function splitSegment(text, ranges) {
  const cps = codePoints(text);
  const parts = [];
  let at = 0;
  for (const r of [...ranges].sort((a, b) => a.from - b.from)) {
    const from = Math.max(r.from, at);
    const to = Math.min(r.to, cps.length);
    if (to <= from) continue;
    if (from > at) parts.push({ text: cps.slice(at, from).join(""), marked: false });
    parts.push({ text: cps.slice(from, to).join(""), marked: true });
    at = to;
  }
  if (at < cps.length) parts.push({ text: cps.slice(at).join(""), marked: false });
  return parts;
}

/** Whitespace runs collapsed and the text cut at `max` code points. */
export function preview(text, max = 280) {
  const flat = String(text ?? "").replace(/\s+/g, " ").trim();
  const cps = codePoints(flat);
  return cps.length > max ? cps.slice(0, max - 1).join("") + "…" : flat;
}

/**
 * The segments' texts as a reader shows a text-layer PDF, a DOCX or an
 * OCR'd page: a line break that only wraps a paragraph (the next line goes
 * on in lower case or with a number, the rule the sentence splitter uses)
 * becomes a space, so the author's paragraphs read as paragraphs. One
 * character for one: every offset, and so every highlight, stays exact
 * (runs of spaces are collapsed by CSS, `white-space: pre-line`). A break
 * at the end of one segment looks at the next segment's first character.
 *
 * `wraps` (optional): the line breaks known to end a full line
 * (`fullLineWraps`: a Map from their offsets, in code points of the full
 * text, which the segments tile from 0, to whether the next line follows
 * at the page's ordinary line pitch): such a break is a wrap also before
 * a capital (a name: "Công ty Cổ phần Ánh\nDương."), unless its line ends
 * a sentence and the next line stands apart (a paragraph's space above
 * it). A sentence ending a full line with the next one at the ordinary
 * pitch goes on in the same paragraph ("… giờ công.\nMỗi công nhân …").
 */
export function reflowed(texts, wraps = null) {
  const out = texts.map((t) => t ?? "");
  let base = 0; // the code points of the segments before this one
  for (let i = 0; i < out.length; i++) {
    const next = texts[i + 1] ?? "";
    const previous = texts[i - 1] ?? "";
    const own = out[i];
    out[i] = own.replace(/\n(?=(.|$))/gsu, (nl, after, at, whole) => {
      // A blank line ends a paragraph, whatever follows it (also across
      // two segments, and also when the blank line holds spaces, "\n \n"):
      // neither of its breaks is a wrap.
      const behind = (previous + whole.slice(0, at)).replace(/[ \t]+$/, "");
      const ahead = whole.slice(at + 1) + next;
      if (behind.endsWith("\n") || /^[ \t]*\n/.test(ahead)) return nl;
      const end = at + 1 >= whole.length;
      const following = (end ? next.trimStart().charAt(0) : after) ?? "";
      if (/[\p{Ll}\p{Nd}]/u.test(following)) return " ";
      const offset = base + codePoints(whole.slice(0, at)).length;
      const full = wraps?.size && wraps.has(offset);
      const sentenceEnds = /[.!?:;…]["'”’)\]]*$/u.test(behind);
      return full && /\p{L}/u.test(following) && (!sentenceEnds || wraps.get(offset) === true) ? " " : nl;
    });
    base += codePoints(own).length;
  }
  return out;
}

/**
 * The line breaks of a page's text that end a full line: the raw-text
 * endpoint's line boxes (`raw.segments[].boxes`, on `raw.pages`), a line
 * reaching the right margin (as far from the page's right side as the
 * text is from its left, within 3% of the page's width) and followed at
 * once by the next line of the same page. Such a line was ended by the
 * width of the page, not by its author (justified text above all). A Map
 * from their code point offsets in the full text to whether the next
 * line follows at the page's ordinary pitch (within 15% of the first
 * quartile of the distances between consecutive lines' tops, where the
 * page has three such pairs or more): no paragraph's space between them.
 */
export function fullLineWraps(raw) {
  const wraps = new Map();
  for (const page of raw?.pages ?? []) {
    if (!(page.width > 0)) continue;
    const boxes = (raw.segments ?? [])
      .flatMap((s) => s.boxes ?? [])
      .filter((b) => b.page_idx === page.page_idx)
      .sort((a, b) => a.char_start - b.char_start);
    if (boxes.length < 2) continue;
    const left = Math.min(...boxes.map((b) => b.x0));
    const margin = page.width - left - page.width * 0.03;
    const pitch = (k) => Math.abs(Number(boxes[k + 1].y0) - Number(boxes[k].y0));
    const pitches = boxes
      .slice(0, -1)
      .map((b, k) => (boxes[k + 1].char_start === b.char_end + 1 && Number.isFinite(pitch(k)) ? pitch(k) : null))
      .filter((p) => p !== null && p > 0)
      .sort((a, b) => a - b);
    // The first quartile: a page of short paragraphs has nearly as many
    // paragraph gaps as line steps, and a median could land on a gap.
    const ordinary = pitches.length >= 3 ? pitches[Math.floor((pitches.length - 1) / 4)] : null;
    for (let k = 0; k + 1 < boxes.length; k++) {
      const [line, nextLine] = [boxes[k], boxes[k + 1]];
      if (line.x1 >= margin && nextLine.char_start === line.char_end + 1) {
        wraps.set(line.char_end, ordinary !== null && pitch(k) <= ordinary * 1.15);
      }
    }
  }
  return wraps;
}

/**
 * How many paragraphs the reader shows for these segments' texts: pieces
 * of text between blank lines, or, for a text shown as paragraphs
 * (`flowing`: its wraps joined by `reflowed`, with `wraps`), between line breaks.
 */
export function paragraphCount(texts, flowing = false, wraps = null) {
  const text = (flowing ? reflowed(texts, wraps) : texts.map((t) => t ?? "")).join("");
  return text.split(flowing ? /\n/ : /\n[ \t]*\n/).filter((p) => p.trim()).length;
}
