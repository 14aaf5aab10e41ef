//! The one error shape of the API, `{"error": {"code", "message"}}`, for every status >= 400:
//! handler errors, axum's extractor rejections, the 404/405 fallbacks, and the few answers the
//! connection layer writes itself (see [`error_body`]).

use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::backend::BackendError;

/// An HTTP error with a JSON body `{"error": {"code", "message"}}`.
#[derive(Debug)]
pub(crate) struct ApiError {
    pub(crate) status: StatusCode,
    pub(crate) code: &'static str,
    pub(crate) message: String,
}

impl ApiError {
    pub(crate) fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
        }
    }

    /// 422 `invalid_document`: the body parsed but the document is unusable.
    pub(crate) fn unprocessable(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_document",
            message,
        )
    }

    /// 400 `bad_json`: the body is not JSON of the expected shape.
    pub(crate) fn bad_json(message: impl std::fmt::Display) -> Self {
        Self::new(
            StatusCode::BAD_REQUEST,
            "bad_json",
            format!("the body is not valid JSON of the expected shape: {message}"),
        )
    }

    /// 422 `invalid_id`: the id in the path is unusable.
    pub(crate) fn invalid_id(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid_id", message)
    }

    /// 413 `body_too_large`, naming the setting that raises the limit.
    pub(crate) fn body_too_large(limit: usize) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            format!(
                "the request body is larger than {limit} bytes, the server's limit; send less \
                 (e.g. split a batch) or raise it with --body-limit (NEARDUP_BODY_LIMIT)"
            ),
        )
    }
}

/// The JSON error document for `code` and `message`, as bytes (for answers written outside
/// axum).
pub(crate) fn error_body(code: &str, message: &str) -> Vec<u8> {
    json!({"error": {"code": code, "message": message}})
        .to_string()
        .into_bytes()
}

impl From<BackendError> for ApiError {
    fn from(e: BackendError) -> Self {
        match e {
            BackendError::BadInput(m) => ApiError::unprocessable(m),
            BackendError::Unavailable(m) => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", m)
            }
            BackendError::Internal(m) => {
                ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", m)
            }
        }
    }
}

impl From<BytesRejection> for ApiError {
    fn from(r: BytesRejection) -> Self {
        let status = r.status();
        let code = if status == StatusCode::PAYLOAD_TOO_LARGE {
            "body_too_large"
        } else {
            "bad_body"
        };
        ApiError::new(status, code, r.body_text())
    }
}

impl From<PathRejection> for ApiError {
    fn from(r: PathRejection) -> Self {
        // The only path parameter is a document id; a failure to decode it (percent-escapes
        // that are not UTF-8) makes it unusable like an over-long one.
        ApiError::invalid_id(format!("the id in the path is unusable: {}", r.body_text()))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": {"code": self.code, "message": self.message}});
        let mut r = (self.status, Json(body)).into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            r.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        r
    }
}

/// 404 for a path that names no route.
pub(crate) async fn no_route() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "no_route",
        "no such route; GET /openapi.yaml describes the API",
    )
}

/// 405 for a known path with another method (axum adds the `Allow` header).
pub(crate) async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this route does not take that method; the Allow header lists those it takes",
    )
}
