//! How does the backend talk to Redis? The backend URL and the connection (single node
//! with a reconnecting manager, or a cluster).
//!
//! Invariant: `redis://` means one node (every script runs atomically there);
//! `redis+cluster://` means the cluster protocol. A URL of any other form is refused
//! before anything connects.

use std::time::Duration;

use redis::aio::{ConnectionLike, ConnectionManager, ConnectionManagerConfig};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};

use crate::{Error, Result};

/// A connection to one node or to a cluster; cheap to clone (multiplexed).
#[derive(Clone)]
pub(crate) enum Conn {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

impl Conn {
    /// Connects to `url` (see [`parse_url`]) with `timeout` for connecting and for each reply.
    pub(crate) async fn open(url: &str, timeout: Duration) -> Result<Conn> {
        let (cluster, nodes) = parse_url(url)?;
        Ok(if cluster {
            let client = redis::cluster::ClusterClient::builder(nodes)
                .connection_timeout(timeout)
                .response_timeout(timeout)
                .retries(3)
                .build()?;
            Conn::Cluster(client.get_async_connection().await?)
        } else {
            let client = redis::Client::open(nodes[0].as_str())?;
            let cfg = ConnectionManagerConfig::new()
                .set_connection_timeout(Some(timeout))
                .set_response_timeout(Some(timeout))
                .set_number_of_retries(2)
                .set_max_delay(Duration::from_millis(500));
            Conn::Single(ConnectionManager::new_with_config(client, cfg).await?)
        })
    }
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Single(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Single(c) => c.req_packed_commands(cmd, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(cmd, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Single(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
        }
    }
}

/// Parses a backend URL into (cluster?, node URLs).
pub(crate) fn parse_url(url: &str) -> Result<(bool, Vec<String>)> {
    let bad = |reason: &str| Error::InvalidUrl {
        url: url.to_owned(),
        reason: reason.to_owned(),
    };
    if let Some(rest) = url.strip_prefix("redis+cluster://") {
        let nodes: Vec<String> = rest
            .trim_end_matches('/')
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| format!("redis://{s}"))
            .collect();
        if nodes.is_empty() {
            return Err(bad("no cluster node given"));
        }
        for n in &nodes {
            redis::parse_redis_url(n).ok_or_else(|| bad("a node is not host:port"))?;
        }
        Ok((true, nodes))
    } else if url.starts_with("redis://") {
        redis::parse_redis_url(url).ok_or_else(|| bad("not a valid redis:// URL"))?;
        Ok((false, vec![url.to_owned()]))
    } else {
        Err(bad("unknown scheme"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::member::check_id;

    #[test]
    fn urls() {
        assert_eq!(
            parse_url("redis://127.0.0.1:6379/2").unwrap(),
            (false, vec!["redis://127.0.0.1:6379/2".to_string()])
        );
        assert_eq!(
            parse_url("redis+cluster://a:1,b:2").unwrap(),
            (
                true,
                vec!["redis://a:1".to_string(), "redis://b:2".to_string()]
            )
        );
        assert!(parse_url("http://x").is_err());
        assert!(parse_url("redis+cluster://").is_err());
        assert!(check_id("").is_err());
        assert!(check_id(&"x".repeat(1025)).is_err());
    }
}
