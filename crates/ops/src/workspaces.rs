//! `rag-engine workspaces create|list|rename|delete`: a user's workspaces,
//! from the operator's side (the database directly, as `keys` does), and
//! [`resolve`], which lets every command take a workspace by name as well
//! as by id.

use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Subcommand};
use rag_app::config::{DatabaseSettings, KafkaSettings};
use rag_store::sqlx::PgPool;
use rag_store::workspaces::{Found, WorkspaceRow};

#[derive(Subcommand, Debug)]
pub enum WorkspacesCommand {
    /// Create a workspace owned by a user.
    Create {
        /// Its name (1-200 characters), as the page and `/v1/models` show it.
        name: String,
        /// The user who owns it.
        #[arg(long)]
        user: String,
        #[arg(long)]
        json: bool,
    },
    /// List a user's workspaces with how many documents each holds.
    List {
        #[arg(long)]
        user: String,
        #[arg(long)]
        json: bool,
    },
    /// Rename one of a user's workspaces (given by name or id).
    Rename {
        workspace: String,
        /// The new name (1-200 characters).
        name: String,
        #[arg(long)]
        user: String,
        #[arg(long)]
        json: bool,
    },
    /// Delete one of a user's workspaces (given by name or id) with its conversations; API keys made for it
    /// alone are revoked. Refused while it holds documents, unless --with-documents deletes them first
    /// (DocumentDeleted for each: the pipeline purges their rows and blobs).
    Delete {
        workspace: String,
        #[arg(long)]
        user: String,
        /// Delete its documents too.
        #[arg(long)]
        with_documents: bool,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args, Debug)]
pub struct WorkspacesSettings {
    #[command(flatten)]
    pub database: DatabaseSettings,
    #[command(flatten)]
    pub kafka: KafkaSettings,
}

/// The workspace `key` names (an id, or a name), among `owner`'s or, with
/// no owner, among every user's: an id wins over a name; a name several
/// workspaces share is refused with their ids.
pub async fn resolve(pool: &PgPool, owner: Option<&str>, key: &str) -> anyhow::Result<WorkspaceRow> {
    let whose = owner.map_or(String::new(), |u| format!(" of user {u}"));
    match rag_store::workspaces::find(pool, owner, key.trim()).await? {
        Found::One(w) => Ok(w),
        Found::None => anyhow::bail!("no workspace{whose} has the id or name {key:?} (`rag-engine workspaces list --user U` lists them)"),
        Found::Many(v) => anyhow::bail!(
            "{} workspaces{whose} are named {key:?}; give one of their ids: {}",
            v.len(),
            v.iter().map(|w| format!("{} (user {})", w.id, w.owner_id)).collect::<Vec<_>>().join(", ")
        ),
    }
}

/// The workspace id for a command that may also name a workspace no user
/// owns (an upstream system's, which exists only in events): a workspace
/// row by id or name when there is one, else `key` itself when it is a
/// valid id. Without a database (`upload` from a producer's machine) a
/// valid id is taken as it is.
pub async fn resolve_or_id(database: &DatabaseSettings, key: &str) -> anyhow::Result<String> {
    match rag_store::connect(&database.store()).await {
        Ok(pool) => resolve_or_id_in(&pool, key).await,
        Err(_) if rag_events::is_workspace_id(key.trim()) => Ok(key.trim().to_string()),
        Err(e) => Err(e).context(format!("looking up the workspace named {key:?} (DATABASE_URL)")),
    }
}

/// [`resolve_or_id`] with a database at hand.
pub async fn resolve_or_id_in(pool: &PgPool, key: &str) -> anyhow::Result<String> {
    let key = key.trim();
    match rag_store::workspaces::find(pool, None, key).await? {
        Found::One(w) => Ok(w.id),
        Found::None if rag_events::is_workspace_id(key) => {
            // An upstream system's workspace lives only in its events; a
            // mistyped name would too, so it is said.
            eprintln!(
                "note: no workspace has the id or name {key:?}; using it as a workspace id that no user owns \
                 (`rag-engine workspaces list --user U` lists users' workspaces)"
            );
            Ok(key.to_string())
        }
        Found::None => anyhow::bail!(
            "invalid workspace id {key:?} (1-64 characters of A-Z a-z 0-9 - _ . starting with a letter or digit), \
             and no workspace is named so (`rag-engine workspaces list --user U` lists them)"
        ),
        Found::Many(_) => Ok(resolve(pool, None, key).await?.id),
    }
}

