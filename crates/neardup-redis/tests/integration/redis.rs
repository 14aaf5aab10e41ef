//! Integration tests against real redis-server processes (single and a 3-master cluster).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::common::{RedisCluster, RedisServer};
use neardup_redis::{Decision, Error, ManualClock, RedisBackend, RedisConfig, Stage};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

const T0: i64 = 1_700_000_000_000;

/// The answer "a duplicate of `of` at `distance`" to a check of `id` (the id's own stored
/// document when `of == id`).
fn dup(id: &str, of: impl Into<String>, distance: u32) -> Decision {
    let of = of.into();
    Decision::Duplicate {
        stage: if of == id { Stage::Id } else { Stage::Simhash },
        of,
        distance: Some(distance),
        similarity: None,
    }
}
const DAY: i64 = 86_400_000;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn opts(prefix: &str) -> RedisConfig {
    RedisConfig {
        prefix: prefix.into(),
        ..RedisConfig::default()
    }
}

async fn connect(url: &str, prefix: &str, clock: &Arc<ManualClock>) -> RedisBackend {
    RedisBackend::connect_with_clock(url, opts(prefix), clock.clone())
        .await
        .unwrap()
}

/// Brute-force model of the embedded engine's semantics.
#[derive(Default)]
struct Model {
    docs: Vec<(String, u64, i64, u64)>, // id, fp, ts, seq
    seq: u64,
    now: i64,
}

const RET: i64 = 2 * DAY;

impl Model {
    fn live(&self, ts: i64) -> bool {
        ts > self.now - RET
    }
    fn check(&mut self, now: i64, id: &str, fp: u64, ts: Option<i64>) -> (Decision, bool) {
        self.now = self.now.max(now);
        let ts = ts.map_or(self.now, |t| t.min(self.now));
        let live: Vec<&(String, u64, i64, u64)> =
            self.docs.iter().filter(|d| self.live(d.2)).collect();
        let same = live.iter().find(|d| d.0 == id);
        let best = same.copied().or_else(|| {
            live.iter()
                .filter(|d| (d.1 ^ fp).count_ones() <= 3)
                .min_by_key(|d| ((d.1 ^ fp).count_ones(), d.2, d.3))
                .copied()
        });
        if let Some(b) = best {
            return (dup(id, b.0.clone(), (b.1 ^ fp).count_ones()), false);
        }
        let store = self.live(ts);
        if store {
            self.seq += 1;
            self.docs.retain(|d| d.0 != id);
            self.docs.push((id.to_string(), fp, ts, self.seq));
        }
        (Decision::Unique, store)
    }
    fn query(&self, fp: u64) -> Vec<(String, u32)> {
        let mut v: Vec<_> = self
            .docs
            .iter()
            .filter(|d| self.live(d.2) && (d.1 ^ fp).count_ones() <= 3)
            .map(|d| ((d.1 ^ fp).count_ones(), d.2, d.3, d.0.clone()))
            .collect();
        v.sort();
        v.into_iter().map(|x| (x.3, x.0)).collect()
    }
    fn remove(&mut self, id: &str) -> bool {
        let before = self.docs.len();
        let now = self.now;
        self.docs.retain(|d| !(d.0 == id && d.2 > now - RET));
        self.docs.len() != before
    }
}

#[derive(Debug, Clone)]
enum Op {
    Check {
        id: u8,
        center: u8,
        flips: Vec<u8>,
        back: Option<u32>,
    },
    Query {
        center: u8,
        flips: Vec<u8>,
    },
    Remove {
        id: u8,
    },
    Advance(u32),
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..24, 0u8..6, proptest::collection::vec(0u8..64, 0..5), proptest::option::of(0u32..3 * 86_400))
            .prop_map(|(id, center, flips, back)| Op::Check { id, center, flips, back }),
        2 => (0u8..6, proptest::collection::vec(0u8..64, 0..5)).prop_map(|(center, flips)| Op::Query { center, flips }),
        1 => (0u8..24).prop_map(|id| Op::Remove { id }),
        1 => (0u32..86_400).prop_map(Op::Advance),
    ]
}

