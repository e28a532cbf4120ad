//! Figures the system recomputes: a number a section gives that its
//! citations do not state is accepted only when it is a difference, a
//! percent change, a share, a ratio or a sum of cited numbers, rounded as
//! written, and the computation is then shown beside it.
//!
//! The operands are numbers of one cited unit (a sentence, or a table row
//! read with its header), or of two units about the same thing (their
//! words mostly shared: "Doanh thu năm 2022 …" and "Doanh thu năm 2023
//! …"): a percent change between a profit and a revenue is a number, but
//! not one a document implies. Years label figures; they are computed with
//! only as years ("33 năm" from 1990 and 2023).

use super::figures::Figure;

/// A recomputed figure: the section's number and how the cited numbers
/// give it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Derivation {
    /// "(351,9 − 312,5) / 312,5 × 100 = 12,61": the operands as the
    /// document writes them, the result one decimal finer than the
    /// section's number, so its rounding shows.
    pub shown: String,
}

/// One cited unit's numbers and its words (folded content words), to tell
/// which units are about the same thing.
pub(crate) struct Operands<'a> {
    pub figures: Vec<&'a Figure>,
    pub words: std::collections::HashSet<String>,
}

#[derive(Clone, Copy)]
enum Op {
    Difference,
    Sum,
    PercentChange,
    Share,
    Ratio,
}

/// Whether `written`, with its decimals, is `value` rounded.
fn rounds_to(written: &Figure, value: f64) -> bool {
    let half = 0.5 * 10f64.powi(-(written.decimals as i32));
    (value - written.value).abs() <= half * (1.0 + 1e-9)
}

fn format(value: f64, decimals: usize, comma: bool) -> String {
    let s = format!("{value:.decimals$}");
    if comma {
        s.replace('.', ",")
    } else {
        s
    }
}

/// Whether the two units are about the same thing: at least half of the
/// smaller one's words are in the other.
fn same_subject(a: &Operands, b: &Operands) -> bool {
    let smaller = a.words.len().min(b.words.len());
    smaller > 0 && a.words.intersection(&b.words).count() * 2 >= smaller
}

/// How `target` is computed from the numbers of `units`, if it is.
/// `ratio_word`: the section says "lần" / "times" after the number (a
/// ratio is accepted only then: too many numbers are some ratio).
pub(crate) fn derive(target: &Figure, units: &[Operands], ratio_word: bool) -> Option<Derivation> {
    let comma = target.decimal_comma || units.iter().flat_map(|u| &u.figures).any(|f| f.decimal_comma);
    let fine = target.decimals + 1;
    let mut pairs: Vec<(&Figure, &Figure)> = Vec::new();
    for (i, a) in units.iter().enumerate() {
        for (j, b) in units.iter().enumerate() {
            if i != j && !same_subject(a, b) {
                continue;
            }
            for x in &a.figures {
                for y in &b.figures {
                    if !std::ptr::eq(*x, *y) {
                        pairs.push((x, y));
                    }
                }
            }
        }
    }
    for (x, y) in pairs {
        // Years with years only (a duration), other numbers with others.
        if x.is_year() != y.is_year() || x.percent != y.percent {
            continue;
        }
        let ops: &[Op] = if x.is_year() {
            &[Op::Difference]
        } else if target.percent && !x.percent {
            &[Op::PercentChange, Op::Share]
        } else if ratio_word {
            &[Op::Ratio]
        } else {
            &[Op::Difference, Op::Sum]
        };
        for op in ops {
            let (value, shown) = match op {
                // Written larger first; the value is the same.
                Op::Difference if y.value > x.value => (y.value - x.value, format!("{} − {}", y.written, x.written)),
                Op::Difference => (x.value - y.value, format!("{} − {}", x.written, y.written)),
                Op::Sum => (x.value + y.value, format!("{} + {}", x.written, y.written)),
                Op::PercentChange if x.value != 0.0 => {
                    ((y.value - x.value).abs() / x.value * 100.0, format!("({} − {}) / {} × 100", y.written, x.written, x.written))
                }
                Op::Share if y.value != 0.0 => (x.value / y.value * 100.0, format!("{} / {} × 100", x.written, y.written)),
                Op::Ratio if y.value != 0.0 => (x.value / y.value, format!("{} / {}", x.written, y.written)),
                _ => continue,
            };
            if rounds_to(target, value) {
                return Some(Derivation { shown: format!("{shown} = {}", format(value, fine, comma)) });
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::figures::numbers;
    use super::*;

    fn words(text: &str) -> std::collections::HashSet<String> {
        crate::signals::content_words(text).into_iter().filter(|w| !w.chars().any(|c| c.is_ascii_digit())).collect()
    }

    fn check(section: &str, cited: &[&str]) -> Option<String> {
        let figures: Vec<Vec<Figure>> = cited.iter().map(|t| numbers(t)).collect();
        let units: Vec<Operands> =
            cited.iter().zip(&figures).map(|(t, f)| Operands { figures: f.iter().collect(), words: words(t) }).collect();
        let target = numbers(section).into_iter().next().unwrap();
        let ratio = section.contains("lần") || section.contains("times");
        derive(&target, &units, ratio).map(|d| d.shown)
    }

    #[test]
    fn a_percent_change_a_difference_a_sum_and_a_ratio_are_recomputed_with_their_rounding() {
        let row = "Lợi nhuận gộp — 2022: 312,5; 2023: 351,9";
        assert_eq!(check("tăng 12,6%", &[row]).as_deref(), Some("(351,9 − 312,5) / 312,5 × 100 = 12,61"));
        assert_eq!(check("tăng 39,4 tỷ", &[row]).as_deref(), Some("351,9 − 312,5 = 39,40"));
        assert_eq!(check("tổng 664,4 tỷ", &[row]).as_deref(), Some("312,5 + 351,9 = 664,40"));
        assert_eq!(check("gấp 1,13 lần", &[row]).as_deref(), Some("351,9 / 312,5 = 1,126"));
        assert_eq!(
            check("revenue rose 12.6%", &["Revenue — 2022: 312.5; 2023: 351.9"]).as_deref(),
            Some("(351.9 − 312.5) / 312.5 × 100 = 12.61")
        );
        // Years give durations only.
        assert_eq!(check("sau 33 năm", &["Công ty thành lập năm 1990 và niêm yết năm 2023."]).as_deref(), Some("2023 − 1990 = 33.0"));
    }

    #[test]
    fn a_figure_no_computation_gives_is_not_accepted() {
        // The demo's profit: 312,5 -> 351,9 is +12,6%, not 38,6%.
        let rows = ["Lợi nhuận gộp — 2022: 312,5; 2023: 351,9", "Lợi nhuận sau thuế — 2022: 173,3; 2023: 187,3"];
        assert_eq!(check("tăng 38,6%", &rows), None);
        assert_eq!(check("tăng 12,7%", &rows), None, "rounded wrong");
        // Nor across two units about different things: profit after tax
        // over gross profit is a share no document states.
        assert_eq!(check("chiếm 53,2%", &["Lợi nhuận gộp đạt 351,9 tỷ.", "Cổ tức chi trả 187,3 tỷ."]), None);
        assert_eq!(
            check("chiếm 53,2%", &["Doanh thu đạt 351,9 tỷ, lợi nhuận đạt 187,3 tỷ."]).as_deref(),
            Some("187,3 / 351,9 × 100 = 53,23")
        );
        // A ratio only when the section says one.
        assert_eq!(check("đạt 1,13 tỷ", &["Lợi nhuận gộp — 2022: 312,5; 2023: 351,9"]), None);
    }
}
