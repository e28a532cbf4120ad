//! `rag-engine token`: mints a bearer token for the API (local use, tests,
//! scripts). Production tokens come from the identity provider (e.g.
//! Supabase) signed with the same JWT_SECRET.

use std::process::ExitCode;

use clap::Args;

use rag_app::config::JwtSettings;

#[derive(Args, Debug)]
pub struct TokenArgs {
    /// The user id (`sub`).
    #[arg(long)]
    user: String,
    /// Lifetime, e.g. `1h`, `30m`, `7d`.
    #[arg(long, default_value = "1h", value_parser = humantime::parse_duration)]
    ttl: std::time::Duration,
    /// Print `{"token", "user", "expires_in_secs"}` as JSON.
    #[arg(long)]
    json: bool,
}

pub fn token(s: &JwtSettings, args: TokenArgs) -> anyhow::Result<ExitCode> {
    let user = args.user.trim();
    if user.is_empty() {
        anyhow::bail!("--user must not be empty");
    }
    let auth = s.jwt()?;
    if args.ttl > auth.max_ttl() {
        anyhow::bail!("--ttl {}s is longer than the API accepts (JWT_MAX_TTL_SECS={})", args.ttl.as_secs(), auth.max_ttl().as_secs());
    }
    let token = auth.mint(user, args.ttl)?;
    if args.json {
        println!("{}", serde_json::json!({"token": token, "user": user, "expires_in_secs": args.ttl.as_secs()}));
    } else {
        println!("{token}");
    }
    Ok(ExitCode::SUCCESS)
}
