//! The OpenAPI 3 document, generated from the handlers' annotations and the
//! body types in [`crate::model`].

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::routes;

#[derive(OpenApi)]
#[openapi(
    info(title = "rag-engine API", description = "Explainable RAG: documents, the raw-text viewer, questions answered in sections with citations into the raw text."),
    paths(
        routes::workspaces::create, routes::workspaces::list,
        routes::keys::create, routes::keys::list, routes::keys::revoke,
        routes::documents::upload, routes::documents::replace, routes::documents::list, routes::documents::get, routes::documents::delete, routes::documents::raw_text, routes::reading::reading, routes::page_image::page_image,
        routes::sources::list, routes::sources::create, routes::sources::sync, routes::sources::files, routes::sources::remove,
        routes::conversations::create, routes::conversations::list, routes::conversations::get,
        routes::conversations::post_message, routes::conversations::get_message,
        routes::events::stream, routes::document_events::stream,
        routes::health::healthz, routes::health::readyz,
    ),
    modifiers(&BearerAuth, &AcceptedTypes),
)]
pub struct ApiDoc;

/// The upload's `file` field lists the content types the parser reads,
/// from the parser's own list, so the document cannot fall behind it.
struct AcceptedTypes;

impl Modify for AcceptedTypes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::{RefOr, Schema};
        let Some(components) = openapi.components.as_mut() else { return };
        let Some(RefOr::T(Schema::Object(form))) = components.schemas.get_mut("UploadForm") else { return };
        let Some(RefOr::T(Schema::Object(file))) = form.properties.get_mut("file") else { return };
        let listed: Vec<String> =
            rag_docparse::Format::ALL.iter().map(|f| format!("`{}` (.{})", f.content_type(), f.extensions().join(", ."))).collect();
        file.description = Some(format!(
            "The document. Accepted content types, each with the file extensions that stand for it when the part is sent as \
             `application/octet-stream`: {}. Anything else is refused with 415.",
            listed.join("; ")
        ));
    }
}

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).bearer_format("JWT").build()),
        );
    }
}

/// Every documented operation with the first success status it documents:
/// its request series exist from zero when the API starts (routes the
/// document leaves out, the page's assets and sign-in, appear on first use).
pub fn served_routes() -> Vec<rag_telemetry::events::ServedRoute> {
    let doc = ApiDoc::openapi();
    let mut routes = Vec::new();
    for (path, item) in &doc.paths.paths {
        let operations = [("GET", &item.get), ("POST", &item.post), ("PUT", &item.put), ("DELETE", &item.delete)];
        for (method, operation) in operations {
            let Some(operation) = operation else { continue };
            let success =
                operation.responses.responses.keys().filter_map(|code| code.parse::<u16>().ok()).find(|code| (200..300).contains(code));
            if let Some(success_status) = success {
                routes.push(rag_telemetry::events::ServedRoute { method: method.into(), route: path.clone(), success_status });
            }
        }
    }
    routes
}

/// The document as JSON text.
pub fn document_json() -> String {
    ApiDoc::openapi().to_pretty_json().unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

/// `GET /openapi.json`: this API's OpenAPI 3 document. (Here rather than
/// beside the health routes: the document lists the routes, so the routes
/// must not depend on it.)
pub async fn openapi_json() -> axum::response::Response {
    use axum::response::IntoResponse;
    ([(axum::http::header::CONTENT_TYPE, "application/json")], document_json()).into_response()
}
