//! `rag-engine ask`: produces QuestionAsked, shows the answer's text on
//! stderr as the model writes it (the answer-delta notifications), waits
//! for the answer (the projected assistant message) and prints its
//! sections with numbered citations and the cited text, each checked
//! against the raw text.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use rag_asking::{question, AnswerWatch, Ask, Deltas, Watched};
use rag_bus::EventProducer;
use rag_events::Codec;
use rag_store::messages::{self, MessageStatus};

use rag_app::config::{DatabaseSettings, KafkaSettings};

#[derive(Args, Debug)]
pub struct AskArgs {
    /// The question.
    question: String,
    /// Workspace whose documents answer it: its id or its name.
    #[arg(long)]
    workspace: String,
    /// Continue this conversation (default: a new one).
    #[arg(long)]
    conversation: Option<uuid::Uuid>,
    /// Chunks to retrieve (default: RETRIEVAL_TOP_K).
    #[arg(long)]
    top_k: Option<u32>,
    /// Only these documents (repeatable).
    #[arg(long = "document")]
    documents: Vec<uuid::Uuid>,
    /// Who asks (recorded in the event).
    #[arg(long, default_value = "cli")]
    user: String,
    /// Seconds to wait for the answer.
    #[arg(long, default_value_t = 120)]
    timeout: u64,
    /// Print the answer message as JSON (as the API returns it).
    #[arg(long)]
    json: bool,
}

/// Writes what `text` adds to what is `shown` on stderr; a text that does
/// not continue it (the answerer started the answer again) is written anew.
fn stream_to_terminal(shown: &mut String, text: &str) {
    use std::io::Write;
    let mut err = std::io::stderr().lock();
    match text.strip_prefix(shown.as_str()) {
        Some(more) => {
            let _ = write!(err, "{more}");
        }
        None => {
            let _ = write!(err, "\n[the answer starts again]\n{text}");
        }
    }
    let _ = err.flush();
    *shown = text.to_string();
}

/// What `ask` reads: the broker it asks on, the database it waits on.
#[derive(clap::Args, Debug)]
pub struct AskSettings {
    #[command(flatten)]
    pub kafka: KafkaSettings,
    #[command(flatten)]
    pub database: DatabaseSettings,
}

