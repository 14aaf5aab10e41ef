//! The settings `neardup serve` reads from a TOML file (`--config`) and the durations its
//! flags, variables and keys take.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Parses `2d`, `36h`, `90m`, `30s`, `250ms` (a bare number is seconds).
pub(super) fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not a duration: write e.g. 2d, 36h, 90m, 30s or 250ms"))?;
    let ms = match unit {
        "ms" => 1,
        "" | "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => {
            return Err(format!(
                "`{s}`: unknown unit `{unit}`; use ms, s, m, h or d"
            ))
        }
    };
    n.checked_mul(ms)
        .map(Duration::from_millis)
        .ok_or_else(|| format!("`{s}` is too long"))
}

#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileConfig {
    pub(super) data_dir: Option<PathBuf>,
    pub(super) addr: Option<SocketAddr>,
    pub(super) retention: Option<String>,
    pub(super) method: Option<String>,
    pub(super) distance: Option<u32>,
    pub(super) template_veto: Option<bool>,
    pub(super) minhash_bits: Option<u32>,
    pub(super) minhash_scheme: Option<String>,
    pub(super) quote_edge: Option<f64>,
    pub(super) passages: Option<bool>,
    pub(super) template_own_lines: Option<bool>,
    pub(super) template_markup_lines: Option<bool>,
    pub(super) template_by_content: Option<bool>,
    pub(super) segments: Option<u32>,
    pub(super) max_docs: Option<u64>,
    pub(super) index_bytes_per_doc: Option<u64>,
    pub(super) sync: Option<String>,
    pub(super) sync_interval: Option<String>,
    pub(super) token: Option<String>,
    pub(super) body_limit: Option<usize>,
    pub(super) max_batch: Option<usize>,
    pub(super) max_connections: Option<usize>,
    pub(super) header_timeout: Option<String>,
    pub(super) body_timeout: Option<String>,
    pub(super) snapshot_interval: Option<String>,
    pub(super) backend: Option<String>,
    pub(super) redis_prefix: Option<String>,
}

pub(super) fn file_duration(v: Option<String>, key: &str) -> anyhow::Result<Option<Duration>> {
    v.map(|s| parse_duration(&s).map_err(|e| anyhow::anyhow!("config key `{key}`: {e}")))
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::parse_duration;
    use std::time::Duration;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("2d"), Ok(Duration::from_secs(172_800)));
        assert_eq!(parse_duration("36h"), Ok(Duration::from_secs(129_600)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("30"), Ok(Duration::from_secs(30)));
        assert!(parse_duration("2w").is_err());
        assert!(parse_duration("d").is_err());
        assert!(parse_duration("99999999999999999999d").is_err());
    }
}
