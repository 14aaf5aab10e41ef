//! `neardup serve`: the online check-and-insert HTTP service.
//!
//! Settings come from flags, then environment variables (`NEARDUP_*`), then a TOML file
//! (`--config`, keys named like the long flags with `_`: `data_dir`, `addr`, `retention`,
//! `method`, `distance`, `template_veto`, `minhash_bits`, `minhash_scheme`, `quote_edge`, `passages`, `template_own_lines`, `template_markup_lines`, `template_by_content`, `segments`, `max_docs`, `index_bytes_per_doc`, `sync`, `sync_interval`, `token`, `body_limit`,
//! `max_batch`, `max_connections`, `header_timeout`, `body_timeout`, `snapshot_interval`,
//! `backend`, `redis_prefix`), then defaults. Fingerprint
//! options are flags only and are recorded in the data directory or the Redis index
//! (reopening with other ones is refused).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context};
use neardup::engine::{Engine, EngineConfig, EngineDetector, SyncMode, SystemClock};
use neardup_redis::server::RedisHttpBackend;
use neardup_redis::{RedisConfig, StreamEngine};
use neardup_server::{serve, shutdown_signal, Backend, EngineBackend, ServerOptions};

use super::common::FeatureArgs;

mod config;
mod notes;

use config::{file_duration, parse_duration, FileConfig};
use neardup::template_veto::TemplateVetoOptions;
use notes::{
    check_token, failed_shutdown_note, no_token_warning, open_files_limit, recovery_reporter,
    with_flag_hint, LogPosition, SPARE_FDS,
};

/// The routes and examples shown by `neardup serve --help`.
const ROUTES_HELP: &str = "\
Routes (JSON in and out; the full description is served at GET /openapi.yaml):
  POST   /v1/documents        check one document, store it if unique
  POST   /v1/documents/batch  check and store an array of documents, in order
  POST   /v1/query            check without storing
  GET    /v1/documents/{id}   a stored document
  DELETE /v1/documents/{id}   remove a stored document
  GET    /v1/stats            sizes and counters
  GET    /metrics             Prometheus metrics
  GET    /healthz             ok, or why not and what to do (no token needed)
  GET    /openapi.yaml        the OpenAPI description (no token needed)
