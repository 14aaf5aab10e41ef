//! How are stored documents read and removed? Reading candidate sets, [`RedisBackend::query`],
//! [`RedisBackend::get`] and [`RedisBackend::remove`].
//!
//! Invariants: only committed members inside the retention window (by score) are returned;
//! a removal takes effect when the id record is deleted (its linearisation point), and the
//! table entries follow in the same call.

use futures_util::future::try_join_all;

use crate::member::{check_id, parse_pairs, Member};
use crate::{DocInfo, Hit, RedisBackend, Result, Stage};

/// Most hits a [`RedisBackend::query`] returns (nearest first), as the embedded engine.
pub const MAX_HITS: usize = 100;

impl RedisBackend {
    pub(crate) async fn read_keys(
        &self,
        keys: &[String],
        expired_at: i64,
    ) -> Result<Vec<Vec<(Member, i64)>>> {
        let lo = format!("({expired_at}");
        let reads = keys.iter().map(|k| {
            let mut c = self.conn();
            let lo = &lo;
            async move {
                let v: Vec<(Vec<u8>, f64)> = redis::cmd("ZRANGEBYSCORE")
                    .arg(k)
                    .arg(lo)
                    .arg("+inf")
                    .arg("WITHSCORES")
                    .query_async(&mut c)
                    .await?;
                parse_pairs(v)
            }
        });
        try_join_all(reads).await
    }

    /// The live documents within the distance of `fp`, nearest first (then oldest), at most
    /// [`MAX_HITS`]. Nothing is stored. On a cluster, checks still deciding are not visible.
    ///
    /// # Errors
    /// [`Error::Unavailable`](crate::Error::Unavailable) when Redis failed.
    pub async fn query(&self, fp: u64) -> Result<Vec<Hit>> {
        let now = self.now();
        let expired_at = now.saturating_sub(self.inner.retention_ms);
        let keys: Vec<String> = (0..self.inner.layout.tables())
            .map(|t| self.table_key(t, fp))
            .collect();
        let sets = self.read_keys(&keys, expired_at).await?;
        let k = self.inner.opts.distance;
        let mut found: Vec<(u32, i64, u64, Member)> = sets
            .into_iter()
            .flatten()
            .filter(|(m, _)| m.committed)
            .filter_map(|(m, ts)| {
                let d = (m.fp ^ fp).count_ones();
                (d <= k).then_some((d, ts, m.tag, m))
            })
            .collect();
        found.sort_unstable_by_key(|a| (a.0, a.1, a.2));
        found.dedup_by_key(|x| x.2);
        found.truncate(MAX_HITS);
        Ok(found
            .into_iter()
            .map(|(d, ts, _, m)| Hit {
                id: m.id,
                fingerprint: Some(m.fp),
                distance: Some(d),
                similarity: None,
                stage: Stage::Simhash,
                timestamp_ms: ts,
            })
            .collect())
    }

    pub(crate) async fn live_doc(
        &self,
        id: &str,
        expired_at: i64,
    ) -> Result<Option<(Member, i64)>> {
        let sets = self.read_keys(&[self.id_key(id)], expired_at).await?;
        Ok(sets
            .into_iter()
            .flatten()
            .filter(|(m, _)| m.committed && m.id == id)
            .min_by_key(|(m, ts)| (*ts, m.tag)))
    }

    /// The stored, live document with this id.
    ///
    /// # Errors
    /// [`Error::InvalidId`](crate::Error::InvalidId); [`Error::Unavailable`](crate::Error::Unavailable) when Redis failed.
    pub async fn get(&self, id: &str) -> Result<Option<DocInfo>> {
        check_id(id)?;
        let expired_at = self.now().saturating_sub(self.inner.retention_ms);
        Ok(self.live_doc(id, expired_at).await?.map(|(m, ts)| DocInfo {
            id: m.id,
            fingerprint: Some(m.fp),
            timestamp_ms: ts,
        }))
    }

    /// Removes the live document `id`; returns whether there was one. The removal takes effect
    /// when its id record is deleted (the linearisation point); its table entries follow in
    /// the same call.
    ///
    /// # Errors
    /// [`Error::InvalidId`](crate::Error::InvalidId); [`Error::Unavailable`](crate::Error::Unavailable) when Redis failed (retry: removal is
    /// idempotent).
    pub async fn remove(&self, id: &str) -> Result<bool> {
        check_id(id)?;
        let expired_at = self.now().saturating_sub(self.inner.retention_ms);
        let Some((m, ts)) = self.live_doc(id, expired_at).await? else {
            return Ok(false);
        };
        let member = Member::encode(true, m.fp, m.tag, &m.id);
        let keys = self.keys_of(m.fp, &m.id);
        let mut c = self.conn();
        let n: i64 = redis::cmd("ZREM")
            .arg(&keys[keys.len() - 1])
            .arg(&member)
            .query_async(&mut c)
            .await?;
        let rems = keys[..keys.len() - 1].iter().map(|k| {
            let mut c = self.conn();
            let member = &member;
            async move {
                redis::cmd("ZREM")
                    .arg(k)
                    .arg(&member[..])
                    .query_async::<i64>(&mut c)
                    .await
            }
        });
        try_join_all(rems).await?;
        if n == 1 {
            let mut p = redis::pipe();
            p.cmd("HINCRBY")
                .arg(self.stats_key())
                .arg("removed")
                .arg(1)
                .ignore()
                .cmd("HINCRBY")
                .arg(self.stats_key())
                .arg(self.count_field(ts))
                .arg(-1)
                .ignore();
            let _: Result<(), _> = p.query_async(&mut c).await;
        }
        Ok(n == 1)
    }
}
