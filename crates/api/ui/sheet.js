// A spreadsheet citation as a table: the cited rows of the sheet under its
// header row, with a few rows around them. Pure functions (no DOM), tested
// with `node --test` (ui/sheet.test.mjs); viewer.js draws the result.
//
// Each segment of a spreadsheet carries `cells` (the raw-text endpoint):
// its sheet, rows and columns (zero-based, inclusive) and each non-empty
// cell's value as characters of the full text, `[char_start, char_end)`.

import { codePoints } from "./spans.js";

/** The letters of zero-based column `col`: 0 is `A`, 26 `AA`. */
export function columnName(col) {
  let n = col + 1;
  let out = "";
  while (n > 0) {
    const rem = (n - 1) % 26;
    out = String.fromCharCode(65 + rem) + out;
    n = Math.floor((n - 1) / 26);
  }
  return out;
}

/** `Doanh thu!A3:E4`, or `Doanh thu!B2` for one cell. */
export function rangeLabel(sheet, firstRow, firstCol, lastRow, lastCol) {
  const first = `${columnName(firstCol)}${firstRow + 1}`;
  if (firstRow === lastRow && firstCol === lastCol) return `${sheet}!${first}`;
  return `${sheet}!${first}:${columnName(lastCol)}${lastRow + 1}`;
}

const overlaps = (a, b, start, end) => a < end && start < Math.max(b, a + 1);

/**
 * The rows of the sheet on page `page`, each gathered from its segments
 * (a long row is cut into several, each with the cells in it):
 * `byRow` (zero-based row -> `{n, header, segs, values}`, `values` each
 * column's pieces) and `textOf` (a cell's text from its pieces).
 */
function gatherRows(segments, page) {
  const byRow = new Map();
  for (const s of segments) {
    if (s.page_idx !== page || !s.cells) continue;
    const n = s.cells.first_row;
    let row = byRow.get(n);
    if (!row) {
      row = { n: n + 1, header: !!s.header_row, segs: [], values: new Map() };
      byRow.set(n, row);
    }
    row.segs.push(s);
    for (const v of s.cells.values ?? []) row.values.set(v.col, [...(row.values.get(v.col) ?? []), { seg: s, ...v }]);
  }
  // A cell's text: its pieces sliced from their segments (code points).
  const textOf = (pieces) =>
    pieces.map((p) => codePoints(p.seg.text).slice(p.char_start - Number(p.seg.char_start), p.char_end - Number(p.seg.char_start)).join("")).join("");
  return { byRow, textOf };
}

/**
 * Every sheet of a spreadsheet as a table (a spreadsheet opened from the
 * list): `[{sheet, page, cols, header, rows, more}]` in the sheets' order,
 * shaped as `sheetTable`'s (nothing cited), at most `maxRows` rows each
 * (`more`: how many rows are left out).
 */
export function wholeSheets(segments, maxRows = 500) {
  const pages = [...new Set(segments.filter((s) => s.cells).map((s) => s.page_idx))];
  return pages.map((page) => {
    const { byRow, textOf } = gatherRows(segments, page);
    const all = [...byRow.entries()].sort((a, b) => a[0] - b[0]).map(([, r]) => r);
    const headerRow = all.find((r) => r.header) ?? null;
    const data = all.filter((r) => !r.header);
    const shown = data.slice(0, maxRows);
    const cols = [...new Set([headerRow, ...shown].filter(Boolean).flatMap((r) => [...r.values.keys()]))].sort((a, b) => a - b);
    const shape = (row) => ({
      n: row.n,
      cited: false,
      context: false,
      text: row.segs.map((s) => s.text).join("").trim(),
      cells: row.values.size > 0
        ? cols.map((col) => ({ col, text: row.values.has(col) ? textOf(row.values.get(col)) : "", cited: false }))
        : null,
    });
    const sheet = segments.find((s) => s.page_idx === page && s.cells)?.cells.sheet ?? "";
    return { sheet, page, cols, header: headerRow ? shape(headerRow) : null, rows: shown.map(shape), more: data.length - shown.length };
  });
}

/**
 * The table of the span `[start, end)` of a spreadsheet's full text, or
 * null when the span touches no spreadsheet row. `context` rows before
 * and after the cited ones are included, marked `context`.
 *
 * Returns `{sheet, label, cols, header, rows}`: `cols` the column indices
 * shown (those with a value in a row shown: a stray cell far to the right
 * of the sheet widens its range, not the table), `header` the header row
 * or null, and each row `{n, cited, context,
 * cells, text}`: `n` its number as the sheet shows it (from 1), `cells` one
 * per column `{col, text, cited}` (text "" for an empty cell), or null when
 * the row was parsed before cells were recorded; then `text` is its text.
 */
export function sheetTable(segments, start, end, context = 2) {
  if (!(end > start)) return null;
  const touched = segments.filter((s) => s.cells && overlaps(Number(s.char_start), Number(s.char_end), start, end));
  if (!touched.length) return null;
  // The sheet the span starts on (a span into the next sheet is labelled
  // by the first, as the server labels it).
  const page = touched[0].page_idx;
  const sheet = touched[0].cells.sheet;
  const { first_col: firstCol, last_col: lastCol } = touched[0].cells;
  const { byRow, textOf } = gatherRows(segments, page);
  let cols = [];
  const shape = (row, cited) => {
    const complete = row.values.size > 0;
    return {
      n: row.n,
      cited,
      context: false,
      text: row.segs.map((s) => s.text).join("").trim(),
      cells: complete
        ? cols.map((col) => {
            const pieces = row.values.get(col);
            if (!pieces) return { col, text: "", cited: false };
            return { col, text: textOf(pieces), cited: pieces.some((p) => overlaps(p.char_start, p.char_end, start, end)) };
          })
        : null,
    };
  };
  const citedRows = new Set(touched.filter((s) => s.page_idx === page).map((s) => s.cells.first_row));
  const all = [...byRow.entries()].sort((a, b) => a[0] - b[0]);
  const headerEntry = all.find(([, r]) => r.header);
  const data = all.filter(([, r]) => !r.header);
  const citedAt = data.map(([n], i) => (citedRows.has(n) ? i : -1)).filter((i) => i >= 0);
  // The cited rows and `context` rows either side; when only the header
  // is cited, the first rows under it.
  const from = citedAt.length ? Math.max(0, citedAt[0] - context) : 0;
  const to = citedAt.length ? Math.min(data.length, citedAt[citedAt.length - 1] + context + 1) : Math.min(data.length, context);
  const shown = data.slice(from, to);
  const used = new Set([headerEntry, ...shown].filter(Boolean).flatMap(([, r]) => [...r.values.keys()]));
  cols = [...used].filter((c) => c >= firstCol && c <= lastCol).sort((a, b) => a - b);
  const header = headerEntry ? shape(headerEntry[1], citedRows.has(headerEntry[0])) : null;
  const rows = shown.map(([n, r]) => {
    const row = shape(r, citedRows.has(n));
    row.context = !row.cited;
    return row;
  });
  const citedNumbers = [...citedRows].sort((a, b) => a - b);
  const label = rangeLabel(sheet, citedNumbers[0], firstCol, citedNumbers[citedNumbers.length - 1], lastCol);
  return { sheet, label, cols, header, rows };
}