POST bodies need `Content-Type: application/json`. Errors are {\"error\": {\"code\", \"message\"}}.

Examples:
  neardup serve --data-dir /var/lib/neardup --token \"$(cat token)\"
  curl -s localhost:8080/v1/documents -H 'content-type: application/json' \\
       -H \"authorization: Bearer $TOKEN\" -d '{\"id\":\"a\",\"text\":\"the text\"}'
  curl -s localhost:8080/v1/documents/batch -H 'content-type: application/json' \\
       -H \"authorization: Bearer $TOKEN\" -d '[{\"id\":\"b\",\"fingerprint\":\"ff00\"}]'
  curl -s localhost:8080/healthz";

/// Arguments of `neardup serve`.
#[derive(Debug, clap::Args)]
#[command(after_help = ROUTES_HELP)]
pub struct Args {
    /// Data directory (log, snapshots) [default: ./neardup-data].
    #[arg(long, env = "NEARDUP_DATA_DIR", value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Address to listen on [default: 127.0.0.1:8080]; port 0 picks a free port.
    #[arg(long, env = "NEARDUP_ADDR")]
    pub addr: Option<SocketAddr>,
    /// How long a document stays a candidate, e.g. 2d, 36h, 90m, 30s [default: 2d].
    #[arg(long, env = "NEARDUP_RETENTION", value_parser = parse_duration)]
    pub retention: Option<Duration>,
    /// The near-duplicate detector: auto (as `neardup dedup`: exact digest, short texts by
    /// edit distance, long texts by MinHash; clients send text) or simhash (clients may send
    /// 64-bit fingerprints) [default: auto].
    #[arg(long = "method", id = "detector", env = "NEARDUP_METHOD", value_parser = ["auto", "simhash"])]
    pub detector: Option<String>,
    /// simhash: largest Hamming distance counted as a duplicate [default: 3].
    #[arg(long, env = "NEARDUP_DISTANCE")]
    pub distance: Option<u32>,
    /// auto: turn off the template veto, which refuses matches that rest only on lines
    /// repeated across many stored documents (a site's page template) and searches a text that
    /// finds no match again without the lines many share (ads, counter headers); the MinHash
    /// threshold is then 0.6 instead of 0.5, as `neardup dedup --no-template-veto`.
    #[arg(long = "no-template-veto", env = "NEARDUP_NO_TEMPLATE_VETO")]
    pub no_template_veto: bool,
    /// auto: bits kept of each MinHash signature entry, 8, 16 or 32 (as `neardup dedup
    /// --minhash-bits`). Recorded in the data directory: a directory recorded with another
    /// width is refused, naming both; one recorded without a width holds 32-bit entries and
    /// opens with 32 [default: 8].
    #[arg(long, env = "NEARDUP_MINHASH_BITS", value_name = "BITS")]
    pub minhash_bits: Option<u32>,
    /// auto: the MinHash signature scheme, v3, v2 or v1 (as `neardup dedup --minhash-scheme`).
    /// Recorded in the data directory; a directory recorded with another is refused, naming
    /// both [default: v3].
    #[arg(long, env = "NEARDUP_MINHASH_SCHEME", value_name = "SCHEME")]
    pub minhash_scheme: Option<String>,
    /// auto: quotes — a short text still matches a stored one that holds it verbatim without
    /// up to this share of its characters at its beginning or its end (an attribution), 0 to
    /// 0.5, 0 off (as `neardup dedup --quote-edge`). Recorded in the data directory: a
    /// directory recorded without quotes opens with 0 [default: 0.2].
    #[arg(long, env = "NEARDUP_QUOTE_EDGE", value_name = "SHARE")]
    pub quote_edge: Option<f64>,
    /// auto: do not index stored long texts by their sentences (as `neardup dedup
    /// --no-passages`; by default a text of up to 467 letters whose sentences lie in one stored
    /// long document is its duplicate: a quote). Recorded in the data directory: a directory
    /// recorded without passages (written before them) opens only with this flag.
    #[arg(long = "no-passages", env = "NEARDUP_NO_PASSAGES")]
    pub no_passages: bool,
    /// auto, template veto: a page with template lines whose other lines are all repeated
    /// (by its own copies) has no distinct part of its own, so every other page of the template
    /// matches it; by default its lines held by fewer than the template's 32 documents are its
    /// part. This turns that off. Recorded in the data directory: a directory recorded without
    /// it (written before it) opens only with it off.
    #[arg(long = "no-template-own-lines", env = "NEARDUP_NO_TEMPLATE_OWN_LINES")]
    pub no_template_own_lines: bool,
    /// auto, template veto: read the lines of an HTML page from its markup, not from its text
    /// (one block element a line, the default), as before the rule; then a page whose markup
    /// has no line breaks has no template lines. Recorded in the data directory: a directory
    /// recorded without the rule (written before it) opens only with this flag.
    #[arg(long = "template-markup-lines", env = "NEARDUP_TEMPLATE_MARKUP_LINES")]
    pub template_markup_lines: bool,
    /// auto, template veto: also judge a match with a page stored before any of its lines was
    /// repeated by what each has that the other lacks, and stop trusting a stored page's part
    /// once its lines have become template lines. For pages of new templates sent one at a
    /// time (short template sets: up to 0.165 F1 more); it costs up to 0.007 F1 on copies of
    /// articles that differ by one whole line, so it is off by default (docs/quality.md).
    /// Recorded in the data directory: a directory written with it opens only with it.
    #[arg(long = "template-by-content", env = "NEARDUP_TEMPLATE_BY_CONTENT")]
    pub template_by_content: bool,
    /// Time segments per retention window (memory is reclaimed a segment at a time) [default: 8].
    #[arg(long, env = "NEARDUP_SEGMENTS")]
    pub segments: Option<u32>,
    /// Upper bound on stored documents; the oldest segments are dropped beyond it.
    #[arg(long, env = "NEARDUP_MAX_DOCS")]
    pub max_docs: Option<u64>,
    /// Index memory per stored document in bytes; picks the table layout (embedded backend):
    /// 40 = four tables at distance 3; ~110 = ten tables: ~8 % more requests/s at 50 M
    /// documents in one time segment, for 2.3x the index memory and ~3x the restart time.
    /// Changeable between restarts [default: 40].
    #[arg(long, env = "NEARDUP_INDEX_BYTES_PER_DOC")]
    pub index_bytes_per_doc: Option<u64>,
    /// Durability: always (fdatasync before answering, group commit), batch (fdatasync every
    /// --sync-interval), none (OS decides; survives process crashes only) [default: always].
    #[arg(long, env = "NEARDUP_SYNC", value_parser = ["always", "batch", "none"])]
    pub sync: Option<String>,
    /// fdatasync interval of --sync batch [default: 100ms].
    #[arg(long, env = "NEARDUP_SYNC_INTERVAL", value_parser = parse_duration)]
    pub sync_interval: Option<Duration>,
    /// Bearer token required on every route but /healthz and /openapi.yaml (non-empty,
    /// printable ASCII). Without one, anything that can reach the address can write.
    #[arg(long, env = "NEARDUP_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Largest request body in bytes [default: 16777216].
    #[arg(long, env = "NEARDUP_BODY_LIMIT")]
    pub body_limit: Option<usize>,
    /// Most documents per batch request [default: 10000].
    #[arg(long, env = "NEARDUP_MAX_BATCH")]
    pub max_batch: Option<usize>,
    /// Most connections served at once. Beyond it GET /healthz is still answered, other
    /// requests get 503 at once. Needs about this many + 640 descriptors (ulimit -n)
    /// [default: 1024, less if ulimit -n is below 1664].
    #[arg(long, env = "NEARDUP_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,
    /// Time a connection has to send a complete request header, from when it opens or from
    /// its previous answer: closes slow and idle keep-alive connections [default: 10s].
    #[arg(long, env = "NEARDUP_HEADER_TIMEOUT", value_parser = parse_duration)]
    pub header_timeout: Option<Duration>,
    /// Time a request has for its whole body once its header arrived; then 408 [default: 30s].
    #[arg(long, env = "NEARDUP_BODY_TIMEOUT", value_parser = parse_duration)]
    pub body_timeout: Option<Duration>,
    /// Snapshot at least this often when there were writes [default: 10m].
    #[arg(long, env = "NEARDUP_SNAPSHOT_INTERVAL", value_parser = parse_duration)]
    pub snapshot_interval: Option<Duration>,
    /// Where the index lives: `embedded` (the data directory, default), or a Redis shared by
    /// many instances: `redis://host:port[/db]` or `redis+cluster://host:port[,host:port...]`.
    /// With Redis, the auto detector keeps a shared log in Redis and this instance's index in a
    /// private directory inside the data directory, rebuilt from the log at start; simhash
    /// keeps its Hamming tables in Redis.
    #[arg(long, env = "NEARDUP_BACKEND", value_name = "URL")]
    pub backend: Option<String>,
    /// Key prefix of the index in Redis (one Redis can hold several indexes) [default: neardup].
    #[arg(long, env = "NEARDUP_REDIS_PREFIX", value_name = "PREFIX")]
    pub redis_prefix: Option<String>,
    /// TOML file with any of the settings above.
    #[arg(long, env = "NEARDUP_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Fingerprint options.
    #[command(flatten)]
    pub features: FeatureArgs,
}

/// Runs `neardup serve`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let file: FileConfig = match &args.config {
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .with_context(|| format!("cannot read config file {}", p.display()))?;
            toml::from_str(&text)
                .with_context(|| format!("config file {} is not valid", p.display()))?
        }
        None => FileConfig::default(),
    };
    let data_dir = args
        .data_dir
        .or(file.data_dir)
        .unwrap_or_else(|| PathBuf::from("neardup-data"));
    let addr = args
        .addr
        .or(file.addr)
        .unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 8080)));
    let defaults = EngineConfig::default();
    let sync_interval = args
        .sync_interval
        .or(file_duration(file.sync_interval, "sync_interval")?)
        .unwrap_or(Duration::from_millis(100));
    let sync = match args.sync.or(file.sync).as_deref().unwrap_or("always") {
        "always" => SyncMode::Always,
        "batch" => SyncMode::Batch {
            interval: sync_interval,
        },
        "none" => SyncMode::None,
        other => bail!("sync `{other}`: use always, batch or none"),
    };
    let index_bytes_set = args.index_bytes_per_doc.is_some() || file.index_bytes_per_doc.is_some();
    let veto = !args.no_template_veto && file.template_veto.unwrap_or(true);
    let bits = args.minhash_bits.or(file.minhash_bits);
    let scheme = args.minhash_scheme.or(file.minhash_scheme);
    let quote_edge = args.quote_edge.or(file.quote_edge);
    let passages = !args.no_passages && file.passages.unwrap_or(true);
    let detector = match args.detector.or(file.method).as_deref().unwrap_or("auto") {
        "auto" => match EngineDetector::auto(veto) {
            EngineDetector::Auto(mut p) => {
                if let Some(b) = bits {
                    if !neardup::minhash::SIGNATURE_BITS.contains(&b) {
                        bail!("--minhash-bits (config key `minhash_bits`) = {b}: use 8, 16 or 32");
                    }
                    p.minhash.bits = b;
                }
                if let Some(e) = quote_edge {
                    if !(0.0..=0.5).contains(&e) {
                        bail!("--quote-edge (config key `quote_edge`) = {e}: use a share in [0, 0.5] (0 turns quotes off)");
                    }
                    if let Some(c) = p.short.containment.as_mut() {
                        c.edge = e;
                    }
                }
                if !passages {
                    p.passages = None;
                }
                if let Some(s) = &scheme {
                    p.minhash.minhash.scheme = s.parse().map_err(|e| {
                        anyhow::anyhow!("--minhash-scheme (config key `minhash_scheme`): {e}")
                    })?;
                }
                EngineDetector::Auto(p)
            }
            d => d,
        },
        "simhash" => EngineDetector::Simhash,
        other => bail!("method `{other}` (--method, config key `method`): use auto or simhash"),
    };
    let distance = args.distance.or(file.distance);
    if distance.is_some() && detector != EngineDetector::Simhash {
        bail!(
            "--distance (config key `distance`) is the Hamming distance of --method simhash; the \
             auto detector decides long texts by MinHash similarity — pass --method simhash to use it"
        );
    }
    if quote_edge.is_some() && detector == EngineDetector::Simhash {
        bail!(
            "--quote-edge (config key `quote_edge`) applies to the auto detector's short texts; \
             --method simhash has no short-text path"
        );
    }
    if !passages && detector == EngineDetector::Simhash {
        bail!(
            "--no-passages (config key `passages`) applies to the auto detector's quotes of long \
             texts; --method simhash has none"
        );
    }
    if (bits.is_some() || scheme.is_some()) && detector == EngineDetector::Simhash {
        bail!(
            "--minhash-bits and --minhash-scheme (config keys `minhash_bits`, `minhash_scheme`) \
             apply to the auto detector; --method simhash keeps no MinHash signatures"
        );
    }
    let own_lines = !args.no_template_own_lines && file.template_own_lines.unwrap_or(true);
    if !own_lines && (!veto || detector == EngineDetector::Simhash) {
        bail!(
            "--no-template-own-lines (config key `template_own_lines`) applies to the auto \
             detector's template veto, which is off here"
        );
    }
    let markup_lines = args.template_markup_lines || file.template_markup_lines.unwrap_or(false);
    if markup_lines && (!veto || detector == EngineDetector::Simhash) {
        bail!(
            "--template-markup-lines (config key `template_markup_lines`) applies to the auto \
             detector's template veto, which is off here"
        );
    }
    let by_content = args.template_by_content || file.template_by_content.unwrap_or(false);
    if by_content && (!veto || detector == EngineDetector::Simhash) {
        bail!(
            "--template-by-content (config key `template_by_content`) applies to the auto \
             detector's template veto, which is off here"
        );
    }
    if !veto && detector == EngineDetector::Simhash {
        bail!(
            "--no-template-veto (config key `template_veto`) applies to the auto detector; \
             --method simhash has no template veto"
        );
    }
    let cfg = EngineConfig {
        template_veto: if veto {
            defaults.template_veto.clone().map(|v| TemplateVetoOptions {
                own_repeated_lines: own_lines,
                by_content,
                text_lines: !markup_lines,
                ..v
            })
        } else {
            None
        },
        detector,
        distance: distance.unwrap_or(defaults.distance),
        retention: args
            .retention
            .or(file_duration(file.retention, "retention")?)
            .unwrap_or(defaults.retention),
        segments: args.segments.or(file.segments).unwrap_or(defaults.segments),
        max_docs: args.max_docs.or(file.max_docs),
        index_bytes_per_doc: match args.index_bytes_per_doc.or(file.index_bytes_per_doc) {
            Some(b) if !(8..=1024).contains(&b) => bail!(
                "--index-bytes-per-doc (config key `index_bytes_per_doc`) = {b}: use 8 ..= 1024 (40 = four tables, ~110 = ten)"
            ),
            Some(b) => b,
            None => defaults.index_bytes_per_doc,
        },
        sync,
        snapshot_interval: Some(
            args.snapshot_interval
                .or(file_duration(file.snapshot_interval, "snapshot_interval")?)
                .unwrap_or(Duration::from_secs(600)),
        ),
        ..defaults
    };
    let server_defaults = ServerOptions::default();
    let token = args.token.or(file.token);
    if let Some(t) = &token {
        check_token(t)?;
    }
    let server_cfg = ServerOptions {
        token,
        body_limit: args
            .body_limit
            .or(file.body_limit)
            .unwrap_or(server_defaults.body_limit),
        max_batch: args
            .max_batch
            .or(file.max_batch)
            .unwrap_or(server_defaults.max_batch),
        max_connections: match args.max_connections.or(file.max_connections) {
            Some(n) => {
                if let Some(limit) = open_files_limit().filter(|&l| n + SPARE_FDS > l) {
                    eprintln!(
                        "neardup serve: warning: --max-connections {n} needs about {} descriptors \
                         but the limit (ulimit -n) is {limit}: raise it or lower \
                         --max-connections, or connections fail once it is reached",
                        n + SPARE_FDS
                    );
                }
                n
            }
            // The default fits the descriptor limit.
            None => open_files_limit().map_or(server_defaults.max_connections, |l| {
                server_defaults
                    .max_connections
                    .min(l.saturating_sub(SPARE_FDS))
                    .max(16)
            }),
        },
        header_timeout: args
            .header_timeout
            .or(file_duration(file.header_timeout, "header_timeout")?)
            .unwrap_or(server_defaults.header_timeout),
        body_timeout: args
            .body_timeout
            .or(file_duration(file.body_timeout, "body_timeout")?)
            .unwrap_or(server_defaults.body_timeout),
    };
    server_cfg.validate().map_err(|m| {
        anyhow::anyhow!("{m} (--max-connections, --header-timeout, --body-timeout)")
    })?;
    let fingerprinter = args.features.fingerprinter()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    // Bind first: a start that cannot listen opens and writes nothing in the data directory.
    let std_listener =
        std::net::TcpListener::bind(addr).with_context(|| format!("cannot listen on {addr}"))?;
    std_listener
        .set_nonblocking(true)
        .context("cannot make the listening socket non-blocking")?;
    let backend_url = args.backend.or(file.backend);
    let embedded = matches!(backend_url.as_deref(), None | Some("embedded"));
    let mut opened: Option<Arc<Engine>> = None;
    let (backend, origin): (Arc<dyn Backend>, String) = match backend_url.as_deref() {
        None | Some("embedded") => {
            std::fs::create_dir_all(&data_dir)
                .with_context(|| format!("cannot create data directory {}", data_dir.display()))?;
            // A large window takes a while to recover (seconds a million documents): say so
            // before the wait, not only after it.
            eprintln!(
                "neardup serve: opening data dir {} (recovering its documents)",
                data_dir.display()
            );
            let report = recovery_reporter();
            let engine = Engine::open_with_progress(
                &data_dir,
                fingerprinter,
                cfg,
                Arc::new(SystemClock),
                &report,
            )
            .map_err(|e| anyhow::Error::new(with_flag_hint(e)))
            .with_context(|| format!("cannot open data directory {}", data_dir.display()))?;
            let stats = engine.stats();
            let origin = format!(
                "data dir {}, {} documents recovered in {} ms",
                data_dir.display(),
                stats.recovered_documents,
                stats.recovery_ms
            );
            let e = Arc::new(engine);
            opened = Some(Arc::clone(&e));
            (Arc::new(EngineBackend::new(e)), origin)
        }
        Some(url) if cfg.detector != EngineDetector::Simhash => {
            // The auto detector: Redis holds the shared log, this instance its index.
            if cfg.max_docs.is_some() {
                bail!("--max-docs is not supported with a Redis backend; bound the index by --retention");
            }
            let prefix = args
                .redis_prefix
                .or(file.redis_prefix)
                .unwrap_or_else(|| "neardup".into());
            eprintln!(
                "neardup serve: applying the shared log of Redis {url} to the index in {}",
                data_dir.display()
            );
            let b = rt
                .block_on(StreamEngine::connect(
                    url,
                    &prefix,
                    &data_dir,
                    fingerprinter,
                    cfg,
                    Arc::new(SystemClock),
                ))
                .with_context(|| format!("cannot use the Redis backend {url}"))?;
            let origin = format!(
                "Redis {url}, key prefix {prefix}, shared log of the {} detector; {} documents \
                 applied, index in {}",
                b.engine().config().detector.name(),
                b.engine().stats().documents,
                data_dir.display()
            );
            (Arc::new(b), origin)
        }
        Some(url) => {
            if cfg.max_docs.is_some() {
                bail!("--max-docs is not supported with a Redis backend; bound the index by --retention");
            }
            if index_bytes_set {
                bail!("--index-bytes-per-doc applies to the embedded backend only; a Redis backend keeps its tables in Redis");
            }
            let opts = RedisConfig {
                prefix: args
                    .redis_prefix
                    .or(file.redis_prefix)
                    .unwrap_or_else(|| "neardup".into()),
                distance: cfg.distance,
                retention: cfg.retention,
                ..RedisConfig::default()
            };
            let origin = format!("Redis {url}, key prefix {}", opts.prefix);
            let b = rt
                .block_on(RedisHttpBackend::connect(
                    url,
                    opts,
                    fingerprinter,
                    Arc::new(neardup_redis::SystemClock),
                ))
                .with_context(|| format!("cannot use the Redis backend {url}"))?;
            (Arc::new(b), origin)
        }
    };
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(std_listener)
            .with_context(|| format!("cannot listen on {addr}"))?;
        let local = listener.local_addr()?;
        if server_cfg.token.is_none() {
            eprintln!("{}", no_token_warning(local));
        }
        // Installed before the address is announced, so a SIGTERM sent on seeing it is a
        // graceful shutdown, never a kill.
        let stop = shutdown_signal().context("cannot install the SIGTERM/SIGINT handlers")?;
        eprintln!("neardup serve: listening on http://{local} ({origin})");
        if let Err(e) = serve(listener, backend, server_cfg, stop).await {
            match &opened {
                Some(engine) => {
                    let s = engine.stats();
                    let at = LogPosition {
                        last_lsn: s.last_lsn,
                        durable_lsn: s.durable_lsn,
                        snapshot_lsn: s.snapshot_lsn,
                    };
                    eprintln!("{}", failed_shutdown_note(&e, &at));
                }
                None => eprintln!("neardup serve: the shutdown failed: {e}"),
            }
            return Err(anyhow::Error::new(e).context("shutdown failed"));
        }
        if embedded {
            eprintln!("neardup serve: shut down cleanly (log synced, snapshot written)");
        } else {
            eprintln!("neardup serve: shut down cleanly");
        }
        Ok(())
    })
}
