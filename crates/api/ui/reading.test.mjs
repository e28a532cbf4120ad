// node --test crates/api/ui/reading.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { markText, asRead } from "./reading.js";

test("a placed text is cut around the cited span, in code points", () => {
  // "Kết hôn" at 100 of the raw text; the span 102..105 is "t h".
  assert.deepEqual(markText({ text: "Kết hôn", at: 100 }, 102, 105), [
    { text: "Kế", marked: false }, { text: "t h", marked: true }, { text: "ôn", marked: false },
  ]);
  // A span covering the text and more: all of it marked.
  assert.deepEqual(markText({ text: "3 ngày", at: 10 }, 0, 1000), [{ text: "3 ngày", marked: true }]);
  // An emoji is one character of the raw text, two UTF-16 units here.
  assert.deepEqual(markText({ text: "🏯 Huế", at: 0 }, 1, 6), [{ text: "🏯", marked: false }, { text: " Huế", marked: true }]);
});

test("a text outside the span, not placed, or an empty span is shown unmarked", () => {
  assert.deepEqual(markText({ text: "Có", at: 50 }, 10, 50), [{ text: "Có", marked: false }]);
  assert.deepEqual(markText({ text: "Có", at: 50 }, 52, 60), [{ text: "Có", marked: false }]);
  assert.deepEqual(markText({ text: "• " }, 0, 100), [{ text: "• ", marked: false }]);
  assert.deepEqual(markText({ text: "Có", at: 50 }, 51, 51), [{ text: "Có", marked: false }]);
});

test("a quote of Markdown or HTML reads as the document does: cells, not pipes; a heading, not its #", () => {
  assert.equal(asRead("| Lợi nhuận gộp | 312,5 | 351,9 |"), "Lợi nhuận gộp · 312,5 · 351,9");
  assert.equal(asRead("| Chỉ tiêu | 2022 |\n|---|---|\n| Doanh thu | 1.108,2 |"), "Chỉ tiêu · 2022\nDoanh thu · 1.108,2");
  assert.equal(asRead("Họp lớn | 3"), "Họp lớn · 3");
  assert.equal(asRead("## 1. Giờ làm việc"), "1. Giờ làm việc");
  assert.equal(asRead("Làm việc từ **8 giờ** đến 17 giờ."), "Làm việc từ 8 giờ đến 17 giờ.");
  // Ordinary text is left as it is, a lone pipe and a number's sign too.
  assert.equal(asRead("Doanh thu tăng 12,4% (a|b) #1"), "Doanh thu tăng 12,4% (a|b) #1");
});
