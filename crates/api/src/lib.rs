//! The HTTP API of rag-engine (axum): workspaces, documents, the raw-text
//! viewer, conversations and messages over the Postgres read models; writes
//! become events (DocumentUploaded, DocumentDeleted, QuestionAsked) on the
//! bus; answers reach clients as Server-Sent Events. Every route under
//! `/v1` needs a bearer JWT and checks that the caller owns the workspace.
//! `/` serves the web page, whose files are embedded in the binary.

mod answered;
pub mod auth;
pub mod caller;
mod deltas;
pub mod error;
mod jwt_crypto;
pub mod keys;
pub mod limits;
pub mod mcp;
mod middleware;
pub mod model;
pub mod openapi;
pub use rag_asking::question;
mod routes;

use std::sync::Arc;
use std::time::Duration;

use axum::extract::DefaultBodyLimit;
use axum::http::{header, HeaderName, Method};
use axum::routing::{get, post};
use axum::Router;
use rag_blobs::BlobStore;
use rag_bus::EventProducer;
use rag_store::sqlx::PgPool;
use rag_telemetry::InternalEvent;
use tokio_util::sync::CancellationToken;
use tower_http::cors::{AllowOrigin, CorsLayer};
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};

pub use auth::{AuthUser, Claims, JwtAuth};
pub use error::ApiError;

/// The request id header: taken from the client when it sends one,
/// generated otherwise, and returned on every response.
pub static REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Settings of the API (the binary fills them from its environment).
#[derive(Debug, Clone)]
pub struct ApiConfig {
    /// Origins allowed by CORS; empty: no CORS headers (same origin only); `*`: any.
    pub cors_origins: Vec<String>,
    /// Largest document an upload accepts, in bytes.
    pub upload_max_bytes: u64,
    /// Bytes of originals one workspace may hold.
    pub workspace_max_bytes: u64,
    /// Workspaces one user may own.
    pub workspaces_per_user: u64,
    /// Largest JSON request body, in bytes.
    pub json_body_max_bytes: usize,
    /// How often a door waiting for an answer reads it in case the
    /// projector's note (an `AnswerDelta` with `projected`) was missed.
    pub sse_poll: Duration,
    /// Deadline of each dependency check of `/readyz`.
    pub ready_timeout: Duration,
    /// `POST /dev/sign-in` mints a token for any user name: a developer's
    /// machine only, never the default.
    pub dev_sign_in: bool,
    /// What one user may take (requests, questions, streams, uploads).
    pub limits: limits::LimitsConfig,
    /// Time to receive a request's headers before the connection is closed.
    pub header_timeout: Duration,
    /// Time to receive a request's body (uploads included).
    pub body_timeout: Duration,
    /// Folders sources may follow (`SOURCE_FOLDER_ROOTS`).
    pub source_folder_roots: Vec<String>,
    /// Buckets sources may follow (`SOURCE_S3_BUCKETS`).
    pub source_s3_buckets: Vec<String>,
}

impl Default for ApiConfig {
    fn default() -> Self {
        ApiConfig {
            cors_origins: Vec::new(),
            upload_max_bytes: 100 * 1024 * 1024,
            workspace_max_bytes: 10 * 1024 * 1024 * 1024,
            workspaces_per_user: 50,
            json_body_max_bytes: 64 * 1024,
            sse_poll: Duration::from_millis(250),
            ready_timeout: Duration::from_secs(3),
            dev_sign_in: false,
            limits: limits::LimitsConfig::default(),
            header_timeout: Duration::from_secs(30),
            body_timeout: Duration::from_secs(300),
            source_folder_roots: Vec::new(),
            source_s3_buckets: Vec::new(),
        }
    }
}

struct Inner {
    pool: PgPool,
    producer: EventProducer,
    blobs: BlobStore,
    auth: JwtAuth,
    config: ApiConfig,
    limits: limits::Limits,
    shutdown: CancellationToken,
    deltas: deltas::DeltaHub,
    /// Image pages being decoded for display (see [`IMAGE_RENDERS`]).
    image_renders: Arc<tokio::sync::Semaphore>,
    /// Reading views being drawn (two at a time: `routes::reading`).
    reading_turn: tokio::sync::Semaphore,
    /// Passage search for the MCP `search` tool ([`AppState::with_search`]).
    search: Option<Arc<dyn mcp::PassageSearch>>,
    /// Sources this process is syncing now (a second request for one is
    /// told so rather than starting a second sync).
    syncing: std::sync::Mutex<std::collections::HashSet<uuid::Uuid>>,
}

/// Image pages the API decodes at once for the page-image endpoint. Each
/// decodes the whole picture in this process (up to 4 bytes a pixel of
/// `PARSE_MAX_IMAGE_PIXELS`: 200 MB at the default) before shrinking it,
/// so at most this many are in memory whatever the number of requests;
/// the others wait their turn.
pub const IMAGE_RENDERS: usize = 2;

/// What every handler shares; cheap to clone.
#[derive(Clone)]
pub struct AppState(Arc<Inner>);

