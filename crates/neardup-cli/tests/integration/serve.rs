//! `neardup serve`: starts with defaults in an empty directory, answers over HTTP, shuts down
//! gracefully on SIGTERM (snapshot), restarts with its state, refuses another configuration,
//! reads a TOML config file and the token from the environment.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

use crate::util::bin;

struct Server {
    child: Child,
    addr: String,
    /// What the server printed on standard error up to "listening".
    greeting: String,
    /// The rest of its standard error, read until it exits.
    rest: std::thread::JoinHandle<String>,
}

// The child is handed to the caller inside `Server` and reaped by `stop`.
#[allow(clippy::zombie_processes)]
fn start(dir: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> Server {
    let mut cmd = Command::new(bin());
    cmd.arg("serve")
        .args(args)
        .current_dir(dir)
        .env_remove("NEARDUP_TOKEN")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("spawn neardup serve");
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut greeting = String::new();
    loop {
        let mut line = String::new();
        if err.read_line(&mut line).unwrap() == 0 {
            let status = child.wait().unwrap();
            panic!("server exited ({status}) before listening: {greeting}");
        }
        greeting.push_str(&line);
        if let Some(rest) = line.split("listening on http://").nth(1) {
            let addr = rest.split_whitespace().next().unwrap().to_string();
            let rest = std::thread::spawn(move || {
                let mut all = String::new();
                let _ = err.read_to_string(&mut all);
                all
            });
            return Server {
                child,
                addr,
                greeting,
                rest,
            };
        }
    }
}

fn http(addr: &str, method: &str, path: &str, body: &str, token: Option<&str>) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    let auth = token.map_or(String::new(), |t| format!("authorization: Bearer {t}\r\n"));
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n{auth}content-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out.split_whitespace().nth(1).unwrap().parse().unwrap();
    let body = out.split("\r\n\r\n").nth(1).unwrap_or("").to_string();
    (status, body)
}

/// Sends SIGTERM and waits: the exit status and what the server printed after "listening".
fn stop(mut s: Server) -> (std::process::ExitStatus, String) {
    let pid = s.child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let status = s.child.wait().unwrap();
    (status, s.rest.join().unwrap())
}

/// Stops the server and asserts that it shut down cleanly, showing its last words if not.
fn stop_cleanly(s: Server) -> String {
    let (status, err) = stop(s);
    assert!(status.success(), "exit {status}: {err}");
    assert!(err.contains("shut down cleanly"), "{err}");
    err
}

/// The SIGTERM handler was installed only when the server first polled its shutdown future,
/// after it had announced its address: a supervisor stopping it on that line could kill it
/// without a snapshot (CI saw a non-zero exit).
#[test]
fn sigterm_sent_on_seeing_listening_is_a_clean_shutdown() {
    for _ in 0..5 {
        let dir = tempfile::tempdir().unwrap();
        let err = stop_cleanly(start(dir.path(), &["--addr", "127.0.0.1:0"], &[]));
        assert!(err.contains("snapshot written"), "{err}");
        assert!(dir.path().join("neardup-data").is_dir());
    }
}

