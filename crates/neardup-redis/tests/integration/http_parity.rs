//! The same HTTP requests against the embedded engine and against Redis (single and cluster):
//! every response must be byte-identical (stats aside).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::common::{RedisCluster, RedisServer};
use neardup::engine::{Engine, EngineConfig, ManualClock};
use neardup_redis::server::RedisHttpBackend;
use neardup_redis::RedisConfig;
use neardup_server::client::Client;
use neardup_server::{serve, Backend, EngineBackend, ServerOptions};

const T0: i64 = 1_699_984_800_000;

async fn start(backend: Arc<dyn Backend>) -> (SocketAddr, tokio::sync::oneshot::Sender<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(serve(listener, backend, ServerOptions::default(), async {
        let _ = stopped.await;
    }));
    (addr, stop)
}

struct Rng(neardup_index::random::SplitMix64);
impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(neardup_index::random::SplitMix64::new(seed))
    }
    fn next(&mut self) -> u64 {
        self.0.next()
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const TEXTS: [&str; 4] = [
    "你妈妈喊你回家吃饭哦，回家罗回家罗。今天的晚饭有红烧肉和青菜豆腐汤，快点回来。",
    "The quick brown fox jumps over the lazy dog while the farmer watches from the old barn.",
    "Redis keeps the block tables so that many workers share one index of fingerprints.",
    "滚滚长江东逝水，浪花淘尽英雄。是非成败转头空，青山依旧在，几度夕阳红。",
];

fn request(rng: &mut Rng) -> (&'static str, String, Option<String>) {
    let centers = [
        0x0123_4567_89ab_cdefu64,
        0xfedc_ba98_7654_3210,
        0x0f0f_0f0f_f0f0_f0f0,
    ];
    let fp = |rng: &mut Rng| {
        let mut f = centers[rng.below(3) as usize];
        for _ in 0..rng.below(5) {
            f ^= 1 << rng.below(64);
        }
        format!("{f:016x}")
    };
    let id = |rng: &mut Rng| format!("doc{}", rng.below(20));
    let body = |rng: &mut Rng| {
        let mut b = if rng.below(3) == 0 {
            let mut t = TEXTS[rng.below(4) as usize].to_string();
            if rng.below(2) == 0 {
                t.push_str(" 附记");
            }
            serde_json::json!({ "id": id(rng), "text": t })
        } else {
            serde_json::json!({ "id": id(rng), "fingerprint": fp(rng) })
        };
        if rng.below(4) == 0 {
            let back = rng.below(3 * 86_400) as f64;
            b["timestamp"] = serde_json::json!((T0 as f64) / 1000.0 - back);
        }
        b
    };
    match rng.below(10) {
        0..=4 => ("POST", "/v1/documents".into(), Some(body(rng).to_string())),
        5 => {
            let items: Vec<_> = (0..rng.below(6)).map(|_| body(rng)).collect();
            (
                "POST",
                "/v1/documents/batch".into(),
                Some(serde_json::to_string(&items).unwrap()),
            )
        }
        6 => (
            "POST",
            "/v1/query".into(),
            Some(serde_json::json!({ "fingerprint": fp(rng) }).to_string()),
        ),
        7 => ("GET", format!("/v1/documents/{}", id(rng)), None),
        8 => ("DELETE", format!("/v1/documents/{}", id(rng)), None),
        _ => ("ADVANCE", String::new(), None),
    }
}

fn parity(redis_url: &str, seed: u64, steps: usize) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let clock = Arc::new(ManualClock::new(T0));
        let fingerprinter = neardup::Fingerprinter::new(Default::default()).unwrap();
        let engine = Engine::open(
            dir.path(),
            fingerprinter.clone(),
            EngineConfig {
                detector: neardup::engine::EngineDetector::Simhash,
                maintenance_interval: None,
                ..EngineConfig::default()
            },
            clock.clone(),
        )
        .unwrap();
        let embedded: Arc<dyn Backend> = Arc::new(EngineBackend::new(Arc::new(engine)));
        let redis: Arc<dyn Backend> = Arc::new(
            RedisHttpBackend::connect(
                redis_url,
                RedisConfig {
                    prefix: format!("parity{seed}"),
                    ..RedisConfig::default()
                },
                fingerprinter,
                clock.clone(),
            )
            .await
            .unwrap(),
        );
        let (ea, stop_e) = start(embedded).await;
        let (ra, stop_r) = start(redis).await;
        let mut ec = Client::connect(ea).await.unwrap();
        let mut rc = Client::connect(ra).await.unwrap();
        let mut rng = Rng::new(seed);
        let mut statuses = std::collections::HashMap::new();
        for step in 0..steps {
            let (method, path, body) = request(&mut rng);
            if method == "ADVANCE" {
                clock.advance(Duration::from_secs(rng.below(86_400)));
                continue;
            }
            let e = ec
                .request(method, &path, body.as_deref().map(str::as_bytes))
                .await
                .unwrap();
            let r = rc
                .request(method, &path, body.as_deref().map(str::as_bytes))
                .await
                .unwrap();
            assert_eq!(e, r, "step {step}: {method} {path} {body:?}");
            *statuses.entry(e.1.contains("\"duplicate\"")).or_insert(0) += 1;
        }
        // Both outcomes were exercised.
        assert!(statuses.len() == 2, "{statuses:?}");
        let (s, _) = rc.get("/healthz").await.unwrap();
        assert_eq!(s, 200);
        stop_e.send(()).unwrap();
        stop_r.send(()).unwrap();
    });
}

#[test]
fn http_answers_match_embedded_engine_single_redis() {
    let server = RedisServer::start(false);
    for seed in 1..=3 {
        parity(&server.url(), seed, 150);
    }
}

#[test]
fn http_answers_match_embedded_engine_cluster() {
    let cluster = RedisCluster::start();
    parity(&cluster.url(), 7, 150);
}

/// With Redis gone, writes answer 503 and /healthz reports unhealthy.
#[test]
fn redis_down_is_503_and_unhealthy() {
    let mut server = RedisServer::start(false);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let backend: Arc<dyn Backend> = Arc::new(
            RedisHttpBackend::connect(
                &server.url(),
                RedisConfig {
                    timeout: Duration::from_millis(500),
                    ..RedisConfig::default()
                },
                neardup::Fingerprinter::new(Default::default()).unwrap(),
                Arc::new(neardup_redis::SystemClock),
            )
            .await
            .unwrap(),
        );
        let (addr, stop) = start(backend).await;
        let mut c = Client::connect(addr).await.unwrap();
        let (s, _) = c
            .post_json("/v1/documents", r#"{"id":"a","fingerprint":"ff00"}"#)
            .await
            .unwrap();
        assert_eq!(s, 200);
        server.kill();
        let (s, body) = c
            .post_json("/v1/documents", r#"{"id":"b","fingerprint":"1234"}"#)
            .await
            .unwrap();
        assert_eq!(s, 503, "{body}");
        let (s, _) = c.get("/healthz").await.unwrap();
        assert_eq!(s, 503);
        server.restart();
        // The connection comes back by itself.
        let mut ok = false;
        for _ in 0..50 {
            let (s, _) = c.get("/healthz").await.unwrap();
            if s == 200 {
                ok = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(ok, "no reconnect after restart");
        stop.send(()).unwrap();
    });
}
