//! The MCP server at `/mcp` (Model Context Protocol over Streamable HTTP,
//! with the official Rust SDK, rmcp), so agents and editors call
//! rag-engine as tools: `list_workspaces`, `search` (ranked passages),
//! `ask` (a grounded answer with its citations) and `read_passage` (a
//! document's raw text around a range). A bearer API key (or sign-in
//! token) authenticates every request before the protocol runs; a tool's
//! failure, a foreign workspace included ("workspace not found", as in the
//! REST API), is a tool error (`isError`), not a transport error.
//! Stateless: any API process answers any request.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{schemars, tool, tool_handler, tool_router, Json, RoleServer, ServerHandler};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::auth::AuthUser;
use crate::error::ApiError;
use crate::routes::openai::Reply;
use crate::AppState;

/// Characters `read_passage` shows on each side of the range by default,
/// and at most.
const CONTEXT_CHARS: usize = 300;
const MAX_CONTEXT_CHARS: usize = 4000;
/// Characters of a range `read_passage` returns at most.
const MAX_PASSAGE_CHARS: usize = 20_000;

/// A passage a search found (implemented by the application with the
/// answerer's own retrieval: `rag_app`).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct Passage {
    pub document_id: String,
    pub filename: Option<String>,
    /// From 1.
    pub page: u32,
    pub char_start: u64,
    pub char_end: u64,
    pub text: String,
    pub score: f64,
}

/// Hybrid search over a workspace, as the answerer retrieves.
pub trait PassageSearch: Send + Sync {
    fn search<'a>(
        &'a self,
        workspace: &'a str,
        query: &'a str,
        top_k: usize,
    ) -> futures::future::BoxFuture<'a, Result<Vec<Passage>, String>>;
}

/// Authenticates `/mcp` requests before the protocol sees them: the
/// caller is put in the request's extensions, which rmcp hands to tools.
pub async fn authenticate(State(state): State<AppState>, mut req: Request, next: Next) -> Response {
    let caller = match req.extensions().get::<AuthUser>() {
        Some(user) => Ok(user.clone()),
        None => match crate::caller::bearer(req.headers()) {
            Ok(token) => crate::caller::authenticate(&state, token).await,
            Err(e) => Err(e),
        },
    };
    match caller {
        Ok(user) => {
            req.extensions_mut().insert(user);
            next.run(req).await
        }
        Err(e) => e.into_response(),
    }
}

/// The service mounted at `/mcp`.
pub fn service(state: AppState) -> StreamableHttpService<RagMcp, NeverSessionManager> {
    let cancel = state.0.shutdown.child_token();
    StreamableHttpService::new(
        move || Ok(RagMcp::new(state.clone())),
        Arc::new(NeverSessionManager::default()),
        StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true)
            // Every request carries a bearer key, which a page on another
            // site cannot add (CORS): the DNS-rebinding guard meant for
            // unauthenticated local servers would only refuse the hosts
            // this API is deployed under.
            .disable_allowed_hosts()
            .with_cancellation_token(cancel),
    )
}