pub async fn ask(s: &AskSettings, args: AskArgs) -> anyhow::Result<ExitCode> {
    // The rule for a question at every door, checked before anything is
    // connected to.
    let question = question::checked_question(&args.question).map_err(|refusal| anyhow::anyhow!("the question {refusal}"))?.to_string();
    let top_k = question::checked_scope(args.top_k.map(i64::from), args.documents.len())?;
    let pool = rag_store::connect(&s.database.store()).await.context("connecting to Postgres (DATABASE_URL)")?;
    // A workspace by name as well as by id.
    let workspace = rag_ops::workspaces::resolve_or_id_in(&pool, &args.workspace).await?;
    let producer = EventProducer::new(&s.kafka.client_bus()?, Codec::embedded()?, "rag-engine/cli")?;
    let conversation = args.conversation.unwrap_or_else(uuid::Uuid::now_v7);
    let mut ask = Ask::new(&workspace, conversation, question, &args.user, "rag-engine/cli");
    ask.top_k = top_k;
    ask.document_ids = args.documents.iter().map(|d| d.to_string()).collect();
    let asked = ask.asked();
    // Listening before asking: the first words are not missed.
    let deltas = Deltas::listen(&pool).await.context("listening for the answer's text")?;
    producer.send(&asked.event).await.context("producing QuestionAsked (KAFKA_BROKERS)")?;
    if !args.json {
        eprintln!("asked in conversation {conversation}; waiting for the answer (rag-engine run must be running)…");
    }
    let mut watch = AnswerWatch::new(
        pool.clone(),
        &workspace,
        asked.assistant_message,
        deltas,
        Duration::from_secs(args.timeout),
        Duration::from_millis(200),
    );
    let mut shown = String::new();
    let message = loop {
        match watch.next().await? {
            Watched::Answered(m) => break *m,
            Watched::TimedOut => {
                anyhow::bail!("no answer within {} s (is `rag-engine run` running? message {})", args.timeout, asked.assistant_message)
            }
            // The text so far, from its start.
            Watched::Delta(d) if d.from == 0 && !args.json => {
                // Sources before words: what the model is reading.
                if !d.sources.is_empty() && shown.is_empty() {
                    eprintln!("reading {}", reading(&d.sources));
                }
                if !d.sections.is_empty() {
                    let text = d.sections.iter().map(|s| s.text.as_str()).collect::<Vec<_>>().join("\n\n");
                    stream_to_terminal(&mut shown, &text);
                }
            }
            Watched::Delta(_) => {}
        }
    };
    let answer = message.answer();
    if !shown.is_empty() {
        eprintln!("\n");
        for line in withdrawn(&shown, &answer) {
            eprintln!("{line}");
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&message)?);
        return Ok(if message.status == MessageStatus::Done { ExitCode::SUCCESS } else { ExitCode::FAILURE });
    }
    if message.status == MessageStatus::Failed {
        let (why, code) = answer.failure.as_ref().map_or(("-", "-"), |f| (f.message.as_str(), f.code.as_str()));
        eprintln!("the question could not be answered: {why} ({code})");
        return Ok(ExitCode::FAILURE);
    }
    let documents = rag_store::documents::list(&pool, &workspace).await?;
    // A presentation's pages are its slides: its citations say "slide N".
    let presentations: std::collections::HashSet<String> = documents
        .iter()
        .filter(|d| {
            rag_docparse::detect_format(d.content_type.as_deref().unwrap_or(""), d.filename.as_deref().unwrap_or(""))
                .is_some_and(rag_docparse::Format::is_presentation)
        })
        .map(|d| d.id.to_string())
        .collect();
    let filenames: std::collections::HashMap<String, String> =
        documents.into_iter().map(|d| (d.id.to_string(), d.filename.unwrap_or_default())).collect();
    let mut numbered: Vec<&rag_events::Citation> = Vec::new();
    for section in &answer.sections {
        let mut marks = String::new();
        for c in &section.citations {
            numbered.push(c);
            marks.push_str(&format!(" [{}]", numbered.len()));
        }
        println!("{}{marks}\n", section.text);
    }
    // Parts of the question the documents do not answer: said, never a
    // section (a section always cites).
    let unanswered = &answer.retrieval.unanswered_parts;
    if !unanswered.is_empty() {
        println!("{}\n", rag_answer::unanswered_text(unanswered));
    }
    if !numbered.is_empty() {
        println!("Citations:");
    }
    // Each citation checked against the raw text as the viewer shows it:
    // the cited text must be exactly `full_text[char_start..char_end]`.
    let mut full_texts: std::collections::HashMap<(String, i32), Option<Vec<char>>> = std::collections::HashMap::new();
    let mut invalid = 0;
    for (i, c) in numbered.iter().enumerate() {
        let doc = c.document_id.as_str();
        let (start, end) = (c.char_start.max(0) as usize, c.char_end.max(0) as usize);
        // A spreadsheet's citation is where its rows are (`Doanh thu!A5:D5`);
        // its sheets are its pages, which say less.
        // A presentation's, its slide.
        let page = c.page_idx.max(0) + 1;
        let place = match &c.cell_range {
            Some(range) => range.clone(),
            None if presentations.contains(doc) => format!("slide {page}"),
            None => format!("p.{page}"),
        };
        println!(
            "[{}] {} {place} segment {} chars {start}..{end}",
            i + 1,
            filenames.get(doc).map(String::as_str).unwrap_or(doc),
            c.segment_index,
        );
        let text = c.text.as_deref().unwrap_or(&c.snippet_preview);
        println!("    “{}”", text.split_whitespace().collect::<Vec<_>>().join(" "));
        // The revision the citation quoted (1 before revisions existed).
        let revision = c.revision;
        let key = (doc.to_string(), revision);
        if !full_texts.contains_key(&key) {
            let full = match uuid::Uuid::parse_str(doc) {
                Ok(id) => rag_store::raw::full_text(&pool, &workspace, id, Some(revision)).await?,
                Err(_) => None,
            };
            full_texts.insert(key.clone(), full);
        }
        match full_texts.get(&key).and_then(Option::as_ref) {
            Some(full) if rag_answer::cites_exactly(full, start, end, text) => {
                println!("    ✓ exactly the raw text at chars {start}..{end}");
            }
            Some(_) => {
                invalid += 1;
                println!("    ✗ does not match the raw text at chars {start}..{end}");
            }
            None => println!("    (the document's raw text is gone: deleted after the answer)"),
        }
    }
    let mode = if answer.mode.is_empty() { "-" } else { answer.mode.as_str() };
    match &answer.llm_usage {
        Some(usage) => eprintln!("({mode}; {} tokens, model {})", usage.total_tokens, usage.model),
        None => eprintln!("({mode})"),
    }
    if invalid > 0 {
        eprintln!("{invalid} citation(s) do not match the raw text");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// What the answer took back of the text streamed above it, for people:
/// nothing when the final sections are what streamed; otherwise a line
/// saying so, and each withdrawn section (said what its citations do not,
/// or held back by the check) as the model wrote it, so the streamed words
/// are never left to be read as the answer.
fn withdrawn(shown: &str, answer: &messages::AnswerMetadata) -> Vec<String> {
    let last = answer.sections.iter().map(|s| s.text.as_str()).collect::<Vec<_>>().join("\n\n");
    if last.trim() == shown.trim() {
        return Vec::new();
    }
    let taken = answer.withdrawn();
    if taken.is_empty() {
        // Rewritten in the question's language, a question taken out, a
        // part said once: the same answer, in other words.
        return vec!["[rewritten] the answer below replaces the text streamed above".to_string()];
    }
    let mut out = vec!["[withdrawn] the text streamed above is not the answer; the checked answer follows".to_string()];
    out.extend(taken.iter().map(|s| format!("  withdrawn: {s}")));
    out
}

/// "a.pdf (pages 1, 2), b.md": the documents an answer is being written
/// from.
fn reading(sources: &[messages::DeltaSource]) -> String {
    sources
        .iter()
        .map(|s| {
            let name = s.filename.clone().unwrap_or_else(|| s.document_id.clone());
            match s.pages.as_slice() {
                [] => name,
                [one] => format!("{name} (page {one})"),
                many => format!("{name} (pages {})", many.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::withdrawn;
    use rag_store::messages::AnswerMetadata;

    fn answer(metadata: serde_json::Value) -> AnswerMetadata {
        AnswerMetadata::of_stored(&metadata).expect("an answer")
    }

    #[test]
    fn text_taken_back_after_streaming_is_said_to_be_withdrawn() {
        let metadata = answer(serde_json::json!({
            "mode": "llm",
            "sections": [{"text": "Lợi nhuận gộp — 2022: 312,5; 2023: 351,9", "source_ids": [], "citations": []}],
            "retrieval": {"citation_report": {"unfaithful_sections": ["Lợi nhuận gộp tăng 38,6%. (not in its citations: 38.6)"]}}
        }));
        let lines = withdrawn("Lợi nhuận gộp tăng 38,6%.", &metadata);
        assert_eq!(lines.len(), 2);
        assert!(lines[0].starts_with("[withdrawn]"));
        assert_eq!(lines[1], "  withdrawn: Lợi nhuận gộp tăng 38,6%. (not in its citations: 38.6)");
        assert!(withdrawn("Lợi nhuận gộp — 2022: 312,5; 2023: 351,9", &metadata).is_empty(), "what streamed is the answer");
        let rewritten =
            answer(serde_json::json!({"mode": "llm", "sections": [{"text": "Revenue grew 12.4%.", "source_ids": [], "citations": []}],
                                                  "retrieval": {"citation_report": {"rewritten_sections": 1}}}));
        assert_eq!(withdrawn("Doanh thu tăng 12,4%.", &rewritten), ["[rewritten] the answer below replaces the text streamed above"]);
    }
}
