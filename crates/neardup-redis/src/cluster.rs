//! How is a check decided on a Redis Cluster, where the keys of one fingerprint live on
//! different nodes? The provisional-member protocol with a global sequence (see the crate
//! docs): add provisional members, take a sequence number, read, decide in sequence order,
//! commit or withdraw.
//!
//! Invariants: a provisional member is written before its attempt's `INCR`, so a later attempt
//! always sees every earlier one; each attempt decides as if all were serialised by sequence
//! number; nothing is answered `Duplicate` of a document that is not committed; an attempt
//! that outlives its lease is withdrawn ([`Error::Conflict`]) without storing anything.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use futures_util::future::try_join_all;

use crate::member::{Cand, Member};
use crate::{Error, Outcome, RedisBackend, Result};

impl RedisBackend {
    /// The best committed candidate (same id first, then nearest) — used where no insert
    /// follows.
    pub(crate) async fn best_committed(
        &self,
        id: &str,
        fp: u64,
        expired_at: i64,
    ) -> Result<Option<Cand>> {
        let keys = self.keys_of(fp, id);
        let sets = self.read_keys(&keys, expired_at).await?;
        let k = self.inner.opts.distance;
        let pick = |sets: &[Vec<(Member, i64)>], same: bool| {
            sets.iter()
                .flatten()
                .filter(|(m, _)| m.committed)
                .map(|(m, ts)| Cand {
                    d: (m.fp ^ fp).count_ones(),
                    ts: *ts,
                    seq: m.tag,
                    m: m.clone(),
                })
                .filter(|c| if same { c.m.id == id } else { c.d <= k })
                .min_by_key(Cand::key)
        };
        let n = keys.len();
        Ok(pick(&sets[n - 1..], true).or_else(|| pick(&sets[..], false)))
    }

    pub(crate) async fn check_cluster(
        &self,
        id: &str,
        fp: u64,
        ts: i64,
        now: i64,
        expired_at: i64,
    ) -> Result<Outcome> {
        let keys = self.keys_of(fp, id);
        let nonce = self.nonce();
        let pm = Member::encode(false, fp, nonce, id);
        let ttl = self.ttl_ms(ts, now);
        let sc = &self.inner.scripts;
        // Phase 1: provisional members everywhere.
        let adds = keys.iter().map(|k| {
            let mut c = self.conn();
            let pm = &pm;
            async move {
                sc.add
                    .key(k)
                    .arg(&pm[..])
                    .arg(ts)
                    .arg(expired_at)
                    .arg(ttl)
                    .invoke_async::<i64>(&mut c)
                    .await
            }
        });
        if let Err(e) = try_join_all(adds).await {
            self.withdraw(&keys, &pm).await;
            return Err(e.into());
        }
        // Phase 2: the sequence number, recorded with the attempt's status.
        let lease_ms = self.inner.opts.lease.as_millis() as u64;
        let status = self.status_key(nonce);
        let seq: u64 = match sc
            .seq
            .key(self.seq_key())
            .key(&status)
            .arg(lease_ms)
            .invoke_async(&mut self.conn())
            .await
        {
            Ok(s) => s,
            Err(e) => {
                self.withdraw(&keys, &pm).await;
                return Err(e.into());
            }
        };
        let started = Instant::now();
        let decided = self
            .decide_cluster(&keys, id, fp, nonce, seq, expired_at, started)
            .await;
        let best = match decided {
            Ok(b) => b,
            Err(e) => {
                self.finish(&status, "D").await.ok();
                self.withdraw(&keys, &pm).await;
                return Err(e);
            }
        };
        let grace_ms = 3 * lease_ms;
        if let Some(cand) = best {
            // The document we point at must be committed before we answer.
            if !cand.m.committed {
                self.help_commit(&cand.m, cand.seq, cand.ts).await?;
            }
            self.finish(&status, "D").await.ok();
            self.withdraw(&keys, &pm).await;
            let _: Result<i64, _> = redis::cmd("HINCRBY")
                .arg(self.stats_key())
                .arg("duplicates")
                .arg(1)
                .query_async(&mut self.conn())
                .await;
            return Ok(self.outcome(id, fp, ts, Some((cand.m, cand.d)), false));
        }
        // Unique: the decision point is the status change P -> U.
        let fin: Option<String> = sc
            .finish
            .key(&status)
            .arg("U")
            .arg(grace_ms)
            .invoke_async(&mut self.conn())
            .await?;
        if fin.as_deref() != Some(format!("{seq}:U").as_str()) {
            self.withdraw(&keys, &pm).await;
            return Err(Error::Conflict {
                reason: format!("the lease of {} ms lapsed before the decision", lease_ms),
            });
        }
        let cm = Member::encode(true, fp, seq, id);
        let commits = self.commit_members(&keys, &pm, &cm, ts);
        let mut stats = redis::pipe();
        stats
            .cmd("HINCRBY")
            .arg(self.stats_key())
            .arg("inserted")
            .arg(1)
            .ignore()
            .cmd("HINCRBY")
            .arg(self.stats_key())
            .arg(self.count_field(ts))
            .arg(1)
            .ignore();
        let mut c = self.conn();
        let (commits, _) = tokio::join!(commits, async {
            let r: Result<(), _> = stats.query_async(&mut c).await;
            r
        });
        commits?;
        Ok(self.outcome(id, fp, ts, None, true))
    }