#[derive(Clone)]
pub struct RagMcp {
    state: AppState,
    tool_router: ToolRouter<RagMcp>,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct WorkspaceInfo {
    pub id: String,
    pub name: String,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct Workspaces {
    pub workspaces: Vec<WorkspaceInfo>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct SearchRequest {
    /// The workspace id (from list_workspaces).
    pub workspace: String,
    /// What to look for, in any language.
    pub query: String,
    /// How many passages (1-20, default 5).
    #[serde(default)]
    pub top_k: Option<u32>,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct Passages {
    pub passages: Vec<Passage>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct AskRequest {
    /// The workspace id (from list_workspaces).
    pub workspace: String,
    /// The question, in Vietnamese or English.
    pub question: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct ReadRequest {
    /// The workspace id.
    pub workspace: String,
    /// The document id (a citation's or a passage's document_id).
    pub document_id: String,
    /// Start of the range in the document's raw text (characters).
    pub char_start: u64,
    /// End of the range (exclusive).
    pub char_end: u64,
    /// Characters shown before and after the range (default 300, at most 4000).
    #[serde(default)]
    pub context_chars: Option<u32>,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct PassageText {
    pub document_id: String,
    pub filename: Option<String>,
    /// The page (from 1) where the range starts.
    pub page: u32,
    pub char_start: u64,
    pub char_end: u64,
    /// Exactly the raw text at char_start..char_end.
    pub text: String,
    pub before: String,
    pub after: String,
}

/// The caller, as the authentication layer put it on the request.
fn caller(ctx: &RequestContext<RoleServer>) -> Result<AuthUser, String> {
    ctx.extensions
        .get::<axum::http::request::Parts>()
        .and_then(|p| p.extensions.get::<AuthUser>())
        .cloned()
        .ok_or_else(|| "not authenticated".to_string())
}

fn message(e: ApiError) -> String {
    e.message
}

#[tool_router]
impl RagMcp {
    pub fn new(state: AppState) -> Self {
        RagMcp { state, tool_router: Self::tool_router() }
    }

    /// The workspace, if the caller may read it; "workspace not found"
    /// otherwise, as the REST API says.
    async fn workspace(&self, user: &AuthUser, ws: &str) -> Result<rag_store::workspaces::WorkspaceRow, String> {
        crate::routes::owned_workspace(&self.state, user, ws).await.map_err(message)
    }

    #[tool(description = "The workspaces (document collections) you can search and ask, with their ids and names.")]
    async fn list_workspaces(&self, ctx: RequestContext<RoleServer>) -> Result<Json<Workspaces>, String> {
        let user = caller(&ctx)?;
        let rows = rag_store::workspaces::list_owned(self.state.pool(), &user.user_id).await.map_err(|e| message(e.into()))?;
        let workspaces = rows.into_iter().filter(|w| user.reaches(&w.id)).map(|w| WorkspaceInfo { id: w.id, name: w.name }).collect();
        Ok(Json(Workspaces { workspaces }))
    }

    #[tool(
        description = "Search a workspace's documents: the best-matching passages, each with its document, page, character range in the document's raw text, and text."
    )]
    async fn search(&self, Parameters(r): Parameters<SearchRequest>, ctx: RequestContext<RoleServer>) -> Result<Json<Passages>, String> {
        let user = caller(&ctx)?;
        self.workspace(&user, &r.workspace).await?;
        let query = r.query.trim();
        if query.is_empty() || query.chars().count() > 2000 {
            return Err("query must have 1-2000 characters".into());
        }
        let top_k = r.top_k.unwrap_or(5);
        if !(1..=20).contains(&top_k) {
            return Err(format!("top_k must be 1-20 (is {top_k})"));
        }
        let search = self.state.0.search.as_ref().ok_or("search is not available on this server")?;
        let passages = search.search(&r.workspace, query, top_k as usize).await?;
        Ok(Json(Passages { passages }))
    }

    #[tool(
        description = "Ask a question about a workspace's documents. Returns a grounded answer whose sections carry [n] markers, and the citations: each the exact text of a document at a character range, with its page and a link. An answer the documents do not support says so, without citations."
    )]
    async fn ask(&self, Parameters(r): Parameters<AskRequest>, ctx: RequestContext<RoleServer>) -> Result<CallToolResult, String> {
        let user = caller(&ctx)?;
        self.workspace(&user, &r.workspace).await?;
        let question = r.question.trim();
        if question.is_empty() || question.chars().count() > crate::routes::openai::MAX_QUESTION_CHARS {
            return Err(format!("question must have 1-{} characters", crate::routes::openai::MAX_QUESTION_CHARS));
        }
        self.state.limits().question(&user.user_id).map_err(|e| message(e.into()))?;
        let base = ctx
            .extensions
            .get::<axum::http::request::Parts>()
            .map(|p| crate::routes::openai::page_base(&p.headers))
            .unwrap_or_else(|| "http://localhost".into());
        let answer = Reply::ask(&self.state, &user, &r.workspace, question, base).await.map_err(|e| e.message().to_string())?;
        let text = answer.text_with_sources();
        let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
        result.structured_content = Some(answer.structured());
        Ok(result)
    }

    #[tool(
        description = "Read a document's raw text at a character range (a citation's or a passage's), with some text around it and its page."
    )]
    async fn read_passage(
        &self,
        Parameters(r): Parameters<ReadRequest>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<Json<PassageText>, String> {
        let user = caller(&ctx)?;
        self.workspace(&user, &r.workspace).await?;
        let not_found = || "document not found".to_string();
        let id = Uuid::parse_str(&r.document_id).map_err(|_| not_found())?;
        let doc =
            rag_store::documents::get(self.state.pool(), &r.workspace, id).await.map_err(|e| message(e.into()))?.ok_or_else(not_found)?;
        let segments = rag_store::raw::segments(self.state.pool(), &r.workspace, id).await.map_err(|e| message(e.into()))?;
        if segments.is_empty() {
            return Err("the document has no text yet (not parsed, or it failed)".into());
        }
        let text: Vec<char> = segments.iter().flat_map(|s| s.text.chars()).collect();
        let (start, end) = (r.char_start as usize, r.char_end as usize);
        if start >= end || end > text.len() {
            return Err(format!("the range must lie inside the document's {} characters, start before end", text.len()));
        }
        if end - start > MAX_PASSAGE_CHARS {
            return Err(format!("at most {MAX_PASSAGE_CHARS} characters at once"));
        }
        let context = r.context_chars.map_or(CONTEXT_CHARS, |c| (c as usize).min(MAX_CONTEXT_CHARS));
        let page = segments.iter().rfind(|s| s.char_start as usize <= start).map_or(0, |s| s.page_idx.max(0) as u32);
        Ok(Json(PassageText {
            document_id: r.document_id,
            filename: doc.filename,
            page: page + 1,
            char_start: r.char_start,
            char_end: r.char_end,
            text: text[start..end].iter().collect(),
            before: text[start.saturating_sub(context)..start].iter().collect(),
            after: text[end..(end + context).min(text.len())].iter().collect(),
        }))
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for RagMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("rag-engine", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "rag-engine answers from the user's own documents with exact citations. list_workspaces first; then search for \
                 passages, ask for a grounded answer, read_passage to read a cited range in its context.",
            )
    }
}
