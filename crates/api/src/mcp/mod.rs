// Kept whole at ~360 lines of code (tests after): rmcp's tool router wants every tool of the server in one impl block.
//! The MCP server at `/mcp` (Model Context Protocol over Streamable HTTP,
//! with the official Rust SDK, rmcp), so agents and editors call
//! rag-engine as tools: `list_workspaces`, `search` (ranked passages),
//! `ask` (a grounded answer with its citations) and `read_passage` (a
//! document's raw text around a range). A bearer API key (or sign-in
//! token) authenticates every request before the protocol runs; a tool's
//! failure, a foreign workspace included ("workspace not found", as in the
//! REST API), is a tool error (`isError`), not a transport error.
//! Stateless: any API process answers any request.
//!
//! What clients read of the tools is plain JSON Schema: no format a
//! validator does not know (schemars writes `uint64`, `double`, which the
//! TypeScript SDK's Ajv warns about), no `type` array (`["string",
//! "null"]`, which the MCP Inspector reports as unportable), and every tool
//! with structured content declares its `outputSchema` ([`schema::portable`]). A
//! missing or refused key is a 401 whose body is a JSON-RPC error with the
//! reason and whose challenge says which (`error="invalid_token"`, RFC
//! 6750), with no OAuth metadata: this server does not do OAuth.

mod refusal;
mod schema;

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::StatusCode;
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

use crate::answered::{self, AnswerPlace, NoAnswer, NumberedCitation};
use crate::auth::AuthUser;
use crate::error::ApiError;
use crate::AppState;
use refusal::{presented_bearer, refused};
use schema::portable_tools;

/// Characters `read_passage` shows on each side of the range by default,
/// and at most.
const CONTEXT_CHARS: usize = 300;
const MAX_CONTEXT_CHARS: usize = 4000;
/// Characters of a range `read_passage` returns at most.
const MAX_PASSAGE_CHARS: usize = 20_000;

/// A passage a search found: a document's raw text at a character range.
// Found by the application with the answerer's own retrieval (`rag_app`).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct Passage {
    pub document_id: String,
    pub filename: Option<String>,
    /// The page (from 1).
    pub page: u32,
    /// Start of the range in the document's raw text (characters).
    pub char_start: u64,
    /// End of the range (exclusive).
    pub char_end: u64,
    /// Exactly the raw text at char_start..char_end.
    pub text: String,
    /// The retrieval score (higher is better).
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
/// A refusal is a 401 with its reason in a JSON-RPC error (`refused`)
/// and a challenge that says whether a key was missing or refused
/// (`challenge`).
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
        Err(e) if e.status == StatusCode::UNAUTHORIZED => refused(presented_bearer(req.headers()), &e.message),
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
    /// The workspace: its name or id (from list_workspaces).
    pub workspace: String,
    /// What to look for, in any language.
    pub query: String,
    /// How many passages (1-20, default 5).
    #[serde(default)]
    #[schemars(with = "u32", range(min = 1, max = 20), extend("default" = 5))]
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
    /// The workspace: its name or id (from list_workspaces).
    pub workspace: String,
    /// The question, in Vietnamese or English.
    pub question: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct ReadRequest {
    /// The workspace: its name or id.
    pub workspace: String,
    /// The document id (a citation's or a passage's document_id).
    pub document_id: String,
    /// Start of the range in the document's raw text (characters).
    pub char_start: u64,
    /// End of the range (exclusive).
    pub char_end: u64,
    /// Characters shown before and after the range (default 300, at most 4000).
    #[serde(default)]
    #[schemars(with = "u32", extend("default" = 300))]
    pub context_chars: Option<u32>,
    /// The document revision the range is in (a citation's `revision`);
    /// absent: the one search reads now.
    #[serde(default)]
    #[schemars(with = "u32")]
    pub revision: Option<u32>,
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
    /// The raw text just before the range.
    pub before: String,
    /// The raw text just after the range.
    pub after: String,
}

