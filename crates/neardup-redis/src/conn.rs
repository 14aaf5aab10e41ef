//! How does the backend talk to Redis? The backend URL and the connection (single node
//! with a reconnecting manager, or a cluster).
//!
//! Invariant: `redis://` means one node (every script runs atomically there);
//! `redis+cluster://` means the cluster protocol. A URL of any other form is refused
//! before anything connects.

use redis::aio::{ConnectionLike, ConnectionManager};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};

use crate::{Error, Result};

/// A connection to one node or to a cluster; cheap to clone (multiplexed).
#[derive(Clone)]
pub(crate) enum Conn {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
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