const CENTERS: [u64; 6] = [
    0x0123_4567_89ab_cdef,
    0xfedc_ba98_7654_3210,
    0x0f0f_0f0f_f0f0_f0f0,
    0x0123_4567_89ab_cdee, // distance 1 from the first
    0xaaaa_5555_aaaa_5555,
    0x0123_4567_0000_0000,
];

fn fp_of(center: u8, flips: &[u8]) -> u64 {
    flips
        .iter()
        .fold(CENTERS[center as usize], |f, b| f ^ (1u64 << b))
}

/// Runs random operation sequences against `url` and the model; every answer must agree.
fn model_test(url: &str, cases: u32) {
    let rt = rt();
    let mut runner = TestRunner::new(Config::with_cases(cases));
    let counter = std::sync::atomic::AtomicU32::new(0);
    runner
        .run(&proptest::collection::vec(op_strategy(), 1..60), |ops| {
            let n = counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            rt.block_on(async {
                let clock = Arc::new(ManualClock::new(T0));
                let b = connect(url, &format!("model{n}"), &clock).await;
                let mut m = Model {
                    now: T0,
                    ..Model::default()
                };
                for op in ops {
                    match op {
                        Op::Check {
                            id,
                            center,
                            flips,
                            back,
                        } => {
                            let fp = fp_of(center, &flips);
                            let id = format!("d{id}");
                            let now = clock.now_ms_pub();
                            let ts = back.map(|s| now - i64::from(s) * 1000);
                            let got = b.check_and_insert(&id, fp, ts).await.unwrap();
                            let want = m.check(now, &id, fp, ts);
                            prop_assert_eq!((got.decision, got.stored), want);
                        }
                        Op::Query { center, flips } => {
                            let fp = fp_of(center, &flips);
                            let got: Vec<(String, u32)> = b
                                .query(fp)
                                .await
                                .unwrap()
                                .into_iter()
                                .map(|h| (h.id, h.distance.unwrap()))
                                .collect();
                            prop_assert_eq!(got, m.query(fp));
                        }
                        Op::Remove { id } => {
                            let id = format!("d{id}");
                            let got = b.remove(&id).await.unwrap();
                            prop_assert_eq!(got, m.remove(&id));
                            prop_assert!(b.get(&id).await.unwrap().is_none());
                        }
                        Op::Advance(s) => {
                            clock.advance(Duration::from_secs(u64::from(s)));
                            m.now = clock.now_ms_pub();
                        }
                    }
                }
                Ok(())
            })
        })
        .unwrap();
}

trait NowPub {
    fn now_ms_pub(&self) -> i64;
}
impl NowPub for ManualClock {
    fn now_ms_pub(&self) -> i64 {
        neardup_redis::Clock::now_ms(self)
    }
}

/// Two backend instances (separate connections) race groups of near-duplicates; exactly one
/// unique per group, and every duplicate points at it.
async fn race(url: &str, prefix: &str) {
    let clock = Arc::new(ManualClock::new(T0));
    let a = connect(url, prefix, &clock).await;
    let b = connect(url, prefix, &clock).await;
    let groups = 40u64;
    let per = 6u64;
    let mut tasks = Vec::new();
    for g in 0..groups {
        // Centers far apart (a SplitMix sequence); members 1 bit from the center.
        let mut z = g.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        let center = z ^ (z >> 31);
        for i in 0..per {
            let backend = if i % 2 == 0 { a.clone() } else { b.clone() };
            let fp = center ^ (1u64 << (i * 7 % 64));
            let id = format!("g{g}-{i}");
            tasks.push(tokio::spawn(async move {
                let o = backend.check_and_insert(&id, fp, None).await.unwrap();
                (g, id, o)
            }));
        }
    }
    let mut uniques: HashMap<u64, Vec<String>> = HashMap::new();
    let mut dups = Vec::new();
    for t in tasks {
        let (g, id, o) = t.await.unwrap();
        match o.decision {
            Decision::Unique => uniques.entry(g).or_default().push(id),
            Decision::Duplicate { of, distance, .. } => {
                assert!(distance.unwrap() <= 2);
                dups.push((g, of))
            }
        }
    }
    for g in 0..groups {
        assert_eq!(
            uniques.get(&g).map_or(0, Vec::len),
            1,
            "group {g}: {uniques:?}"
        );
    }
    for (g, of) in dups {
        assert_eq!(uniques[&g][0], of);
    }
    let s = a.stats().await.unwrap();
    assert_eq!(s.inserted, groups);
    assert_eq!(s.documents, groups);
    assert_eq!(s.duplicates, groups * (per - 1));
}

