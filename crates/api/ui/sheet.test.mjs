// node --test crates/api/ui/sheet.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { columnName, rangeLabel, sheetTable, wholeSheets } from "./sheet.js";

/** Segments as the raw-text endpoint gives a sheet's rows (cells placed). */
function sheet(name, page, rows, at = 0, firstRow = 0) {
  const segs = [];
  rows.forEach((cells, i) => {
    const header = i === 0;
    const names = rows[0];
    let text = "";
    const values = [];
    cells.forEach((v, col) => {
      if (v === "") return;
      if (values.length) text += header ? " | " : "; ";
      if (!header) text += `${names[col] || columnName(col)}: `;
      const s = at + Array.from(text).length;
      text += v;
      values.push({ col, char_start: s, char_end: s + Array.from(v).length });
    });
    text += "\n\n";
    const len = Array.from(text).length;
    segs.push({
      segment_index: segs.length, page_idx: page, char_start: at, char_end: at + len, text, header_row: header,
      cell_range: rangeLabel(name, firstRow + i, 0, firstRow + i, cells.length - 1),
      cells: { sheet: name, first_row: firstRow + i, first_col: 0, last_row: firstRow + i, last_col: cells.length - 1, values },
    });
    at += len;
  });
  return segs;
}

const ROWS = [
  ["Chi nhánh", "Nhân viên", "Doanh số"],
  ["Hà Nội", "42", "1.250,5"],
  ["Đà Nẵng", "17", "640,2"],
  ["Cần Thơ", "", "310,75"],
  ["Huế 🏯", "8", "120"],
  ["Vinh", "5", "99"],
  ["Nha Trang", "11", "205"],
];

test("columns and ranges are named as spreadsheets name them", () => {
  assert.deepEqual([0, 25, 26, 701, 702].map(columnName), ["A", "Z", "AA", "ZZ", "AAA"]);
  assert.equal(rangeLabel("Doanh thu", 2, 0, 2, 4), "Doanh thu!A3:E3");
  assert.equal(rangeLabel("S", 1, 1, 1, 1), "S!B2");
});

test("a cited row: the header, the row with its cited cells, two rows each side dimmed", () => {
  const segs = sheet("chi-nhanh", 0, ROWS);
  const row = segs[4]; // Huế: an emoji before the cited cell counts one code point
  const nv = row.cells.values.find((v) => v.col === 1);
  const table = sheetTable(segs, nv.char_start - "Nhân viên: ".length, nv.char_end);
  assert.equal(table.label, "chi-nhanh!A5:C5");
  assert.deepEqual(table.cols, [0, 1, 2]);
  assert.deepEqual(table.header.cells.map((c) => c.text), ["Chi nhánh", "Nhân viên", "Doanh số"]);
  assert.equal(table.header.n, 1);
  assert.deepEqual(table.rows.map((r) => [r.n, r.cited, r.context]), [
    [3, false, true], [4, false, true], [5, true, false], [6, false, true], [7, false, true],
  ]);
  const cited = table.rows[2];
  assert.deepEqual(cited.cells.map((c) => [c.text, c.cited]), [["Huế 🏯", false], ["8", true], ["120", false]]);
  // An empty cell stays in its column.
  assert.deepEqual(table.rows[1].cells.map((c) => c.text), ["Cần Thơ", "", "310,75"]);
});

test("a span over two rows cites both; the first row has no rows before it", () => {
  const segs = sheet("S", 0, ROWS);
  const table = sheetTable(segs, Number(segs[1].char_start), Number(segs[2].char_end) - 2, 1);
  assert.equal(table.label, "S!A2:C3");
  assert.deepEqual(table.rows.map((r) => [r.n, r.cited]), [[2, true], [3, true], [4, false]]);
  assert.ok(table.rows[0].cells.every((c) => c.cited));
});

test("the sheet a span starts on; other formats and empty spans give no table", () => {
  const first = sheet("Một", 0, ROWS.slice(0, 3));
  const at = Number(first[first.length - 1].char_end);
  const second = sheet("Hai", 1, [["Tên", "Số"], ["An", "1"]], at).map((s, i) => ({ ...s, segment_index: first.length + i }));
  const segs = [...first, ...second];
  const table = sheetTable(segs, Number(second[1].char_start), Number(second[1].char_end));
  assert.equal(table.label, "Hai!A2:B2");
  assert.deepEqual(table.header.cells.map((c) => c.text), ["Tên", "Số"]);
  assert.deepEqual(table.rows.map((r) => r.n), [2]);
  assert.equal(sheetTable([{ page_idx: 0, char_start: 0, char_end: 5, text: "Hello" }], 0, 3), null);
  assert.equal(sheetTable(segs, 4, 4), null);
});

