//! `rag-dev eval injection`: instructions to the model inside documents
//! (issue 61), recognised by the phrase filter
//! (`rag_answer::injection::is_instruction`), by the classifier over the
//! in-process multilingual-e5-small embedding
//! (`rag_answer::injection::classifier`), and by either, on the sets built
//! by `eval/injection/build-sets.py`; with `--judge`, also by the answer
//! LLM's own judgement (`injection_judge.rs`), its threshold chosen on the
//! development half. With `--fit`, the classifier is first
//! fitted on the development half only (prefix, penalty and threshold
//! chosen on folds of it grouped by the `group` column) and written to
//! `crates/answer/src/injection/classifier.json`; the reporting half is
//! never fitted or chosen on.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use clap::Args;
use rag_answer::injection::classifier::{ClassifierWeights, Fitting, HeldOut, HiddenLayer, InstructionClassifier};
use rag_answer::injection::is_instruction;
use rag_app::config::Settings;
use serde_json::json;

use super::injection_embed::{weights_text, Embeddings};
use super::injection_fit::{describe, fold_of, out_of_fold, threshold, Model, Spec};
use super::injection_judge::Judge;

#[derive(Args, Debug)]
pub struct InjectionArgs {
    /// The development half: fitted and chosen on (with --fit), reported only with --dev-too.
    #[arg(long, default_value = "eval/injection/dev.tsv")]
    dev: PathBuf,
    /// The reporting half: only ever reported on.
    #[arg(long, default_value = "eval/injection/report.tsv")]
    report: PathBuf,
    /// Directory of multilingual-e5-small.
    #[arg(long, env = "E5_MODEL_DIR", default_value = "/var/cache/rag-engine/models/multilingual-e5-small")]
    model_dir: PathBuf,
    /// Fit the classifier on the development half and write it to --out first.
    #[arg(long)]
    fit: bool,
    /// Where --fit writes the weights.
    #[arg(long, default_value = "crates/answer/src/injection/classifier.json")]
    out: PathBuf,
    /// Folds of the development half (grouped) that choose prefix, penalty and threshold.
    #[arg(long, default_value_t = 5)]
    folds: usize,
    /// The threshold is the lowest at which at most this share of each language's ordinary development rows is flagged (out of fold).
    #[arg(long, default_value_t = 0.005)]
    max_false_flags: f64,
    /// L2 penalties tried (over standardised dimensions).
    #[arg(long, value_delimiter = ',', default_value = "1,10,100")]
    l2: Vec<f64>,
    /// Also try a network of one hidden layer (ReLU) of --hidden units, for each --mlp-l2 weight decay.
    #[arg(long)]
    mlp: bool,
    /// Units of the hidden layer (with --mlp).
    #[arg(long, default_value_t = 32)]
    hidden: usize,
    /// Weight decays tried for the network (with --mlp).
    #[arg(long, value_delimiter = ',', default_value = "0.001,0.01")]
    mlp_l2: Vec<f64>,
    /// Report the development half too.
    #[arg(long)]
    dev_too: bool,
    /// Keep embeddings in this file between runs (keyed by model, precision, prefix and text).
    #[arg(long)]
    cache: Option<PathBuf>,
    /// Also ask the answer LLM (ANSWER_LLM_*) of every sentence of both
    /// halves whether it speaks to the assistant; its threshold is chosen on
    /// the development half by the --max-false-flags rule.
    #[arg(long)]
    judge: bool,
    /// Keep the LLM's judgements in this file between runs (JSON lines, keyed by model, prompt and sentence).
    #[arg(long)]
    judge_cache: Option<PathBuf>,
    /// Write every scored row of the halves reported (id, set, language,
    /// label, category, each layer's flag and the probabilities) to this
    /// file, one JSON object per line: to join with other runs
    /// (`eval/injection/ask.py`).
    #[arg(long)]
    scores: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// The subsets figures are given for (as `examples/injection_sets.rs`).
const VIEWS: &[(&str, &[&str])] = &[
    ("all", &[]),
    ("without encoding", &["bipia-encoding/"]),
    ("without encoding, task-irrelevant, code", &["bipia-encoding/", "bipia-task-irrelevant/", "bipia-code/"]),
];
const PREFIXES: &[&str] = &["query: ", "passage: "];
const LANGS: &[&str] = &["vi", "en"];

struct Row {
    id: String,
    lang: String,
    injection: bool,
    category: String,
    group: String,
    sentence: String,
}

fn read_set(path: &Path) -> anyhow::Result<Vec<Row>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().context("empty set")?.split('\t').collect();
    let col = |name: &str| head.iter().position(|h| *h == name).with_context(|| format!("no column {name}"));
    let c = [col("id")?, col("lang")?, col("label")?, col("category")?, col("group")?, col("sentence")?];
    let mut rows = vec![];
    for (n, line) in lines.enumerate() {
        let cells: Vec<&str> = line.split('\t').collect();
        let cell = |i: usize| cells.get(c[i]).map(|s| s.to_string()).with_context(|| format!("line {}: too few cells", n + 2));
        let label = cell(2)?;
        anyhow::ensure!(label == "injection" || label == "ordinary", "line {}: label {label}", n + 2);
        rows.push(Row {
            id: cell(0)?,
            lang: cell(1)?,
            injection: label == "injection",
            category: cell(3)?,
            group: cell(4)?,
            sentence: cell(5)?,
        });
    }
    Ok(rows)
}

