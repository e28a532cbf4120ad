//! The index against plain reference scorers.

use super::*;
use crate::dense::{dot, QUANTIZED_SCAN_FROM};

#[test]
fn the_quantized_first_pass_keeps_nearest_neighbours_exact() {
    // Clustered vectors (many near-ties), exact duplicates (ties by
    // chunk id), a second model, removals and a compaction: above
    // QUANTIZED_SCAN_FROM chunks the result must still be the exact
    // ranking, and every approximate score within its error bound.
    let mut seed = 0x2545f4914f6cdd1du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % 20001) as f32 / 10000.0 - 1.0
    };
    let dim = 48;
    let centres: Vec<Vec<f32>> = (0..8).map(|_| (0..dim).map(|_| next()).collect()).collect();
    let mut index = WorkspaceIndex::new();
    let mut all: Vec<(String, Uuid, String, Vec<f32>)> = Vec::new();
    for d in 0..90u128 {
        let doc = Uuid::from_u128(d);
        let chunks: Vec<IndexedChunk> = (0..60)
            .map(|c| {
                let model = if c % 13 == 0 { "other" } else { "m" }.to_string();
                let centre = &centres[(d as usize + c) % centres.len()];
                let mut values: Vec<f32> = centre.iter().map(|x| x + 0.05 * next()).collect();
                if c % 17 == 0 {
                    values = centre.clone();
                }
                let id = format!("c{d:03}-{c:02}");
                all.push((id.clone(), doc, model.clone(), values.clone()));
                IndexedChunk { vector: Some(ChunkVector { model, values }), ..chunk(&id, doc, &["w"]) }
            })
            .collect();
        index.replace_document(doc, chunks);
    }
    for gone in [5u128, 6, 40] {
        index.remove_document(Uuid::from_u128(gone));
    }
    assert!(index.chunks() >= QUANTIZED_SCAN_FROM, "the test must exercise the quantized pass");
    let cosine = |a: &[f32], b: &[f32]| {
        let d: f64 = a.iter().zip(b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum();
        let n = |v: &[f32]| v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
        d / (n(a) * n(b))
    };
    let live = |doc: &Uuid| ![5u128, 6, 40].contains(&doc.as_u128());
    for round in 0..2 {
        if round == 1 {
            index.compact();
        }
        let model = index.models.iter().position(|m| m == "m").unwrap() as u16;
        for q in 0..12 {
            let query: Vec<f32> = if q % 3 == 0 { centres[q % centres.len()].clone() } else { (0..dim).map(|_| next()).collect() };
            for a in index.quantized.approximate(model, &query, &index.alive) {
                let (_, _, v) = index.vectors[a.slot as usize].as_ref().unwrap();
                let exact = cosine(&query, v) as f32;
                assert!((a.cosine - exact).abs() <= a.error, "slot {}: {} vs {exact} (bound {})", a.slot, a.cosine, a.error);
            }
            // The plain scan's arithmetic (f32 dot, f64 norms), so
            // near-ties order the same way.
            let plain = |v: &[f32]| f64::from(dot(&query, v)) / (f64::from(dot(&query, &query)).sqrt() * f64::from(dot(v, v)).sqrt());
            let mut want: Vec<(String, f64)> =
                all.iter().filter(|(_, doc, model, _)| model == "m" && live(doc)).map(|(id, _, _, v)| (id.clone(), plain(v))).collect();
            want.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            for limit in [1, 10, 100, 700] {
                let got: Vec<String> = index.nearest("m", &query, &[], limit).into_iter().map(|g| g.chunk_id).collect();
                let want: Vec<String> = want.iter().take(limit).map(|w| w.0.clone()).collect();
                assert_eq!(got, want, "query {q}, limit {limit}, round {round}");
            }
        }
    }
}

fn chunk(id: &str, doc: Uuid, words: &[&str]) -> IndexedChunk {
    let mut tf: std::collections::BTreeMap<String, u32> = Default::default();
    for w in words {
        *tf.entry(w.to_string()).or_default() += 1;
    }
    IndexedChunk { chunk_id: id.into(), document_id: doc, term_count: words.len() as u32, terms: tf.into_iter().collect(), vector: None }
}

fn q(term: &str, word: i32, weight: f64) -> QueryTerm {
    QueryTerm { term: term.into(), word, weight }
}

