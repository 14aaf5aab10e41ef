//! Request bodies: a JSON content type on the POST routes, a size limit, and a deadline for the
//! whole body to arrive (a client announcing more than it sends cannot hold a connection).

use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use http_body_util::{BodyExt, LengthLimitError, Limited};

use crate::error::ApiError;

/// Whether `value` is `application/json`, with or without parameters (`; charset=utf-8`).
pub(crate) fn is_json(value: Option<&HeaderValue>) -> bool {
    value
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
}

/// 415 unless the request says its body is JSON. Refusing anything else also refuses the
/// "simple" cross-origin requests a browser sends without asking (`text/plain`, forms), so a
/// web page cannot plant documents.
pub(crate) fn require_json(req: &Request) -> Result<(), ApiError> {
    let ct = req.headers().get(header::CONTENT_TYPE);
    if is_json(ct) {
        return Ok(());
    }
    let got = match ct.map(|v| v.to_str()) {
        None => "no Content-Type".to_string(),
        Some(Ok(v)) => format!("Content-Type {v:?}"),
        Some(Err(_)) => "an unreadable Content-Type".to_string(),
    };
    Err(ApiError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
        format!("send the body as JSON with `Content-Type: application/json`; got {got}"),
    ))
}

/// Reads the whole body within `timeout` and at most `limit` bytes, and hands the request on
/// with the body in memory. Errors: 413 (too large, before reading when Content-Length says
/// so), 408 (not complete in time; the connection is closed), 400 (the connection failed).
pub(crate) async fn read_body(
    req: Request,
    limit: usize,
    timeout: Duration,
) -> Result<Request, Response> {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(close(ApiError::body_too_large(limit)));
    }
    let (parts, body) = req.into_parts();
    match tokio::time::timeout(timeout, Limited::new(body, limit).collect()).await {
        Ok(Ok(collected)) => Ok(Request::from_parts(parts, Body::from(collected.to_bytes()))),
        Ok(Err(e)) if e.is::<LengthLimitError>() => Err(close(ApiError::body_too_large(limit))),
        Ok(Err(e)) => Err(close(ApiError::new(
            StatusCode::BAD_REQUEST,
            "bad_body",
            format!("the request body could not be read: {e}"),
        ))),
        Err(_) => Err(close(ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "body_timeout",
            format!(
                "the request body did not arrive within {} ms (--body-timeout); send the whole \
                 body at once, as long as its Content-Length says",
                timeout.as_millis()
            ),
        ))),
    }
}

/// The error as a response that closes the connection (its body may be partly unread).
fn close(e: ApiError) -> Response {
    let mut r = e.into_response();
    r.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    r
}

#[cfg(test)]
mod tests {
    use super::is_json;
    use axum::http::HeaderValue;

    #[test]
    fn json_content_types() {
        for ok in [
            "application/json",
            "Application/JSON",
            "application/json; charset=utf-8",
            " application/json ;charset=UTF-8",
        ] {
            assert!(is_json(Some(&HeaderValue::from_static(ok))), "{ok}");
        }
        for bad in [
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "application/jsonx",
            "",
        ] {
            assert!(!is_json(Some(&HeaderValue::from_static(bad))), "{bad}");
        }
        assert!(!is_json(None));
    }
}
