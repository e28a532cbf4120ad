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
use rag_store::messages::MessageStatus;

use rag_app::config::{DatabaseSettings, KafkaSettings};

mod printed;
use printed::{reading, withdrawn};

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
    if args.conversation.is_some() {
        ask.history = rag_asking::continued_turns(&pool, &workspace, conversation).await.context("reading the conversation's turns")?;
    }
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
    let numbered = printed::sections(&answer);
    let invalid = printed::citations(&pool, &workspace, &numbered).await?;
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