    /// Phase 3 of the cluster protocol: the best stored candidate that precedes `seq`, waiting
    /// for earlier pending attempts. A provisional candidate (its owner decided `U`) must be
    /// committed before answering.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn decide_cluster(
        &self,
        keys: &[String],
        id: &str,
        fp: u64,
        nonce: u64,
        seq: u64,
        expired_at: i64,
        started: Instant,
    ) -> Result<Option<Cand>> {
        let k = self.inner.opts.distance;
        let sets = self.read_keys(keys, expired_at).await?;
        let n = keys.len();
        // (is_id_key, member, ts)
        let mut committed: Vec<(bool, Cand)> = Vec::new();
        let mut pending: HashMap<u64, (bool, Member, i64, u32)> = HashMap::new();
        for (i, set) in sets.into_iter().enumerate() {
            for (m, ts) in set {
                let same_id = i == n - 1 && m.id == id;
                if !m.committed && m.tag == nonce {
                    continue;
                }
                let d = (m.fp ^ fp).count_ones();
                if !same_id && d > k {
                    continue;
                }
                if m.committed {
                    if m.tag < seq {
                        committed.push((
                            same_id,
                            Cand {
                                d,
                                ts,
                                seq: m.tag,
                                m,
                            },
                        ));
                    }
                } else {
                    let e = pending.entry(m.tag).or_insert((same_id, m, ts, d));
                    e.0 |= same_id;
                }
            }
        }
        // Resolve provisional members: their status says seq and state.
        let mut unresolved: Vec<u64> = pending.keys().copied().collect();
        let mut delay = Duration::from_micros(200);
        // Waiting for an earlier attempt: keep our own lease alive (we are not the stalled
        // one), up to twice the lease in all; a stalled attempt lapses within one lease.
        let lease = self.inner.opts.lease;
        let limit = lease * 2;
        let mut extended = started;
        let own_status = self.status_key(nonce);
        let own_value = format!("{seq}:P");
        while !unresolved.is_empty() {
            if started.elapsed() > limit {
                return Err(Error::Conflict {
                    reason: "waited too long for an earlier concurrent check".into(),
                });
            }
            if extended.elapsed() > lease / 4 {
                let ok: i64 = self
                    .inner
                    .scripts
                    .extend
                    .key(&own_status)
                    .arg(&own_value)
                    .arg(lease.as_millis() as u64)
                    .invoke_async(&mut self.conn())
                    .await?;
                if ok != 1 {
                    return Err(Error::Conflict {
                        reason: "this check's lease lapsed while waiting".into(),
                    });
                }
                extended = Instant::now();
            }
            let status_keys: Vec<String> = unresolved.iter().map(|&n| self.status_key(n)).collect();
            let vals: Vec<Option<String>> = redis::cmd("MGET")
                .arg(&status_keys)
                .query_async(&mut self.conn())
                .await?;
            let mut still = Vec::new();
            for (nonce, v) in unresolved.iter().zip(vals) {
                let Some(v) = v else { continue }; // later, or lapsed: never stored
                let (s, state) = v
                    .split_once(':')
                    .ok_or_else(|| Error::Corrupt(format!("status {v:?}")))?;
                let s: u64 = s
                    .parse()
                    .map_err(|_| Error::Corrupt(format!("status {v:?}")))?;
                if s >= seq {
                    continue;
                }
                match state {
                    "U" => {
                        let (same_id, m, ts, d) = pending[nonce].clone();
                        committed.push((same_id, Cand { d, ts, seq: s, m }));
                    }
                    "P" => still.push(*nonce),
                    _ => {}
                }
            }
            unresolved = still;
            if !unresolved.is_empty() {
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_millis(20));
            }
        }
        let best = committed
            .iter()
            .filter(|(s, _)| *s)
            .map(|(_, c)| c)
            .min_by_key(|c| c.key())
            .or_else(|| {
                committed
                    .iter()
                    .filter(|(s, c)| !*s && c.d <= k)
                    .map(|(_, c)| c)
                    .min_by_key(|c| c.key())
            })
            .cloned();
        Ok(best)
    }

    pub(crate) async fn finish(&self, status: &str, state: &str) -> Result<Option<String>> {
        let grace_ms = 3 * self.inner.opts.lease.as_millis() as u64;
        Ok(self
            .inner
            .scripts
            .finish
            .key(status)
            .arg(state)
            .arg(grace_ms)
            .invoke_async(&mut self.conn())
            .await?)
    }

    /// Rewrites a provisional member `pm` into the committed member `cm` in every key (one
    /// script call per key, concurrently).
    pub(crate) async fn commit_members(
        &self,
        keys: &[String],
        pm: &[u8],
        cm: &[u8],
        ts: i64,
    ) -> Result<Vec<i64>> {
        let sc = &self.inner.scripts;
        let commits = keys.iter().map(|k| {
            let mut c = self.conn();
            async move {
                sc.commit
                    .key(k)
                    .arg(pm)
                    .arg(cm)
                    .arg(ts)
                    .invoke_async::<i64>(&mut c)
                    .await
            }
        });
        Ok(try_join_all(commits).await?)
    }

    /// Commits another attempt's provisional members (it decided `U`); idempotent.
    pub(crate) async fn help_commit(&self, m: &Member, seq: u64, ts: i64) -> Result<()> {
        let keys = self.keys_of(m.fp, &m.id);
        let pm = Member::encode(false, m.fp, m.tag, &m.id);
        let cm = Member::encode(true, m.fp, seq, &m.id);
        self.commit_members(&keys, &pm, &cm, ts).await?;
        Ok(())
    }

    /// Best effort: removes provisional members (a failure leaves garbage that readers ignore
    /// and trimming or TTL removes).
    pub(crate) async fn withdraw(&self, keys: &[String], pm: &[u8]) {
        let rems = keys.iter().map(|k| {
            let mut c = self.conn();
            async move {
                redis::cmd("ZREM")
                    .arg(k)
                    .arg(pm)
                    .query_async::<i64>(&mut c)
                    .await
            }
        });
        let _ = try_join_all(rems).await;
    }
}
