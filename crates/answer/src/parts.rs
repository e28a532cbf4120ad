// ~380 lines of code, the rest tests: telling the parts of a question apart is one algorithm over its connectors and question words.
//! A question that asks several things, split into its parts, so each part
//! is searched and answered on its own evidence and the answer has a
//! section per part ("Nhà hát Mùa hè nằm ở đâu? Ngoài ra, điều gì đã khiến
//! sàn giao dịch Warsaw dừng lại?"). By rule, conservatively: a question is
//! split where a question mark ends one question and another follows, and
//! where "và" / "and" / "also" joins two clauses that each carry their own
//! question word ("Ai là giám đốc và công ty có bao nhiêu nhân viên?").
//! One predicate over two short subjects is two parts as well: "Doanh thu
//! và lợi nhuận năm 2023 tăng bao nhiêu?" asks "Doanh thu năm 2023 tăng bao
//! nhiêu?" and "lợi nhuận năm 2023 tăng bao nhiêu?" (a model answering the
//! whole from one evidence pack often said the first and forgot the
//! second). Not when the predicate relates the two ("khác nhau", "so với",
//! "between") or they are names (people doing something together).

/// At most this many parts: a longer list is answered as one question.
pub const MAX_PARTS: usize = 4;

/// Words that open a follow-on question and say nothing of their own
/// (dropped from the part's start), lower case, with and without marks
/// (not "con": unmarked, it is also "con", a child).
const CONNECTORS: &[&str] = &[
    "ngoài ra",
    "ngoai ra",
    "thêm vào đó",
    "them vao do",
    "bên cạnh đó",
    "ben canh do",
    "thêm nữa",
    "them nua",
    "hơn nữa",
    "hon nua",
    "đồng thời",
    "dong thoi",
    "còn nữa",
    "và",
    "va",
    "còn",
    "additionally",
    "in addition",
    "besides",
    "furthermore",
    "moreover",
    "also",
    "and",
    "plus",
];

// Question words (matched with their marks, "mấy" not "máy", or folded in
// a clause typed without marks; "không" asks only at a clause's end, "có
// ... không?", elsewhere it is "not") and the English auxiliaries that
// open a yes/no question ("Is it open ...?"), which ask only at a clause's
// very start and never after "and", where they continue the clause before
// ("... which magazine and was asked about ...").
use rag_lexical::function_words::{
    AUXILIARIES_EN, INTERROGATIVES_EN as QUESTION_WORDS_EN, INTERROGATIVES_VI as QUESTION_WORDS_VI, PERFECT_EN, QUANTITY_EN,
};

fn lower_words(text: &str) -> Vec<String> {
    rag_lexical::words(text).iter().map(|w| w.to_lowercase()).collect()
}

/// Whether `words` (folded) hold `phrase` (folded, one or more words).
fn holds(words: &[String], phrase: &str) -> bool {
    let p: Vec<&str> = phrase.split(' ').collect();
    words.windows(p.len()).any(|w| w.iter().zip(&p).all(|(a, b)| a == b))
}

/// Whether a clause asks something of its own: a Vietnamese question word,
/// or an English one among its first three words ("Within how many days
/// ..."), or (`opening`: not after "and") an English auxiliary first.
fn asks_as(clause: &str, opening: bool) -> bool {
    let words = lower_words(clause);
    if words.len() < 2 {
        return false;
    }
    let english = rag_retrieval::detect_language(clause) == rag_retrieval::Language::En;
    if english {
        return words.iter().take(3).any(|w| QUESTION_WORDS_EN.contains(&w.as_str()))
            || opening && AUXILIARIES_EN.contains(&words[0].as_str());
    }
    let unmarked = words.iter().all(|w| rag_lexical::fold(w) == *w);
    let form = |w: &str| if unmarked { rag_lexical::fold(w) } else { w.to_string() };
    let words: Vec<String> = words.iter().map(|w| form(w)).collect();
    QUESTION_WORDS_VI.iter().any(|q| holds(&words, &form(q))) || words.last().is_some_and(|w| *w == form("không"))
}

