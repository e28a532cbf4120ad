// `node --test crates/api/ui/spans.test.mjs` (run by scripts/test): the page's span logic.
import test from "node:test";
import assert from "node:assert/strict";
import { spanPieces, spanText, splitSegment, sliceCodePoints, preview } from "./spans.js";

// Two pages, three segments, tiling "Trang một.\nDoanh thu 😀 tăng.\nTrang hai."
const segments = [
  { segment_index: 0, page_idx: 0, char_start: 0, char_end: 11, text: "Trang một.\n" },
  { segment_index: 1, page_idx: 0, char_start: 11, char_end: 29, text: "Doanh thu 😀 tăng.\n" },
  { segment_index: 2, page_idx: 1, char_start: 29, char_end: 39, text: "Trang hai." },
];
const full = segments.map((s) => s.text).join("");

test("segments tile the text in code points", () => {
  assert.equal(Array.from(full).length, 39);
  for (const s of segments) assert.equal(Array.from(s.text).length, s.char_end - s.char_start);
});

test("a span inside one segment", () => {
  assert.deepEqual(spanPieces(segments, 11, 20), [{ segment: 1, from: 0, to: 9 }]);
  assert.equal(spanText(segments, 11, 20), "Doanh thu");
});

test("offsets count code points, not UTF-16 units", () => {
  // The emoji is one scalar value but two UTF-16 units.
  assert.equal(spanText(segments, 21, 22), "😀");
  assert.equal(spanText(segments, 23, 27), "tăng");
  assert.equal(sliceCodePoints(full, 21, 27), "😀 tăng");
});

test("a span crossing segments and pages is cut into pieces that join to the cited text", () => {
  const pieces = spanPieces(segments, 23, 34);
  assert.deepEqual(pieces, [
    { segment: 1, from: 12, to: 18 },
    { segment: 2, from: 0, to: 5 },
  ]);
  assert.equal(spanText(segments, 23, 34), sliceCodePoints(full, 23, 34));
  assert.equal(spanText(segments, 0, 39), full);
});

test("empty and out-of-range spans give nothing", () => {
  assert.deepEqual(spanPieces(segments, 5, 5), []);
  assert.deepEqual(spanPieces(segments, 50, 60), []);
  assert.equal(spanText(segments, 30, 20), "");
});

test("splitting a segment around its marked pieces", () => {
  assert.deepEqual(splitSegment("Doanh thu 😀 tăng.\n", [{ from: 12, to: 16 }]), [
    { text: "Doanh thu 😀 ", marked: false },
    { text: "tăng", marked: true },
    { text: ".\n", marked: false },
  ]);
  assert.deepEqual(splitSegment("abc", [{ from: 0, to: 3 }]), [{ text: "abc", marked: true }]);
  assert.deepEqual(splitSegment("abc", []), [{ text: "abc", marked: false }]);
});

test("previews collapse whitespace and cut long text", () => {
  assert.equal(preview("  a\n\n b  "), "a b");
  assert.equal(preview("ứ".repeat(10), 5), "ứứứứ…");
});

test("wrapped lines read as paragraphs; offsets and highlights stay exact", async () => {
  const { reflowed } = await import("./spans.js");
  const texts = ["Nhân viên được nghỉ\ntrưa 60 phút.\nGiờ làm việc từ", "\n8 giờ.\n", "Điều 2. Lương."];
  const shown = reflowed(texts);
  assert.deepEqual(shown, ["Nhân viên được nghỉ trưa 60 phút.\nGiờ làm việc từ", " 8 giờ.\n", "Điều 2. Lương."]);
  // One character for one, in code points and in UTF-16 units.
  shown.forEach((s, i) => {
    assert.equal(s.length, texts[i].length);
    assert.equal(Array.from(s).length, Array.from(texts[i]).length);
  });
  // A highlight cut from the shown text is the raw text with spaces for the joined breaks.
  const raw = texts.join("");
  const start = raw.indexOf("nghỉ");
  const end = raw.indexOf("phút.") + 5;
  assert.equal(shown.join("").slice(start, end), "nghỉ trưa 60 phút.");
  assert.deepEqual(reflowed(["Tiêu đề\nĐoạn một."]), ["Tiêu đề\nĐoạn một."], "a capital opens a new line");
  // A blank line is a paragraph's end, also before a lower-case word (an
  // OCR'd page's paragraphs) and across two segments.
  assert.deepEqual(reflowed(["cửa hàng.\n\nthe branch\ngrew."]), ["cửa hàng.\n\nthe branch grew."]);
  assert.deepEqual(reflowed(["cửa hàng.\n", "\nthe branch"]), ["cửa hàng.\n", "\nthe branch"]);
});

test("a blank line of spaces ends a paragraph too", async () => {
  const { reflowed } = await import("./spans.js");
  // Tesseract and some PDFs write a blank line as spaces: "\n \n".
  assert.deepEqual(reflowed(["cửa hàng.\n \nthe branch\ngrew."]), ["cửa hàng.\n \nthe branch grew."]);
  assert.deepEqual(reflowed(["cửa hàng.\n\t \n\nthe branch"]), ["cửa hàng.\n\t \n\nthe branch"]);
  // Across two segments, the spaces on either side.
  assert.deepEqual(reflowed(["cửa hàng.\n  ", "\nthe branch"]), ["cửa hàng.\n  ", "\nthe branch"]);
  assert.deepEqual(reflowed(["cửa hàng.\n", "  \nthe branch"]), ["cửa hàng.\n", "  \nthe branch"]);
  // Spaces after a wrap do not make it a paragraph's end.
  assert.deepEqual(reflowed(["nghỉ  \ntrưa 60 phút."]), ["nghỉ   trưa 60 phút."]);
});

