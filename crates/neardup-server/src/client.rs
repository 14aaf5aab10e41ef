//! A minimal HTTP/1.1 keep-alive client over one TCP connection, for tests and the load
//! generator (no TLS, no chunked responses: exactly what this server sends).

use std::net::SocketAddr;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// One keep-alive connection.
#[derive(Debug)]
pub struct Client {
    stream: BufReader<TcpStream>,
    token: Option<String>,
    host: String,
}

impl Client {
    /// Connects to `addr`.
    ///
    /// # Errors
    /// Connection errors.
    pub async fn connect(addr: SocketAddr) -> std::io::Result<Client> {
        let s = TcpStream::connect(addr).await?;
        s.set_nodelay(true)?;
        Ok(Client {
            stream: BufReader::new(s),
            token: None,
            host: addr.to_string(),
        })
    }

    /// Sends `Authorization: Bearer <token>` from now on.
    pub fn with_token(mut self, token: &str) -> Client {
        self.token = Some(token.to_string());
        self
    }

    /// Sends a request and returns `(status, body)`.
    ///
    /// # Errors
    /// I/O errors and malformed responses.
    pub async fn request(
        &mut self,
        method: &str,
        path: &str,
        body: Option<&[u8]>,
    ) -> std::io::Result<(u16, String)> {
        let mut req = format!("{method} {path} HTTP/1.1\r\nhost: {}\r\n", self.host);
        if let Some(t) = &self.token {
            req.push_str(&format!("authorization: Bearer {t}\r\n"));
        }
        if let Some(b) = body {
            req.push_str(&format!(
                "content-type: application/json\r\ncontent-length: {}\r\n",
                b.len()
            ));
        }
        req.push_str("\r\n");
        let mut buf = req.into_bytes();
        if let Some(b) = body {
            buf.extend_from_slice(b);
        }
        self.stream.get_mut().write_all(&buf).await?;
        let bad = |m: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, m.to_string());
        let mut line = String::new();
        if self.stream.read_line(&mut line).await? == 0 {
            return Err(bad("connection closed"));
        }
        let status: u16 = line
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| bad("bad status line"))?;
        let mut len = 0usize;
        loop {
            line.clear();
            if self.stream.read_line(&mut line).await? == 0 {
                return Err(bad("connection closed in headers"));
            }
            let l = line.trim_end();
            if l.is_empty() {
                break;
            }
            if let Some((k, v)) = l.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    len = v.trim().parse().map_err(|_| bad("bad content-length"))?;
                }
            }
        }
        let mut body = vec![0; len];
        self.stream.read_exact(&mut body).await?;
        Ok((status, String::from_utf8_lossy(&body).into_owned()))
    }

    /// `POST path` with a JSON body.
    ///
    /// # Errors
    /// See [`request`](Self::request).
    pub async fn post_json(&mut self, path: &str, json: &str) -> std::io::Result<(u16, String)> {
        self.request("POST", path, Some(json.as_bytes())).await
    }

    /// `GET path`.
    ///
    /// # Errors
    /// See [`request`](Self::request).
    pub async fn get(&mut self, path: &str) -> std::io::Result<(u16, String)> {
        self.request("GET", path, None).await
    }
}