/// The documented id bucket: FNV-1a of the id, 20 bits.
fn bucket(id: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h & ((1 << neardup_redis::ID_BUCKET_BITS) - 1)
}

/// Two ids in the same id bucket, found by the birthday paradox.
fn colliding_ids() -> (String, String) {
    let mut seen = HashMap::new();
    for i in 0.. {
        let id = format!("id{i}");
        if let Some(other) = seen.insert(bucket(&id), id.clone()) {
            return (other, id);
        }
    }
    unreachable!()
}

async fn basics(url: &str) {
    let clock = Arc::new(ManualClock::new(T0));
    let b = connect(url, "basic", &clock).await;
    let fp = 0xdead_beef_0000_0001u64;
    let o = b.check_and_insert("a", fp, None).await.unwrap();
    assert_eq!(
        (o.decision, o.stored, o.timestamp_ms),
        (Decision::Unique, true, T0)
    );
    let o = b.check_and_insert("b", fp ^ 0b110, None).await.unwrap();
    assert_eq!(o.decision, dup("b", "a", 2));
    assert_eq!(o.fingerprint, Some(fp ^ 0b110));
    // The same id again, far away: a duplicate of itself.
    let o = b.check_and_insert("a", !fp, None).await.unwrap();
    assert_eq!(o.decision, dup("a", "a", 64));
    let d = b.get("a").await.unwrap().unwrap();
    assert_eq!((d.fingerprint, d.timestamp_ms), (Some(fp), T0));
    assert!(b.get("b").await.unwrap().is_none());
    let hits = b.query(fp ^ 1).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!((hits[0].id.as_str(), hits[0].distance), ("a", Some(1)));
    assert!(matches!(
        b.check_and_insert("", 1, None).await,
        Err(Error::InvalidId { .. })
    ));
    // Retention with the clock: two days later "a" is gone and its copy is unique again.
    clock.advance(Duration::from_millis(2 * DAY as u64));
    assert!(b.get("a").await.unwrap().is_none());
    assert!(b.query(fp).await.unwrap().is_empty());
    let o = b.check_and_insert("c", fp, None).await.unwrap();
    assert_eq!((o.decision, o.stored), (Decision::Unique, true));
    // A timestamp older than the window: unique, not stored.
    let o = b
        .check_and_insert("old", 0x1234, Some(T0 - 1))
        .await
        .unwrap();
    assert_eq!((o.decision, o.stored), (Decision::Unique, false));
    assert!(b.get("old").await.unwrap().is_none());
    assert!(b.remove("c").await.unwrap());
    assert!(!b.remove("c").await.unwrap());
    assert_eq!(b.query(fp).await.unwrap().len(), 0);
    assert!(b.health().await.is_ok());
    // Two ids sharing an id bucket stay apart.
    let (x, y) = colliding_ids();
    let o = b.check_and_insert(&x, 0x1111, None).await.unwrap();
    assert_eq!(o.decision, Decision::Unique);
    let o = b.check_and_insert(&y, !0x1111, None).await.unwrap();
    assert_eq!(o.decision, Decision::Unique);
    let o = b.check_and_insert(&x, !0x1111, None).await.unwrap();
    assert_eq!(o.decision, dup(&x, x.clone(), 64));
    let o = b.check_and_insert(&y, 0x1111 ^ 1, None).await.unwrap();
    assert_eq!(o.decision, dup(&y, y.clone(), 63));
    assert_eq!(b.get(&y).await.unwrap().unwrap().fingerprint, Some(!0x1111));
    assert!(b.remove(&x).await.unwrap());
    assert_eq!(b.get(&y).await.unwrap().unwrap().fingerprint, Some(!0x1111));
    assert!(b.get(&x).await.unwrap().is_none());
    // Other settings under the same prefix are refused.
    let other = RedisConfig {
        distance: 4,
        ..opts("basic")
    };
    assert!(matches!(
        RedisBackend::connect(url, other).await,
        Err(Error::ConfigMismatch { .. })
    ));
}