fn checked_name(name: &str) -> anyhow::Result<&str> {
    let name = name.trim();
    anyhow::ensure!((1..=200).contains(&name.chars().count()), "a workspace name must have 1-200 characters");
    Ok(name)
}

fn print(w: &WorkspaceRow, documents: Option<usize>) {
    let docs = documents.map_or(String::new(), |n| format!("  {n} document(s)"));
    println!("{}  {:<32}  created {}{docs}", w.id, w.name, w.created_at.format("%Y-%m-%d %H:%M"));
}

pub async fn workspaces(s: &WorkspacesSettings, command: WorkspacesCommand) -> anyhow::Result<ExitCode> {
    let pool = rag_store::connect(&s.database.store()).await.context("connecting to Postgres (DATABASE_URL)")?;
    match command {
        WorkspacesCommand::Create { name, user, json } => {
            let (user, name) = (user.trim(), checked_name(&name)?);
            anyhow::ensure!(!user.is_empty(), "--user must not be empty");
            let row = rag_store::workspaces::create(&pool, &uuid::Uuid::now_v7().to_string(), name, user).await?;
            if json {
                println!("{}", serde_json::to_string(&row)?);
            } else {
                print(&row, None);
            }
        }
        WorkspacesCommand::List { user, json } => {
            let rows = rag_store::workspaces::list_owned(&pool, user.trim()).await?;
            let mut listed = Vec::with_capacity(rows.len());
            for w in rows {
                let documents = rag_store::documents::list(&pool, &w.id).await?.len();
                listed.push((w, documents));
            }
            if json {
                let v: Vec<serde_json::Value> = listed
                    .iter()
                    .map(|(w, n)| serde_json::json!({"id": w.id, "name": w.name, "owner_id": w.owner_id, "created_at": w.created_at, "documents": n}))
                    .collect();
                println!("{}", serde_json::to_string(&v)?);
            } else if listed.is_empty() {
                println!("user {} has no workspace", user.trim());
            } else {
                listed.iter().for_each(|(w, n)| print(w, Some(*n)));
            }
        }
        WorkspacesCommand::Rename { workspace, name, user, json } => {
            let w = resolve(&pool, Some(user.trim()), &workspace).await?;
            let row = rag_store::workspaces::rename(&pool, &w.id, &w.owner_id, checked_name(&name)?)
                .await?
                .with_context(|| format!("workspace {} is gone", w.id))?;
            if json {
                println!("{}", serde_json::to_string(&row)?);
            } else {
                print(&row, None);
            }
        }
        WorkspacesCommand::Delete { workspace, user, with_documents, json } => {
            let w = resolve(&pool, Some(user.trim()), &workspace).await?;
            let documents = rag_store::documents::list(&pool, &w.id).await?;
            if !documents.is_empty() && !with_documents {
                anyhow::bail!(
                    "workspace {} ({:?}) holds {} document(s): delete them first, or pass --with-documents",
                    w.id,
                    w.name,
                    documents.len()
                );
            }
            if !documents.is_empty() {
                let producer = rag_bus::EventProducer::new(&s.kafka.client_bus()?, rag_events::Codec::embedded()?, "rag-engine/cli")?;
                for d in &documents {
                    let event = rag_events::DocumentDeleted {
                        envelope: rag_events::Envelope::originating(&w.id, format!("rag-engine/cli@{}", env!("CARGO_PKG_VERSION"))),
                        document_id: d.id.to_string(),
                        deleted_by: "rag-engine workspaces delete".into(),
                    };
                    producer.send(&event).await.context("producing DocumentDeleted (KAFKA_BROKERS)")?;
                }
            }
            anyhow::ensure!(rag_store::workspaces::delete(&pool, &w.id, &w.owner_id).await?, "workspace {} is gone", w.id);
            if json {
                println!("{}", serde_json::json!({"id": w.id, "name": w.name, "documents_deleted": documents.len()}));
            } else {
                println!(
                    "deleted workspace {} ({:?}) with its conversations; {} document(s) deleted (the pipeline purges their rows and blobs)",
                    w.id,
                    w.name,
                    documents.len()
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