impl AppState {
    pub fn new(
        pool: PgPool,
        producer: EventProducer,
        blobs: BlobStore,
        auth: JwtAuth,
        config: ApiConfig,
        shutdown: CancellationToken,
    ) -> Self {
        let limits = limits::Limits::new(config.limits.clone());
        AppState(Arc::new(Inner {
            pool,
            producer,
            blobs,
            auth,
            config,
            limits,
            shutdown,
            deltas: deltas::DeltaHub::default(),
            image_renders: Arc::new(tokio::sync::Semaphore::new(IMAGE_RENDERS)),
            reading_turn: tokio::sync::Semaphore::new(2),
            search: None,
            syncing: Default::default(),
        }))
    }
    /// Gives the MCP `search` tool its search (the application's retrieval).
    pub fn with_search(mut self, search: Arc<dyn mcp::PassageSearch>) -> Self {
        if let Some(inner) = Arc::get_mut(&mut self.0) {
            inner.search = Some(search);
        }
        self
    }
    pub(crate) fn pool(&self) -> &PgPool {
        &self.0.pool
    }
    /// Answer deltas from now on (see [`deltas`]).
    pub(crate) fn answer_deltas(&self) -> tokio::sync::broadcast::Receiver<Arc<rag_store::messages::AnswerDelta>> {
        self.0.deltas.subscribe(&self.0.pool, &self.0.shutdown)
    }
    pub(crate) fn producer(&self) -> &EventProducer {
        &self.0.producer
    }
    pub(crate) fn blobs(&self) -> &BlobStore {
        &self.0.blobs
    }
    pub(crate) fn auth(&self) -> &JwtAuth {
        &self.0.auth
    }
    pub(crate) fn config(&self) -> &ApiConfig {
        &self.0.config
    }
    pub(crate) fn limits(&self) -> &limits::Limits {
        &self.0.limits
    }
    /// Marks `source` as syncing in this process; false when it already is.
    pub(crate) fn begin_sync(&self, source: uuid::Uuid) -> bool {
        self.0.syncing.lock().map(|mut s| s.insert(source)).unwrap_or(false)
    }
    pub(crate) fn end_sync(&self, source: uuid::Uuid) {
        if let Ok(mut s) = self.0.syncing.lock() {
            s.remove(&source);
        }
    }
    pub(crate) fn is_syncing(&self, source: uuid::Uuid) -> bool {
        self.0.syncing.lock().map(|s| s.contains(&source)).unwrap_or(false)
    }
    pub(crate) fn shutdown(&self) -> &CancellationToken {
        &self.0.shutdown
    }
    /// Permits to decode an image page ([`IMAGE_RENDERS`] at once).
    pub(crate) fn image_renders(&self) -> &Arc<tokio::sync::Semaphore> {
        &self.0.image_renders
    }
    /// A turn to draw a reading view (two at once).
    pub(crate) fn reading_turn(&self) -> &tokio::sync::Semaphore {
        &self.0.reading_turn
    }
}

/// Room for the multipart framing around an upload's bytes.
pub(crate) const MULTIPART_OVERHEAD: u64 = 64 * 1024;

