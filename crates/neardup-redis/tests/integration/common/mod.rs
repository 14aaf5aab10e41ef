//! Real `redis-server` processes for tests: a single server and a 3-master cluster on free
//! loopback ports, each in a temporary directory, killed when dropped.
#![allow(dead_code)]

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Fails (never skips) when redis-server is not installed.
pub fn require_redis() {
    let ok = Command::new("redis-server")
        .arg("--version")
        .stdout(Stdio::null())
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !ok {
        let ci = std::env::var_os("CI").is_some();
        panic!(
            "redis-server is not installed{}: these tests need a real Redis. Install it with `apt-get install -y redis-server` (.ci/run does this).",
            if ci { " on this CI machine" } else { "" }
        );
    }
}

fn free_port() -> u16 {
    // Ports whose cluster bus port (+10000) is also free.
    loop {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
        let p = l.local_addr().unwrap().port();
        if p < 55_000 && TcpListener::bind(("127.0.0.1", p + 10_000)).is_ok() {
            return p;
        }
    }
}

/// One redis-server process.
pub struct RedisServer {
    pub port: u16,
    dir: tempfile::TempDir,
    child: Option<Child>,
    args: Vec<String>,
}

impl RedisServer {
    /// Starts a server; `appendonly` turns on AOF with `appendfsync always`.
    pub fn start(appendonly: bool) -> RedisServer {
        Self::start_with(appendonly, &[])
    }

    pub fn start_with(appendonly: bool, extra: &[&str]) -> RedisServer {
        require_redis();
        let dir = tempfile::tempdir().expect("temp dir");
        let port = free_port();
        let mut args: Vec<String> = vec![
            "--port".into(),
            port.to_string(),
            "--bind".into(),
            "127.0.0.1".into(),
            "--save".into(),
            "".into(),
            "--appendonly".into(),
            if appendonly { "yes" } else { "no" }.into(),
            "--appendfsync".into(),
            "always".into(),
            "--daemonize".into(),
            "no".into(),
            "--loglevel".into(),
            "warning".into(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let mut s = RedisServer {
            port,
            dir,
            child: None,
            args,
        };
        s.spawn();
        s
    }

    fn spawn(&mut self) {
        let child = Command::new("redis-server")
            .args(&self.args)
            .arg("--dir")
            .arg(self.dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start redis-server");
        self.child = Some(child);
        let t = Instant::now();
        while !ping(self.port) {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "redis-server on port {} did not start",
                self.port
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    pub fn dir(&self) -> PathBuf {
        self.dir.path().to_path_buf()
    }

    /// SIGKILL (no shutdown save: only what the AOF holds survives).
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts again on the same port and directory.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// Runs redis-cli against this server and returns its stdout.
    pub fn cli(&self, args: &[&str]) -> String {
        cli(self.port, args)
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}

pub fn cli(port: u16, args: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .output()
        .expect("run redis-cli");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn ping(port: u16) -> bool {
    TcpStream::connect(("127.0.0.1", port)).is_ok() && cli(port, &["ping"]).trim() == "PONG"
}

/// A 3-master cluster (no replicas).
pub struct RedisCluster {
    pub nodes: Vec<RedisServer>,
}

impl RedisCluster {
    pub fn start() -> RedisCluster {
        let nodes: Vec<RedisServer> = (0..3)
            .map(|_| {
                RedisServer::start_with(
                    false,
                    &[
                        "--cluster-enabled",
                        "yes",
                        "--cluster-config-file",
                        "nodes.conf",
                        "--cluster-node-timeout",
                        "2000",
                    ],
                )
            })
            .collect();
        let addrs: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let out = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&addrs)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .output()
            .expect("run redis-cli --cluster create");
        assert!(
            out.status.success(),
            "cluster create failed: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        let t = Instant::now();
        loop {
            let ok = nodes.iter().all(|n| {
                let info = n.cli(&["cluster", "info"]);
                info.contains("cluster_state:ok") && info.contains("cluster_slots_ok:16384")
            });
            if ok {
                break;
            }
            assert!(
                t.elapsed() < Duration::from_secs(20),
                "cluster did not become ok"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        RedisCluster { nodes }
    }

    pub fn url(&self) -> String {
        let addrs: Vec<String> = self
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        format!("redis+cluster://{}", addrs.join(","))
    }
}
