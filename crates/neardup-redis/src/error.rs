//! What can go wrong, and how does the caller fix it? The crate's [`Error`] and [`Result`].
//!
//! Invariant: every Redis error becomes [`Error::Unavailable`] — nothing of the request was
//! acknowledged — so callers (the HTTP layer: 503) can always retry.

/// Errors of the Redis backend. Each variant says what went wrong and how to fix it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The backend URL is not `redis://host:port[/db]` or `redis+cluster://host:port[,host:port…]`.
    /// Fix: use one of those forms.
    #[error("invalid Redis URL {url:?}: {reason}; use redis://host:port[/db] or redis+cluster://host:port[,host:port...]")]
    InvalidUrl {
        /// The URL given.
        url: String,
        /// What is wrong.
        reason: String,
    },
    /// An option is out of range; the message names it. Fix: correct the option.
    #[error("invalid Redis backend configuration: {0}")]
    InvalidConfig(String),
    /// The index prefix already holds an index written with other settings (distance, blocks,
    /// retention), whose answers would differ. Fix: use the original settings or another
    /// `prefix`.
    #[error("Redis index {prefix:?} was created with {stored}, but this instance uses {current}; use the original settings or another key prefix")]
    ConfigMismatch {
        /// The key prefix.
        prefix: String,
        /// The settings recorded in Redis.
        stored: String,
        /// The settings of this instance.
        current: String,
    },
    /// The document id is empty or longer than [`MAX_ID_BYTES`](crate::MAX_ID_BYTES). Fix: send a non-empty id of
    /// at most 1024 bytes.
    #[error("invalid document id: {reason}")]
    InvalidId {
        /// What is wrong with it.
        reason: String,
    },
    /// Redis could not be reached or refused a command; nothing of this request was
    /// acknowledged (a check may have to be retried). Fix: check that Redis is running and
    /// reachable (`redis-cli -h … ping`); the backend reconnects by itself.
    #[error("Redis unavailable: {reason}")]
    Unavailable {
        /// The Redis error.
        reason: String,
    },
    /// On a cluster, this check took longer than its lease (a stalled client or overloaded
    /// Redis) and was withdrawn without storing anything. Fix: retry; raise
    /// [`RedisConfig::lease`](crate::RedisConfig::lease) if it happens under normal load.
    #[error("check withdrawn: {reason}; retry")]
    Conflict {
        /// Why.
        reason: String,
    },
    /// Redis holds a value this backend cannot decode (another program wrote under the prefix).
    /// Fix: use a prefix of its own for the index.
    #[error("unexpected data in Redis: {0}; use a key prefix of its own for the index")]
    Corrupt(String),
    /// The instance's local index failed (its directory cannot be created, or a log entry
    /// cannot be applied). Fix: see the inner error.
    #[error(transparent)]
    Engine(#[from] neardup::engine::EngineError),
}

impl From<redis::RedisError> for Error {
    fn from(e: redis::RedisError) -> Self {
        Error::Unavailable {
            reason: e.to_string(),
        }
    }
}

/// Result alias of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
