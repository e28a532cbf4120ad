//! `rag-engine keys create|list|revoke`: a user's API keys, from the
//! operator's side (the database directly, as `token` signs directly with
//! JWT_SECRET). Users manage their own on the page or with `/v1/keys`.

use std::process::ExitCode;

use anyhow::Context;
use clap::Subcommand;
use rag_api::model::ApiKey;
use rag_app::config::DatabaseSettings;

#[derive(Subcommand, Debug)]
pub enum KeysCommand {
    /// Create a key for a user; prints its secret, which is not stored and cannot be shown again.
    Create {
        /// The user the key stands for.
        #[arg(long)]
        user: String,
        /// What the key is for (1-100 characters).
        #[arg(long)]
        name: String,
        /// The one workspace the key reaches, by id or name (the user must own it); without it, every workspace of theirs.
        #[arg(long)]
        workspace: Option<String>,
        /// Days until the key stops working (1-3650, as on the API); without it, until revoked.
        #[arg(long)]
        expires_in_days: Option<u32>,
        /// Chat replies for this key carry no sources list in their text (for a client that reads the
        /// structured `citations`); by default they end with one.
        #[arg(long)]
        no_sources_in_content: bool,
        /// Print the key and its `secret` as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List a user's keys (never their secrets).
    List {
        #[arg(long)]
        user: String,
        #[arg(long)]
        json: bool,
    },
    /// Revoke one of a user's keys: it is refused from its next request on.
    Revoke {
        /// The key's id (from `keys list`).
        id: uuid::Uuid,
        #[arg(long)]
        user: String,
        #[arg(long)]
        json: bool,
    },
}

fn print_key(k: &ApiKey) {
    let scope = k.workspace_id.as_deref().map_or("every workspace".to_string(), |w| format!("workspace {w}"));
    let state = match (&k.revoked_at, &k.expires_at) {
        (Some(at), _) => format!("revoked {}", at.format("%Y-%m-%d %H:%M")),
        (None, Some(at)) if *at <= chrono::Utc::now() => format!("expired {}", at.format("%Y-%m-%d")),
        (None, Some(at)) => format!("expires {}", at.format("%Y-%m-%d")),
        (None, None) => "no expiry".to_string(),
    };
    let used = k.last_used_at.map_or("never used".to_string(), |at| format!("last used {}", at.format("%Y-%m-%d %H:%M")));
    println!("{}  {}…  {:<24}  {scope}; {state}; {used}", k.id, k.prefix, k.name);
}

pub async fn keys(s: &DatabaseSettings, command: KeysCommand) -> anyhow::Result<ExitCode> {
    let pool = rag_store::connect(&s.store()).await.context("connecting to Postgres (DATABASE_URL)")?;
    match command {
        KeysCommand::Create { user, name, workspace, expires_in_days, no_sources_in_content, json } => {
            let user = user.trim();
            anyhow::ensure!(!user.is_empty(), "--user must not be empty");
            // By name or id, among the user's.
            let workspace = match workspace.as_deref() {
                Some(ws) => Some(crate::workspaces::resolve(&pool, Some(user), ws).await?.id),
                None => None,
            };
            // The API's rules: name, expiry range, live keys per user.
            let created = rag_api::keys::create(
                &pool,
                rag_api::keys::KeyRequest {
                    user_id: user,
                    name: &name,
                    workspace_id: workspace.as_deref(),
                    expires_in_days,
                    sources_in_content: !no_sources_in_content,
                },
            )
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
            let key = ApiKey::from(created.row);
            if json {
                println!("{}", serde_json::json!({"key": key, "secret": created.secret}));
            } else {
                print_key(&key);
                println!("secret (shown once, store it now): {}", created.secret);
            }
        }
        KeysCommand::List { user, json } => {
            let keys: Vec<ApiKey> = rag_store::api_keys::list_owned(&pool, user.trim()).await?.into_iter().map(Into::into).collect();
            if json {
                println!("{}", serde_json::to_string(&keys)?);
            } else if keys.is_empty() {
                println!("no API keys for {}", user.trim());
            } else {
                keys.iter().for_each(print_key);
            }
        }
        KeysCommand::Revoke { id, user, json } => {
            let row = rag_store::api_keys::revoke(&pool, user.trim(), id)
                .await?
                .with_context(|| format!("user {} has no API key {id}", user.trim()))?;
            let key = ApiKey::from(row);
            if json {
                println!("{}", serde_json::to_string(&key)?);
            } else {
                print_key(&key);
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