fn asks(clause: &str) -> bool {
    asks_as(clause, true)
}

/// `text` without a leading connector ("Ngoài ra, ", "And ", "Also, ").
fn without_connector(text: &str) -> &str {
    let trimmed = text.trim_start();
    for c in CONNECTORS {
        let n = c.split(' ').count();
        let words: Vec<(usize, &str)> = word_spans(trimmed).into_iter().take(n).collect();
        if words.len() == n && words.iter().map(|(_, w)| w.to_lowercase()).collect::<Vec<_>>().join(" ") == *c {
            let (start, w) = words[n - 1];
            let rest = trimmed[start + w.len()..].trim_start_matches([',', ':', ';', ' ']);
            // "Và" alone is not a question: keep a connector with nothing after it.
            if rest.split_whitespace().count() >= 2 {
                return rest;
            }
        }
    }
    trimmed
}

/// The words of `text` with their byte offsets.
fn word_spans(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    for (i, ch) in text.char_indices() {
        if ch.is_alphanumeric() {
            start.get_or_insert(i);
        } else if let Some(s) = start.take() {
            out.push((s, &text[s..i]));
        }
    }
    if let Some(s) = start {
        out.push((s, &text[s..]));
    }
    out
}

/// The question's sentences: each ends at a question mark (or a full stop
/// or the end), with what follows it.
fn sentences(question: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, ch) in question.char_indices() {
        if matches!(ch, '?' | '？') {
            let end = i + ch.len_utf8();
            out.push(&question[start..end]);
            start = end;
        }
    }
    if !question[start..].trim().is_empty() {
        out.push(&question[start..]);
    }
    out.into_iter().map(str::trim).filter(|s| !s.is_empty()).collect()
}

/// One sentence split where "và" / "and" / "also" / ";" joins two clauses
/// that each ask something.
fn clauses(sentence: &str) -> Vec<String> {
    let spans = word_spans(sentence);
    for (k, (at, w)) in spans.iter().enumerate() {
        if k == 0 || !matches!(w.to_lowercase().as_str(), "và" | "va" | "and" | "also" | "còn") {
            continue;
        }
        // Never inside a quotation ("... to \"get up there and do what she did\"").
        if sentence[..*at].chars().filter(|c| matches!(c, '"' | '“' | '”')).count() % 2 == 1 {
            continue;
        }
        let (left, right) = (sentence[..*at].trim_end_matches([',', ' ', ';']), &sentence[*at..]);
        let right = without_connector(right);
        if asks(left) && asks_as(right, false) {
            let mut out = vec![close(left, sentence)];
            out.extend(clauses(right));
            return out;
        }
    }
    vec![sentence.to_string()]
}

/// A clause cut from `sentence` ends with its question mark.
fn close(clause: &str, sentence: &str) -> String {
    let mark = if sentence.trim_end().ends_with('？') { '？' } else { '?' };
    if sentence.trim_end().ends_with(['?', '？']) && !clause.ends_with(['?', '？']) {
        format!("{clause}{mark}")
    } else {
        clause.to_string()
    }
}

/// Words that make a predicate about two subjects together (compared,
/// summed, related): such a question is not split by [`shared_predicate`].
/// Folded, matched as whole words or phrases.
const RELATING: &[&str] = &[
    "giua",
    "khac",
    "khac nhau",
    "so voi",
    "so sanh",
    "cach nhau",
    "chenh lech",
    "tong",
    "cong",
    "ca hai",
    "chung",
    "cung nhau",
    "lien quan",
    "quan he",
    "ket hop",
    "between",
    "difference",
    "differ",
    "compare",
    "compared",
    "versus",
    "vs",
    "both",
    "together",
    "total",
    "combined",
    "sum",
    "ratio",
    "relationship",
    "related",
];

