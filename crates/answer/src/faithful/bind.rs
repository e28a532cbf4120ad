//! A number bound to what it is said of: a section's figure must be a
//! figure of the cited unit its clause is about, not merely of some cited
//! unit. "Doanh thu đạt 187,3 tỷ" over "Doanh thu … đạt 1.245,6 tỷ" and
//! "Lợi nhuận sau thuế đạt 187,3 tỷ" holds only cited numbers, and says a
//! wrong thing; so does "Lợi nhuận gộp năm 2022 là 351,9" over the row
//! "Lợi nhuận gộp — 2022: 312,5; 2023: 351,9".
//!
//! A clause is about the cited unit that shares the most of its words (a
//! table row by its label and column names); a clause with no word of its
//! own to tell (", tăng 8%") is about what the clause before it was. Only
//! when one unit is clearly that, and does not hold the number, is the
//! number bound wrong; a tie says nothing. Across languages words cannot
//! be compared, so the caller does not ask.

use std::collections::HashSet;

use super::figures::{numbers, Figure};

/// One cited unit: a sentence, or a table row read with its header
/// ("Lợi nhuận gộp — 2022: 312,5; 2023: 351,9").
pub(crate) struct CitedUnit {
    pub figures: Vec<Figure>,
    /// Folded content words without numbers (a row's: its label's and its
    /// columns' names).
    pub words: HashSet<String>,
    /// A row's columns: the numbers of each column's name ("2023") and the
    /// numbers of its value.
    pub columns: Vec<(Vec<String>, Vec<String>)>,
}

pub(crate) fn content_words(text: &str) -> HashSet<String> {
    crate::signals::content_words(text).into_iter().filter(|w| !w.chars().any(|c| c.is_ascii_digit())).collect()
}

impl CitedUnit {
    pub fn new(text: &str) -> Self {
        let figures = numbers(text);
        let keys = |t: &str| numbers(t).into_iter().map(|f| f.key).collect::<Vec<_>>();
        match text.split_once(" — ") {
            Some((label, cells)) if cells.contains(": ") || !cells.is_empty() => {
                let mut words = content_words(label);
                let mut columns = Vec::new();
                for cell in cells.split("; ") {
                    match cell.split_once(": ") {
                        Some((name, value)) => {
                            words.extend(content_words(name));
                            columns.push((keys(name), keys(value)));
                        }
                        None => columns.push((Vec::new(), keys(cell))),
                    }
                }
                CitedUnit { figures, words, columns }
            }
            _ => CitedUnit { figures, words: content_words(text), columns: Vec::new() },
        }
    }

    fn holds(&self, key: &str) -> bool {
        self.figures.iter().any(|f| f.key == key)
    }
}

/// Byte spans of the clauses of `text`: cut after `.`, `;`, `!`, `?`, `,`
/// followed by a space, and before "và", "and", "còn", "nhưng", "but",
/// "while" (numbers like "1.245,6" have no space after their marks).
pub(crate) fn clauses(text: &str) -> Vec<(usize, usize)> {
    const JOINS: &[&str] = &["và", "and", "còn", "nhưng", "but", "while", "whereas"];
    let mut cuts = vec![0];
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let next_is_space = chars.peek().is_none_or(|(_, n)| n.is_whitespace());
        if matches!(c, '.' | ';' | '!' | '?' | ',') && next_is_space {
            cuts.push(i + c.len_utf8());
        } else if c.is_whitespace() {
            let rest = &text[i + c.len_utf8()..];
            let word: String = rest.chars().take_while(|c| c.is_alphabetic()).collect::<String>().to_lowercase();
            if JOINS.contains(&word.as_str()) {
                cuts.push(i);
            }
        }
    }
    cuts.push(text.len());
    cuts.dedup();
    cuts.windows(2).map(|w| (w[0], w[1])).filter(|(s, e)| text[*s..*e].chars().any(char::is_alphanumeric)).collect()
}

