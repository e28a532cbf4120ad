//! The HTTP side of `/mcp`: the service axum mounts, the bearer check
//! before the protocol runs, and the caller it leaves for the tools.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::RoleServer;

use super::refusal::{presented_bearer, refused};
use super::RagMcp;
use crate::auth::AuthUser;
use crate::AppState;

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

/// The caller, as the authentication layer put it on the request.
pub(super) fn caller(ctx: &RequestContext<RoleServer>) -> Result<AuthUser, String> {
    ctx.extensions
        .get::<axum::http::request::Parts>()
        .and_then(|p| p.extensions.get::<AuthUser>())
        .cloned()
        .ok_or_else(|| "not authenticated".to_string())
}