/// "A và B <predicate>?" with A the clause's first words and B as many
/// words after "và" (coordination is parallel): "Doanh thu và lợi nhuận
/// năm 2023 tăng bao nhiêu?" -> "Doanh thu năm 2023 tăng bao nhiêu?",
/// "lợi nhuận năm 2023 tăng bao nhiêu?". In English the subjects follow
/// the question's opening ("How much did revenue and profit grow?").
/// Both subjects are at most three lower-case words without digits (a
/// capital is a name: "Beyoncé and Jay Z"), neither asks, and the
/// predicate after them does.
fn shared_predicate(sentence: &str) -> Option<[String; 2]> {
    let spans = word_spans(sentence);
    let folded: Vec<String> = spans.iter().map(|(_, w)| rag_lexical::fold(&w.to_lowercase())).collect();
    if RELATING.iter().any(|r| holds(&folded, r)) {
        return None;
    }
    let english = rag_retrieval::detect_language(sentence) == rag_retrieval::Language::En;
    let and = folded.iter().position(|w| if english { w == "and" } else { w == "va" })?;
    // Where the first subject starts: the clause's start in Vietnamese;
    // after the question word and auxiliary in English ("How much did").
    let start = if english {
        let mut i = 0;
        while i < and && (QUESTION_WORDS_EN.contains(&folded[i].as_str()) || QUANTITY_EN.contains(&folded[i].as_str())) {
            i += 1;
        }
        if i == 0 || i >= and || !AUXILIARIES_EN.contains(&folded[i].as_str()) && !PERFECT_EN.contains(&folded[i].as_str()) {
            return None;
        }
        i + 1
    } else {
        0
    };
    let len = and.checked_sub(start).filter(|n| (1..=3).contains(n))?;
    let b_end = and + 1 + len;
    if b_end >= spans.len() {
        return None;
    }
    let plain = |range: std::ops::Range<usize>, first_may_be_capital: bool| {
        spans[range.clone()].iter().enumerate().all(|(k, (_, w))| {
            let capital_ok = first_may_be_capital && k == 0 && range.start == 0;
            !w.chars().any(|c| c.is_ascii_digit()) && (capital_ok || !w.chars().next().is_some_and(char::is_uppercase))
        })
    };
    if !plain(start..and, !english) || !plain(and + 1..b_end, false) {
        return None;
    }
    let a = &sentence[spans[start].0..spans[and - 1].0 + spans[and - 1].1.len()];
    let b = &sentence[spans[and + 1].0..spans[b_end - 1].0 + spans[b_end - 1].1.len()];
    let head = &sentence[..spans[start].0];
    let rest = &sentence[spans[b_end].0..];
    // The English opening asks already (its question word); a Vietnamese
    // predicate must ("tăng bao nhiêu").
    if asks(a) || asks(b) || !english && !asks(rest) {
        return None;
    }
    Some([format!("{head}{a} {rest}"), format!("{head}{b} {rest}")])
}

/// The question's parts, in its order; the question itself when it asks
/// one thing (or more than [`MAX_PARTS`]).
pub fn question_parts(question: &str) -> Vec<String> {
    question_parts_as_asked(question).into_iter().map(|p| p.text).collect()
}

/// One part of a question, and whether it is a whole question by itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuestionPart {
    pub text: String,
    /// Made whole by [`shared_predicate`] ("lợi nhuận năm 2023 tăng bao
    /// nhiêu?"): asked without the earlier parts as its conversation,
    /// which only lead the model back to the earlier part's answer (the
    /// demo's question got the revenue sentence twice). A clause part
    /// ("quê ở đâu?") leans on the part before it.
    pub stands_alone: bool,
}