/// BM25 as the SQL scorer defines it, written the plain way: every
/// eligible chunk, every query term.
fn reference(chunks: &[IndexedChunk], terms: &[QueryTerm], scope: &[Uuid], p: Bm25, limit: usize) -> Vec<(String, f64)> {
    let eligible: Vec<&IndexedChunk> = chunks.iter().filter(|c| scope.is_empty() || scope.contains(&c.document_id)).collect();
    if eligible.is_empty() {
        return Vec::new();
    }
    let n = eligible.len() as f64;
    let avgdl = (eligible.iter().map(|c| c.term_count as f64).sum::<f64>() / n).max(1.0);
    let tf_of = |c: &IndexedChunk, t: &str| c.terms.iter().find(|(x, _)| x == t).map(|(_, f)| *f);
    let mut out = Vec::new();
    for c in &eligible {
        let mut per_word: std::collections::BTreeMap<i32, f64> = Default::default();
        for t in terms {
            let Some(tf) = tf_of(c, &t.term) else { continue };
            let df = eligible.iter().filter(|o| tf_of(o, &t.term).is_some()).count() as f64;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            let tf = tf as f64;
            let s = t.weight * idf * tf * (p.k1 + 1.0) / (tf + p.k1 * (1.0 - p.b + p.b * c.term_count as f64 / avgdl));
            let e = per_word.entry(t.word).or_insert(s);
            *e = e.max(s);
        }
        if !per_word.is_empty() {
            out.push((c.chunk_id.clone(), per_word.values().sum::<f64>()));
        }
    }
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    out.truncate(limit);
    out
}

fn assert_same(got: Vec<Scored>, want: Vec<(String, f64)>) {
    assert_eq!(got.len(), want.len(), "{got:?}\n{want:?}");
    for (g, (id, score)) in got.iter().zip(&want) {
        assert!((g.score - score).abs() <= 1e-9 * score.abs().max(1.0), "{} {} vs {id} {score}", g.chunk_id, g.score);
        // Equal scores may come in either order only if they tie.
        if g.chunk_id != *id {
            let theirs = want.iter().find(|(i, _)| *i == g.chunk_id).map(|(_, s)| *s);
            assert!(theirs.is_some_and(|s| (s - g.score).abs() <= 1e-9), "{} ranked where {id} should be", g.chunk_id);
        }
    }
}

#[test]
fn ranks_like_the_plain_definition() {
    let (a, b) = (Uuid::from_u128(1), Uuid::from_u128(2));
    let chunks = vec![
        chunk("a0", a, &["tăng", "~tang", "trưởng", "~truong", "kinh", "tế"]),
        chunk("a1", a, &["kinh", "tế", "kinh", "doanh"]),
        chunk("b0", b, &["tang", "truong", "nhanh"]),
        chunk("b1", b, &["không", "~khong", "liên", "quan"]),
    ];
    let mut index = WorkspaceIndex::new();
    index.replace_document(a, chunks[..2].to_vec());
    index.replace_document(b, chunks[2..].to_vec());
    let terms = vec![q("tăng", 0, 1.0), q("~tang", 0, 0.6), q("kinh", 1, 1.0), q("tế", 2, 1.0)];
    let p = Bm25::default();
    assert_same(index.search(&terms, &[], p, 10), reference(&chunks, &terms, &[], p, 10));
    // Scoped: statistics of document b only.
    assert_same(index.search(&terms, &[b], p, 10), reference(&chunks[2..], &terms, &[b], p, 10));
    assert!(index.search(&[q("absent", 0, 1.0)], &[], p, 10).is_empty());
    assert!(index.search(&terms, &[Uuid::from_u128(9)], p, 10).is_empty());
}

#[test]
fn replacing_and_removing_documents_keeps_statistics_exact() {
    // A deterministic pseudo-random corpus: documents come, are replaced
    // and go; after every change the index ranks like the definition
    // over what is left.
    let mut seed = 0x9e3779b97f4a7c15u64;
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    let vocab: Vec<String> = (0..40).map(|i| format!("w{i}")).collect();
    let mut live: std::collections::BTreeMap<u128, Vec<IndexedChunk>> = Default::default();
    let mut index = WorkspaceIndex::new();
    for round in 0..400 {
        let doc = next(30) as u128;
        let id = Uuid::from_u128(doc);
        if next(5) == 0 {
            index.remove_document(id);
            live.remove(&doc);
        } else {
            let chunks: Vec<IndexedChunk> = (0..1 + next(4))
                .map(|c| {
                    let words: Vec<&str> = (0..1 + next(12)).map(|_| vocab[(next(40) * next(40) / 40) as usize].as_str()).collect();
                    chunk(&format!("{doc}-{round}-{c}"), id, &words)
                })
                .collect();
            index.replace_document(id, chunks.clone());
            live.insert(doc, chunks);
        }
        if round % 7 == 0 {
            index.compact();
        }
        let all: Vec<IndexedChunk> = live.values().flatten().cloned().collect();
        let terms: Vec<QueryTerm> = (0..1 + next(4)).map(|w| q(&vocab[next(40) as usize], w as i32 % 3, 0.5 + next(2) as f64)).collect();
        let p = Bm25 { k1: 1.2, b: 0.75 };
        let limit = [1, 2, 5, 20][round % 4];
        assert_same(index.search(&terms, &[], p, limit), reference(&all, &terms, &[], p, limit));
        let scope = [Uuid::from_u128(next(30) as u128), Uuid::from_u128(next(30) as u128)];
        assert_same(index.search(&terms, &scope, p, 5), reference(&all, &terms, &scope, p, 5));
        assert_eq!(index.chunks() as usize, all.len());
    }
    let before = index.postings();
    index.compact();
    assert!(index.postings() <= before);
    assert_eq!(index.postings(), live.values().flatten().map(|c| c.terms.len()).sum::<usize>());
}

