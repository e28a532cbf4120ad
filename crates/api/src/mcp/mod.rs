// The tools in one impl block, as rmcp's tool router wants them; their wire
// types are in types.rs, the HTTP side in transport.rs.
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

mod passage;
mod refusal;
mod schema;
mod transport;
mod types;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::service::RequestContext;
use rmcp::{tool, tool_handler, tool_router, Json, RoleServer, ServerHandler};
use uuid::Uuid;

use crate::answered::{self, NoAnswer};
use crate::auth::AuthUser;
use crate::error::ApiError;
use crate::AppState;
use passage::{CONTEXT_CHARS, MAX_CONTEXT_CHARS};
use schema::portable_tools;
use transport::caller;
pub use transport::{authenticate, service};
pub use types::*;

#[derive(Clone)]
pub struct RagMcp {
    state: AppState,
    tool_router: ToolRouter<RagMcp>,
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
        let context = r.context_chars.map_or(CONTEXT_CHARS, |c| (c as usize).min(MAX_CONTEXT_CHARS));
        let window = passage::window(&text, start, end, context)?;
        let page = segments.iter().rfind(|s| s.char_start as usize <= start).map_or(0, |s| s.page_idx.max(0) as u32);
        Ok(Json(PassageText {
            document_id: r.document_id,
            filename: doc.filename,
            page: page + 1,
            char_start: r.char_start,
            char_end: r.char_end,
            text: window.text,
            before: window.before,
            after: window.after,
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
mod tests;
