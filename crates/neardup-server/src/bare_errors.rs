//! JSON bodies for the answers hyper writes on its own.
//!
//! When a request cannot even be parsed (bad request line or header: 400, URI too long: 414,
//! header too large: 431), hyper answers by itself with an empty body before any handler
//! runs. [`JsonErrors`] wraps the connection and rewrites exactly those answers — an error
//! status, `content-length: 0`, no content type, the whole head in one write — into the API's
//! JSON error shape. Every answer of ours has a body, so nothing else matches.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::error::error_body;

/// A connection whose bare error answers get JSON bodies.
#[derive(Debug)]
pub(crate) struct JsonErrors<T> {
    inner: T,
    /// A rewritten answer still to be written, and how much of it is written.
    pending: Option<(Vec<u8>, usize)>,
}

impl<T> JsonErrors<T> {
    pub(crate) fn new(inner: T) -> Self {
        JsonErrors {
            inner,
            pending: None,
        }
    }
}

impl<T: AsyncWrite + Unpin> JsonErrors<T> {
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while let Some((buf, done)) = &mut self.pending {
            if *done == buf.len() {
                self.pending = None;
                break;
            }
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &buf[*done..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            *done += n;
        }
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for JsonErrors<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for JsonErrors<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        ready!(this.poll_drain(cx))?;
        if let Some(rewritten) = rewrite_bare_error(buf) {
            this.pending = Some((rewritten, 0));
            // Start writing now; the rest goes out on flush or the next write.
            if let Poll::Ready(Err(e)) = this.poll_drain(cx) {
                return Poll::Ready(Err(e));
            }
            return Poll::Ready(Ok(buf.len()));
        }
        Pin::new(&mut this.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_drain(cx))?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_drain(cx))?;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// The JSON code and message for a status hyper answers by itself.
fn describe(status: u16) -> (&'static str, &'static str) {
    match status {
        400 => (
            "bad_request",
            "the request is not valid HTTP/1.1 (request line or header)",
        ),
        414 => (
            "uri_too_long",
            "the request URI is too long; ids are at most 1024 bytes",
        ),
        431 => (
            "header_too_large",
            "the request header is too large (too many or too long header fields)",
        ),
        _ => ("bad_request", "the request was refused by the HTTP layer"),
    }
}

/// `buf` with a JSON body if it is exactly a bare error answer of hyper's.
fn rewrite_bare_error(buf: &[u8]) -> Option<Vec<u8>> {
    let head = buf.strip_prefix(b"HTTP/1.1 ")?;
    let status: u16 = std::str::from_utf8(head.get(..3)?).ok()?.parse().ok()?;
    if status < 400 || !buf.ends_with(b"\r\n\r\n") {
        return None;
    }
    // Exactly one head in the write, and no body.
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n")?;
    if end + 4 != buf.len() {
        return None;
    }
    let text = std::str::from_utf8(&buf[..end]).ok()?;
    let mut lines = text.split("\r\n");
    let status_line = lines.next()?;
    let mut headers = Vec::new();
    let mut empty_body = false;
    for l in lines {
        let (name, value) = l.split_once(':')?;
        let name = name.trim();
        if name.eq_ignore_ascii_case("content-type") {
            return None;
        }
        if name.eq_ignore_ascii_case("content-length") {
            if value.trim() != "0" {
                return None;
            }
            empty_body = true;
            continue;
        }
        if name.eq_ignore_ascii_case("connection") {
            continue;
        }
        headers.push(l);
    }
    if !empty_body {
        return None;
    }
    let (code, message) = describe(status);
    let body = error_body(code, message);
    let mut out = format!("{status_line}\r\n").into_bytes();
    for h in headers {
        out.extend_from_slice(h.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(
        format!(
            "content-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
            body.len()
        )
        .as_bytes(),
    );
    out.extend_from_slice(&body);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::rewrite_bare_error;

    #[test]
    fn bare_error_heads_get_a_json_body() {
        let out = rewrite_bare_error(
            b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\ndate: x\r\n\r\n",
        )
        .unwrap();
        let out = String::from_utf8(out).unwrap();
        let (head, body) = out.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 431 "), "{head}");
        assert!(head.contains("date: x"), "{head}");
        assert!(head.contains("content-type: application/json"), "{head}");
        assert!(head.contains(&format!("content-length: {}", body.len())));
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["error"]["code"], "header_too_large");
    }

    #[test]
    fn answers_of_our_own_pass_unchanged() {
        for buf in [
            &b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"[..],
            b"HTTP/1.1 404 Not Found\r\ncontent-type: application/json\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 404 Not Found\r\ncontent-length: 2\r\n\r\n{}",
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\nHTTP/1.1 400",
            b"{\"error\":1}",
        ] {
            assert!(rewrite_bare_error(buf).is_none(), "{buf:?}");
        }
    }
}
