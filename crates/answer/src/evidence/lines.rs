//! What a line of a chunk is: a Markdown heading, a table row, the rule
//! under a table's header; and the header row a table row is shown with.

/// A Markdown heading (`# …`, `## …`).
pub(super) fn is_heading(line: &str) -> bool {
    let t = line.trim_start();
    let hashes = t.chars().take_while(|c| *c == '#').count();
    (1..=6).contains(&hashes) && t.chars().nth(hashes).is_some_and(char::is_whitespace)
}

/// A line of a pipe table (Markdown, or cells joined by ` | ` as the HTML
/// parser writes them).
pub fn is_table_row(line: &str) -> bool {
    let t = line.trim();
    (t.starts_with('|') && t.ends_with('|') && t.len() > 1) || t.matches(" | ").count() >= 2
}

/// `|---|:--:|`: the rule under a Markdown table's header.
pub(super) fn is_rule_row(line: &str) -> bool {
    let t = line.trim();
    t.contains('-') && t.chars().all(|c| matches!(c, '|' | '-' | ':' | ' ' | '+'))
}

fn cells(row: &str) -> Vec<&str> {
    let t = row.trim();
    let t = t.strip_prefix('|').unwrap_or(t);
    let t = t.strip_suffix('|').unwrap_or(t);
    t.split('|').map(str::trim).collect()
}

/// The line (in chars, with its line break excluded) that holds `at`.
fn line_at(chars: &[char], at: usize) -> (usize, usize) {
    let start = chars[..at].iter().rposition(|c| *c == '\n').map_or(0, |n| n + 1);
    let end = chars[at..].iter().position(|c| *c == '\n').map_or(chars.len(), |n| at + n);
    (start, end)
}

pub(super) fn text_of(chars: &[char], (s, e): (usize, usize)) -> String {
    chars[s..e].iter().collect()
}

/// The row starting at `row_start` heads a table: the first line of a run
/// of at least two rows, and for a Markdown table (rows in `|`) followed by
/// its `|---|` rule. A chunk that starts in the middle of a Markdown table
/// has no header in it: its first row is a data row, not a header.
pub(super) fn is_header_row(chars: &[char], row_start: usize) -> bool {
    let line = line_at(chars, row_start);
    // At a line break, `line_at` gives the line it ends.
    let above = (line.0 > 0).then(|| line_at(chars, line.0 - 1));
    let below = (line.1 < chars.len()).then(|| line_at(chars, line.1 + 1));
    let text = text_of(chars, line);
    let markdown = text.trim_start().starts_with('|');
    is_table_row(&text)
        && !above.is_some_and(|a| is_table_row(&text_of(chars, a)))
        && below.is_some_and(|b| is_table_row(&text_of(chars, b)) && (!markdown || is_rule_row(&text_of(chars, b))))
}

/// The span (in chars, trimmed) of the header row of the table whose row
/// starts at `row_start`: the first line of the run of table rows above
/// it. None for a row with no table row above it.
pub(super) fn table_header(chars: &[char], row_start: usize) -> Option<(usize, usize)> {
    let mut top = line_at(chars, row_start);
    while top.0 > 0 {
        let prev = line_at(chars, top.0 - 1);
        if !is_table_row(&text_of(chars, prev)) {
            break;
        }
        top = prev;
    }
    let header = text_of(chars, top);
    if top.0 >= line_at(chars, row_start).0 || is_rule_row(&header) || !is_header_row(chars, top.0) {
        return None;
    }
    let start = top.0 + (header.chars().count() - header.trim_start().chars().count());
    let end = top.1 - (header.chars().count() - header.trim_end().chars().count());
    Some((start, end))
}

/// "Lợi nhuận gộp — 2022: 312,5; 2023: 351,9" from the header row
/// "| Chỉ tiêu | 2022 | 2023 |" and the row "| Lợi nhuận gộp | 312,5 | 351,9 |".
pub fn labelled_row(header: &str, row: &str) -> String {
    let (names, values) = (cells(header), cells(row));
    let Some((label, rest)) = values.split_first() else { return row.trim().to_string() };
    let pairs: Vec<String> = rest
        .iter()
        .enumerate()
        .filter(|(_, v)| !v.is_empty())
        .map(|(i, v)| match names.get(i + 1).filter(|n| !n.is_empty()) {
            Some(name) => format!("{name}: {v}"),
            None => v.to_string(),
        })
        .collect();
    format!("{label} — {}", pairs.join("; "))
}
