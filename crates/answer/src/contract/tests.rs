//! The contract's readers on the shapes models write.

use super::*;

#[test]
fn the_strict_contract_is_read_as_is() {
    let p = parse(r#"{"answerable": true, "sections": [{"text": "Tăng 12,4%.", "cites": ["S2", "S3"]}]}"#).unwrap();
    assert!(!p.lenient);
    assert!(p.answer.answerable);
    assert_eq!(p.answer.sections[0].cites, ["S2", "S3"]);
    let none = parse(r#"{"answerable": false, "sections": []}"#).unwrap();
    assert!(!none.answer.answerable && none.answer.sections.is_empty() && !none.lenient);
}

#[test]
fn other_shapes_are_read_leniently_and_said_so() {
    let fenced = "Sure:\n```json\n{\"sections\": [{\"text\": \"A.\", \"source_ids\": [\"[S4]\", 7, \"s9\"]}]}\n```";
    let p = parse(fenced).unwrap();
    assert!(p.lenient && p.answer.answerable);
    assert_eq!(p.answer.sections[0].cites, ["S4", "S7", "S9"]);
    let p = parse(r#"{"answerable": "true", "sections": [{"text": "B", "cites": "S1, S2", "quotes": ["x"]}]}"#).unwrap();
    assert_eq!(
        (p.answer.sections[0].cites.clone(), p.answer.sections[0].quote.clone()),
        (vec!["S1".into(), "S2".into()], Some("x".into()))
    );
    // Not answerable: whatever sections came with it are dropped.
    let p = parse(r#"{"answerable": false, "sections": [{"text": "Không rõ", "cites": []}]}"#).unwrap();
    assert!(!p.answer.answerable && p.answer.sections.is_empty());
}

#[test]
fn what_cannot_be_read_is_an_error() {
    assert!(matches!(parse("I think it is 42."), Err(ContractError::NotJson(_))));
    assert!(matches!(parse(r#"{"answerable": true, "sections": [{"text": "a""#), Err(ContractError::NotJson(_))));
    // Answerable with nothing to say is read as not answerable.
    assert!(!parse(r#"{"answerable": true, "sections": [{"text": " ", "cites": []}]}"#).unwrap().answer.answerable);
    assert!(matches!(parse(r#"{"sections": 3}"#), Err(ContractError::Violation(_))));
}

#[test]
fn the_checks_verdict_is_read_or_is_none() {
    assert_eq!(parse_verdict(r#"{"answers": false}"#), Some(false));
    assert_eq!(parse_verdict(r#"Sure: {"answers": "yes"}"#), Some(true));
    assert_eq!(parse_verdict("No."), Some(false));
    assert_eq!(parse_verdict(r#"{"answerable": true, "sections": []}"#), None);
    assert_eq!(verdict_schema()["required"], serde_json::json!(["answers"]));
}

#[test]
fn the_checks_certainty_is_read_where_its_value_begins() {
    use crate::llm::{TokenLogprob, TokenLogprobs};
    let tok = |token: &str, top: &[(&str, f64)]| TokenLogprobs {
        token: token.into(),
        logprob: top.first().map_or(0.0, |t| t.1),
        top_logprobs: top.iter().map(|(t, l)| TokenLogprob { token: (*t).into(), logprob: *l }).collect(),
    };
    // As llama.cpp gave it for a cross-lingual question: " true" 0.81, " false" 0.19.
    let reply = [
        tok("{\"", &[("{\"", -0.09)]),
        tok("answers", &[("answers", -0.001)]),
        tok("\":", &[("\":", -0.0001)]),
        tok(" true", &[(" true", -0.215), (" false", -1.652), ("true", -7.19), (" \"", -8.0)]),
        tok("}", &[("}", -0.003)]),
    ];
    let p = verdict_probability(&reply).unwrap();
    let expected = (-0.215f64).exp() + (-7.19f64).exp();
    assert!((p - expected / (expected + (-1.652f64).exp())).abs() < 1e-9, "{p}");
    // No probabilities (a provider that ignores logprobs), or a reply
    // whose value is not a boolean: no certainty, the verdict decides.
    assert_eq!(verdict_probability(&[]), None);
    let odd = [tok("{\"answers\":", &[]), tok(" maybe", &[(" maybe", -0.1)])];
    assert_eq!(verdict_probability(&odd), None);
    // The chosen token counts even when the provider left it out of its top list.
    let bare = [tok("{\"answers\":", &[]), TokenLogprobs { token: "false".into(), logprob: -0.1, top_logprobs: vec![] }];
    assert_eq!(verdict_probability(&bare), Some(0.0));
}

#[test]
fn the_schema_allows_only_the_prompt_ids() {
    let s = schema(&["S1".into(), "S2".into()]);
    assert_eq!(s["properties"]["sections"]["items"]["properties"]["cites"]["items"]["enum"], serde_json::json!(["S1", "S2"]));
    assert_eq!(s["required"], serde_json::json!(["answerable", "sections"]));
}

#[test]
fn partial_answers_show_the_text_so_far() {
    let full = r#"{"answerable": true, "sections": [{"text": "Doanh thu \"tăng\"\n12,4%.", "cites": ["S2"]}, {"text": "Lợi nhuận", "cites": ["S3"]}]}"#;
    let mut seen = Vec::new();
    for n in 0..=full.chars().count() {
        let prefix: String = full.chars().take(n).collect();
        let (_, sections) = partial_sections(&prefix);
        // Text only grows, section by section.
        if let Some(last) = seen.last() {
            assert!(sections.len() >= *last, "{prefix}");
        }
        seen.push(sections.len());
    }
    let (answerable, sections) = partial_sections(full);
    assert_eq!(answerable, Some(true));
    let written = |text: &str, cites: &[&str]| {
        Some(ModelSection { text: text.into(), cites: cites.iter().map(|c| c.to_string()).collect(), quote: None })
    };
    assert_eq!(
        sections,
        [
            PartialSection {
                text: "Doanh thu \"tăng\"\n12,4%.".into(),
                closed: true,
                written: written("Doanh thu \"tăng\"\n12,4%.", &["S2"])
            },
            PartialSection { text: "Lợi nhuận".into(), closed: true, written: written("Lợi nhuận", &["S3"]) }
        ]
    );
    // The first section closed, the second still being written: the
    // first one's cites are known already.
    let cut = r#"{"answerable": true, "sections": [{"text": "A.", "cites": ["S2", "S3"]}, {"text": "B"#;
    assert_eq!(
        partial_sections(cut).1,
        [
            PartialSection { text: "A.".into(), closed: true, written: written("A.", &["S2", "S3"]) },
            PartialSection { text: "B".into(), ..Default::default() }
        ]
    );
    let cut = r#"{"answerable": true, "sections": [{"text": "Doanh thu tă"#;
    assert_eq!(partial_sections(cut).1, [PartialSection { text: "Doanh thu tă".into(), ..Default::default() }]);
    let cut = r#"{"answerable": true, "sections": [{"text": "A.", "cites": ["S"#;
    assert_eq!(partial_sections(cut).1, [PartialSection { text: "A.".into(), ..Default::default() }]);
    assert_eq!(partial_sections(r#"{"answerable": fal"#), (None, vec![]));
    assert_eq!(partial_sections("garbage"), (None, vec![]));
}
