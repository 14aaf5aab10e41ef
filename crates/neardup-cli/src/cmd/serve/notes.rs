//! What `neardup serve` tells its operator besides its answers: the open-files limit, the
//! token's checks, the warning when no token is set, the note after a failed final
//! snapshot, a flag to reopen a data directory recorded under other settings, and recovery
//! progress.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::bail;
use neardup::engine::{EngineError, RecoveryProgress};

/// Descriptors needed beside the served connections: health checks and refusals beyond the
/// limit (~550), the data directory, the runtime.
pub(super) const SPARE_FDS: usize = 640;

/// The soft limit on open files (Linux: /proc/self/limits), if known.
pub(super) fn open_files_limit() -> Option<usize> {
    let text = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = text.lines().find(|l| l.starts_with("Max open files"))?;
    line["Max open files".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Refuses tokens that would disable authentication or could never be presented.
pub(super) fn check_token(t: &str) -> anyhow::Result<()> {
    if t.is_empty() {
        bail!(
            "the token is empty (--token '', NEARDUP_TOKEN= or `token = \"\"`), which would let \
             anyone in: give a non-empty token, or leave the setting out to serve without one"
        );
    }
    if t.trim() != t || !t.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        bail!(
            "the token must be printable ASCII without leading or trailing spaces (clients send \
             it in an HTTP header)"
        );
    }
    Ok(())
}

/// The loud warning printed when serving without a token.
pub(super) fn no_token_warning(addr: SocketAddr) -> String {
    let who = if addr.ip().is_loopback() {
        "every local process and every web page open in a browser on this host"
    } else {
        "anyone who can reach this address"
    };
    format!(
        "neardup serve: WARNING: no --token: {who} can store and remove documents on \
         http://{addr}. POST bodies must be `Content-Type: application/json`, which stops the \
         simple cross-origin requests browsers send, but set --token (or NEARDUP_TOKEN) \
         unless every client is trusted."
    )
}

/// Where the log stands (from the engine's stats).
pub(super) struct LogPosition {
    pub(super) last_lsn: u64,
    pub(super) durable_lsn: u64,
    pub(super) snapshot_lsn: u64,
}

/// The log line of a failed graceful shutdown of the embedded engine: whether anything
/// acknowledged is at risk.
pub(super) fn failed_shutdown_note(e: &std::io::Error, s: &LogPosition) -> String {
    if s.durable_lsn >= s.last_lsn {
        format!(
            "neardup serve: the final snapshot failed ({e}); the data is intact: the log is \
             synced through record {}, so the next start replays it from the last snapshot \
             (record {}), only more slowly. Exiting with status 2.",
            s.durable_lsn, s.snapshot_lsn
        )
    } else {
        format!(
            "neardup serve: the shutdown failed ({e}) with the log synced only through record \
             {} of {}: with --sync always every answered document is durable (answers wait for \
             the sync); with --sync batch or none the records after {} may be lost. Exiting \
             with status 2.",
            s.durable_lsn, s.last_lsn, s.durable_lsn
        )
    }
}

/// A configuration mismatch whose stored value a flag of this command restores, with that flag
/// named: a directory written before Traditional characters were folded is served with
/// `--keep-traditional`, one written before quotes were matched with `--quote-edge 0`.
pub(super) fn with_flag_hint(e: EngineError) -> EngineError {
    /// A difference's start, and what the directory was written with or before.
    const HINTS: [(&str, &str); 6] = [
        (
            "fingerprint.config.normalize.fold_traditional: stored false",
            "written before Traditional characters were folded to Simplified: serve it with \
             --keep-traditional",
        ),
        (
            "detector.short.containment.edge: stored 0.0",
            "written before quotes were matched: serve it with --quote-edge 0",
        ),
        (
            "detector.passages: stored null",
            "written before stored long texts were indexed by their sentences: serve it with \
             --no-passages",
        ),
        (
            "template_veto.own_repeated_lines: stored false",
            "written before a page's own lines repeated by its copies made its distinct part: \
             serve it with --no-template-own-lines",
        ),
        (
            "template_veto.text_lines: stored false",
            "written before the lines of HTML pages were read from their text: serve it with \
             --template-markup-lines",
        ),
        (
            "template_veto.by_content: stored true",
            "written judging by content: serve it with --template-by-content",
        ),
    ];
    match e {
        EngineError::ConfigMismatch {
            dir,
            difference,
            config,
        } => {
            let hint = HINTS
                .iter()
                .find(|(start, _)| difference.starts_with(start));
            EngineError::ConfigMismatch {
                dir,
                config,
                difference: match hint {
                    Some((_, hint)) => format!("{difference} ({hint})"),
                    None => difference,
                },
            }
        }
        e => e,
    }
}

/// What `serve` prints while a data directory's snapshot is recovered: how far it has come,
/// every five seconds at most (a small directory opens before the first line is due).
pub(super) fn recovery_reporter() -> impl Fn(RecoveryProgress) + Sync {
    let last = std::sync::Mutex::new(std::time::Instant::now());
    move |p: RecoveryProgress| {
        if p.finished || p.snapshot_total == 0 {
            return;
        }
        let mut last = last.lock().unwrap_or_else(|e| e.into_inner());
        if last.elapsed() >= Duration::from_secs(5) {
            *last = std::time::Instant::now();
            eprintln!(
                "neardup serve: recovering: {} of {} documents of the snapshot ({:.0} %)",
                p.snapshot_done,
                p.snapshot_total,
                100.0 * p.snapshot_done as f64 / p.snapshot_total as f64
            );
        }
    }
}

#[cfg(test)]
mod tests {
    #[cfg(target_os = "linux")]
    #[test]
    fn descriptor_limit_is_read() {
        assert!(super::open_files_limit().is_some_and(|l| l > 0));
    }

    #[test]
    fn empty_or_unsendable_tokens_are_refused() {
        assert!(super::check_token("")
            .unwrap_err()
            .to_string()
            .contains("empty"));
        for bad in [" tok", "tok ", "to\nk", "tök"] {
            assert!(super::check_token(bad).is_err(), "{bad:?}");
        }
        assert!(super::check_token("s3cret-Tok_en.~").is_ok());
    }

    #[test]
    fn failed_final_snapshot_says_the_data_is_intact() {
        let e = std::io::Error::other("disk full");
        let s = super::LogPosition {
            last_lsn: 7,
            durable_lsn: 7,
            snapshot_lsn: 3,
        };
        let note = super::failed_shutdown_note(&e, &s);
        assert!(
            note.contains("disk full")
                && note.contains("data is intact")
                && note.contains("status 2"),
            "{note}"
        );
        let s = super::LogPosition {
            durable_lsn: 5,
            ..s
        };
        assert!(!super::failed_shutdown_note(&e, &s).contains("intact"));
    }
}
