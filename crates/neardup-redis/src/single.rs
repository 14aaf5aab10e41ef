//! How is a check decided on one Redis node? One Lua script (EVALSHA, one round trip) reads
//! the candidate sets of all tables, computes distances and inserts only if nothing is near.
//!
//! Invariant: scripts run one at a time, so all instances see one arrival order: exactly one
//! `Unique` per group of near-duplicates arriving together.

use redis::Value;

use crate::member::Member;
use crate::{Error, Outcome, RedisBackend, Result};

impl RedisBackend {
    pub(crate) async fn check_single(
        &self,
        id: &str,
        fp: u64,
        ts: i64,
        now: i64,
        expired_at: i64,
    ) -> Result<Outcome> {
        let mut inv = self.inner.scripts.check.prepare_invoke();
        for k in self.keys_of(fp, id) {
            inv.key(k);
        }
        inv.key(self.seq_key()).key(self.stats_key());
        inv.arg(&fp.to_be_bytes()[..])
            .arg(fp >> 32)
            .arg(fp & 0xffff_ffff)
            .arg(id)
            .arg(ts)
            .arg(expired_at)
            .arg(self.inner.opts.distance)
            .arg(self.ttl_ms(ts, now))
            .arg(self.count_field(ts))
            .arg(if ts > expired_at { "1" } else { "0" });
        let v: Value = inv.invoke_async(&mut self.conn()).await?;
        let Value::Array(items) = v else {
            return Err(Error::Corrupt(format!("check script returned {v:?}")));
        };
        let int = |v: &Value| match v {
            Value::Int(i) => Ok(*i),
            other => Err(Error::Corrupt(format!(
                "expected an integer, got {other:?}"
            ))),
        };
        match items.as_slice() {
            [flag, m, d, _ts] if int(flag)? == 1 => {
                let Value::BulkString(m) = m else {
                    return Err(Error::Corrupt("check script returned no member".into()));
                };
                let m = Member::decode(m)?;
                let d = u32::try_from(int(d)?).map_err(|_| Error::Corrupt("distance".into()))?;
                Ok(self.outcome(id, fp, ts, Some((m, d)), false))
            }
            [_, stored, ..] => Ok(self.outcome(id, fp, ts, None, int(stored)? == 1)),
            _ => Err(Error::Corrupt(format!("check script returned {items:?}"))),
        }
    }
}