/// [`question_parts`], each part with whether it stands alone.
pub fn question_parts_as_asked(question: &str) -> Vec<QuestionPart> {
    let mut parts: Vec<QuestionPart> = Vec::new();
    for sentence in sentences(question) {
        let sentence = without_connector(sentence);
        let split = clauses(sentence);
        let (split, whole) = match shared_predicate(sentence) {
            Some(two) if split.len() == 1 => (two.to_vec(), true),
            _ => (split, false),
        };
        for clause in split {
            let clause = clause.trim().to_string();
            // A fragment that asks nothing ("Cảm ơn.", "Please be brief.")
            // belongs to the question before it.
            match parts.last_mut() {
                Some(last) if !asks(&clause) => {
                    last.text.push(' ');
                    last.text.push_str(&clause);
                }
                _ => parts.push(QuestionPart { text: clause, stands_alone: whole }),
            }
        }
    }
    if parts.len() <= 1 || parts.len() > MAX_PARTS {
        return vec![QuestionPart { text: question.trim().to_string(), stands_alone: true }];
    }
    parts
}

/// The answers to the parts of a question (each part's text as asked,
/// and its answer) as one answer: the sections of the parts answered, in
/// the question's order, a sentence two parts cite said once; a part the
/// documents do not answer adds no section (its abstention cites nothing)
/// but is named in `unanswered_parts`, said after the sections. It never
/// takes the other parts down: the whole abstains only when every part
/// does. Usage, reports and times are added up.
pub fn combine_parts(mut parts: Vec<(String, crate::AnswerOutcome)>) -> crate::AnswerOutcome {
    if parts.len() <= 1 {
        return parts.pop().map(|(_, o)| o).unwrap_or_else(|| crate::AnswerOutcome::plain(crate::AnswerMode::NoAnswer, vec![], true));
    }
    let all_abstained = parts.iter().all(|(_, o)| o.abstained);
    let mut rest = parts.split_off(1);
    let (first_part, mut whole) = parts.remove(0);
    if whole.abstained && !all_abstained {
        whole.sections.clear();
        whole.unanswered_parts.push(first_part);
    }
    for (part, o) in rest.drain(..) {
        if o.mode == crate::AnswerMode::Llm {
            whole.mode = crate::AnswerMode::Llm;
        }
        if let Some(u) = &o.usage {
            crate::llm::add_usage(&mut whole.usage, u);
        }
        whole.report.absorb(o.report);
        whole.llm_error = whole.llm_error.or(o.llm_error);
        whole.llm_elapsed = match (whole.llm_elapsed, o.llm_elapsed) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        whole.evidence_units += o.evidence_units;
        whole.evidence_chunks += o.evidence_chunks;
        if o.abstained {
            if !all_abstained {
                whole.unanswered_parts.push(part);
            }
            continue;
        }
        // Two parts often find the same sentence ("Doanh thu ... và lợi
        // nhuận ..." cited for both): it is said once, where it first came.
        for section in o.sections {
            if !whole.sections.iter().any(|kept| same_citations(kept, &section)) {
                whole.sections.push(section);
            }
        }
    }
    whole.abstained = all_abstained;
    whole
}