/// Whether `figure` (a number of `section`) is said of a unit that does
/// not hold it, or of a row's column that does not: the clause it stands
/// in is about another unit than those that hold it, or names another
/// column's year. A sentence that says "lần lượt" / "respectively" pairs
/// its numbers with its subjects by position, which this does not read:
/// such a sentence is not judged.
pub(crate) fn misbound(section: &str, figure: &Figure, units: &[CitedUnit]) -> bool {
    let holders: Vec<usize> = (0..units.len()).filter(|&i| units[i].holds(&figure.key)).collect();
    if holders.is_empty() {
        return false;
    }
    let spans = clauses(section);
    let Some(k) = spans.iter().position(|(s, e)| *s <= figure.start && figure.start < *e) else { return false };
    let lowered = section.to_lowercase();
    if lowered.contains("lần lượt") || lowered.contains("respectively") {
        return false;
    }
    let own = content_words(&section[spans[k].0..spans[k].1]);
    let before = if k > 0 { content_words(&section[spans[k - 1].0..spans[k - 1].1]) } else { HashSet::new() };
    let score = |u: &CitedUnit| (own.intersection(&u.words).count(), before.intersection(&u.words).count());
    let best = units.iter().map(score).max().unwrap_or((0, 0));
    if best == (0, 0) {
        return false;
    }
    let about: Vec<usize> = (0..units.len()).filter(|&i| score(&units[i]) == best).collect();
    let held_by_one_it_is_about: Vec<usize> = about.iter().copied().filter(|i| holders.contains(i)).collect();
    if held_by_one_it_is_about.is_empty() {
        return true;
    }
    // The clause's other numbers that name a column of the row ("năm
    // 2022") must include the column the figure stands in.
    let clause_keys: Vec<String> =
        numbers(&section[spans[k].0..spans[k].1]).into_iter().filter(|f| f.start + spans[k].0 != figure.start).map(|f| f.key).collect();
    held_by_one_it_is_about.iter().all(|&i| {
        let u = &units[i];
        let named: Vec<&String> = clause_keys.iter().filter(|k| u.columns.iter().any(|(name, _)| name.contains(k))).collect();
        !named.is_empty() && !u.columns.iter().any(|(name, values)| values.contains(&figure.key) && named.iter().any(|k| name.contains(k)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wrong(section: &str, number: &str, cited: &[&str]) -> bool {
        let units: Vec<CitedUnit> = cited.iter().map(|t| CitedUnit::new(t)).collect();
        let f = numbers(section).into_iter().find(|f| f.written == number).unwrap();
        misbound(section, &f, &units)
    }

    const ROWS: [&str; 2] = ["Lợi nhuận gộp — 2022: 312,5; 2023: 351,9", "Lợi nhuận sau thuế — 2022: 173,3; 2023: 187,3"];
    const SENTENCES: [&str; 2] =
        ["Doanh thu thuần năm 2023 đạt 1.245,6 tỷ đồng, tăng 12,4% so với năm 2022.", "Lợi nhuận sau thuế tăng 8%."];

    #[test]
    fn a_number_said_of_its_own_row_and_column_is_bound() {
        assert!(!wrong("Lợi nhuận gộp năm 2023 là 351,9 tỷ đồng.", "351,9", &ROWS));
        assert!(!wrong("Lợi nhuận sau thuế năm 2022 đạt 173,3 tỷ.", "173,3", &ROWS));
        assert!(!wrong("Năm 2023 là 351,9 tỷ đồng.", "351,9", &ROWS), "nothing says which row: a tie");
        assert!(!wrong("Doanh thu đạt 1.245,6 tỷ đồng, tăng 12,4%.", "12,4", &SENTENCES));
    }

    #[test]
    fn two_figures_exchanged_or_a_column_mistaken_are_not() {
        assert!(wrong("Lợi nhuận gộp năm 2023 là 187,3 tỷ đồng.", "187,3", &ROWS), "the other row's figure");
        assert!(wrong("Lợi nhuận gộp năm 2022 là 351,9 tỷ đồng.", "351,9", &ROWS), "the other year's column");
        assert!(wrong("Doanh thu đạt 1.245,6 tỷ đồng, tăng 8%.", "8", &SENTENCES), "the clause before says whose rise");
        assert!(!wrong("Doanh thu đạt 1.245,6 tỷ đồng, lợi nhuận sau thuế tăng 8%.", "8", &SENTENCES));
        assert!(wrong("Lợi nhuận sau thuế tăng 12,4%.", "12,4", &SENTENCES));
        assert!(!wrong("Doanh thu và lợi nhuận sau thuế tăng lần lượt 12,4% và 8%.", "12,4", &SENTENCES), "by position: not judged");
    }

    #[test]
    fn clauses_are_cut_at_marks_followed_by_a_space_and_at_joining_words() {
        let text = "Doanh thu đạt 1.245,6 tỷ, tăng 12,4% và lợi nhuận tăng 8%. Hết";
        let parts: Vec<&str> = clauses(text).into_iter().map(|(s, e)| text[s..e].trim()).collect();
        assert_eq!(parts, ["Doanh thu đạt 1.245,6 tỷ,", "tăng 12,4%", "và lợi nhuận tăng 8%.", "Hết"]);
    }
}
