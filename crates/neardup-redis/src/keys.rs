//! What is each Redis key called, and how long does it live? Key names (table keys, id
//! buckets, sequence, status, stats), the per-bucket count field and key TTLs.
//!
//! Invariants: every key is `{P:…}`, a Redis Cluster hash tag of its own, so each key is one
//! slot and one lookup touches one node; the table number and the block value are both in a
//! table key, so equal block values of different tables never collide; the id bucket is a
//! stable hash (FNV-1a), the same on every instance.

use crate::RedisBackend;

/// Document records live in `2^20` id buckets (sorted sets keyed by a hash of the id), so
/// large indexes keep them in Redis's compact listpack encoding.
pub const ID_BUCKET_BITS: u32 = 20;

impl RedisBackend {
    pub(crate) fn table_key(&self, t: usize, fp: u64) -> String {
        let l = &self.inner.layout;
        let width = l.key_bits(t).div_ceil(4) as usize;
        format!(
            "{{{}:t{}:{:0width$x}}}",
            self.inner.opts.prefix,
            t,
            l.key_value(t, fp)
        )
    }

    /// The id bucket of `id`: FNV-1a (stable everywhere) of the id, [`ID_BUCKET_BITS`] bits.
    pub(crate) fn id_key(&self, id: &str) -> String {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in id.bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        format!(
            "{{{}:i:{:05x}}}",
            self.inner.opts.prefix,
            h & ((1 << ID_BUCKET_BITS) - 1)
        )
    }

    pub(crate) fn seq_key(&self) -> String {
        format!("{{{}:seq}}", self.inner.opts.prefix)
    }

    pub(crate) fn status_key(&self, nonce: u64) -> String {
        format!("{{{}:seq}}:s:{:016x}", self.inner.opts.prefix, nonce)
    }

    pub(crate) fn stats_key(&self) -> String {
        format!("{{{}:stats}}", self.inner.opts.prefix)
    }

    /// Table keys of `fp`, then the id key.
    pub(crate) fn keys_of(&self, fp: u64, id: &str) -> Vec<String> {
        let mut keys: Vec<String> = (0..self.inner.layout.tables())
            .map(|t| self.table_key(t, fp))
            .collect();
        keys.push(self.id_key(id));
        keys
    }

    pub(crate) fn ttl_ms(&self, ts: i64, now: i64) -> i64 {
        let grace = i64::try_from(self.inner.opts.expire_grace.as_millis()).unwrap_or(i64::MAX);
        (ts.saturating_add(self.inner.retention_ms) - now)
            .saturating_add(grace)
            .max(1)
    }

    pub(crate) fn count_field(&self, ts: i64) -> String {
        format!("n:{}", ts.div_euclid(self.inner.bucket_ms))
    }
}