test("rows parsed before cells were recorded are shown by their text", () => {
  const segs = sheet("S", 0, ROWS.slice(0, 3)).map((s) => ({ ...s, cells: { ...s.cells, values: [] } }));
  const table = sheetTable(segs, Number(segs[1].char_start), Number(segs[1].char_end));
  assert.equal(table.header.cells, null);
  assert.equal(table.header.text, "Chi nhánh | Nhân viên | Doanh số");
  assert.equal(table.rows[0].cells, null);
  assert.equal(table.rows[0].text, "Chi nhánh: Hà Nội; Nhân viên: 42; Doanh số: 1.250,5");
});

test("a row cut into two segments: each cell's pieces joined, in its column", () => {
  // "A: một; B: x x x x; C: ba" cut after "x x", as the parser cuts a long row.
  const first = "A: một; B: x x";
  const second = " x x; C: ba\n\n";
  const n = (s) => Array.from(s).length;
  const cells = (values) => ({ sheet: "S", first_row: 1, first_col: 0, last_row: 1, last_col: 2, values });
  const segs = [
    { page_idx: 0, char_start: 0, char_end: n(first), text: first, cells: cells([{ col: 0, char_start: 3, char_end: 6 }, { col: 1, char_start: 11, char_end: 14 }]) },
    {
      page_idx: 0, char_start: n(first), char_end: n(first) + n(second), text: second,
      cells: cells([{ col: 1, char_start: 14, char_end: 18 }, { col: 2, char_start: 23, char_end: 25 }]),
    },
  ];
  const table = sheetTable(segs, 20, 25);
  assert.equal(table.header, null);
  assert.deepEqual(table.rows[0].cells.map((c) => [c.text, c.cited]), [["một", false], ["x x x x", false], ["ba", true]]);
  assert.equal(sheetTable(segs, 12, 13).rows[0].cells[1].cited, true);
});

test("a stray cell far to the right widens the sheet's range, not the table", () => {
  const segs = sheet("S", 0, ROWS.slice(0, 4)).map((s) => ({ ...s, cells: { ...s.cells, last_col: 16_383 } }));
  const table = sheetTable(segs, Number(segs[2].char_start), Number(segs[2].char_end));
  assert.deepEqual(table.cols, [0, 1, 2]);
  assert.equal(table.label, "S!A3:XFD3");
  assert.deepEqual(table.rows.map((r) => r.cells.length), [3, 3, 3]);
});

test("only the header cited: the header marked, the first rows under it", () => {
  const segs = sheet("S", 0, ROWS);
  const table = sheetTable(segs, Number(segs[0].char_start), Number(segs[0].char_end) - 2);
  assert.ok(table.header.cited && table.header.cells.every((c) => c.cited));
  assert.deepEqual(table.rows.map((r) => [r.n, r.context]), [[2, true], [3, true]]);
  assert.equal(table.label, "S!A1:C1");
});

test("a spreadsheet from the list: every sheet whole under its header, the empty cells empty, a long one cut with the count left", () => {
  const first = sheet("chi-nhanh", 0, ROWS);
  const end = Number(first[first.length - 1].char_end);
  const second = sheet("quy-2", 1, [["Tháng", "Doanh số"], ["4", "12"], ["5", "15"]], end);
  const sheets = wholeSheets([...first, ...second]);
  assert.deepEqual(sheets.map((s) => [s.sheet, s.page, s.rows.length, s.more]), [["chi-nhanh", 0, 6, 0], ["quy-2", 1, 2, 0]]);
  assert.deepEqual(sheets[0].header.cells.map((c) => c.text), ["Chi nhánh", "Nhân viên", "Doanh số"]);
  assert.deepEqual(sheets[0].rows.map((r) => r.cells.map((c) => c.text)), ROWS.slice(1));
  assert.ok(sheets[0].rows.every((r) => !r.cited && !r.context));
  assert.deepEqual(sheets[1].rows.map((r) => r.n), [2, 3]);
  const cut = wholeSheets(first, 2)[0];
  assert.deepEqual([cut.rows.map((r) => r.cells[0].text), cut.more], [["Hà Nội", "Đà Nẵng"], 4]);
  assert.deepEqual(wholeSheets([{ segment_index: 0, page_idx: 0, char_start: 0, char_end: 3, text: "abc" }]), []);
});