/// Whether two sections cite exactly the same spans (and cite something).
fn same_citations(a: &crate::Section, b: &crate::Section) -> bool {
    let spans = |s: &crate::Section| {
        let mut v: Vec<(String, u64, u64)> = s.citations.iter().map(|c| (c.document_id.clone(), c.char_start, c.char_end)).collect();
        v.sort();
        v
    };
    !a.citations.is_empty() && spans(a) == spans(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sentence_two_parts_cite_is_said_once() {
        let section = |text: &str, spans: &[(u64, u64)]| {
            crate::fixtures::section(text, spans.iter().map(|(a, b)| crate::fixtures::citation_at("x", *a, *b)).collect())
        };
        let outcome = |sections: Vec<crate::Section>| crate::AnswerOutcome::plain(crate::AnswerMode::Llm, sections, false);
        let whole = combine_parts(vec![
            (
                "Doanh thu tăng bao nhiêu?".into(),
                outcome(vec![section("Doanh thu tăng 12,4%.", &[(84, 157)]), section("Kế hoạch 2024.", &[(300, 340)])]),
            ),
            (
                "lợi nhuận tăng bao nhiêu?".into(),
                outcome(vec![section("Doanh thu thuần tăng 12,4%.", &[(84, 157)]), section("Lợi nhuận tăng 8,1%.", &[(158, 206)])]),
            ),
        ]);
        let texts: Vec<&str> = whole.sections.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(texts, ["Doanh thu tăng 12,4%.", "Kế hoạch 2024.", "Lợi nhuận tăng 8,1%."]);
        assert!(!whole.abstained && whole.unanswered_parts.is_empty());
    }

    /// A part the documents do not answer is said after the answered ones,
    /// never as a section (a section always cites), and never takes them
    /// down; only when every part abstains does the whole.
    #[test]
    fn a_part_not_answered_is_named_not_shown_as_an_uncited_section() {
        let cited = |text: &str| crate::fixtures::section(text, vec![crate::fixtures::citation(text)]);
        let answered = |text: &str| crate::AnswerOutcome::plain(crate::AnswerMode::Llm, vec![cited(text)], false);
        let abstained = |q: &str| crate::AnswerOutcome::plain(crate::AnswerMode::Llm, crate::abstention(q), true);
        for parts in [
            vec![
                ("Giám đốc là ai?".to_string(), abstained("Giám đốc là ai?")),
                ("doanh thu tăng bao nhiêu?".into(), answered("Doanh thu tăng 12,4%.")),
            ],
            vec![
                ("doanh thu tăng bao nhiêu?".to_string(), answered("Doanh thu tăng 12,4%.")),
                ("Giám đốc là ai?".into(), abstained("Giám đốc là ai?")),
            ],
        ] {
            let whole = combine_parts(parts);
            assert!(!whole.abstained);
            assert_eq!(whole.sections.len(), 1);
            assert!(whole.sections.iter().all(|s| !s.citations.is_empty()), "no section without a citation");
            assert_eq!(whole.unanswered_parts, ["Giám đốc là ai?"]);
            assert_eq!(whole.text(), "Doanh thu tăng 12,4%.\n\nTài liệu của bạn không đề cập đến: Giám đốc là ai?");
        }
        let whole = combine_parts(vec![
            ("Who is the CEO?".into(), abstained("Who is the CEO?")),
            ("Who owns it?".into(), abstained("Who owns it?")),
        ]);
        assert!(whole.abstained && whole.unanswered_parts.is_empty());
        assert_eq!(whole.text(), "Your documents do not say.");
    }

    #[test]
    fn two_questions_are_two_parts() {
        assert_eq!(
            question_parts("Nhà hát Mùa hè nằm ở đâu? Ngoài ra, điều gì đã khiến sàn giao dịch chứng khoán Warsaw dừng lại?"),
            ["Nhà hát Mùa hè nằm ở đâu?", "điều gì đã khiến sàn giao dịch chứng khoán Warsaw dừng lại?"]
        );
        assert_eq!(
            question_parts("When was the company founded? Also, who is its director?"),
            ["When was the company founded?", "who is its director?"]
        );
        assert_eq!(
            question_parts("Giám đốc là ai? Công ty có bao nhiêu nhân viên?"),
            ["Giám đốc là ai?", "Công ty có bao nhiêu nhân viên?"]
        );
    }

    #[test]
    fn clauses_that_each_ask_are_parts() {
        assert_eq!(
            question_parts("Ai là giám đốc và công ty có bao nhiêu nhân viên?"),
            ["Ai là giám đốc?", "công ty có bao nhiêu nhân viên?"]
        );
        assert_eq!(
            question_parts("Nhân viên được nghỉ phép bao nhiêu ngày và cần báo trước mấy ngày?"),
            ["Nhân viên được nghỉ phép bao nhiêu ngày?", "cần báo trước mấy ngày?"]
        );
        assert_eq!(
            question_parts("Who founded the company, and when did it open its first branch?"),
            ["Who founded the company?", "when did it open its first branch?"]
        );
    }

    #[test]
    fn one_question_stays_whole() {
        for q in [
            "Doanh thu và lợi nhuận năm 2023 chênh lệch bao nhiêu?",
            "Sự khác nhau giữa hợp đồng và phụ lục là gì?",
            "Hà Nội và Đà Nẵng cách nhau bao xa?",
            "What is the difference between revenue and profit?",
            "When did Beyoncé and Jay Z marry?",
            "Mật khẩu phải dài bao nhiêu ký tự?",
            "Con của Lê Hoàng Diệp Thảo là ai?",
            "doanh thu nam 2023 la bao nhieu",
            "Tóm tắt tài liệu này.",
            "Còn năm 2022 thì sao?",
        ] {
            assert_eq!(question_parts(q), [q.trim()], "{q}");
        }
    }

    #[test]
    fn one_predicate_over_two_subjects_is_asked_of_each() {
        assert_eq!(
            question_parts("Doanh thu và lợi nhuận năm 2023 tăng bao nhiêu?"),
            ["Doanh thu năm 2023 tăng bao nhiêu?", "lợi nhuận năm 2023 tăng bao nhiêu?"]
        );
        assert_eq!(
            question_parts("Giá vàng và giá bạc hôm nay là bao nhiêu?"),
            ["Giá vàng hôm nay là bao nhiêu?", "giá bạc hôm nay là bao nhiêu?"]
        );
        assert_eq!(
            question_parts("doanh thu va loi nhuan nam 2023 la bao nhieu"),
            ["doanh thu nam 2023 la bao nhieu", "loi nhuan nam 2023 la bao nhieu"]
        );
        assert_eq!(
            question_parts("How much did revenue and profit grow in 2023?"),
            ["How much did revenue grow in 2023?", "How much did profit grow in 2023?"]
        );
        assert!(question_parts_as_asked("Doanh thu và lợi nhuận năm 2023 tăng bao nhiêu?").iter().all(|p| p.stands_alone));
        let leaning = question_parts_as_asked("Thủ tướng sinh năm nào và quê ở đâu?");
        assert_eq!(leaning.iter().map(|p| p.stands_alone).collect::<Vec<_>>(), [false, false], "'quê ở đâu?' needs the part before it");
    }

    #[test]
    fn a_trailing_remark_stays_with_its_question() {
        assert_eq!(
            question_parts("Giám đốc sinh năm nào? Cảm ơn bạn nhiều."),
            ["Giám đốc sinh năm nào? Cảm ơn bạn nhiều."],
            "one question and a thank-you"
        );
    }

    #[test]
    fn too_many_parts_are_one_question() {
        let q = "Ai? Cái gì? Ở đâu? Khi nào? Tại sao?";
        assert_eq!(question_parts(q), [q]);
    }
}

#[cfg(test)]
mod corpus_tests {
    /// The dev sets' questions: those that ask two things (`c..` ids) are
    /// split in two, every other one stays whole; and so do the 400
    /// SQuAD questions of the English calibration set (each asks one thing,
    /// some with "and" inside: "... which magazine and was asked about
    /// feminism?").
    #[test]
    fn the_dev_sets_questions_are_split_as_they_ask() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../eval");
        let (mut singles, mut compound) = (0, 0);
        for set in ["vi-dev", "en-dev", "calibration/en-squad"] {
            let text = std::fs::read_to_string(format!("{root}/{set}/queries.jsonl")).unwrap();
            for line in text.lines() {
                let v: serde_json::Value = serde_json::from_str(line).unwrap();
                let (id, q) = (v["_id"].as_str().unwrap(), v["text"].as_str().unwrap());
                let parts = super::question_parts(q);
                if id.starts_with('c') {
                    assert_eq!(parts.len(), 2, "{id} {q:?} -> {parts:?}");
                    compound += 1;
                } else {
                    assert_eq!(parts, [q.trim()], "{id}");
                    singles += 1;
                }
            }
        }
        assert!(compound >= 20 && singles >= 490, "{compound} compound, {singles} single");
    }
}