#[test]
fn single_redis() {
    let server = RedisServer::start(false);
    let url = server.url();
    rt().block_on(basics(&url));
    rt().block_on(race(&url, "race"));
    model_test(&url, 24);
}

/// Writes, by hand, a cluster check attempt that crashed: provisional members under the
/// documented keys and a status `seq:<state>` with a short lease.
async fn ghost_attempt(
    c: &mut redis::cluster_async::ClusterConnection,
    b: &RedisBackend,
    prefix: &str,
    id: &str,
    fp: u64,
    state: &str,
) {
    let l = b.layout();
    let mut keys: Vec<String> = (0..l.tables())
        .map(|t| {
            let w = l.key_bits(t).div_ceil(4) as usize;
            format!("{{{prefix}:t{t}:{:0w$x}}}", l.key_value(t, fp))
        })
        .collect();
    keys.push(format!("{{{prefix}:i:{:05x}}}", bucket(id)));
    let nonce = fp ^ 0x5eed;
    let mut member = vec![b'P'];
    member.extend_from_slice(&fp.to_be_bytes());
    member.extend_from_slice(&nonce.to_be_bytes());
    member.extend_from_slice(id.as_bytes());
    for k in &keys {
        let _: i64 = redis::cmd("ZADD")
            .arg(k)
            .arg(T0)
            .arg(&member)
            .query_async(c)
            .await
            .unwrap();
    }
    let seq: u64 = redis::cmd("INCR")
        .arg(format!("{{{prefix}:seq}}"))
        .query_async(c)
        .await
        .unwrap();
    let _: () = redis::cmd("SET")
        .arg(format!("{{{prefix}:seq}}:s:{nonce:016x}"))
        .arg(format!("{seq}:{state}"))
        .arg("PX")
        .arg(400)
        .query_async(c)
        .await
        .unwrap();
}

/// Cluster liveness and helping: an attempt that crashed while pending is waited for until its
/// lease lapses, then ignored; one that crashed after deciding "unique" but before committing
/// is committed by the next near-duplicate, which answers "duplicate" of it.
async fn crashed_attempts(url: &str) {
    let clock = Arc::new(ManualClock::new(T0));
    let o = RedisConfig {
        prefix: "crash".into(),
        lease: Duration::from_millis(400),
        ..RedisConfig::default()
    };
    let b = RedisBackend::connect_with_clock(url, o, clock.clone())
        .await
        .unwrap();
    let nodes: Vec<String> = url
        .trim_start_matches("redis+cluster://")
        .split(',')
        .map(|n| format!("redis://{n}"))
        .collect();
    let mut c = redis::cluster::ClusterClient::new(nodes)
        .unwrap()
        .get_async_connection()
        .await
        .unwrap();
    let fp = 0x7777_0000_1234_5678u64;
    ghost_attempt(&mut c, &b, "crash", "ghost", fp, "P").await;
    let o = b.check_and_insert("x", fp ^ 1, None).await.unwrap();
    assert_eq!(o.decision, Decision::Unique);
    assert!(b.get("ghost").await.unwrap().is_none());
    assert_eq!(b.get("x").await.unwrap().unwrap().fingerprint, Some(fp ^ 1));

    let fp2 = 0x1234_5678_9abc_def0u64;
    ghost_attempt(&mut c, &b, "crash", "decided", fp2, "U").await;
    let o = b.check_and_insert("y", fp2 ^ 2, None).await.unwrap();
    assert_eq!(o.decision, dup("y", "decided", 1));
    // Helped: the decided document is now committed and visible everywhere.
    assert_eq!(
        b.get("decided").await.unwrap().unwrap().fingerprint,
        Some(fp2)
    );
    assert_eq!(b.query(fp2).await.unwrap()[0].id, "decided");
}