pub async fn eval_injection(s: &Settings, args: InjectionArgs) -> anyhow::Result<ExitCode> {
    let dev = read_set(&args.dev)?;
    let report = read_set(&args.report)?;
    let mut emb = Embeddings::load(&args.model_dir, s, args.cache.clone())?;
    let mut out = json!({});
    let classifier = if args.fit {
        let (c, choices) = fit_on_dev(&args, &dev, &mut emb)?;
        out["fit"] = choices;
        c
    } else {
        InstructionClassifier::embedded().context("the embedded classifier")?
    };
    let w = classifier.weights();
    let shape = match &w.hidden {
        Some(h) => format!("one hidden layer of {} units, weight decay {}", h.bias.len(), w.fitted.l2),
        None => format!("linear, L2 {}", w.fitted.l2),
    };
    if !args.json {
        println!(
            "classifier: {}, prefix {:?}, {shape}, threshold {:.4}, fitted {} on {} ({} injections, {} ordinary)",
            classifier.model(),
            classifier.prefix(),
            classifier.threshold(),
            w.fitted.date,
            w.fitted.set,
            w.fitted.injections,
            w.fitted.ordinary,
        );
    }
    out["classifier"] = json!({"model": classifier.model(), "prefix": classifier.prefix(), "shape": shape,
        "threshold": classifier.threshold(), "fitted": w.fitted});
    // The judge's threshold, from its scores of the development half.
    let mut judge = None;
    if args.judge {
        let client = s.answer_llm()?.context("--judge needs the answer LLM (ANSWER_LLM_BASE_URL, ANSWER_LLM_MODEL, ANSWER_LLM_API_KEY)")?;
        let mut j = Judge::new(client, args.judge_cache.clone())?;
        let sentences: Vec<&str> = dev.iter().map(|r| r.sentence.as_str()).collect();
        let ps = j.judge(&sentences, "dev").await?;
        let ys: Vec<bool> = dev.iter().map(|r| r.injection).collect();
        let langs: Vec<&str> = dev.iter().map(|r| r.lang.as_str()).collect();
        let t = threshold(&ps, &ys, &langs, args.max_false_flags);
        let classes: Vec<&str> = dev.iter().map(|r| r.category.split('/').next().unwrap_or("")).collect();
        eprint!("the judge on the development half:\n{}", describe(&ps, &ys, &langs, &classes, t));
        if !args.json {
            println!(
                "judge: {}, threshold {t:.4} (chosen on {}: at most {:.1}% of each language's ordinary rows flagged)",
                j.model(),
                args.dev.display(),
                100.0 * args.max_false_flags
            );
        }
        out["judge"] = json!({"model": j.model(), "threshold": t, "chosen_on": args.dev.display().to_string()});
        judge = Some((j, t));
    }
    let mut sets = vec![("report", &args.report, &report)];
    if args.dev_too {
        sets.insert(0, ("dev", &args.dev, &dev));
    }
    let sets_first = sets[0].0;
    for (name, path, rows) in sets {
        let sentences: Vec<&str> = rows.iter().map(|r| r.sentence.as_str()).collect();
        let vectors = emb.embed(classifier.prefix(), &sentences, name)?;
        let judged: Vec<Option<f64>> = match judge.as_mut() {
            Some((j, _)) => j.judge(&sentences, name).await?.into_iter().map(Some).collect(),
            None => vec![None; rows.len()],
        };
        let judge_threshold = judge.as_ref().map(|(_, t)| *t);
        let scored: Vec<Scored> = rows
            .iter()
            .zip(&vectors)
            .zip(&judged)
            .map(|((row, v), j)| Scored {
                row,
                phrase: is_instruction(&row.sentence),
                p: classifier.probability(v),
                classifier: classifier.flags(v),
                judge_p: *j,
                judge: j.zip(judge_threshold).is_some_and(|(p, t)| p >= t),
            })
            .collect();
        if let Some(file) = &args.scores {
            write_scores(file, name, &scored, name != sets_first)?;
        }
        out[name] = figures(name, path, &scored, judge.is_some(), args.json);
        if name == "report" {
            out["report_examples"] = examples(&scored, args.json);
        }
    }
    if let Some((j, _)) = &judge {
        let rate = j.judged as f64 / j.seconds.max(1e-9);
        out["judging"] = json!({"sentences": j.judged, "seconds": j.seconds, "per_second": rate});
        if !args.json && j.judged > 0 {
            println!("\njudged {} sentences in {:.1} s ({rate:.2} sentences/s)", j.judged, j.seconds);
        }
    }
    let rate = emb.encoded as f64 / emb.seconds.max(1e-9);
    out["embedding"] = json!({"sentences": emb.encoded, "seconds": emb.seconds, "per_second": rate});
    if args.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else if emb.encoded > 0 {
        println!("\nembedded {} sentences in {:.1} s ({rate:.1} sentences/s)", emb.encoded, emb.seconds);
    }
    Ok(ExitCode::SUCCESS)
}

