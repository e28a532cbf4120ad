//! Retrieval logic without I/O: what the query side decides.
//!
//! - [`detect_language`]: Vietnamese, English (or other ASCII Latin) or other.
//! - [`fuse`]: the lexical and dense candidates combined by their
//!   normalised scores, weighted by the query's language against the
//!   candidates' and by how much of the query the lexical side matched;
//!   aware of what the embedder understands (all-MiniLM-L6-v2 is
//!   English-only and strips diacritics, so on Vietnamese its neighbours
//!   are noise: dense hits count only when both the query and the chunk
//!   are in a language the embedder reads; when the query is not, the
//!   fused list is exactly the lexical one).
//! - [`query_terms`]: the lexical terms of a query with their weights.
//! - [`metrics`]: nDCG@k, Recall@k, MRR@k for `eval retrieval`.

mod fusion;
mod language;
pub mod metrics;
mod restore;
mod syllable;
mod terms;

pub use fusion::{fuse, query_coverage, Candidate, Fused, FusionDecision};
pub use language::{detect_language, query_form, EmbedderLanguages, Language, QueryForm, UnknownLanguage};
pub use restore::{needs_restoration, restore_diacritics, Restoration};
pub use syllable::is_vietnamese_syllable;
pub use terms::{document_analysis, query_analysis, query_terms, QueryTerm, FOLDED_WEIGHT, STEM_WEIGHT};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn languages() {
        assert_eq!(detect_language("Doanh thu thuần năm 2023 tăng 12%"), Language::Vi);
        assert_eq!(detect_language("Lợi nhuận gộp đạt 312 tỷ đồng"), Language::Vi);
        // Typed without diacritics, or with only the letters French shares.
        assert_eq!(detect_language("thoi tiet ha noi hom nay"), Language::Vi);
        assert_eq!(detect_language("gia xang giam"), Language::Vi);
        assert_eq!(detect_language("doanh thu quý 3 tăng bao nhiêu"), Language::Vi);
        // Without any mark, by its syllables; names and English terms
        // inside say nothing either way.
        assert_eq!(detect_language("doanh thu nam 2023 la bao nhieu"), Language::Vi);
        assert_eq!(detect_language("Ai la leader cua team backend?"), Language::Vi);
        assert_eq!(detect_language("deadline nộp báo cáo Q3 là khi nào"), Language::Vi);
        assert_eq!(detect_language("Where is Da Nang?"), Language::En);
        assert_eq!(detect_language("Can I go to the bank on a Sunday?"), Language::En);
        assert_eq!(detect_language("Can I pay by card?"), Language::En);
        assert_eq!(detect_language("Can my son buy a toy?"), Language::En);
        assert_eq!(detect_language("Who is due to pay by Monday?"), Language::En);
        assert_eq!(detect_language("How did the company's income change?"), Language::En);
        assert_eq!(detect_language("The board approved a dividend"), Language::En);
        assert_eq!(detect_language("What is the boundary layer thickness?"), Language::En);
        assert_eq!(detect_language("Le café est très bon à Paris, évidemment"), Language::En);
        assert_eq!(detect_language("Доходы выросли"), Language::Other);
        assert_eq!(detect_language("12,4% 2023"), Language::Other);
        // Decomposed input is recognised too.
        assert_eq!(detect_language("tă\u{0300}ng trươ\u{0309}ng"), Language::Vi);
    }

    #[test]
    fn embedder_language_spec() {
        assert_eq!(EmbedderLanguages::parse("*").unwrap(), EmbedderLanguages::All);
        assert_eq!(EmbedderLanguages::parse("en").unwrap(), EmbedderLanguages::Only(vec![Language::En]));
        assert!(EmbedderLanguages::parse("fr").is_err());
    }

    #[test]
    fn query_terms_group_exact_and_folded_per_word() {
        let t = query_terms("doanh thu tăng");
        let words: Vec<(String, usize)> = t.iter().map(|q| (q.term.clone(), q.word)).collect();
        assert!(words.contains(&("tăng".into(), 2)) && words.contains(&("~tang".into(), 2)));
        assert!(words.contains(&("doanh".into(), 0)) && words.contains(&("thu".into(), 1)));
        assert_eq!(t.iter().find(|q| q.term == "~tang").unwrap().weight, FOLDED_WEIGHT);
    }

    #[test]
    fn a_repeated_word_weighs_as_often_as_it_is_written() {
        let t = query_terms("Vegetarian diets help. Vegetarian farming pollutes less than vegetarian critics say.");
        let weight = |term: &str| t.iter().find(|q| q.term == term).map(|q| q.weight);
        assert_eq!(weight("vegetarian"), Some(3.0), "case aside, as indexed");
        assert_eq!(weight("^vegetarian"), Some(3.0 * STEM_WEIGHT), "its stem variant too");
        assert_eq!(weight("diets"), Some(1.0));
        assert_eq!(t.iter().filter(|q| q.term == "vegetarian").count(), 1, "one word, one set of terms");
    }

    #[test]
    fn english_queries_are_stemmed_and_vietnamese_ones_are_not() {
        let t = query_terms("What are the effects of proteins?");
        let terms: Vec<(&str, usize, f64)> = t.iter().map(|q| (q.term.as_str(), q.word, q.weight)).collect();
        assert!(terms.contains(&("effects", 3, 1.0)) && terms.contains(&("^effect", 3, STEM_WEIGHT)), "{terms:?}");
        assert!(terms.contains(&("^protein", 5, STEM_WEIGHT)) && terms.contains(&("protein", 5, STEM_WEIGHT)));
        assert!(terms.contains(&("the", 2, 1.0)), "no word dropped: {terms:?}");
        // Vietnamese without diacritics: no stems.
        let t = query_terms("doanh thu tang bao nhieu");
        assert!(t.iter().all(|q| !q.term.starts_with(rag_lexical::STEM_PREFIX)));
        assert_eq!(t.iter().map(|q| q.word).max(), Some(4));
        assert_eq!(document_analysis("Doanh thu tăng 12% so với cùng kỳ."), rag_lexical::Analysis::Plain);
        assert_eq!(document_analysis("Revenue grew twelve percent."), rag_lexical::Analysis::English);
    }

    fn cands(v: &[(&str, f64, Language)]) -> Vec<Candidate> {
        v.iter().map(|(id, score, language)| Candidate::new(*id, *score, *language)).collect()
    }

    fn order(f: &[Fused]) -> Vec<&str> {
        f.iter().map(|x| x.id.as_str()).collect()
    }

    use Language::{En, Vi};

    #[test]
    fn fusion_rewards_agreement_and_adds_dense_only_hits() {
        let en = EmbedderLanguages::Only(vec![En]);
        let lexical = cands(&[("a", 9.0, En), ("b", 4.0, En), ("c", 3.0, En)]);
        let dense = cands(&[("c", 0.90, En), ("a", 0.89, En), ("z", 0.70, En)]);
        let (f, d) = fuse(&lexical, 0.8, &dense, En, &en, 1.0);
        assert_eq!(order(&f)[..2], ["a", "c"]);
        assert!(order(&f).contains(&"z"));
        assert_eq!((f[0].lexical_rank, f[0].dense_rank), (Some(1), Some(2)));
        assert_eq!((d.same_language_share, d.readable_share, d.dense_share), (1.0, 1.0, 0.5));
    }

    #[test]
    fn a_query_the_embedder_cannot_read_gets_the_lexical_ranking() {
        let en = EmbedderLanguages::Only(vec![En]);
        let dense = cands(&[("z", 0.9, Vi), ("b", 0.8, Vi)]);
        let lexical = cands(&[("a", 5.0, Vi), ("b", 4.0, Vi), ("c", 4.0, Vi)]);
        // Even a best hit matching almost nothing keeps its order.
        let (f, d) = fuse(&lexical, 0.0, &dense, Vi, &en, 1.0);
        assert_eq!(order(&f), ["a", "b", "c"]);
        assert_eq!(d.dense_share, 0.0);
        // An English query: Vietnamese chunks' dense hits are ignored.
        let (f, _) = fuse(&cands(&[("a", 5.0, En), ("b", 4.0, En)]), 0.5, &dense, En, &en, 1.0);
        assert_eq!(order(&f), ["a", "b"]);
        assert!(f.iter().all(|x| x.dense_rank.is_none()));
    }

    #[test]
    fn a_cross_lingual_question_is_ranked_by_the_dense_side() {
        // An English question over a mostly Vietnamese workspace (eval/vi-dev
        // q31): the lexical side finds English passages sharing a word or
        // two; the dense side's best is the Vietnamese passage, by a hair.
        let all = EmbedderLanguages::All;
        let lexical = cands(&[("p27", 3.4, En), ("p29", 2.9, En), ("p28", 2.7, En)]);
        let mut dense = cands(&[("p05", 0.817, Vi), ("p27", 0.808, En), ("p06", 0.808, Vi), ("p28", 0.794, En)]);
        dense.extend((0..16).map(|i| Candidate::new(format!("v{i}"), 0.70, Vi)));
        let (f, d) = fuse(&lexical, 0.12, &dense, En, &all, 1.0);
        assert_eq!(f[0].id, "p05", "{f:?}");
        assert!(d.same_language_share < 0.2 && d.readable_share == 1.0 && d.dense_share > 0.8, "{d:?}");
        // Under reciprocal rank fusion p27, second on the dense side and
        // first on the lexical one, won.
        // An English-only embedder sees no more of the workspace than the
        // lexical side: an even split, over the English chunks it reads.
        let en = EmbedderLanguages::Only(vec![En]);
        let (f, d) = fuse(&lexical, 0.12, &dense, En, &en, 1.0);
        assert!((d.dense_share - 0.5).abs() < 1e-9 && d.readable_share < 0.2, "{d:?}");
        assert!(f.iter().all(|x| x.id != "p05"), "a Vietnamese chunk it cannot read is not fused");
    }

    #[test]
    fn a_strong_lexical_match_wins_over_a_confused_dense_side() {
        // eval/vi-sample q5, typed without diacritics: lexical finds the
        // passage at once; the dense side ranks it sixth among near-ties.
        let all = EmbedderLanguages::All;
        let lexical = cands(&[("d6", 7.4, Vi), ("d10", 2.2, Vi), ("d8", 2.0, Vi)]);
        let dense = cands(&[
            ("d13", 0.802, Vi),
            ("d9", 0.788, Vi),
            ("d2", 0.782, Vi),
            ("d1", 0.780, Vi),
            ("d3", 0.779, Vi),
            ("d6", 0.777, Vi),
            ("d14", 0.70, En),
        ]);
        let (f, _) = fuse(&lexical, 0.67, &dense, Vi, &all, 1.0);
        assert_eq!(f[0].id, "d6", "{f:?}");
        // The same lexical list matching one word in ten, where the dense
        // side does not see its best hit at all, is not trusted.
        let without_d6: Vec<Candidate> = dense.iter().filter(|c| c.id != "d6").cloned().collect();
        let (f, _) = fuse(&lexical, 0.1, &without_d6, Vi, &all, 1.0);
        assert_eq!(f[0].id, "d13", "{f:?}");
    }

    #[test]
    fn a_side_that_cannot_tell_its_top_two_apart_weighs_less() {
        // eval/en-dev q06, "How long is the paid time off for new mothers
        // and fathers?": the lexical side's best two (annual leave, public
        // holidays) are 0.2% apart on "paid" and "time"; e5 puts the
        // parental-leave passage first by 13% of its range.
        let en = EmbedderLanguages::Only(vec![En]);
        let lexical = cands(&[("p05", 6.02, En), ("p27", 6.01, En), ("p23", 5.0, En), ("p06", 2.0, En)]);
        let mut dense = cands(&[("p06", 0.871, En), ("p05", 0.855, En), ("p10", 0.850, En), ("p26", 0.839, En)]);
        dense.extend((0..20).map(|i| Candidate::new(format!("x{i}"), 0.745, En)));
        let (f, d) = fuse(&lexical, 0.25, &dense, En, &en, 1.0);
        assert_eq!(f[0].id, "p06", "{f:?}");
        assert!(d.lexical_gap < 0.01 && (d.dense_gap - 0.127).abs() < 0.01, "{d:?}");
        // A lexical side as sure of its best as the dense side, and matching
        // the whole question, keeps it first.
        let sure = cands(&[("p05", 9.0, En), ("p27", 4.0, En)]);
        let (f, d) = fuse(&sure, 1.0, &dense, En, &en, 1.0);
        assert_eq!(f[0].id, "p05", "{f:?} {d:?}");
    }

    #[test]
    fn a_lexical_hit_the_dense_side_cannot_rank_is_not_zeroed_by_it() {
        // CI on 195e3f7, a workspace moving onto e5: "badges reception"
        // found badges.txt (still on MiniLM, no e5 vector) alone on the
        // lexical side; the dense side held only the re-embedded Vietnamese
        // documents, so the languages gave it all the weight and the
        // dividend passage (cosine 0.75) came first, badges.txt scoring 0.
        let all = EmbedderLanguages::All;
        let mut badges = Candidate::new("badges", 2.17, En);
        badges.dense_can_rank = false;
        for dense in [cands(&[("co-tuc", 0.75, Vi)]), cands(&[("co-tuc", 0.75, Vi), ("bao", 0.71, Vi)])] {
            let (f, d) = fuse(std::slice::from_ref(&badges), 1.0, &dense, En, &all, 1.0);
            assert_eq!(f[0].id, "badges", "{f:?} {d:?}");
            assert!(d.same_language_share > 0.0 && d.readable_share < 1.0 && d.dense_share < 1.0, "{d:?}");
        }
        // The same hit once re-embedded, and ranked by the dense side below
        // the dividend passage, is fused as before: no more than its sides.
        badges.dense_can_rank = true;
        let dense = cands(&[("co-tuc", 0.75, Vi), ("badges", 0.74, En), ("bao", 0.60, Vi)]);
        let (f, d) = fuse(std::slice::from_ref(&badges), 1.0, &dense, En, &all, 1.0);
        let (lexical_side, dense_side) =
            ((1.0 - d.dense_share) * (fusion::GAP_FLOOR + d.lexical_gap), d.dense_share * (fusion::GAP_FLOOR + d.dense_gap));
        let norm = (0.74 - 0.60) / (0.75 - 0.60);
        assert_eq!((f[0].id.as_str(), f[0].dense_rank), ("badges", Some(2)), "{f:?}");
        assert!((f[0].score - (lexical_side + dense_side * norm)).abs() < 1e-9, "{f:?} {d:?}");
    }

    #[test]
    fn the_gap_of_a_lone_hit_is_whole_and_of_no_hit_nothing() {
        let en = EmbedderLanguages::Only(vec![En]);
        let (_, d) = fuse(&cands(&[("a", 3.0, En)]), 1.0, &[], En, &en, 1.0);
        assert_eq!((d.lexical_gap, d.dense_gap), (1.0, 0.0));
        let (f, d) = fuse(&[], 1.0, &cands(&[("a", 0.9, En), ("b", 0.5, En)]), En, &en, 1.0);
        assert_eq!((order(&f), d.lexical_gap, d.dense_gap), (vec!["a", "b"], 0.0, 1.0));
    }

    #[test]
    fn coverage_counts_the_querys_words_found_diacritics_folded() {
        assert_eq!(query_coverage("doanh thu tang", "Doanh thu tăng 12%"), 1.0);
        assert_eq!(query_coverage("How many paid vacation days", "Employees get 12 days"), 0.2);
        assert_eq!(query_coverage("", "anything"), 0.0);
    }
}