/// What `ask` gives as structured content: the chat endpoint's answer,
/// typed so its `outputSchema` is declared and the content always matches
/// it (the answer is read into this shape and written from it).
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(crate = "rmcp::schemars")]
pub struct AskAnswer {
    /// The answer: sections with [n] markers numbering the citations (the
    /// sources list is in the text content only).
    pub answer: String,
    pub citations: Vec<NumberedCitation>,
    pub rag: AnswerPlace,
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
        let mut tool_router = Self::tool_router();
        for route in tool_router.map.values_mut() {
            if let Some(tool) = portable_tools().get(route.attr.name.as_ref()) {
                route.attr = tool.clone();
            }
        }
        RagMcp { state, tool_router }
    }

    /// The workspace, if the caller may read it; "workspace not found"
    /// otherwise, as the REST API says.
    async fn workspace(&self, user: &AuthUser, ws: &str) -> Result<rag_store::workspaces::WorkspaceRow, String> {
        crate::routes::named_workspace(&self.state, user, ws).await.map_err(message)
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
        let ws = self.workspace(&user, &r.workspace).await?.id;
        let query = r.query.trim();
        if query.is_empty() || query.chars().count() > 2000 {
            return Err("query must have 1-2000 characters".into());
        }
        let top_k = r.top_k.unwrap_or(5);
        if !(1..=20).contains(&top_k) {
            return Err(format!("top_k must be 1-20 (is {top_k})"));
        }
        let search = self.state.0.search.as_ref().ok_or("search is not available on this server")?;
        let passages = search.search(&ws, query, top_k as usize).await?;
        Ok(Json(Passages { passages }))
    }

    #[tool(
        description = "Ask a question about a workspace's documents. Returns a grounded answer whose sections carry [n] markers, and the citations: each the exact text of a document at a character range, with its page and a link. An answer the documents do not support says so, without citations.",
        output_schema = rmcp::handler::server::tool::schema_for_output::<AskAnswer>()
    )]
    async fn ask(&self, Parameters(r): Parameters<AskRequest>, ctx: RequestContext<RoleServer>) -> Result<CallToolResult, String> {
        let user = caller(&ctx)?;
        let ws = self.workspace(&user, &r.workspace).await?.id;
        let question = crate::question::checked_question(&r.question).map_err(|refusal| format!("question {refusal}"))?;
        self.state.limits().question(&user.user_id).map_err(|e| message(e.into()))?;
        let base = ctx
            .extensions
            .get::<axum::http::request::Parts>()
            .map(|p| answered::page_base(&p.headers))
            .unwrap_or_else(|| "http://localhost".into());
        let answer = answered::ask_in_new_conversation(&self.state, &user, &ws, question, base).await.map_err(|no| match no {
            NoAnswer::Api(e) => message(e),
            NoAnswer::TimedOut => format!(
                "No answer within {} s; it will show in the conversation on the page when it comes.",
                answered::ANSWER_WAIT.as_secs()
            ),
            NoAnswer::Failed(why) => format!("The answer failed: {why}"),
        })?;
        let text = answer.text_with_sources();
        let structured = AskAnswer { answer: answer.text(), citations: answer.citations, rag: answer.place };
        let mut result = CallToolResult::success(vec![ContentBlock::text(text)]);
        result.structured_content = Some(serde_json::to_value(structured).map_err(|e| e.to_string())?);
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
        let ws = self.workspace(&user, &r.workspace).await?.id;
        let not_found = || "document not found".to_string();
        let id = Uuid::parse_str(&r.document_id).map_err(|_| not_found())?;
        let doc = rag_store::documents::get(self.state.pool(), &ws, id).await.map_err(|e| message(e.into()))?.ok_or_else(not_found)?;
        let revision = r.revision.map(|r| i32::try_from(r).unwrap_or(i32::MAX));
        let segments = rag_store::raw::segments(self.state.pool(), &ws, id, revision).await.map_err(|e| message(e.into()))?;
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

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::schema::STANDARD_FORMATS;
    use super::*;

    /// Every place in a schema a client would warn about.
    fn unportable(schema: &Value, at: &str, found: &mut Vec<String>) {
        match schema {
            Value::Object(map) => {
                if let Some(f) = map.get("format").and_then(Value::as_str) {
                    if !STANDARD_FORMATS.contains(&f) {
                        found.push(format!("{at}: format {f}"));
                    }
                }
                if map.get("type").is_some_and(Value::is_array) {
                    found.push(format!("{at}: type {}", map["type"]));
                }
                for (k, v) in map {
                    if !matches!(k.as_str(), "default" | "const" | "enum" | "examples") {
                        unportable(v, &format!("{at}.{k}"), found);
                    }
                }
            }
            Value::Array(items) => items.iter().enumerate().for_each(|(i, v)| unportable(v, &format!("{at}[{i}]"), found)),
            _ => {}
        }
    }

    #[test]
    fn listed_tools_have_plain_schemas_and_declare_their_output() {
        let tools = portable_tools();
        let mut names: Vec<&str> = tools.keys().map(String::as_str).collect();
        names.sort();
        assert_eq!(names, ["ask", "list_workspaces", "read_passage", "search"]);
        let mut found = Vec::new();
        for tool in tools.values() {
            unportable(&Value::Object(tool.input_schema.as_ref().clone()), &format!("{}.inputSchema", tool.name), &mut found);
            let output = tool.output_schema.as_ref().unwrap_or_else(|| panic!("{} declares no outputSchema", tool.name));
            assert_eq!(output.get("type"), Some(&json!("object")), "{}", tool.name);
            unportable(&Value::Object(output.as_ref().clone()), &format!("{}.outputSchema", tool.name), &mut found);
        }
        assert!(found.is_empty(), "{found:#?}");
        // Before: formats and type arrays in the schemas rmcp made.
        let mut before = Vec::new();
        for tool in RagMcp::tool_router().list_all() {
            unportable(&Value::Object(tool.input_schema.as_ref().clone()), &tool.name, &mut before);
        }
        assert!(!before.is_empty(), "the transform has nothing to do: is it still needed?");

        let search = Value::Object(tools["search"].input_schema.as_ref().clone());
        assert_eq!(
            search["properties"]["top_k"],
            json!({"type": "integer", "minimum": 1, "maximum": 20, "default": 5, "description": "How many passages (1-20, default 5)."})
        );
        assert_eq!(search["required"], json!(["workspace", "query"]));
        let read = Value::Object(tools["read_passage"].input_schema.as_ref().clone());
        assert_eq!(read["properties"]["char_start"]["type"], "integer");
        assert_eq!(read["properties"]["char_start"]["minimum"], 0);
        let ask = Value::Object(tools["ask"].output_schema.as_ref().unwrap().as_ref().clone());
        assert_eq!(ask["required"], json!(["answer", "citations", "rag"]));
    }

    #[test]
    fn the_answer_keeps_its_shape_through_the_declared_type() {
        // As routes::openai's `Answered::structured` writes it.
        let structured = json!({
            "answer": "Doanh thu năm 2023 đạt 1.245,6 tỷ đồng. [1]\n\nBảng. [2]",
            "citations": [
                {"index": 1, "document_id": "d1", "filename": "bao-cao.pdf", "char_start": 3, "char_end": 40,
                 "text": "Doanh thu", "url": "http://h/#ws=w&c=c&doc=d1&span=3-40", "page": 2, "revision": 1},
                {"index": 2, "document_id": "d2", "filename": null, "char_start": 0, "char_end": 9,
                 "text": "A | B", "url": "http://h/#ws=w&c=c&doc=d2&span=0-9", "cell_range": "Sheet1!A2:B2", "revision": 3},
            ],
            "rag": {"workspace_id": "w", "conversation_id": "01a2", "message_id": "01a3", "abstained": false},
        });
        let typed: AskAnswer = serde_json::from_value(structured.clone()).unwrap();
        assert_eq!(serde_json::to_value(typed).unwrap(), structured);
    }
}