#[test]
fn serve_defaults_restart_and_config() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(dir.path(), &["--addr", "127.0.0.1:0"], &[]);
    let (st, b) = http(
        &s.addr,
        "POST",
        "/v1/documents",
        r#"{"id":"a","text":"the quick brown fox jumps over the lazy dog again and again"}"#,
        None,
    );
    assert_eq!(st, 200, "{b}");
    assert!(b.contains(r#""status":"unique""#), "{b}");
    let (_, b) = http(
        &s.addr,
        "POST",
        "/v1/documents",
        r#"{"id":"b","text":"the quick brown fox jumps over the lazy dog again and again!"}"#,
        None,
    );
    assert!(b.contains(r#""duplicate_of":"a""#), "{b}");
    let _ = stop_cleanly(s);
    assert!(
        dir.path().join("neardup-data").is_dir(),
        "default data dir under the cwd"
    );
    let snaps = std::fs::read_dir(dir.path().join("neardup-data"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with("snapshot-")
        })
        .count();
    assert_eq!(snaps, 1, "graceful shutdown writes a snapshot");

    // Restart from the TOML file with a token from the environment.
    std::fs::write(
        dir.path().join("serve.toml"),
        // The index layout is not part of the stored configuration: changeable on restart.
        "addr = \"127.0.0.1:0\"\ndata_dir = \"neardup-data\"\nbody_limit = 100000\nindex_bytes_per_doc = 110\n",
    )
    .unwrap();
    let s = start(
        dir.path(),
        &["--config", "serve.toml"],
        &[("NEARDUP_TOKEN", "tok")],
    );
    assert_eq!(http(&s.addr, "GET", "/v1/documents/a", "", None).0, 401);
    let (st, b) = http(&s.addr, "GET", "/v1/documents/a", "", Some("tok"));
    assert_eq!(st, 200, "{b}");
    assert_eq!(http(&s.addr, "GET", "/healthz", "", None).0, 200);
    let _ = stop_cleanly(s);

    // `neardup serve ARGS` in the test directory must fail; its stderr.
    let refused = |args: &[&str]| refused_start(dir.path(), args);
    // Another configuration is refused with a clear message.
    let err = refused(&["--addr", "127.0.0.1:0", "--method", "simhash"]);
    assert!(
        err.contains("different configuration")
            && err.contains(r#"detector.method: stored "auto", requested "simhash""#),
        "{err}"
    );
    // Other MinHash signature entries are another configuration too, named; a width the
    // detector does not have, and MinHash entries for simhash, are refused before starting.
    let err = refused(&["--addr", "127.0.0.1:0", "--minhash-bits", "32"]);
    assert!(
        err.contains("detector.minhash.bits: stored 8, requested 32"),
        "{err}"
    );
    assert!(refused(&["--minhash-bits", "12"]).contains("use 8, 16 or 32"));
    let err = refused(&["--method", "simhash", "--minhash-bits", "8"]);
    assert!(err.contains("apply to the auto detector"), "{err}");
    // So is another MinHash scheme.
    let err = refused(&["--addr", "127.0.0.1:0", "--minhash-scheme", "v2"]);
    assert!(
        err.contains(
            r#"detector.minhash.minhash.scheme: stored "code_point_sketch", requested "similarity_sketch""#
        ),
        "{err}"
    );
    assert!(refused(&["--minhash-scheme", "v4"]).contains("use v3"));
    // --distance belongs to the simhash detector: refused, not ignored, under auto.
    let err = refused(&["--addr", "127.0.0.1:0", "--distance", "5"]);
    assert!(err.contains("--method simhash"), "{err}");
    // An unreachable Redis is named (the auto detector keeps its shared log there).
    let err = refused(&["--addr", "127.0.0.1:0", "--backend", "redis://127.0.0.1:1"]);
    assert!(
        err.contains("cannot use the Redis backend redis://127.0.0.1:1"),
        "{err}"
    );
    // A bad config file is refused.
    std::fs::write(dir.path().join("bad.toml"), "nope = 1\n").unwrap();
    assert!(refused(&["--config", "bad.toml"]).contains("bad.toml"));
    // Out-of-range index memory, from a flag or from the file.
    assert!(refused(&["--index-bytes-per-doc", "4"]).contains("--index-bytes-per-doc"));
    // … and meaningless with Redis (refused before any connection is tried).
    let err = refused(&[
        "--backend",
        "redis://127.0.0.1:1",
        "--method",
        "simhash",
        "--index-bytes-per-doc",
        "64",
    ]);
    assert!(err.contains("embedded backend only"), "{err}");
    std::fs::write(dir.path().join("tiny.toml"), "index_bytes_per_doc = 2\n").unwrap();
    let err = refused(&["--config", "tiny.toml"]);
    assert!(
        err.contains("index_bytes_per_doc") && err.contains("8 ..= 1024"),
        "{err}"
    );
}

/// `--token ''` used to mean "no authentication" silently; serving without a token printed
/// nothing on loopback; the help listed no routes.
#[test]
fn serve_refuses_empty_token_warns_without_one_and_lists_routes() {
    let dir = tempfile::tempdir().unwrap();
    for (args, env) in [
        (vec!["--token", ""], vec![]),
        (vec![], vec![("NEARDUP_TOKEN", "")]),
    ] {
        let mut cmd = Command::new(bin());
        cmd.arg("serve")
            .args(["--addr", "127.0.0.1:0"])
            .args(&args)
            .current_dir(dir.path())
            .env_remove("NEARDUP_TOKEN");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        assert!(!out.status.success(), "{args:?} started");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("token is empty"), "{err}");
    }
    // No token: a loud warning at start, and a cross-origin text/plain POST is refused.
    let server = start(dir.path(), &["--addr", "127.0.0.1:0"], &[]);
    let (seen, addr) = (&server.greeting, server.addr.clone());
    assert!(
        seen.contains("WARNING: no --token") && seen.contains("web page"),
        "{seen}"
    );
    // The recovery, which takes a while for a large window, is announced before it starts.
    let opening = seen
        .find("opening data dir")
        .expect("the recovery announced");
    assert!(
        opening < seen.find("documents recovered in").unwrap(),
        "{seen}"
    );
    let mut s = TcpStream::connect(&addr).unwrap();
    let body = r#"{"id":"planted","fingerprint":"ff00"}"#;
    write!(
        s,
        "POST /v1/documents HTTP/1.1\r\nhost: x\r\nconnection: close\r\norigin: http://evil.example\r\ncontent-type: text/plain\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    assert!(out.starts_with("HTTP/1.1 415"), "{out}");
    assert!(out.contains("unsupported_media_type"), "{out}");
    let (st, b) = http(&addr, "GET", "/v1/documents/planted", "", None);
    assert_eq!(st, 404, "{b}");
    // The spec is served.
    let (st, b) = http(&addr, "GET", "/openapi.yaml", "", None);
    assert_eq!(st, 200);
    assert!(b.starts_with("openapi: 3"), "{b}");
    let _ = stop_cleanly(server);
    // The help names the routes and shows examples.
    let out = Command::new(bin())
        .args(["serve", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for want in [
        "POST   /v1/documents",
        "/v1/documents/batch",
        "/openapi.yaml",
        "Examples:",
        "--max-connections",
        "--header-timeout",
        "--body-timeout",
    ] {
        assert!(help.contains(want), "{want} missing from\n{help}");
    }
}

/// Regression: a start that failed to listen (port in use) had already created and locked the
/// data directory and written its first files.
#[test]
fn a_start_that_cannot_listen_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let data = dir.path().join("data");
    let out = Command::new(bin())
        .args(["serve", "--addr", &addr, "--data-dir"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot listen on"), "{err}");
    assert!(!data.exists(), "the data directory was created: {err}");
}

/// One detector everywhere: the bundled sample sent to `neardup serve` in one request gets the
/// decisions `neardup dedup` prints for the same file (same duplicate, same stage), the
/// template veto included (one request counts its lines as dedup counts one batch's).
#[test]
fn serve_answers_what_dedup_answers() {
    let sample = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/sample.jsonl");
    let text = std::fs::read_to_string(&sample).unwrap();
    let docs = crate::util::json_lines(text.as_bytes());
    let out = crate::util::run(&["dedup", "-q", sample.to_str().unwrap()], None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want: Vec<(String, String)> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .map(|v| (v["duplicate_of"].to_string(), v["stage"].to_string()))
        .collect();
    assert!(want.iter().filter(|w| w.0 != "null").count() >= 5);

    let dir = tempfile::tempdir().unwrap();
    let s = start(
        dir.path(),
        &["--addr", "127.0.0.1:0", "--sync", "none"],
        &[],
    );
    let batch: Vec<serde_json::Value> = docs
        .iter()
        .map(|d| serde_json::json!({"id": d["id"], "text": d["text"]}))
        .collect();
    let (st, body) = http(
        &s.addr,
        "POST",
        "/v1/documents/batch",
        &serde_json::Value::Array(batch).to_string(),
        None,
    );
    assert_eq!(st, 200, "{body}");
    let got: Vec<(String, String)> = serde_json::from_str::<Vec<serde_json::Value>>(&body)
        .unwrap()
        .iter()
        .map(|a| (a["duplicate_of"].to_string(), a["stage"].to_string()))
        .collect();
    let _ = stop_cleanly(s);
    assert_eq!(got, want);
}

/// A redis-server on a free loopback port, killed when dropped.
struct Redis(Child, u16);

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn redis_server(dir: &std::path::Path) -> Redis {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new("redis-server")
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
        ])
        .arg("--dir")
        .arg(dir)
        .stdout(Stdio::null())
        .spawn()
        .expect("redis-server is needed by this test (scripts/test installs it)");
    let t = std::time::Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(t.elapsed().as_secs() < 10, "redis-server did not start");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Redis(child, port)
}

#[test]
fn two_services_on_one_redis_answer_what_dedup_answers() {
    let sample = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/sample.jsonl");
    let text = std::fs::read_to_string(&sample).unwrap();
    let out = crate::util::run(
        &[
            "dedup",
            "-q",
            "--no-template-veto",
            sample.to_str().unwrap(),
        ],
        None,
    );
    assert!(out.status.success());
    let want: Vec<(String, String)> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .map(|v| (v["duplicate_of"].to_string(), v["stage"].to_string()))
        .collect();
    assert!(want.iter().filter(|w| w.0 != "null").count() >= 5);

    let dir = tempfile::tempdir().unwrap();
    let redis = redis_server(dir.path());
    let url = format!("redis://127.0.0.1:{}/0", redis.1);
    let args = [
        "--addr",
        "127.0.0.1:0",
        "--backend",
        url.as_str(),
        "--no-template-veto",
    ];
    let a = start(dir.path(), &args, &[]);
    let b = start(dir.path(), &args, &[]);
    // One document at a time, alternating between the two services.
    let mut got = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let d: serde_json::Value = serde_json::from_str(line).unwrap();
        let body = serde_json::json!([{"id": d["id"], "text": d["text"]}]).to_string();
        let s = if i % 2 == 0 { &a } else { &b };
        let (st, answer) = http(&s.addr, "POST", "/v1/documents/batch", &body, None);
        assert_eq!(st, 200, "{answer}");
        let v: Vec<serde_json::Value> = serde_json::from_str(&answer).unwrap();
        got.push((v[0]["duplicate_of"].to_string(), v[0]["stage"].to_string()));
    }
    let _ = stop_cleanly(a);
    let _ = stop_cleanly(b);
    assert_eq!(got, want);
}

/// `neardup serve ARGS` in `dir` must fail without starting; its stderr.
fn refused_start(dir: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new(bin())
        .arg("serve")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(!out.status.success(), "serve {args:?} started");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A data directory written with `flag` (restoring an old setting) is refused without it,
/// with a message holding `difference` and naming the flag, and opens and serves with it.
fn written_with_flag_is_refused_naming_it(flag: &[&str], difference: &str) {
    let dir = tempfile::tempdir().unwrap();
    let with: Vec<&str> = ["--addr", "127.0.0.1:0", "--data-dir", "d"]
        .into_iter()
        .chain(flag.iter().copied())
        .collect();
    let _ = stop_cleanly(start(dir.path(), &with, &[]));
    let err = refused_start(dir.path(), &["--addr", "127.0.0.1:0", "--data-dir", "d"]);
    let hint = format!("serve it with {}", flag.join(" "));
    assert!(err.contains(difference) && err.contains(&hint), "{err}");
    let s = start(dir.path(), &with, &[]);
    assert_eq!(http(&s.addr, "GET", "/healthz", "", None).0, 200);
    let _ = stop_cleanly(s);
}

/// Regression (found by hand): a data directory written before Traditional characters were
/// folded was refused naming the setting but not the flag that serves it.
#[test]
fn directory_written_before_traditional_folding_names_keep_traditional() {
    written_with_flag_is_refused_naming_it(
        &["--keep-traditional"],
        "fingerprint.config.normalize.fold_traditional: stored false, requested true",
    );
}

/// A data directory written before a page's own lines repeated by its copies made its
/// distinct part (no `own_repeated_lines` recorded) is refused naming the setting and the
/// flag that serves it, and opens with that flag; the flag without the veto is refused before
/// anything is written.
#[test]
fn directory_written_before_template_own_lines_names_the_flag() {
    written_with_flag_is_refused_naming_it(
        &["--no-template-own-lines"],
        "template_veto.own_repeated_lines: stored false, requested true",
    );
    refused_without_the_veto("--no-template-own-lines");
}

/// A data directory written before the lines of HTML pages were read from their text (no
/// `text_lines` recorded) is refused naming the setting and the flag that serves it, and
/// opens with that flag; the flag without the veto is refused before anything is written.
#[test]
fn directory_written_before_text_lines_names_template_markup_lines() {
    written_with_flag_is_refused_naming_it(
        &["--template-markup-lines"],
        "template_veto.text_lines: stored false, requested true",
    );
    refused_without_the_veto("--template-markup-lines");
}

/// `flag`, a setting of the template veto, is refused with `--no-template-veto` before
/// anything is written.
fn refused_without_the_veto(flag: &str) {
    let dir = tempfile::tempdir().unwrap();
    let args = ["--data-dir", "e", "--no-template-veto", flag];
    assert!(refused_start(dir.path(), &args).contains("which is off here"));
    assert!(!dir.path().join("e").exists());
}

/// A data directory written with `--template-by-content` is refused without it, naming the
/// setting and the flag, and opens with it; the flag without the veto is refused before
/// anything is written.
#[test]
fn directory_written_by_content_names_the_flag() {
    written_with_flag_is_refused_naming_it(
        &["--template-by-content"],
        "template_veto.by_content: stored true, requested false",
    );
    refused_without_the_veto("--template-by-content");
}

/// A data directory written before long texts were indexed by their sentences (no passages
/// recorded) is refused naming the setting and the flag that serves it, and opens with that
/// flag; the flag for simhash is refused before anything is written.
#[test]
fn directory_written_before_passages_names_no_passages() {
    written_with_flag_is_refused_naming_it(
        &["--no-passages"],
        "detector.passages: stored null, requested {",
    );
    let dir = tempfile::tempdir().unwrap();
    let err = refused_start(
        dir.path(),
        &["--data-dir", "e", "--method", "simhash", "--no-passages"],
    );
    assert!(err.contains("--method simhash has none"), "{err}");
    assert!(
        !dir.path().join("e").exists(),
        "a refused start wrote nothing"
    );
}

/// A data directory written before quotes were matched (no quote edge recorded) is refused
/// naming the setting and the flag that serves it, and opens with that flag; a share out of
/// range, and quotes for simhash, are refused before anything is written.
#[test]
fn directory_written_before_quotes_names_quote_edge() {
    written_with_flag_is_refused_naming_it(
        &["--quote-edge", "0"],
        "detector.short.containment.edge: stored 0.0, requested 0.2",
    );
    let dir = tempfile::tempdir().unwrap();
    assert!(
        refused_start(dir.path(), &["--data-dir", "e", "--quote-edge", "0.9"])
            .contains("use a share in [0, 0.5]")
    );
    assert!(refused_start(
        dir.path(),
        &[
            "--data-dir",
            "e",
            "--method",
            "simhash",
            "--quote-edge",
            "0.1"
        ]
    )
    .contains("no short-text path"));
    assert!(
        !dir.path().join("e").exists(),
        "a refused start wrote nothing"
    );
}