#[test]
fn ties_are_broken_by_chunk_id_even_when_lists_are_skipped() {
    // Many identical chunks (equal scores) among others: the top is the
    // best scores, then the lowest chunk ids, whatever gets pruned.
    let d = Uuid::from_u128(4);
    let mut chunks: Vec<IndexedChunk> = (0..60).map(|i| chunk(&format!("t{:02}", 59 - i), d, &["rare", "common", "filler"])).collect();
    chunks.extend((0..200).map(|i| chunk(&format!("c{i:03}"), d, &["common", "filler", "filler", "more"])));
    let mut index = WorkspaceIndex::new();
    index.replace_document(d, chunks.clone());
    let terms = [q("common", 0, 1.0), q("rare", 1, 1.0), q("filler", 2, 0.6)];
    for limit in [1, 3, 59, 60, 61, 100, 300] {
        let got: Vec<String> = index.search(&terms, &[], Bm25::default(), limit).into_iter().map(|s| s.chunk_id).collect();
        let want: Vec<String> = reference(&chunks, &terms, &[], Bm25::default(), limit).into_iter().map(|(id, _)| id).collect();
        assert_eq!(got, want, "limit {limit}");
    }
}

#[test]
fn nearest_neighbours_are_exact_within_the_scope_and_the_model() {
    let mut seed = 0x853c49e6748fea9bu64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % 2001) as f32 / 1000.0 - 1.0
    };
    let mut index = WorkspaceIndex::new();
    let mut all: Vec<(String, Uuid, String, Vec<f32>)> = Vec::new();
    for d in 0..20u128 {
        let doc = Uuid::from_u128(d);
        let chunks: Vec<IndexedChunk> = (0..5)
            .map(|c| {
                let model = if c == 4 { "other" } else { "m" }.to_string();
                let mut values: Vec<f32> = (0..19).map(|_| next()).collect();
                if d == 3 && c < 2 {
                    // Two chunks with one vector: a tie, broken by chunk id.
                    values = vec![0.5; 19];
                }
                let id = format!("c{d:02}-{c}");
                all.push((id.clone(), doc, model.clone(), values.clone()));
                IndexedChunk { vector: Some(ChunkVector { model, values }), ..chunk(&id, doc, &["w"]) }
            })
            .collect();
        index.replace_document(doc, chunks);
    }
    index.remove_document(Uuid::from_u128(7));
    index.compact();
    let cosine = |a: &[f32], b: &[f32]| {
        let d: f64 = a.iter().zip(b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum();
        let n = |v: &[f32]| v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
        d / (n(a) * n(b))
    };
    for (query, scope) in [(vec![0.5f32; 19], vec![]), ((0..19).map(|_| next()).collect(), vec![Uuid::from_u128(3), Uuid::from_u128(7)])] {
        let mut want: Vec<(String, f64)> = all
            .iter()
            .filter(|(_, doc, model, _)| model == "m" && *doc != Uuid::from_u128(7) && (scope.is_empty() || scope.contains(doc)))
            .map(|(id, _, _, v)| (id.clone(), cosine(&query, v)))
            .collect();
        want.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        want.truncate(6);
        let got = index.nearest("m", &query, &scope, 6);
        assert_eq!(got.iter().map(|g| g.chunk_id.clone()).collect::<Vec<_>>(), want.iter().map(|w| w.0.clone()).collect::<Vec<_>>());
        for (g, w) in got.iter().zip(&want) {
            assert!((g.score - w.1).abs() < 1e-5, "{} {} vs {}", g.chunk_id, g.score, w.1);
        }
    }
    assert!(index.nearest("absent", &[1.0; 19], &[], 5).is_empty());
    assert!(index.nearest("m", &[1.0; 7], &[], 5).is_empty(), "another dimension matches nothing");
    index.drop_vectors();
    assert!(index.nearest("m", &[0.5; 19], &[], 5).is_empty());
    assert_eq!(index.weight_in_postings(), index.postings());
}

#[test]
fn a_limit_keeps_the_best() {
    let d = Uuid::from_u128(3);
    let chunks: Vec<IndexedChunk> =
        (0..50).map(|i| chunk(&format!("c{i:02}"), d, &vec!["x"; 1 + i % 7].into_iter().chain(["y"]).collect::<Vec<_>>())).collect();
    let mut index = WorkspaceIndex::new();
    index.replace_document(d, chunks.clone());
    let terms = [q("x", 0, 1.0)];
    assert_same(index.search(&terms, &[], Bm25::default(), 3), reference(&chunks, &terms, &[], Bm25::default(), 3));
    assert!(index.search(&terms, &[], Bm25::default(), 0).is_empty());
}