#[test]
fn cluster() {
    let cluster = RedisCluster::start();
    let url = cluster.url();
    rt().block_on(basics(&url));
    rt().block_on(race(&url, "race"));
    rt().block_on(race(&url, "race2"));
    rt().block_on(crashed_attempts(&url));
    model_test(&url, 12);
}

#[test]
fn unreachable_redis_is_an_error() {
    crate::common::require_redis();
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let o = RedisConfig {
        timeout: Duration::from_millis(300),
        ..RedisConfig::default()
    };
    let r = rt().block_on(RedisBackend::connect(
        &format!("redis://127.0.0.1:{port}"),
        o,
    ));
    assert!(matches!(r, Err(Error::Unavailable { .. })), "{r:?}");
    assert!(matches!(
        rt().block_on(RedisBackend::connect("http://x", RedisConfig::default())),
        Err(Error::InvalidUrl { .. })
    ));
}

/// SIGKILL Redis (AOF, fsync always) in the middle of a load: every acknowledged document is
/// there afterwards; requests during the outage fail (never acknowledged); the backend
/// reconnects by itself.
#[test]
fn redis_restart_keeps_acknowledged_documents() {
    let mut server = RedisServer::start(true);
    let url = server.url();
    let rt = rt();
    let clock = Arc::new(ManualClock::new(T0));
    let b = rt.block_on(connect(&url, "restart", &clock));
    let loader = {
        let b = b.clone();
        rt.spawn(async move {
            let mut acked = Vec::new();
            let mut failed = 0;
            for i in 0..3000u64 {
                let fp = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
                match b.check_and_insert(&format!("r{i}"), fp, None).await {
                    Ok(o) => {
                        assert_eq!(o.decision, Decision::Unique);
                        acked.push((format!("r{i}"), fp));
                    }
                    Err(Error::Unavailable { .. }) => {
                        failed += 1;
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                    Err(e) => panic!("{e}"),
                }
            }
            (acked, failed)
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    server.kill();
    let down = rt.block_on(b.health());
    assert!(down.is_err());
    std::thread::sleep(Duration::from_millis(300));
    server.restart();
    let (acked, failed) = rt.block_on(loader).unwrap();
    assert!(failed > 0, "the outage was not observed");
    assert!(acked.len() > 100);
    rt.block_on(async {
        assert!(b.health().await.is_ok());
        for (id, fp) in &acked {
            let d = b.get(id).await.unwrap();
            assert_eq!(d.and_then(|d| d.fingerprint), Some(*fp), "{id} lost");
        }
    });
}

/// With the system clock and a 1 s window, Redis itself drops the keys.
#[test]
fn redis_expires_keys() {
    let server = RedisServer::start(false);
    let url = server.url();
    rt().block_on(async {
        let o = RedisConfig {
            prefix: "ttl".into(),
            retention: Duration::from_millis(800),
            expire_grace: Duration::from_millis(1),
            ..RedisConfig::default()
        };
        let b = RedisBackend::connect(&url, o).await.unwrap();
        for i in 0..50u64 {
            b.check_and_insert(
                &format!("x{i}"),
                i.wrapping_mul(0x9E37_79B9_7F4A_7C15),
                None,
            )
            .await
            .unwrap();
        }
        assert_eq!(b.stats().await.unwrap().documents, 50);
        let keys = |s: &RedisServer| {
            s.cli(&["--scan", "--pattern", "{ttl:[ti]*"])
                .lines()
                .count()
        };
        assert!(keys(&server) >= 50 * 5);
        tokio::time::sleep(Duration::from_millis(1200)).await;
        assert!(b.get("x1").await.unwrap().is_none());
        // Redis expires lazily and by sampling: poll until it has.
        let mut left = keys(&server);
        for _ in 0..50 {
            if left == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            left = keys(&server);
        }
        assert_eq!(left, 0);
        assert_eq!(b.stats().await.unwrap().documents, 0);
    });
}