/// Every row of `set` as scored, one JSON object per line (appended to
/// the file after the first set).
fn write_scores(file: &Path, set: &str, scored: &[Scored], append: bool) -> anyhow::Result<()> {
    use std::io::Write;
    let f = std::fs::OpenOptions::new().create(true).write(true).append(append).truncate(!append).open(file)?;
    let mut out = std::io::BufWriter::new(f);
    for s in scored {
        let row = json!({"set": set, "id": s.row.id, "lang": s.row.lang, "injection": s.row.injection, "category": s.row.category,
            "phrase": s.phrase, "probability": s.p, "classifier": s.classifier, "judge_probability": s.judge_p, "judge": s.judge});
        writeln!(out, "{row}")?;
    }
    out.flush().with_context(|| format!("writing {}", file.display()))
}

struct Scored<'a> {
    row: &'a Row,
    phrase: bool,
    p: f32,
    classifier: bool,
    /// The LLM's P(injection), with --judge.
    judge_p: Option<f64>,
    judge: bool,
}

impl Scored<'_> {
    fn any(&self) -> bool {
        self.phrase || self.classifier || self.judge
    }
}

fn pct(k: usize, n: usize) -> f64 {
    if n == 0 {
        0.0
    } else {
        100.0 * k as f64 / n as f64
    }
}

/// Per view, language and label: rows flagged by the phrases, the
/// classifier, either; with the judge, by it and by any of the three.
fn figures(name: &str, path: &Path, scored: &[Scored], judged: bool, quiet: bool) -> serde_json::Value {
    if !quiet {
        println!("\n{name}: {} ({} rows)", path.display(), scored.len());
        let more = if judged { format!(" {:>14} {:>14}", "judge", "any") } else { String::new() };
        println!("{:<40} {:<4} {:<10} {:>5} {:>14} {:>14} {:>14}{more}", "view", "lang", "label", "rows", "phrase", "classifier", "either");
    }
    let mut all = vec![];
    for (view, excluded) in VIEWS {
        for lang in LANGS {
            for injection in [true, false] {
                let these: Vec<&Scored> = scored
                    .iter()
                    .filter(|s| s.row.lang == *lang && s.row.injection == injection)
                    .filter(|s| !excluded.iter().any(|e| s.row.category.starts_with(e)))
                    .collect();
                let n = these.len();
                let count = |f: &dyn Fn(&Scored) -> bool| these.iter().filter(|s| f(s)).count();
                let (ph, cl, ei) = (count(&|s| s.phrase), count(&|s| s.classifier), count(&|s| s.phrase || s.classifier));
                let (ju, an) = (count(&|s| s.judge), count(&|s| s.any()));
                let label = if injection { "injection" } else { "ordinary" };
                if !quiet {
                    let cell = |k: usize| format!("{k:>5} {:>6.1}%", pct(k, n));
                    let more = if judged { format!(" {:>14} {:>14}", cell(ju), cell(an)) } else { String::new() };
                    println!("{view:<40} {lang:<4} {label:<10} {n:>5} {:>14} {:>14} {:>14}{more}", cell(ph), cell(cl), cell(ei));
                }
                let mut row = json!({"view": view, "lang": lang, "label": label, "rows": n,
                    "phrase": ph, "classifier": cl, "either": ei,
                    "phrase_pct": pct(ph, n), "classifier_pct": pct(cl, n), "either_pct": pct(ei, n)});
                if judged {
                    row["judge"] = ju.into();
                    row["any"] = an.into();
                    row["judge_pct"] = pct(ju, n).into();
                    row["any_pct"] = pct(an, n).into();
                }
                all.push(row);
            }
        }
    }
    json!({"path": path.display().to_string(), "rows": scored.len(), "figures": all})
}