pub fn router(state: AppState) -> Router {
    let cfg = state.config().clone();
    let upload_limit = usize::try_from(cfg.upload_max_bytes.saturating_add(MULTIPART_OVERHEAD)).unwrap_or(usize::MAX);
    let v1 = Router::new()
        .route("/workspaces", post(routes::workspaces::create).get(routes::workspaces::list))
        .route("/keys", post(routes::keys::create).get(routes::keys::list))
        .route("/keys/{id}", axum::routing::delete(routes::keys::revoke))
        // OpenAI-compatible chat (`routes::openai`): a model is a workspace.
        .route("/models", get(routes::openai::models))
        .route("/chat/completions", post(routes::openai::chat_completions).layer(DefaultBodyLimit::max(routes::openai::MAX_BODY_BYTES)))
        .route(
            "/workspaces/{ws}/documents",
            post(routes::documents::upload).layer(DefaultBodyLimit::max(upload_limit)).get(routes::documents::list),
        )
        .route("/workspaces/{ws}/documents/events", get(routes::document_events::stream))
        .route(
            "/workspaces/{ws}/documents/{id}",
            get(routes::documents::get)
                .delete(routes::documents::delete)
                .put(routes::documents::replace)
                .layer(DefaultBodyLimit::max(upload_limit)),
        )
        .route("/workspaces/{ws}/documents/{id}/raw-text", get(routes::documents::raw_text))
        .route("/workspaces/{ws}/documents/{id}/reading", get(routes::reading::reading))
        .route("/workspaces/{ws}/sources", get(routes::sources::list).post(routes::sources::create))
        .route("/workspaces/{ws}/sources/{id}", axum::routing::delete(routes::sources::remove))
        .route("/workspaces/{ws}/sources/{id}/sync", post(routes::sources::sync))
        .route("/workspaces/{ws}/sources/{id}/files", get(routes::sources::files))
        .route("/workspaces/{ws}/documents/{id}/pages/{page}/image", get(routes::page_image::page_image))
        .route("/workspaces/{ws}/conversations", post(routes::conversations::create).get(routes::conversations::list))
        .route("/workspaces/{ws}/conversations/{id}", get(routes::conversations::get))
        .route("/workspaces/{ws}/conversations/{id}/messages", post(routes::conversations::post_message))
        .route("/workspaces/{ws}/conversations/{id}/messages/{message}", get(routes::conversations::get_message))
        .route("/workspaces/{ws}/conversations/{id}/events", get(routes::events::stream))
        .layer(axum::middleware::from_fn_with_state(state.clone(), limits::limit_requests))
        .layer(tower_http::timeout::RequestBodyTimeoutLayer::new(cfg.body_timeout));
    // MCP (`mcp`): authenticated and rate-limited before the protocol runs.
    let mcp = Router::new()
        .nest_service("/mcp", mcp::service(state.clone()))
        .layer(axum::middleware::from_fn_with_state(state.clone(), mcp::authenticate))
        .layer(axum::middleware::from_fn_with_state(state.clone(), limits::limit_requests));
    let mut app = Router::new()
        .nest("/v1", v1)
        .merge(mcp)
        .route("/healthz", get(routes::health::healthz))
        // Each call checks three services: rate-limited like /v1.
        .route("/readyz", get(routes::health::readyz).layer(axum::middleware::from_fn_with_state(state.clone(), limits::limit_requests)))
        .route("/openapi.json", get(openapi::openapi_json))
        .route("/", get(routes::page::index))
        .route("/ui/config.json", get(routes::page::config))
        .route("/ui/{file}", get(routes::page::asset))
        .route("/dev/sign-in", post(routes::page::dev_sign_in))
        .fallback(routes::health::not_found)
        .layer(DefaultBodyLimit::max(cfg.json_body_max_bytes))
        .layer(axum::middleware::from_fn(middleware::observe));
    if let Some(cors) = cors_layer(&cfg.cors_origins) {
        app = app.layer(cors);
    }
    // No response is to be sniffed into another type (a JSON error read as HTML).
    app.layer(tower_http::set_header::SetResponseHeaderLayer::if_not_present(
        header::X_CONTENT_TYPE_OPTIONS,
        axum::http::HeaderValue::from_static("nosniff"),
    ))
    .layer(PropagateRequestIdLayer::new(REQUEST_ID.clone()))
    .layer(SetRequestIdLayer::new(REQUEST_ID.clone(), MakeRequestUuid))
    .with_state(state)
}

fn cors_layer(origins: &[String]) -> Option<CorsLayer> {
    if origins.is_empty() {
        return None;
    }
    let allow = if origins.iter().any(|o| o == "*") {
        AllowOrigin::any()
    } else {
        AllowOrigin::list(origins.iter().filter_map(|o| o.parse().ok()))
    };
    Some(
        CorsLayer::new()
            .allow_origin(allow)
            .allow_methods([Method::GET, Method::POST, Method::DELETE, Method::OPTIONS])
            .allow_headers([header::AUTHORIZATION, header::CONTENT_TYPE, HeaderName::from_static("last-event-id")])
            .expose_headers([REQUEST_ID.clone()])
            .max_age(Duration::from_secs(600)),
    )
}

/// Serves the API until `shutdown` is cancelled; open event streams end
/// then, so the graceful shutdown does not wait on them.
///
/// hyper directly rather than `axum::serve`, which has no header-read
/// timeout: a client that opens connections and sends headers a byte a
/// minute would hold them (and their tasks) for ever.
pub async fn serve(listener: tokio::net::TcpListener, state: AppState) -> std::io::Result<()> {
    use hyper_util::rt::{TokioIo, TokioTimer};
    let shutdown = state.0.shutdown.clone();
    let header_timeout = state.config().header_timeout;
    let app = router(state.clone());
    rag_telemetry::events::HttpRoutesServed { routes: &openapi::served_routes() }.emit();
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut forget = tokio::time::interval(Duration::from_secs(60));
    loop {
        let (stream, peer) = tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = forget.tick() => {
                state.limits().forget_idle();
                continue;
            }
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                // Out of file descriptors and the like: the listener stays.
                Err(e) => {
                    tracing::warn!(error = %e, "accepting a connection");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let app = app.clone();
        let service = hyper::service::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
            req.extensions_mut().insert(axum::extract::ConnectInfo(peer));
            tower::ServiceExt::oneshot(app.clone(), req.map(axum::body::Body::new))
        });
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder.timer(TokioTimer::new()).header_read_timeout(header_timeout);
        let conn = builder.serve_connection(TokioIo::new(stream), service);
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, peer = %peer, "connection ended with an error");
            }
        });
    }
    drop(listener);
    // Requests running finish (event streams end on shutdown themselves).
    tokio::select! {
        _ = graceful.shutdown() => {}
        // Within `run`'s budget: the process exits within seconds of SIGTERM.
        _ = tokio::time::sleep(Duration::from_secs(5)) => tracing::warn!("connections still open 5 s after shutdown; closing"),
    }
    Ok(())
}