test("the paragraphs a reader shows are counted as people see them", async () => {
  const { paragraphCount } = await import("./spans.js");
  assert.equal(paragraphCount(["# Ghi chú\n\n", "Họp giao ban vào thứ Hai lúc 9 giờ.\n"]), 2);
  assert.equal(paragraphCount(["Một.\n \nHai.\n\n\nBa."]), 3);
  // Shown as paragraphs: a wrap joins, a capital after a break starts a new one.
  assert.equal(paragraphCount(["Nhân viên được nghỉ\ntrưa 60 phút.\nGiờ làm việc từ\n8 giờ."], true), 2);
  assert.equal(paragraphCount([""]), 0);
});

test("a full line of a justified page wraps also before a capital; a short one or a sentence's end does not", async () => {
  const { reflowed, fullLineWraps, paragraphCount } = await import("./spans.js");
  // As the raw-text endpoint gives a justified A5 PDF page: the first line
  // of each paragraph reaches the right margin (x1 414 of 420, left at 6).
  const raw = {
    pages: [{ page_idx: 0, width: 420, height: 595.92, unit: "pt" }],
    segments: [
      { text: "Báo  cáo  —  Công  ty  Cổ  phần  Ánh\nDương.\n\n", boxes: [
        { page_idx: 0, char_start: 0, char_end: 36, x0: 6, x1: 413.99 },
        { page_idx: 0, char_start: 37, char_end: 43, x0: 6, x1: 56.4 },
      ] },
      { text: "Tiêu đề\nĐoạn một kết thúc ở lề phải.\nĐoạn hai.", boxes: [
        { page_idx: 0, char_start: 45, char_end: 52, x0: 6, x1: 80 },
        { page_idx: 0, char_start: 53, char_end: 81, x0: 6, x1: 414 },
        { page_idx: 0, char_start: 82, char_end: 91, x0: 6, x1: 90 },
      ] },
    ],
  };
  const texts = raw.segments.map((s) => s.text);
  assert.equal(Array.from(texts.join("")).length, 91);
  const wraps = fullLineWraps(raw);
  assert.deepEqual([...wraps.keys()].sort((a, b) => a - b), [36, 81]);
  const shown = reflowed(texts, wraps);
  // The name goes on across the full line; the short heading's break and
  // a full line ending its sentence stay breaks.
  assert.deepEqual(shown, ["Báo  cáo  —  Công  ty  Cổ  phần  Ánh Dương.\n\n", "Tiêu đề\nĐoạn một kết thúc ở lề phải.\nĐoạn hai."]);
  shown.forEach((s, i) => assert.equal(s.length, texts[i].length));
  assert.deepEqual(reflowed(texts), texts, "without the geometry, the capital rule alone");
  assert.equal(paragraphCount(texts, true, wraps), 4);
  // A page of short lines (a list) has no full line: nothing is joined.
  assert.equal(fullLineWraps({ pages: [{ page_idx: 0, width: 420 }], segments: [{ boxes: [
    { page_idx: 0, char_start: 0, char_end: 5, x0: 6, x1: 120 }, { page_idx: 0, char_start: 6, char_end: 10, x0: 6, x1: 100 },
  ] }] }).size, 0);
});

test("a full line ending a sentence goes on in its paragraph when the next line follows at the page's ordinary pitch", async () => {
  const { reflowed, fullLineWraps } = await import("./spans.js");
  // A justified page: lines 18 pt apart within a paragraph, 30 pt between
  // paragraphs. "… giờ công." ends a full line inside the first
  // paragraph; "… lề phải." ends a full line that ends the second.
  const lines = [
    ["Nhà máy đạt một triệu giờ công.", 414, 100],
    ["Mỗi công nhân mới được đào tạo", 414, 118],
    ["trong hai tuần.", 200, 136],
    ["Đoạn hai kết thúc ở lề phải.", 414, 166],
    ["Đoạn ba.", 90, 196],
  ];
  let at = 0;
  const boxes = [];
  for (const [text, x1, y0] of lines) {
    const n = Array.from(text).length;
    boxes.push({ page_idx: 0, char_start: at, char_end: at + n, x0: 6, x1, y0, y1: y0 + 14 });
    at += n + 1;
  }
  const text = lines.map(([t]) => t).join("\n");
  const raw = { pages: [{ page_idx: 0, width: 420, height: 595, unit: "pt" }], segments: [{ text, boxes }] };
  const wraps = fullLineWraps(raw);
  assert.deepEqual([...wraps.entries()], [[31, true], [62, true], [107, false]]);
  const [shown] = reflowed([text], wraps);
  assert.equal(shown, "Nhà máy đạt một triệu giờ công. Mỗi công nhân mới được đào tạo trong hai tuần.\nĐoạn hai kết thúc ở lề phải.\nĐoạn ba.");
  // Too few lines to know the page's pitch: a sentence's end stays a break.
  const two = { pages: raw.pages, segments: [{ text: lines.slice(0, 2).map(([t]) => t).join("\n"), boxes: boxes.slice(0, 2) }] };
  assert.deepEqual([...fullLineWraps(two).entries()], [[31, false]]);
});
