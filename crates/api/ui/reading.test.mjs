// node --test crates/api/ui/reading.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { markText } from "./reading.js";

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
