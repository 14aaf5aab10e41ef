//! How the batch commands take memory: transparent huge pages off (src/memory.rs).
#![cfg(target_os = "linux")]

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::util::bin;

/// The `THP_enabled` line of a running `neardup dedup -` (waiting on its standard input), once
/// it has turned them off or after `wait`, whichever comes first; then the run ends.
fn thp_enabled_while_dedup_waits(env: Option<(&str, &str)>, wait: Duration) -> Option<String> {
    let mut cmd = Command::new(bin());
    cmd.args(["dedup", "-q", "-", "-o", "-"])
        .env_remove("MIMALLOC_ALLOW_THP")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some((k, v)) = env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("spawn neardup");
    let status = format!("/proc/{}/status", child.id());
    let start = Instant::now();
    let mut line = None;
    while start.elapsed() < wait {
        line = std::fs::read_to_string(&status).ok().and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("THP_enabled"))
                .map(str::to_string)
        });
        if line.as_deref().is_some_and(|l| l.ends_with('0')) {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"{\"id\":\"a\",\"text\":\"one document\"}\n")
        .unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    line
}

/// Huge pages cost `dedup` a quarter to a third more peak memory (each first touch of one
/// zeroes 2 MiB): a batch command runs without them.
#[test]
fn dedup_runs_without_transparent_huge_pages() {
    let Some(line) = thp_enabled_while_dedup_waits(None, Duration::from_secs(10)) else {
        return; // a kernel that does not show the line says nothing either way
    };
    assert!(line.ends_with('0'), "{line}");
}

/// A user who sets `MIMALLOC_ALLOW_THP` decides.
#[test]
fn mimalloc_allow_thp_set_by_the_user_is_kept() {
    // A kernel built without huge pages shows 0 for every process: nothing to keep.
    let here = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    if !here
        .lines()
        .any(|l| l.starts_with("THP_enabled") && l.ends_with('1'))
    {
        return;
    }
    // The command turns them off before it reads anything: half a second is ample.
    let wait = Duration::from_millis(500);
    let Some(line) = thp_enabled_while_dedup_waits(Some(("MIMALLOC_ALLOW_THP", "1")), wait) else {
        return;
    };
    assert!(line.ends_with('1'), "{line}");
}