/// Up to 15 injections no layer flags, and every ordinary row one flags.
fn examples(scored: &[Scored], quiet: bool) -> serde_json::Value {
    let short = |s: &str| s.chars().take(160).collect::<String>();
    let item = |s: &Scored| {
        json!({"id": s.row.id, "lang": s.row.lang, "category": s.row.category, "probability": s.p,
            "phrase": s.phrase, "classifier": s.classifier, "judge_probability": s.judge_p, "judge": s.judge,
            "sentence": s.row.sentence})
    };
    // Misses taken in turn from each class of injection (the category's
    // first part), so one class does not fill the list.
    let missed: Vec<&Scored> = scored.iter().filter(|s| s.row.injection && !s.any()).collect();
    let class = |s: &Scored| s.row.category.split('/').next().unwrap_or("").to_string();
    let mut classes: Vec<String> = missed.iter().map(|s| class(s)).collect();
    classes.sort_unstable();
    classes.dedup();
    let mut misses: Vec<&Scored> = vec![];
    for round in 0.. {
        let before = misses.len();
        for c in &classes {
            if let Some(s) = missed.iter().filter(|s| class(s) == *c).nth(round) {
                if misses.len() < 15 {
                    misses.push(s);
                }
            }
        }
        if misses.len() == before || misses.len() >= 15 {
            break;
        }
    }
    let false_flags: Vec<&Scored> = scored.iter().filter(|s| !s.row.injection && s.any()).collect();
    if !quiet {
        println!("\nreport: injections no layer flags ({} in all; up to 15, in turn from each class):", missed.len());
        for s in &misses {
            println!("  {} {} [{}] p={:.3}: {}", s.row.id, s.row.lang, s.row.category, s.p, short(&s.row.sentence));
        }
        println!("\nreport: ordinary rows flagged by any layer ({}):", false_flags.len());
        for s in &false_flags {
            let by: Vec<&str> = [(s.phrase, "phrase"), (s.classifier, "classifier"), (s.judge, "judge")]
                .iter()
                .filter(|(f, _)| *f)
                .map(|(_, n)| *n)
                .collect();
            let judge = s.judge_p.map(|p| format!(" judge p={p:.3}")).unwrap_or_default();
            println!("  {} {} [{}] {} p={:.3}{judge}: {}", s.row.id, s.row.lang, s.row.category, by.join("+"), s.p, short(&s.row.sentence));
        }
    }
    json!({"missed": missed.len(), "misses": misses.iter().map(|s| item(s)).collect::<Vec<_>>(),
        "false_flags": false_flags.iter().map(|s| item(s)).collect::<Vec<_>>()})
}

/// Chooses prefix and penalty by out-of-fold recall at the threshold rule
/// (the lower language's recall, then the mean), on the development half
/// only; fits the chosen one on all of it and writes the weights.
fn fit_on_dev(args: &InjectionArgs, dev: &[Row], emb: &mut Embeddings) -> anyhow::Result<(InstructionClassifier, serde_json::Value)> {
    let sentences: Vec<&str> = dev.iter().map(|r| r.sentence.as_str()).collect();
    let ys: Vec<bool> = dev.iter().map(|r| r.injection).collect();
    let langs: Vec<&str> = dev.iter().map(|r| r.lang.as_str()).collect();
    let folds = args.folds.max(2);
    let fold: Vec<usize> = dev.iter().map(|r| fold_of(&r.group, folds)).collect();
    let share = |p: &[f64], t: f64, lang: &str, injection: bool| {
        let idx: Vec<usize> = (0..p.len()).filter(|i| langs[*i] == lang && ys[*i] == injection).collect();
        idx.iter().filter(|i| p[**i] >= t).count() as f64 / idx.len().max(1) as f64
    };
    let mut tried = vec![];
    let mut specs: Vec<Spec> = args.l2.iter().map(|&l2| Spec::Linear { l2 }).collect();
    if args.mlp {
        specs.extend(args.mlp_l2.iter().map(|&l2| Spec::Mlp { hidden: args.hidden, l2 }));
    }
    /// A candidate: (lower language's recall, mean recall), prefix, spec, threshold, held-out figures and probabilities.
    type Choice<'a> = ((f64, f64), &'a str, Spec, f64, Vec<HeldOut>, Vec<f64>);
    let mut best: Option<Choice> = None;
    for prefix in PREFIXES {
        let vectors = emb.embed(prefix, &sentences, "dev")?;
        let xs: Vec<&[f32]> = vectors.iter().map(Vec::as_slice).collect();
        for &spec in &specs {
            let started = Instant::now();
            let p = out_of_fold(&xs, &ys, &fold, folds, spec);
            let t = threshold(&p, &ys, &langs, args.max_false_flags);
            let held: Vec<HeldOut> = LANGS
                .iter()
                .map(|l| HeldOut {
                    lang: l.to_string(),
                    injections_flagged: share(&p, t, l, true),
                    ordinary_flagged: share(&p, t, l, false),
                })
                .collect();
            let worst = held.iter().map(|h| h.injections_flagged).fold(1.0, f64::min);
            let mean = held.iter().map(|h| h.injections_flagged).sum::<f64>() / held.len() as f64;
            let line: Vec<String> = held
                .iter()
                .map(|h| format!("{} {:.1}% / {:.1}%", h.lang, 100.0 * h.injections_flagged, 100.0 * h.ordinary_flagged))
                .collect();
            eprintln!(
                "  {prefix:<10} {:<18} threshold {t:.4}: flagged out of fold (injections / ordinary) {}  [{:.0} s]",
                spec.to_string(),
                line.join(", "),
                started.elapsed().as_secs_f64()
            );
            tried.push(json!({"prefix": prefix, "model": spec.to_string(), "threshold": t, "held_out": held.iter().map(|h| json!({
                "lang": h.lang, "injections_flagged": h.injections_flagged, "ordinary_flagged": h.ordinary_flagged})).collect::<Vec<_>>()}));
            if best.as_ref().is_none_or(|b| (worst, mean) > b.0) {
                best = Some(((worst, mean), prefix, spec, t, held, p));
            }
        }
    }
    let (_, prefix, spec, t, held_out, p) = best.context("nothing fitted")?;
    let classes: Vec<&str> = dev.iter().map(|r| r.category.split('/').next().unwrap_or("")).collect();
    eprint!("held out, {prefix:?} {spec}:\n{}", describe(&p, &ys, &langs, &classes, t));
    let vectors = emb.embed(prefix, &sentences, "dev")?;
    let xs: Vec<&[f32]> = vectors.iter().map(Vec::as_slice).collect();
    let (hidden, out_weights, bias, method) = match spec.fit(&xs, &ys) {
        Model::Linear(m) => (None, m.w.iter().map(|w| *w as f32).collect(), m.b as f32, "logistic regression over the standardised embedding (folded into the weights), L2, classes weighted equally, Newton's method"),
        Model::Mlp(m) => (Some(HiddenLayer { weights: m.w1, bias: m.b1 }), m.w2, m.b2, "one hidden ReLU layer over the standardised embedding (folded into the first layer), logistic output, weight decay, classes weighted equally, 300 epochs of full-batch Adam from a seeded start"),
    };
    let weights = ClassifierWeights {
        model: emb.model().to_string(),
        prefix: prefix.to_string(),
        dimension: xs.first().map_or(0, |x| x.len()),
        hidden,
        weights: out_weights,
        bias,
        threshold: t as f32,
        fitted: Fitting {
            date: chrono::Utc::now().format("%Y-%m-%d").to_string(),
            set: "eval/injection/dev.tsv".into(),
            method: format!("{method}; {spec}; prefix, model and threshold chosen on grouped folds of the set"),
            injections: ys.iter().filter(|y| **y).count(),
            ordinary: ys.iter().filter(|y| !**y).count(),
            l2: spec.l2(),
            folds,
            threshold_rule: format!(
                "lowest threshold at which at most {:.1}% of each language's ordinary rows are flagged out of fold",
                100.0 * args.max_false_flags
            ),
            held_out,
        },
    };
    let text = weights_text(&weights)?;
    std::fs::write(&args.out, &text).with_context(|| format!("writing {}", args.out.display()))?;
    eprintln!("chose prefix {prefix:?}, {spec}, threshold {t:.4}; wrote {}", args.out.display());
    let classifier = InstructionClassifier::from_json(&text)?;
    Ok((classifier, json!({"tried": tried, "chosen": {"prefix": prefix, "model": spec.to_string(), "threshold": t}})))
}
